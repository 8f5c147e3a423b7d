"""The UI's one action registry: every key, every ``:`` command, in one place.

What it promises:

- Each key-bound action is one :class:`ActionSpec` with a stable ``id`` (what a ``[keymap]``
  line remaps, Textual's ``Binding.id``), its default key, a description, the group (``scope``)
  it belongs to, and, for a cluster action, its :class:`~hpctui.model.action.ActionKind`:
  such an entry is refused in read-only mode (hidden from help there) and asks before it runs.
  Ids are unique across the registry (a test checks it).
- Everything a user sees of the keys is derived from these tables and nothing else: the Textual
  ``BINDINGS`` of the app, screens and widgets (:func:`bindings`, :func:`app_bindings`,
  :func:`move_bindings`, the subject fallbacks), the footer's pinned keys (:data:`FOOTER_PINNED`),
  the help screen (:func:`help_groups`), the command palette's key entries (:data:`PALETTE_KEYS`,
  :func:`in_palette`), the ``:`` commands (:data:`COMMANDS`) and the key reference
  (:func:`key_reference_markdown`, docs/keys.md).
- Custom actions (``[[custom_actions]]``) get entries of their own at start
  (:func:`custom_key_specs`, ids ``custom.<name>``), checked against the keys taken on their pane.

Order is meaning: the help and the key reference list groups in :data:`SCOPE_TITLES` order and
entries in registry order; the footer shows the pinned keys first, then the bindings' order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.binding import Binding, BindingType

from hpctui.model.action import DESTRUCTIVE, SHELL_ACTIONS, ActionKind

if TYPE_CHECKING:
    from hpctui.actions.custom import CustomActionSettings


@dataclass(frozen=True, slots=True)
class ActionSpec:
    """One key-bound action: ``id`` (stable, remappable), default ``key`` (Textual's key name),
    the Textual ``action`` it runs, its ``description`` (footer, help, palette), the group
    (``scope``: a key of :data:`SCOPE_TITLES`) and, for a cluster action, its ``kind``."""

    id: str
    key: str
    action: str
    description: str
    scope: str  # a key of SCOPE_TITLES: "global", "heatmap", "queue", "table", "links", "pods", "move"
    kind: ActionKind | None = None  # set for cluster actions (hidden in read-only mode)
    show: bool = True  # in the footer (when its widget has focus)
    key_display: str | None = None

    @property
    def refused_read_only(self) -> bool:
        """A cluster action: refused in read-only mode, confirmed before it runs."""
        return self.kind is not None

    @property
    def destructive(self) -> bool:
        """Stops or kills running work (a typed confirmation in bulk)."""
        return self.kind in DESTRUCTIVE

    def binding(self) -> Binding:
        """The Textual binding of this entry, under its id."""
        return Binding(self.key, self.action, self.description, show=self.show, id=self.id,
                       key_display=self.key_display)


KeySpec = ActionSpec  # the older name, still imported by the widgets


def _act(id_: str, key: str, kind: ActionKind, description: str, scope: str) -> ActionSpec:
    return ActionSpec(id_, key, f"request_action('{kind.value}')", description, scope, kind=kind)


GLOBAL_KEYS: tuple[ActionSpec, ...] = (
    ActionSpec("app.quit", "q", "quit", "Quit", "global"),
    ActionSpec("app.help", "question_mark", "help", "Help", "global", key_display="?"),
    ActionSpec("app.theme", "t", "cycle_theme", "Theme", "global"),
    ActionSpec("app.refresh", "r", "refresh_now", "Refresh", "global"),
    ActionSpec("app.report", "E", "export_report", "Incident report", "global", show=False),
)
# Triage: views of the middle-left slot and the problem walk; app-wide, so they work from
# every pane (a focused filter input keeps its own letters).
TRIAGE_KEYS: tuple[ActionSpec, ...] = (
    ActionSpec("app.problems", "p", "show_view('problems')", "Problems", "global"),
    ActionSpec("app.events", "e", "show_view('events')", "Events", "global"),
    ActionSpec("app.jobs", "J", "show_view('queue')", "Jobs", "global", show=False),
    ActionSpec("app.next_problem", "n", "next_problem(1)", "Next problem", "global"),
    ActionSpec("app.prev_problem", "N", "next_problem(-1)", "Prev problem", "global", show=False),
    ActionSpec("app.goto", "g", "go_to", "Go to", "global"),
    ActionSpec("app.command", "colon", "command_mode", "Command", "global", show=False, key_display=":"),
    ActionSpec("app.workload", "w", "workload_here", "Jobs/pods here", "global", show=False),
)
HEATMAP_KEYS: tuple[ActionSpec, ...] = (
    ActionSpec("heatmap.metric", "m", "cycle_metric", "Metric", "heatmap"),
    ActionSpec("heatmap.mark", "space", "toggle_mark", "Mark", "heatmap"),
    ActionSpec("heatmap.clear", "escape", "clear_marks", "Unmark all", "heatmap", show=False),
)
# visuals: heatmap grouping/zoom and the per-GPU chart screen (heatmap scope)
HEATMAP_VIEW_KEYS: tuple[ActionSpec, ...] = (
    ActionSpec("heatmap.charts", "v", "open_charts", "Charts", "heatmap", show=False),
    ActionSpec("heatmap.group", "o", "cycle_group", "Group by", "heatmap", show=False),
    ActionSpec("heatmap.zoom", "z", "toggle_zoom", "Zoom group", "heatmap", show=False),
    ActionSpec("heatmap.problems_first", "P", "toggle_problems_first", "Problems first", "heatmap", show=False),
    ActionSpec("heatmap.history", "H", "open_history", "Node history", "heatmap", show=False),
)
NODE_ACTION_KEYS: tuple[ActionSpec, ...] = (
    _act("node.drain", "d", ActionKind.DRAIN_NODES, "Drain", "heatmap"),
    _act("node.resume", "u", ActionKind.RESUME_NODES, "Resume", "heatmap"),
    _act("node.reboot", "b", ActionKind.REBOOT_NODES, "Reboot", "heatmap"),
    ActionSpec("node.cancel_reboot", "B", "request_action('cancel_reboot')", "Cancel reboot", "heatmap",
            kind=ActionKind.CANCEL_REBOOT, show=False),
    _act("node.cordon", "c", ActionKind.CORDON_NODES, "Cordon", "heatmap"),
    _act("node.uncordon", "C", ActionKind.UNCORDON_NODES, "Uncordon", "heatmap"),
    ActionSpec("node.k8s_drain", "D", "request_action('k8s_drain')", "K8s drain (evict pods)", "heatmap",
            kind=ActionKind.K8S_DRAIN_NODES, show=False),
    ActionSpec("node.check", "K", "request_action('check')", "Health check (DCGM, NCCL, NHC)", "heatmap",
            kind=ActionKind.HEALTH_CHECK, show=False),
)
NODE_JOB_ACTION_KEYS: tuple[ActionSpec, ...] = (
    _act("node.requeue_jobs", "R", ActionKind.REQUEUE_JOBS, "Requeue jobs here", "heatmap"),
    _act("node.cancel_jobs", "X", ActionKind.CANCEL_JOBS, "Cancel jobs here", "heatmap"),
)
TABLE_KEYS: tuple[ActionSpec, ...] = (
    ActionSpec("table.filter", "slash", "start_filter", "Filter", "table", key_display="/"),
    ActionSpec("table.sort", "o", "cycle_sort", "Sort", "table"),
    ActionSpec("table.reverse", "O", "reverse_sort", "Reverse", "table", show=False),
)
QUEUE_KEYS: tuple[ActionSpec, ...] = (
    ActionSpec("queue.detail", "enter", "show_detail", "Details", "queue"),
    ActionSpec("queue.mark", "space", "toggle_mark", "Mark", "queue"),
    ActionSpec("queue.clear", "escape", "clear_marks", "Unmark all", "queue", show=False),
)
JOB_ACTION_KEYS: tuple[ActionSpec, ...] = (
    _act("job.requeue", "R", ActionKind.REQUEUE_JOBS, "Requeue", "queue"),
    _act("job.requeuehold", "H", ActionKind.REQUEUE_HOLD_JOBS, "Requeue+hold", "queue"),
    _act("job.hold", "z", ActionKind.HOLD_JOBS, "Hold", "queue"),
    _act("job.release", "Z", ActionKind.RELEASE_JOBS, "Release", "queue"),
    _act("job.cancel", "x", ActionKind.CANCEL_JOBS, "Cancel", "queue"),
)
POD_KEYS: tuple[ActionSpec, ...] = (
    ActionSpec("pod.describe", "enter", "pod_detail('describe')", "Describe", "pods"),
    ActionSpec("pod.logs", "L", "pod_logs", "Logs", "pods"),
    _act("pod.delete", "ctrl+d", ActionKind.DELETE_PODS, "Delete", "pods"),
)
# Logs (issue 26): k9s's `l` is taken by cursor-right in every pane here, so logs are `L` everywhere.
JOB_LOG_KEYS: tuple[ActionSpec, ...] = (
    ActionSpec("job.logs", "L", "job_logs", "Output", "queue"),
)
NODE_LOG_KEYS: tuple[ActionSpec, ...] = (
    ActionSpec("node.logs", "L", "node_logs", "Kernel/journal log", "heatmap", show=False),
)
# inside the log viewer (hpctui.ui.screens.log_viewer)
LOG_VIEW_KEYS: tuple[ActionSpec, ...] = (
    ActionSpec("logs.follow", "f", "toggle_follow", "Follow", "logs"),
    ActionSpec("logs.search", "slash", "start_search", "Search", "logs", key_display="/"),
    ActionSpec("logs.stream", "o", "toggle_stream", "stdout/stderr", "logs"),
    ActionSpec("logs.container", "c", "next_container", "Container", "logs"),
    ActionSpec("logs.previous", "p", "toggle_previous", "Previous container", "logs"),
    ActionSpec("logs.window", "w", "cycle_window", "Time window", "logs"),
    ActionSpec("logs.units", "u", "edit_units", "Units", "logs"),
    ActionSpec("logs.close", "escape", "close", "Close", "logs", key_display="esc"),
)
LINKS_KEYS: tuple[ActionSpec, ...] = (
    ActionSpec("links.scope", "a", "toggle_scope", "Node/all", "links"),
)
# The :idle view (hpctui.ui.screens.idle): idle allocated GPUs; job actions through the one dialog.
IDLE_KEYS: tuple[ActionSpec, ...] = (
    ActionSpec("idle.nodes", "enter", "select_nodes", "Go to nodes", "idle"),
    ActionSpec("idle.mark", "space", "mark", "Mark", "idle"),
    ActionSpec("idle.mode", "a", "cycle_mode", "Job/user/account", "idle"),
    ActionSpec("idle.requeue", "R", "job_action('requeue')", "Requeue job", "idle", kind=ActionKind.REQUEUE_JOBS),
    ActionSpec("idle.cancel", "x", "job_action('cancel')", "Cancel job", "idle", kind=ActionKind.CANCEL_JOBS),
    ActionSpec("idle.notify", "m", "notify_owner", "Notify owner", "idle"),
)
# The MIG reconfiguration wizard on the marked nodes (hpctui.ui.screens.mig_wizard).
MIG_KEYS: tuple[ActionSpec, ...] = (
    ActionSpec("node.mig", "M", "mig_wizard", "MIG wizard", "heatmap", kind=ActionKind.MIG_RECONFIGURE,
            show=False),
)
# layout: walk the panes (the narrow layout's tabs; in a wide terminal, focus moves).
LAYOUT_KEYS: tuple[ActionSpec, ...] = (
    ActionSpec("app.next_view", "right_square_bracket", "next_tab(1)", "Next view", "global", key_display="]"),
    ActionSpec("app.prev_view", "left_square_bracket", "next_tab(-1)", "Prev view", "global", show=False,
            key_display="["),
)
# vi movement (k9s, htop): the same ids in every pane, so one keymap line moves them all.
# ``action`` is a placeholder: each widget binds the ids to its own move (see ``move_bindings``).
MOVE_KEYS: tuple[ActionSpec, ...] = (
    ActionSpec("move.down", "j", "down", "Cursor down", "move", show=False),
    ActionSpec("move.up", "k", "up", "Cursor up", "move", show=False),
    ActionSpec("move.left", "h", "left", "Cursor left / scroll left", "move", show=False),
    ActionSpec("move.right", "l", "right", "Cursor right / scroll right", "move", show=False),
)
# View stack (k9s): enter drills down, escape goes back one level.
STACK_KEYS: tuple[ActionSpec, ...] = (
    ActionSpec("stack.back", "escape", "stack_back", "Back", "move", show=False, key_display="esc"),
)
# Interactive shells (k9s's `s`): ssh to the cursor node, srun into the cursor job, kubectl exec into the
# cursor pod (hpctui.actions.shells). One target: the cursor row, never the marks.
NODE_SHELL_KEYS = (ActionSpec("node.shell", "s", "open_shell", "Shell (ssh)", "heatmap", kind=ActionKind.SHELL_NODE,
                               show=False),)
JOB_SHELL_KEYS = (ActionSpec("job.shell", "s", "open_shell", "Shell in job (srun)", "queue", kind=ActionKind.SHELL_JOB,
                              show=False),)
POD_SHELL_KEYS = (ActionSpec("pod.shell", "s", "open_shell", "Shell (exec)", "pods", kind=ActionKind.SHELL_POD,
                              show=False),)
SHELL_KEYS: tuple[ActionSpec, ...] = NODE_SHELL_KEYS + JOB_SHELL_KEYS + POD_SHELL_KEYS
# The users, reservations and scheduler views (hpctui.ui.screens.users / reservations / scheduler).
USERS_KEYS: tuple[ActionSpec, ...] = (
    ActionSpec("users.mark", "space", "toggle_row", "Mark row", "users"),
    ActionSpec("users.mark_nodes", "m", "mark_nodes", "Mark their nodes (fan-out)", "users"),
    ActionSpec("users.by_account", "a", "toggle_accounts", "By account / by user", "users"),
    ActionSpec("users.fairshare", "f", "load_fairshare", "Reload fair-share", "users"),
)
RESERVATION_KEYS: tuple[ActionSpec, ...] = (
    ActionSpec("resv.mark", "space", "toggle_row", "Mark row", "reservations"),
    ActionSpec("resv.mark_nodes", "m", "mark_nodes", "Mark its nodes", "reservations"),
    _act("resv.delete", "x", ActionKind.DELETE_RESERVATION, "Delete reservation", "reservations"),
)
SCHEDULER_KEYS: tuple[ActionSpec, ...] = (
    ActionSpec("sched.rpc_table", "v", "cycle_table", "RPCs by type / by user", "scheduler"),
)
ACTION_KEYS = NODE_ACTION_KEYS + NODE_JOB_ACTION_KEYS + JOB_ACTION_KEYS
ALL_KEYS = (GLOBAL_KEYS + TRIAGE_KEYS + HEATMAP_KEYS + NODE_ACTION_KEYS + NODE_JOB_ACTION_KEYS + TABLE_KEYS + QUEUE_KEYS
            + JOB_ACTION_KEYS + LINKS_KEYS + POD_KEYS + MOVE_KEYS + STACK_KEYS)
ALL_KEYS += MIG_KEYS
ALL_KEYS += LAYOUT_KEYS  # layout
ALL_KEYS += HEATMAP_VIEW_KEYS  # visuals
ALL_KEYS += IDLE_KEYS  # the :idle view
ALL_KEYS += SHELL_KEYS  # shells
ALL_KEYS += JOB_LOG_KEYS + NODE_LOG_KEYS + LOG_VIEW_KEYS  # logs
ALL_KEYS += USERS_KEYS + RESERVATION_KEYS + SCHEDULER_KEYS  # users, reservations, scheduler views

SCOPE_TITLES = {
    "global": "Everywhere", "heatmap": "Node heatmap", "table": "Tables",
    "queue": "Slurm queue", "links": "IB links / mounts", "pods": "K8s pods", "logs": "Log viewer",
    "move": "Moving (every pane and detail view)", "idle": "Idle GPUs (:idle)",
    "users": ":users view", "reservations": ":reservations view", "scheduler": ":scheduler view",
}

BY_ID: dict[str, ActionSpec] = {spec.id: spec for spec in ALL_KEYS}

# The footer's first keys, in this order, at every width and with any pane focused (htop's rule):
# help, the triage walk (next problem, the problem list, go to a node), quit.
FOOTER_PINNED: tuple[str, ...] = ("app.help", "app.next_problem", "app.problems", "app.goto", "app.quit")

# App-wide keys the command palette (ctrl+p) offers by name, in this order: (id, title, help).
PALETTE_KEYS: tuple[tuple[str, str, str], ...] = (
    ("app.refresh", "Refresh now", "Poll every source now"),
    ("app.goto", "Go to…", "Select a node, job, pod or hostlist by name"),
    ("app.help", "Keys", "Every key and command"),
)


def in_palette(binding_id: str | None) -> bool:
    """Whether the palette lists a focused pane's binding by its description: a registry key
    of a pane (not an app-wide key, nor a cursor move: those have entries or need none)."""
    spec = BY_ID.get(binding_id) if binding_id is not None else None
    return spec is not None and spec.scope not in ("global", "move")


def help_groups(actions_enabled: bool = True) -> list[tuple[str, tuple[ActionSpec, ...]]]:
    """The keys as the help screen lists them: (group title, entries) in :data:`SCOPE_TITLES`
    order, entries in registry order; without ``actions_enabled`` (read-only) no cluster action."""
    groups = []
    for scope, title in SCOPE_TITLES.items():
        specs = tuple(k for k in ALL_KEYS if k.scope == scope and (actions_enabled or not k.refused_read_only))
        if specs:
            groups.append((title, specs))
    return groups


# -- `:` commands (k9s) ----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Command:
    """One ``:`` command: what it opens (a dashboard pane, or a Screen by module and class name,
    imported lazily so a view not built yet is "not available", never an import error), its
    aliases, and what its argument names (``cluster``), for completion and help."""

    name: str
    description: str
    pane: str | None = None  # a key of dashboard.PANES
    screen: tuple[str, str] | None = None  # (module, class) of a Screen taking the runtime
    aliases: tuple[str, ...] = ()
    arg: str | None = None  # what the argument names ("cluster"; "filters": key=value pairs), for completion and help

    @property
    def usage(self) -> str:
        """``:quit/:q``, ``:cluster NAME``: how the help writes it."""
        what = "" if not self.arg else " NAME" if self.arg == "cluster" else f" [{self.arg.upper()}]"
        return ":" + "/:".join((self.name, *self.aliases)) + what


COMMANDS: tuple[Command, ...] = (
    Command("nodes", "Node heatmap", pane="heatmap", aliases=("heatmap",)),
    Command("jobs", "Slurm queue", pane="queue", aliases=("queue",)),
    Command("pods", "Kubernetes pods", pane="pods"),
    Command("ib", "InfiniBand links", pane="ib"),
    Command("mounts", "Filesystem mounts", pane="mounts"),
    Command("events", "Event and action timeline", pane="events"),
    Command("problems", "Findings of warning and worse", pane="problems"),
    Command("gpus", "Every GPU as a table", screen=("hpctui.ui.screens.gpus", "GpusScreen")),
    Command("charts", "History charts", screen=("hpctui.ui.screens.charts", "ChartsScreen")),
    Command("audit", "Audit trail of actions", screen=("hpctui.ui.screens.audit", "AuditScreen")),
    Command("partitions", "Slurm partitions", screen=("hpctui.ui.screens.partitions", "PartitionsScreen")),
    Command("drained", "Drained nodes: who, when, why", screen=("hpctui.ui.screens.drained", "DrainedScreen")),
    Command("idle", "Idle allocated GPUs by job, user, account", screen=("hpctui.ui.screens.idle", "IdleScreen")),
    Command("history", "Repeat-offender nodes (30 days); enter: a node's history",
            screen=("hpctui.ui.screens.history", "OffendersScreen"), aliases=("offenders",)),
    Command("sacct", "Accounting: jobs of a window (since=1d user= account= nodes= state=), exit codes decoded",
            screen=("hpctui.ui.screens.history", "AcctJobsScreen"), arg="filters"),
    Command("gpuhours", "GPU-hours per account and user, 7 days (sreport)",
            screen=("hpctui.ui.screens.history", "GpuHoursScreen")),
    Command("users", "Users and accounts: GPUs running/pending, why they wait, fair-share",
            screen=("hpctui.ui.screens.users", "UsersScreen")),
    Command("reservations", "Slurm reservations: nodes, times, flags, users",
            screen=("hpctui.ui.screens.reservations", "ReservationsScreen"), aliases=("resv",)),
    Command("scheduler", "slurmctld statistics (sdiag): threads, agent queue, RPCs, backfill, trends",
            screen=("hpctui.ui.screens.scheduler", "SchedulerScreen"), aliases=("sdiag",)),
    Command("mig", "MIG layout wizard", screen=("hpctui.ui.screens.mig_wizard", "MigWizardScreen")),
    Command("cluster", "Switch to another configured cluster", arg="cluster"),
    Command("mute", "Mute or unmute notifications of new problems (this session)"),
    Command("help", "Every key and command"),
    Command("quit", "Quit (asks first while an action runs)", aliases=("q",)),
)
BY_NAME: dict[str, Command] = {n: c for c in COMMANDS for n in (c.name, *c.aliases)}


# -- the key reference (docs/keys.md) ----------------------------------------------------------
def _md(text: str) -> str:
    """A Markdown table cell: pipes escaped, backticks kept out of code spans."""
    return text.replace("|", "\\|")


def _md_key(key: str) -> str:
    return f"`` {key} ``" if "`" in key else f"`{_md(key)}`"


def key_reference_markdown(keymap: dict[str, str] | None = None) -> str:
    """The key reference as Markdown: one table per group (key, what it does, binding id), then
    the ``:`` commands; the same entries, order and wording as the help screen."""
    out = ["# Keys", "",
           "Generated from the action registry (`hpctui.ui.registry`). Remap any key by its id in",
           "`[keymap]` (e.g. `\"node.drain\" = \"ctrl+d\"`). Cluster actions ask before they run and",
           "are disabled in read-only mode.", ""]
    for title, specs in help_groups(actions_enabled=True):
        out += [f"## {title}", "", "| key | action | id |", "|---|---|---|"]
        for spec in specs:
            note = (" (audited, opens at once: see Shells)" if spec.kind in SHELL_ACTIONS
                    else " (confirms first)" if spec.refused_read_only else "")
            out.append(f"| {_md_key(display_key(spec, keymap))} | {_md(spec.description + note)} | `{spec.id}` |")
        out.append("")
    out += ["## `:` commands", "", "Tab completes a command; `:cluster NAME` completes the configured names.", "",
            "| command | what |", "|---|---|"]
    out += [f"| `{_md(c.usage)}` | {_md(c.description)} |" for c in COMMANDS]
    return "\n".join(out) + "\n"


def bindings(*groups: tuple[ActionSpec, ...]) -> list[BindingType]:
    """The Textual bindings of these groups' entries, in order, under their ids."""
    return [spec.binding() for group in groups for spec in group]


def app_bindings(*groups: tuple[ActionSpec, ...]) -> list[BindingType]:
    """App-level keys re-bound on a modal screen (which hides the app's bindings)."""
    return [Binding(spec.key, f"app.{spec.action}", spec.description, show=False, id=f"modal.{spec.id}")
            for group in groups for spec in group]


def move_bindings(down: str, up: str, left: str, right: str) -> list[BindingType]:
    """j/k/h/l bound to a widget's own moves, under the shared ``move.*`` ids."""
    actions = {"move.down": down, "move.up": up, "move.left": left, "move.right": right}
    return [Binding(spec.key, actions[spec.id], spec.description, show=False, id=spec.id) for spec in MOVE_KEYS]


def display_key(spec: ActionSpec, keymap: dict[str, str] | None = None) -> str:
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


def custom_key_specs(actions: Sequence[CustomActionSettings]) -> tuple[ActionSpec, ...]:
    """One ActionSpec per custom action with a key; CustomKeyError if the key is already taken on its
    pane (its own keys, the table keys, the app-wide keys, cursor keys) or by another custom action."""
    specs: list[ActionSpec] = []
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
        specs.append(ActionSpec(f"custom.{action.name}", key, f"app.run_custom_action('{action.name}')",
                             action.description or action.name, pane, show=False))
    return tuple(specs)
