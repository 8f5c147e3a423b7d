"""One registry of keys: bindings, the footer, the help screen and the command
palette are all generated from it, so they cannot disagree.

Every binding has an ``id`` so users can remap keys through Textual's keymap.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding, BindingType

from hpctui.actions.base import ActionKind


@dataclass(frozen=True, slots=True)
class KeySpec:
    id: str
    key: str
    action: str
    description: str
    scope: str  # "global", "heatmap", "queue", "table", "links"
    kind: ActionKind | None = None  # set for cluster actions (hidden in read-only mode)
    show: bool = True
    key_display: str | None = None

    def binding(self) -> Binding:
        return Binding(self.key, self.action, self.description, show=self.show, id=self.id,
                       key_display=self.key_display)


def _act(id_: str, key: str, kind: ActionKind, description: str, scope: str) -> KeySpec:
    return KeySpec(id_, key, f"request_action('{kind.value}')", description, scope, kind=kind)


GLOBAL_KEYS: tuple[KeySpec, ...] = (
    KeySpec("app.quit", "q", "quit", "Quit", "global"),
    KeySpec("app.help", "question_mark", "help", "Help", "global", key_display="?"),
    KeySpec("app.theme", "t", "cycle_theme", "Theme", "global"),
    KeySpec("app.refresh", "r", "refresh_now", "Refresh", "global"),
    KeySpec("app.report", "E", "export_report", "Incident report", "global", show=False),
)
# Triage: views of the middle-left slot and the problem walk; app-wide, so they work from
# every pane (a focused filter input keeps its own letters).
TRIAGE_KEYS: tuple[KeySpec, ...] = (
    KeySpec("app.problems", "p", "show_view('problems')", "Problems", "global"),
    KeySpec("app.events", "e", "show_view('events')", "Events", "global"),
    KeySpec("app.jobs", "j", "show_view('queue')", "Jobs", "global", show=False),
    KeySpec("app.next_problem", "n", "next_problem(1)", "Next problem", "global"),
    KeySpec("app.prev_problem", "N", "next_problem(-1)", "Prev problem", "global", show=False),
    KeySpec("app.goto", "g", "go_to", "Go to", "global"),
    KeySpec("app.workload", "w", "workload_here", "Jobs/pods here", "global", show=False),
)
HEATMAP_KEYS: tuple[KeySpec, ...] = (
    KeySpec("heatmap.metric", "m", "cycle_metric", "Metric", "heatmap"),
    KeySpec("heatmap.mark", "space", "toggle_mark", "Mark", "heatmap"),
    KeySpec("heatmap.clear", "escape", "clear_marks", "Unmark all", "heatmap", show=False),
)
NODE_ACTION_KEYS: tuple[KeySpec, ...] = (
    _act("node.drain", "d", ActionKind.DRAIN_NODES, "Drain", "heatmap"),
    _act("node.resume", "u", ActionKind.RESUME_NODES, "Resume", "heatmap"),
    _act("node.reboot", "b", ActionKind.REBOOT_NODES, "Reboot", "heatmap"),
    KeySpec("node.cancel_reboot", "B", "request_action('cancel_reboot')", "Cancel reboot", "heatmap",
            kind=ActionKind.CANCEL_REBOOT, show=False),
    _act("node.cordon", "c", ActionKind.CORDON_NODES, "Cordon", "heatmap"),
    _act("node.uncordon", "C", ActionKind.UNCORDON_NODES, "Uncordon", "heatmap"),
    KeySpec("node.k8s_drain", "D", "request_action('k8s_drain')", "K8s drain (evict pods)", "heatmap",
            kind=ActionKind.K8S_DRAIN_NODES, show=False),
)
NODE_JOB_ACTION_KEYS: tuple[KeySpec, ...] = (
    _act("node.requeue_jobs", "R", ActionKind.REQUEUE_JOBS, "Requeue jobs here", "heatmap"),
    _act("node.cancel_jobs", "X", ActionKind.CANCEL_JOBS, "Cancel jobs here", "heatmap"),
)
TABLE_KEYS: tuple[KeySpec, ...] = (
    KeySpec("table.filter", "slash", "start_filter", "Filter", "table", key_display="/"),
    KeySpec("table.sort", "o", "cycle_sort", "Sort", "table"),
    KeySpec("table.reverse", "O", "reverse_sort", "Reverse", "table", show=False),
)
QUEUE_KEYS: tuple[KeySpec, ...] = (
    KeySpec("queue.detail", "enter", "show_detail", "Details", "queue"),
    KeySpec("queue.mark", "space", "toggle_mark", "Mark", "queue"),
    KeySpec("queue.clear", "escape", "clear_marks", "Unmark all", "queue", show=False),
)
JOB_ACTION_KEYS: tuple[KeySpec, ...] = (
    _act("job.requeue", "R", ActionKind.REQUEUE_JOBS, "Requeue", "queue"),
    _act("job.requeuehold", "H", ActionKind.REQUEUE_HOLD_JOBS, "Requeue+hold", "queue"),
    _act("job.hold", "h", ActionKind.HOLD_JOBS, "Hold", "queue"),
    _act("job.release", "l", ActionKind.RELEASE_JOBS, "Release", "queue"),
    _act("job.cancel", "x", ActionKind.CANCEL_JOBS, "Cancel", "queue"),
)
POD_KEYS: tuple[KeySpec, ...] = (
    KeySpec("pod.describe", "enter", "pod_detail('describe')", "Describe", "pods"),
    KeySpec("pod.logs", "l", "pod_detail('logs')", "Logs", "pods"),
    _act("pod.delete", "ctrl+d", ActionKind.DELETE_PODS, "Delete", "pods"),
)
LINKS_KEYS: tuple[KeySpec, ...] = (
    KeySpec("links.scope", "a", "toggle_scope", "Node/all", "links"),
)
# layout: walk the panes (the narrow layout's tabs; in a wide terminal, focus moves).
LAYOUT_KEYS: tuple[KeySpec, ...] = (
    KeySpec("app.next_view", "right_square_bracket", "next_tab(1)", "Next view", "global", key_display="]"),
    KeySpec("app.prev_view", "left_square_bracket", "next_tab(-1)", "Prev view", "global", show=False,
            key_display="["),
)
ACTION_KEYS = NODE_ACTION_KEYS + NODE_JOB_ACTION_KEYS + JOB_ACTION_KEYS
ALL_KEYS = (GLOBAL_KEYS + TRIAGE_KEYS + HEATMAP_KEYS + NODE_ACTION_KEYS + NODE_JOB_ACTION_KEYS + TABLE_KEYS + QUEUE_KEYS
            + JOB_ACTION_KEYS + LINKS_KEYS + POD_KEYS)
ALL_KEYS += LAYOUT_KEYS  # layout

SCOPE_TITLES = {
    "global": "Everywhere", "heatmap": "Node heatmap", "table": "Tables",
    "queue": "Slurm queue", "links": "IB links / mounts", "pods": "K8s pods",
}


def bindings(*groups: tuple[KeySpec, ...]) -> list[BindingType]:
    return [spec.binding() for group in groups for spec in group]


def app_bindings(*groups: tuple[KeySpec, ...]) -> list[BindingType]:
    """App-level keys re-bound on a modal screen (which hides the app's bindings)."""
    return [Binding(spec.key, f"app.{spec.action}", spec.description, show=False, id=f"modal.{spec.id}")
            for group in groups for spec in group]


def display_key(spec: KeySpec) -> str:
    return spec.key_display or spec.key
