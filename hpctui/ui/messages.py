"""Messages that travel *up* the DOM: intents from widgets to the app.

Data travels down as method calls/attributes; widgets never reach sideways into
siblings, they post one of these and let the screen or app decide.
"""

from __future__ import annotations

from textual.message import Message

from hpctui.model import Pod, SlurmJob
from hpctui.model.action import ActionKind


class SnapshotChanged(Message):
    """The store has new data. Posted at most once while one is pending, so bursts
    from several sources collapse into one redraw of the latest snapshot."""


class ActionRequested(Message):
    """A widget asks for an action on its marked (or cursor) targets; the app
    opens the confirmation dialog. Widgets never run actions themselves."""

    def __init__(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str] | None = None) -> None:
        super().__init__()
        self.kind = kind
        self.targets = targets
        self.params = dict(params or {})

    def __repr__(self) -> str:
        return f"ActionRequested({self.kind.value!r}, {self.targets!r})"


class PodDetailRequested(Message):
    """A key on a pod row: the app shows the pod's description (YAML + events) or its logs."""

    def __init__(self, pod: Pod, what: str) -> None:
        super().__init__()
        self.pod = pod
        self.what = what  # "describe" or "logs"


class JobDetailRequested(Message):
    """Enter on a queue row: the app shows the job in full."""

    def __init__(self, job: SlurmJob) -> None:
        super().__init__()
        self.job = job


class NodeRequested(Message):
    """Select ``node`` everywhere (heatmap cursor, node panel, IB and mount panes): enter on a
    problem, IB, mount or pod row, a digit in the problem list, ``n``/``N``."""

    def __init__(self, node: str) -> None:
        super().__init__()
        self.node = node
