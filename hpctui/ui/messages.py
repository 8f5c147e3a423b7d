"""Messages of the UI: the store's change (to the app), and intents from widgets up the DOM.

Data travels down as frames (:class:`hpctui.core.frame.Frame`, pushed by the app to every
:class:`~hpctui.ui.frame_view.FrameView`); widgets never reach sideways into siblings, they post
one of these and let the screen or app decide.
"""

from __future__ import annotations

from textual.message import Message

from hpctui.core.frame import Frame
from hpctui.model import Pod, SlurmJob
from hpctui.model.action import ActionKind


class SnapshotChanged(Message):
    """The store has new data: ``frame`` is its newest frame. Posted at most once while one is
    pending; a change meanwhile replaces the pending message's ``frame`` with the newer one, so
    bursts from several sources collapse into one redraw of the latest frame."""

    def __init__(self, frame: Frame) -> None:
        super().__init__()
        self.frame = frame


class MigWizardRequested(Message):
    """The MIG wizard key on the heatmap: the app opens the wizard on ``nodes``."""

    def __init__(self, nodes: tuple[str, ...]) -> None:
        super().__init__()
        self.nodes = nodes


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


class ShellRequested(Message):
    """``s`` on a node, job or pod: the app opens an interactive shell there (hpctui.ui.shell).
    ``containers``: the pod's containers (a picker asks when there are several)."""

    def __init__(self, kind: ActionKind, target: str, containers: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.kind = kind
        self.target = target
        self.containers = containers


class LogsRequested(Message):
    """The logs key on a job, a pod or the heatmap: the app opens the log viewer on it. ``what`` is
    "job" (``job``), "pod" (``pod``) or "node" (``nodes``: the marked nodes, or the cursor node)."""

    def __init__(self, what: str, *, job: SlurmJob | None = None, pod: Pod | None = None,
                 nodes: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.what = what
        self.job = job
        self.pod = pod
        self.nodes = nodes
