"""``g``: go to a node, a job, a pod or a hostlist by name.

The keys typed right after ``g`` arrive before this screen exists; the app holds them
(:meth:`HpcApp.hold_keys`) and hands them to the input once it is mounted, so
"g dgx01" can never drain a node on the way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from hpctui.model import ClusterSnapshot, Pod, SlurmJob
from hpctui.model.hostlist import HostlistError, expand


class GoToScreen(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "Close", show=False)]
    DEFAULT_CSS = """
    GoToScreen { align: center top; }
    GoToScreen > Vertical {
        width: 70; max-width: 95%; height: auto; margin-top: 3;
        border: round $accent; background: $surface; padding: 0 1;
    }
    GoToScreen #goto-input, GoToScreen #goto-input:focus {
        border: none; height: 1; width: 100%; padding: 0 1; background: $panel;
    }
    """

    def __init__(self, on_mounted: Callable[[Input], Awaitable[None]] | None = None) -> None:
        super().__init__(id="goto")
        self.on_mounted = on_mounted

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Go to: node, job id, pod or hostlist   (enter, esc)")
            yield Input(placeholder="gpu0003  1017  team-a/sweep-lr-001  gpu[0002-0005]", id="goto-input",
                        select_on_focus=False)

    async def on_mount(self) -> None:
        box = self.query_one(Input)
        self.set_focus(box)
        if self.on_mounted is not None:
            await self.on_mounted(box)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


@dataclass(frozen=True, slots=True)
class Target:
    """What a go-to text names: nodes to select (the first) and mark (all), or a job or pod."""

    nodes: tuple[str, ...] = ()
    job: SlurmJob | None = None
    pod: Pod | None = None
    error: str | None = None


def resolve(snapshot: ClusterSnapshot, known: Callable[[str], bool], text: str) -> Target:
    """Node name first, then job id (``1017``, ``1011_3``), pod (``ns/name`` or a unique
    name), then a hostlist of known nodes."""
    text = text.strip()
    if not text:
        return Target(error="nothing to go to")
    if known(text):
        return Target(nodes=(text,))
    for job in snapshot.jobs:
        if job.display_id == text or str(job.job_id) == text:
            return Target(nodes=tuple(n for n in _job_nodes(job) if known(n)), job=job)
    pods = [p for p in snapshot.pods if f"{p.namespace}/{p.name}" == text] or \
        [p for p in snapshot.pods if p.name == text]
    if pods:
        pod = pods[0]
        return Target(nodes=(pod.node,) if pod.node and known(pod.node) else (), pod=pod)
    try:
        names = expand(text)
    except HostlistError:
        names = []
    nodes = tuple(n for n in names if known(n))
    if nodes:
        return Target(nodes=nodes)
    return Target(error=f"{text}: no such node, job, pod or hostlist")


def _job_nodes(job: SlurmJob) -> list[str]:
    try:
        return expand(job.nodes or "")
    except HostlistError:
        return []
