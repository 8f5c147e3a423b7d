"""The one way widgets compute off the UI thread: :class:`LatestOnly`.

A big cluster's rows or heatmap levels take long enough to hold key presses back, so they are
computed in a thread worker on the frozen frame. Only the newest computation may land: each run
is an ``exclusive`` worker of its group (Textual cancels the one before), and the result is
applied when that very worker reports ``SUCCESS`` through ``Worker.StateChanged`` — no request
counters. The owning widget forwards its ``on_worker_state_changed`` to :meth:`LatestOnly.take`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast

from textual.dom import DOMNode
from textual.worker import Worker, WorkerState

T = TypeVar("T")


class LatestOnly(Generic[T]):
    """Runs a pure job in a thread worker and applies only the newest job's result."""

    def __init__(self, node: DOMNode, group: str, apply: Callable[[T], None]) -> None:
        self.node = node
        self.group = group
        self.apply = apply
        self.latest: Worker[T] | None = None

    def run(self, job: Callable[[], T], description: str) -> None:
        """Start ``job`` in a thread (cancelling this group's previous one). ``description`` is
        given explicitly: the default repr() of a job would format a whole snapshot."""
        self.latest = self.node.run_worker(job, name=self.group, group=self.group, description=description,
                                           thread=True, exclusive=True)

    def cancel(self) -> None:
        """Forget the job in flight: its result will not be applied."""
        if self.latest is not None:
            self.latest.cancel()
        self.latest = None

    def take(self, event: Worker.StateChanged) -> bool:
        """Apply the result if ``event`` says the newest job succeeded; True if the event was about
        this helper's newest worker (the caller may then stop it)."""
        worker: Worker[Any] = event.worker
        if worker is not self.latest:
            return False
        if event.state is WorkerState.SUCCESS:
            self.latest = None
            self.apply(cast("T", worker.result))
        elif event.state in (WorkerState.ERROR, WorkerState.CANCELLED):
            self.latest = None
        return True
