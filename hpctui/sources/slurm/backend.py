"""The internal interface behind :class:`SlurmSource`: one per way of talking to Slurm.

Each backend (CLI, slurmrestd, pyslurm) reads the whole cluster in a few calls and declares
which actions it can carry out itself; the source falls back to the CLI for the rest and
says so in the plan's notes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from hpctui.model import ControllerHealth, SlurmJob, SlurmNodeInfo, SlurmPartition
from hpctui.model.action import ActionKind, TargetResult
from hpctui.model.fabric import Fabric
from hpctui.model.validate import Drops

T = TypeVar("T")

# Documents bigger than this are parsed in a worker thread: ~100k jobs take 1-2 s to parse,
# which on the event loop would freeze the UI (and asyncio.wait_for cannot interrupt it).
# Small ones are parsed inline: a thread hop costs more than the parse.
PARSE_IN_THREAD_BYTES = 256 * 1024


async def parse_off_loop(fn: Callable[..., T], data: bytes | str, *args: Any) -> T:
    """``fn(data, *args)``, in a worker thread when ``data`` is large."""
    if len(data) > PARSE_IN_THREAD_BYTES:
        return await asyncio.to_thread(fn, data, *args)
    return fn(data, *args)


class Dropped:
    """The parsers' ``on_invalid`` callback: counts dropped records, keeps the first messages."""

    def __init__(self, what: str, keep: int = 3) -> None:
        self.what = what
        self.keep = keep
        self.count = 0
        self.messages: list[str] = []
        self.values = Drops()  # implausible numbers in records that were kept (shown as N/A)

    def __call__(self, message: str) -> None:
        self.count += 1
        if len(self.messages) < self.keep:
            self.messages.append(message)

    def report(self, warnings: list[str]) -> None:
        if self.count:
            more = f" (+{self.count - len(self.messages)} more)" if self.count > len(self.messages) else ""
            warnings.append(f"{self.count} unreadable {self.what} record(s) dropped: "
                            f"{'; '.join(self.messages)}{more}")
        warnings.extend(self.values.warnings())


@dataclass
class Collected:
    """One refresh. ``None`` nodes or jobs: that read failed (a warning says why) and the
    store keeps the last good copy, aging; the other part is still shown."""

    nodes: dict[str, SlurmNodeInfo] | None
    jobs: tuple[SlurmJob, ...] | None
    controller: ControllerHealth | None = None
    warnings: list[str] = field(default_factory=list)
    partitions: tuple[SlurmPartition, ...] | None = None  # None: not read (a warning says why) or no endpoint
    fabric: Fabric | None = None  # Slurm's topology/tree switches; None: not read this refresh, or no plugin


def nodes_or_jobs(nodes: object, jobs: object, warnings: list[str]) -> tuple[
        dict[str, SlurmNodeInfo] | None, tuple[SlurmJob, ...] | None]:
    """Results (or exceptions) of the nodes and jobs reads → what to show.

    Both failed: the source failed (the nodes error is raised). One failed: it becomes a
    warning and ``None``, so nodes are still shown when jobs cannot be read and vice versa.
    Cancellation and other BaseExceptions always propagate.
    """
    for item in (nodes, jobs):
        if isinstance(item, BaseException) and not isinstance(item, Exception):
            raise item
    if isinstance(nodes, Exception) and isinstance(jobs, Exception):
        raise nodes
    if isinstance(nodes, Exception):
        warnings.append(f"nodes unavailable (jobs still shown): {nodes}")
        nodes = None
    if isinstance(jobs, Exception):
        warnings.append(f"jobs unavailable (nodes still shown): {jobs}")
        jobs = None
    assert nodes is None or isinstance(nodes, dict)
    assert jobs is None or isinstance(jobs, tuple)
    return nodes, jobs


class SlurmBackend(Protocol):
    name: str  # "cli", "rest", "pyslurm"

    @property
    def calls(self) -> list[str]:
        """argv / HTTP requests / library calls since the last reset_calls()."""
        ...

    def reset_calls(self) -> None: ...

    def capabilities(self) -> frozenset[ActionKind]:
        """Action kinds this backend runs itself (the rest go to the CLI)."""
        ...

    def describe(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str]) -> list[str]:
        """The exact commands/requests ``act`` will run, for the plan preview and the audit."""
        ...

    async def collect(self) -> Collected: ...

    async def act(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str]) -> list[TargetResult]:
        """Run one action; one result per target carrying Slurm's own error text."""
        ...

    async def close(self) -> None: ...


# Text that means "the controller is not there" in CLI stderr / REST errors[].
UNREACHABLE_MARKERS = (
    "unable to contact slurm controller", "connect failure", "connection refused",
    "socket timed out", "zero bytes were transmitted", "slurm_persist_conn_open",
)


def looks_unreachable(text: str) -> bool:
    low = text.lower()
    return any(m in low for m in UNREACHABLE_MARKERS)
