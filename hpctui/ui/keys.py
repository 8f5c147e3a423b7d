"""One registry of keys: bindings, the footer, the help screen and the command
palette are all generated from it, so they cannot disagree.

Every binding has an ``id`` so users can remap keys through Textual's keymap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.binding import Binding, BindingType

from hpctui.model.action import ActionKind

if TYPE_CHECKING:
    from hpctui.actions.custom import CustomActionSettings


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
    KeySpec("app.jobs", "J", "show_view('queue')", "Jobs", "global", show=False),
    KeySpec("app.next_problem", "n", "next_problem(1)", "Next problem", "global"),
    KeySpec("app.prev_problem", "N", "next_problem(-1)", "Prev problem", "global", show=False),
    KeySpec("app.goto", "g", "go_to", "Go to", "global"),
    KeySpec("app.command", "colon", "command_mode", "Command", "global", show=False, key_display=":"),
    KeySpec("app.workload", "w", "workload_here", "Jobs/pods here", "global", show=False),
)
HEATMAP_KEYS: tuple[KeySpec, ...] = (
    KeySpec("heatmap.metric", "m", "cycle_metric", "Metric", "heatmap"),
    KeySpec("heatmap.mark", "space", "toggle_mark", "Mark", "heatmap"),
    KeySpec("heatmap.clear", "escape", "clear_marks", "Unmark all", "heatmap", show=False),
)
# visuals: heatmap grouping/zoom and the per-GPU chart screen (heatmap scope)
HEATMAP_VIEW_KEYS: tuple[KeySpec, ...] = (
    KeySpec("heatmap.charts", "v", "open_charts", "Charts", "heatmap", show=False),
    KeySpec("heatmap.group", "o", "cycle_group", "Group by", "heatmap", show=False),
    KeySpec("heatmap.zoom", "z", "toggle_zoom", "Zoom group", "heatmap", show=False),
    KeySpec("heatmap.problems_first", "P", "toggle_problems_first", "Problems first", "heatmap", show=False),
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
    _act("job.hold", "z", ActionKind.HOLD_JOBS, "Hold", "queue"),
    _act("job.release", "Z", ActionKind.RELEASE_JOBS, "Release", "queue"),
    _act("job.cancel", "x", ActionKind.CANCEL_JOBS, "Cancel", "queue"),
)
POD_KEYS: tuple[KeySpec, ...] = (
    KeySpec("pod.describe", "enter", "pod_detail('describe')", "Describe", "pods"),
    KeySpec("pod.logs", "L", "pod_detail('logs')", "Logs", "pods"),
    _act("pod.delete", "ctrl+d", ActionKind.DELETE_PODS, "Delete", "pods"),
)
LINKS_KEYS: tuple[KeySpec, ...] = (
    KeySpec("links.scope", "a", "toggle_scope", "Node/all", "links"),
)
# The MIG reconfiguration wizard on the marked nodes (hpctui.ui.screens.mig_wizard).
MIG_KEYS: tuple[KeySpec, ...] = (
    KeySpec("node.mig", "M", "mig_wizard", "MIG wizard", "heatmap", kind=ActionKind.MIG_RECONFIGURE,
            show=False),
)
# layout: walk the panes (the narrow layout's tabs; in a wide terminal, focus moves).
LAYOUT_KEYS: tuple[KeySpec, ...] = (
    KeySpec("app.next_view", "right_square_bracket", "next_tab(1)", "Next view", "global", key_display="]"),
    KeySpec("app.prev_view", "left_square_bracket", "next_tab(-1)", "Prev view", "global", show=False,
            key_display="["),
)
# vi movement (k9s, htop): the same ids in every pane, so one keymap line moves them all.
# ``action`` is a placeholder: each widget binds the ids to its own move (see ``move_bindings``).
MOVE_KEYS: tuple[KeySpec, ...] = (
    KeySpec("move.down", "j", "down", "Cursor down", "move", show=False),
    KeySpec("move.up", "k", "up", "Cursor up", "move", show=False),
    KeySpec("move.left", "h", "left", "Cursor left / scroll left", "move", show=False),
    KeySpec("move.right", "l", "right", "Cursor right / scroll right", "move", show=False),
)
# View stack (k9s): enter drills down, escape goes back one level.
STACK_KEYS: tuple[KeySpec, ...] = (
    KeySpec("stack.back", "escape", "stack_back", "Back", "move", show=False, key_display="esc"),
)
ACTION_KEYS = NODE_ACTION_KEYS + NODE_JOB_ACTION_KEYS + JOB_ACTION_KEYS
ALL_KEYS = (GLOBAL_KEYS + TRIAGE_KEYS + HEATMAP_KEYS + NODE_ACTION_KEYS + NODE_JOB_ACTION_KEYS + TABLE_KEYS + QUEUE_KEYS
            + JOB_ACTION_KEYS + LINKS_KEYS + POD_KEYS + MOVE_KEYS + STACK_KEYS)
ALL_KEYS += MIG_KEYS
ALL_KEYS += LAYOUT_KEYS  # layout
ALL_KEYS += HEATMAP_VIEW_KEYS  # visuals

SCOPE_TITLES = {
    "global": "Everywhere", "heatmap": "Node heatmap", "table": "Tables",
    "queue": "Slurm queue", "links": "IB links / mounts", "pods": "K8s pods",
    "move": "Moving (every pane and detail view)",
}


def bindings(*groups: tuple[KeySpec, ...]) -> list[BindingType]:
    return [spec.binding() for group in groups for spec in group]


def app_bindings(*groups: tuple[KeySpec, ...]) -> list[BindingType]:
    """App-level keys re-bound on a modal screen (which hides the app's bindings)."""
    return [Binding(spec.key, f"app.{spec.action}", spec.description, show=False, id=f"modal.{spec.id}")
            for group in groups for spec in group]


def move_bindings(down: str, up: str, left: str, right: str) -> list[BindingType]:
    """j/k/h/l bound to a widget's own moves, under the shared ``move.*`` ids."""
    actions = {"move.down": down, "move.up": up, "move.left": left, "move.right": right}
    return [Binding(spec.key, actions[spec.id], spec.description, show=False, id=spec.id) for spec in MOVE_KEYS]


def display_key(spec: KeySpec, keymap: dict[str, str] | None = None) -> str:
    """The key as the user sees it: the keymap's remapping when there is one."""
    if keymap and spec.id in keymap:
        return keymap[spec.id]
    return spec.key_display or spec.key


# -- custom actions ([[custom_actions]] in the config): keys bound at start, ids ``custom.<name>`` --------
CUSTOM_SCOPE_PANES = {"nodes": "heatmap", "jobs": "queue", "pods": "pods"}  # action scope -> key scope
# keys a pane's widget binds itself (cursor movement), beyond the registry
_PANE_NAV_KEYS = frozenset({"up", "down", "left", "right", "pageup", "pagedown", "home", "end", "tab",
                            "shift+tab", "enter", "escape", "space", "colon", "ctrl+p", "ctrl+q", "ctrl+c",
                            "j", "k", "h", "l"})


class CustomKeyError(ValueError):
    """A custom action's key is taken on its pane (a config error)."""


def custom_key_specs(actions: Sequence[CustomActionSettings]) -> tuple[KeySpec, ...]:
    """One KeySpec per custom action with a key; CustomKeyError if the key is already taken on its
    pane (its own keys, the table keys, the app-wide keys, cursor keys) or by another custom action."""
    specs: list[KeySpec] = []
    for action in actions:
        if not action.key:
            continue
        pane = CUSTOM_SCOPE_PANES[action.scope]
        scopes = {pane, "global"} | ({"table"} if pane in ("queue", "pods") else set())
        taken = {k.key: k.id for k in ALL_KEYS if k.scope in scopes}
        taken.update({s.key: s.id for s in specs if s.scope == pane})
        key = action.key
        if key in taken or key in _PANE_NAV_KEYS:
            owner = taken.get(key, "cursor movement")
            raise CustomKeyError(f"custom_actions ({action.name}): key {key!r} is taken on the "
                                 f"{SCOPE_TITLES.get(pane, pane)} pane by {owner}")
        specs.append(KeySpec(f"custom.{action.name}", key, f"app.run_custom_action('{action.name}')",
                             action.description or action.name, pane, show=False))
    return tuple(specs)
