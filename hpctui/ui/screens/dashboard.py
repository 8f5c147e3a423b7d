"""The one dashboard screen: every pane, fed top-down from a snapshot.

The screen is the only place that knows all panes; it pushes each new frame
(hpctui.core.frame) down and routes the heatmap's cursor to the panes that follow the selected
node (the heatmap calls the screen's ``cursor_listener`` as the cursor moves, so they are drawn in
the same screen update; its Highlighted message follows for everyone else). Panes never talk to
each other.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.dom import DOMNode
from textual.reactive import Reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import ContentSwitcher

from hpctui.core.frame import Frame
from hpctui.core.ports import UiPort
from hpctui.model import ClusterSnapshot, Gpu, Part, Pod, SlurmJob
from hpctui.ui.breadcrumb import Breadcrumb
from hpctui.ui.fmt import k8s_queue_summary
from hpctui.ui.keys import LAYOUT_KEYS, STACK_KEYS, bindings
from hpctui.ui.labels import classic_label
from hpctui.ui.messages import NodeRequested
from hpctui.ui.subject import Subject, job_nodes
from hpctui.ui.widgets.borders import set_border_text
from hpctui.ui.widgets.column_fit import TABLE_FITS
from hpctui.ui.widgets.events import EventsPane
from hpctui.ui.widgets.footer import KeyBar
from hpctui.ui.widgets.gpu_panel import GpuPanel
from hpctui.ui.widgets.heatmap_legend_pane import HeatmapPane
from hpctui.ui.widgets.node_heatmap import NodeHeatmap
from hpctui.ui.widgets.panes import ScopedPane, TablePane, ib_node_rows, mount_node_rows
from hpctui.ui.widgets.problems import ProblemsPane
from hpctui.ui.widgets.status import StatusLine, controller_summary, part_status, status_content
from hpctui.ui.widgets.tabbar import TAB_NAMES, TabBar
from hpctui.ui.widgets.tables import (
    LinkRow,
    MountRow,
    QueueTable,
    link_table,
    mount_table,
    pod_table,
    pod_trouble_first,
)
from hpctui.ui.widgets.vtable import VirtualTable

# What fills a pane, for the title of a pane no configured source provides.
FILLED_BY = {Part.SLURM_JOBS: ("Slurm jobs", "a `slurm`"), Part.PODS: ("Kubernetes pods", "a `k8s`"),
             Part.IB: ("InfiniBand data", "an `ssh` or `prometheus`"), Part.MOUNTS: ("mount data", "an `ssh`")}


def no_source_note(snapshot: ClusterSnapshot, part: Part) -> str:
    """'no source provides InfiniBand data — add an `ssh` or `prometheus` source', or ''."""
    if part in FILLED_BY and not snapshot.part_sources.get(part.value):
        what, kinds = FILLED_BY[part]
        return f"no source provides {what} — add {kinds} source"
    return ""


# The middle-left slot shows one of these (keys p / e / j); --wall starts on Problems.
VIEWS = {"queue": "queue-pane", "problems": "problems-pane", "events": "events-pane"}
# Every pane of the dashboard by view name (`show_view` accepts all of them): the contract
# that `:` commands, the narrow layout's tab bar and the wall rotation all use.
PANES = {"heatmap": "heatmap-pane", **VIEWS, "pods": "pods-pane", "ib": "ib-pane", "mounts": "mounts-pane"}

# -- responsive layout ----------------------------------------------------------------------
# Below NARROW_BELOW columns one pane at a time, full size, under a tab bar; the tabs are
# the PANES plus "node" (the selected node's panel, every GPU). Wider, every pane is on
# screen: the top row is only as tall as the heatmap (or the node panel) needs, and the
# heatmap pane as wide as its node labels need (see fit_top).
NARROW_BELOW = 100
TAB_SLOTS = {  # tab -> (row id, id of the widget shown in that row)
    "heatmap": ("top", "heatmap-pane"), "node": ("top", "gpu-panel"), "queue": ("middle", "views"),
    "problems": ("middle", "views"), "events": ("middle", "views"), "pods": ("middle", "pods-pane"),
    "ib": ("bottom", "ib-pane"), "mounts": ("bottom", "mounts-pane"),
}
LEGEND_CELLS = 115  # the heatmap legend's length in cells (packed into lines of the pane's width)
LABEL_CELL = 5  # heatmap cell width that shows node numbers (hpctui.ui.widgets.node_heatmap.LABEL_MIN_WIDTH)


def fit_top(width: int, main_height: int, nodes: int, max_gpus: int, *, wall: bool = False) -> tuple[int, int]:
    """(top row height, heatmap pane width) in cells for the wide layout.

    The heatmap pane is as wide as its nodes need to show labelled cells in the top row's
    default height (between 30 % and 55 % of the width; 45-70 % on a wall); the top row
    is no taller than the heatmap and the node panel need, so the tables below get the
    rest instead of a block of empty heatmap rows."""
    share = 4 / 6 if wall else 3 / 6
    default_h = max(8, int(main_height * share))
    lo, hi = (0.45, 0.70) if wall else (0.30, 0.55)
    n = max(1, nodes)
    heat_w = int(width * lo)
    for _ in range(3):  # the legend takes more lines in a narrower pane: settle in a few steps
        legend = min(4, -(-LEGEND_CELLS // max(1, heat_w - 2)) + 1)
        cell_rows = max(1, default_h - 2 - legend)
        want_cols = -(-n // cell_rows)
        heat_w = max(int(width * lo), min(int(width * hi), want_cols * LABEL_CELL + 3))
    legend = min(4, -(-LEGEND_CELLS // max(1, heat_w - 2)) + 1)
    cols = max(1, (heat_w - 3) // LABEL_CELL)
    heat_h = -(-n // cols) + 2 + legend
    gpu_h = 16 + max_gpus  # state, findings, workload, the GPU table, border
    return max(8, min(default_h, max(heat_h, gpu_h))), heat_w


class DashboardScreen(Screen[None]):
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW_BELOW, "-wide")]
    # enter on an IB, mount or pod row selects its node (tables without an enter of their own)
    BINDINGS = [Binding("enter", "select_row_node", "Select node", show=False), *bindings(STACK_KEYS),
                *bindings(LAYOUT_KEYS)]
    # Textual's Screen repaints the whole screen when focus moves (focused is a repainting
    # reactive): every cell resent, ~10 KB and 30 ms per tab. What focus changes here repaints
    # itself: the pane borders (move_focus_frame), the tables' cursor (VTable.on_focus/on_blur).
    focused: Reactive[Widget | None] = Reactive(None, repaint=False)

    def __init__(self, port: UiPort, *, wall: bool = False, actions_enabled: bool = True) -> None:
        super().__init__(id="dashboard")
        self.port = port
        self.wall = wall
        self.actions_enabled = actions_enabled and not wall
        self.frame: Frame | None = None
        self.snapshot: ClusterSnapshot | None = None  # the frame's (kept: most readers want only it)
        self.selected: str | None = None
        # the subject's job and pod: the last ones named (g JOBID, the queue/pod cursor), and what
        # the last selection named ("node", "job", "pod"): see hpctui.ui.subject
        self.subject_job: SlurmJob | None = None
        self.subject_pod: Pod | None = None
        self.subject_last = "node"
        self._history_node: str | None = None  # node whose range-query history was last asked for
        self._queue_subtitle: str | None = None
        self._pods_subtitle: str | None = None
        self._pods_in: tuple[Pod, ...] | None = None
        self._pods_rows: list[Pod] = []
        self._max_gpus_of: tuple[dict[str, tuple[Gpu, ...]], int] | None = None
        self.heatmap = NodeHeatmap(port.thresholds, cell_width=3 if wall else 2,
                                   actions_enabled=self.actions_enabled,
                                   settings=port.heatmap, id="heatmap")
        self.heatmap.cursor_listener = self._follow_cursor
        self.gpu_panel = GpuPanel(id="gpu-panel")
        self.gpu_panel.checks_for = self.port.check_view
        self.queue_pane = TablePane("Slurm queue", QueueTable(actions_enabled=self.actions_enabled, clock=port.clock,
                                                              id="queue"),
                                    id="queue-pane")
        self.pods_pane = TablePane("K8s pods", pod_table(id="pods", actions_enabled=self.actions_enabled),
                                   id="pods-pane")
        self.ib_pane: ScopedPane[LinkRow] = ScopedPane("IB links", link_table(id="ib"),
                                                       ib_node_rows(), id="ib-pane")
        self.mounts_pane: ScopedPane[MountRow] = ScopedPane("Mounts", mount_table(id="mounts"),
                                                          mount_node_rows(),
                                                          id="mounts-pane")
        self.problems_pane = ProblemsPane(port.thresholds, port=port, id="problems-pane")
        self.events_pane = EventsPane(load_history=port.audit_history, id="events-pane")
        self.view = "problems" if wall else "queue"
        self.drill: list[tuple[str, str]] = []  # view stack inside the dashboard: (from pane, node), enter/esc
        self.tab = "heatmap"  # the pane the narrow layout shows (and the tab bar highlights)
        self._top_fit: tuple[int, int, int, int, bool] | None = None
        self._heat_height: int | str = "1fr"
        self._shown: set[str] = set()  # ids of the widgets the current tab shows
        for table_id, fit in TABLE_FITS.items():
            table = {"queue": self.queue_pane, "pods": self.pods_pane, "ib": self.ib_pane,
                     "mounts": self.mounts_pane, "problems": self.problems_pane,
                     "events": self.events_pane}[table_id].table
            table.column_fit = fit
        if wall:
            self.add_class("-wall")

    def compose(self) -> ComposeResult:
        with Horizontal(id="status-row"):
            yield StatusLine("starting…", id="status", markup=False)
        yield Breadcrumb(id="breadcrumb")
        yield TabBar(id="tabs")
        with Vertical(id="main"):
            with Horizontal(id="top", classes="row"):
                yield HeatmapPane(self.heatmap, id="heatmap-pane")
                yield self.gpu_panel
            with Horizontal(id="middle", classes="row"):
                with ContentSwitcher(initial=VIEWS[self.view], id="views"):
                    yield self.queue_pane
                    yield self.problems_pane
                    yield self.events_pane
                yield self.pods_pane
            with Horizontal(id="bottom", classes="row"):
                yield self.ib_pane
                yield self.mounts_pane
        yield KeyBar()

    def on_mount(self) -> None:
        self.heatmap.focus()
        self._apply_tab()

    # -- responsive layout ----------------------------------------------------
    @property
    def narrow(self) -> bool:
        return 0 < self.size.width < NARROW_BELOW

    def on_resize(self) -> None:
        self._apply_tab()
        self._fit_panes()

    def _apply_tab(self) -> None:
        """Mark the current tab's row and widget (the narrow CSS shows only those)."""
        row_id, widget_id = TAB_SLOTS[self.tab]
        narrow = self.narrow
        shown = {widget_id}
        heat_h = self._narrow_heatmap_height() if narrow and self.tab == "heatmap" else None
        if heat_h is not None:  # room to spare under the heatmap: the node's panel too
            shown.add("gpu-panel")
        self._shown = shown
        heat_height = heat_h if heat_h is not None else "1fr"
        if heat_height != self._heat_height:  # runs on every snapshot: restyle only on change
            self._heat_height = heat_height
            self.query_one(HeatmapPane).styles.height = heat_height
        # Only the narrow CSS reads -current; when wide, keep the classes true but skip the
        # restyle (it walks every row's whole subtree: ~40 ms a focus change). Turning narrow
        # restyles the whole screen (the -narrow breakpoint class) with these classes in place.
        for rid in ("top", "middle", "bottom"):
            self.query_one(f"#{rid}").set_class(rid == row_id, "-current", update=narrow)
        for wid in ("heatmap-pane", "gpu-panel", "views", "pods-pane", "ib-pane", "mounts-pane"):
            self.query_one(f"#{wid}").set_class(wid in shown, "-current", update=narrow)
        if self.gpu_panel.gpus_first != narrow:
            self.gpu_panel.gpus_first = narrow
            self.gpu_panel.redraw()
        self.query_one(TabBar).show(self.tab, self._badges())

    def _narrow_heatmap_height(self) -> int | None:
        """Rows the heatmap tab's heatmap needs (labelled cells, legend, border) when that
        leaves at least 8 rows for the node panel under it; None when it does not."""
        nodes = len(self.heatmap.names)
        if not nodes:
            return None
        main_h = self.size.height - 3  # status line, tab bar, footer
        cols = max(1, (self.size.width - 3) // LABEL_CELL)
        legend = min(4, -(-LEGEND_CELLS // max(1, self.size.width - 2)) + 1)
        height = -(-nodes // cols) + 2 + legend
        return height if main_h - height >= 8 else None

    def _badges(self) -> dict[str, str]:
        badges = {"node": classic_label(self.selected)} if self.selected else {}
        if self.problems_pane.nodes:
            badges["problems"] = str(len(self.problems_pane.nodes))
        return badges

    def _fit_panes(self) -> None:
        """Wide layout: size the top row and the heatmap pane to what they show (fit_top)."""
        top = self.query_one("#top")
        pane = self.query_one(HeatmapPane)
        if self.narrow:
            if self._top_fit is not None:
                self._top_fit = None
                top.styles.height = "1fr"
                pane.styles.width = "1fr"
            return
        snap = self.snapshot
        nodes = len(self.heatmap.names)
        max_gpus = self._max_gpus(snap)
        key = (self.size.width, self.size.height, nodes, max_gpus, self.wall)
        if key == self._top_fit:
            return
        self._top_fit = key
        main_h = self.size.height - 2  # status line and footer
        height, width = fit_top(self.size.width, main_h, nodes, max_gpus, wall=self.wall)
        top.styles.height = height
        pane.styles.width = width

    def _max_gpus(self, snap: ClusterSnapshot | None) -> int:
        """The most GPUs any node has; recounted only when the GPU part changed (16k nodes)."""
        if snap is None:
            return 8
        if self._max_gpus_of is None or self._max_gpus_of[0] is not snap.gpus:
            self._max_gpus_of = (snap.gpus, max(map(len, snap.gpus.values()), default=0))
        return self._max_gpus_of[1]

    def action_next_tab(self, step: int) -> None:
        """``]``/``[``: the next/previous pane (a tab of the narrow layout; focus when wide)."""
        i = TAB_NAMES.index(self.tab) if self.tab in TAB_NAMES else 0
        self.show_view(TAB_NAMES[(i + step) % len(TAB_NAMES)])

    @on(TabBar.Chosen)
    def _tab_chosen(self, event: TabBar.Chosen) -> None:
        self.show_view(event.name)

    def set_focus(self, widget: Widget | None, scroll_visible: bool = True, from_app_focus: bool = False) -> None:
        """Textual's, with the focus frame moved first (the app's DescendantFocus handler would
        move it after the focus events): both panes' borders, the footer's keys and the newly
        focused widget then reach the screen in one update, not two (Textual's frame timer holds
        the second 17-33 ms)."""
        frame = getattr(self.app, "frame_pane_of", None)
        if callable(frame) and widget is not None and widget.focusable and widget.is_attached:
            frame(self, widget)  # the widget Textual focuses below (set_focus takes any focusable one)
        super().set_focus(widget, scroll_visible, from_app_focus)

    def on_descendant_focus(self, event: object) -> None:
        """The tab follows focus (a click, tab, or a pane focused by a key of its own); so does
        the breadcrumb's last level."""
        self._crumbs_changed()
        widget = getattr(event, "widget", None)
        if self.narrow and any(w.id in self._shown for w in getattr(widget, "ancestors_with_self", ())):
            return  # on screen in this tab already (the node panel under a small heatmap)
        name = self._tab_of(widget)
        if name is not None and name != self.tab:
            self.tab = name
            self._apply_tab()

    def _tab_of(self, widget: object) -> str | None:
        node = widget
        while node is not None and node is not self:
            wid = getattr(node, "id", None)
            if wid == "views":
                return self.view
            for name, (_, slot) in TAB_SLOTS.items():
                if slot == wid and slot != "views":
                    return name
            node = getattr(node, "parent", None)
        return None

    # -- data down ------------------------------------------------------------
    def show_frame(self, frame: Frame) -> None:
        """Draw a new frame in every pane (the app calls this once per data change)."""
        self.frame = frame
        snapshot = self.snapshot = frame.snapshot
        self.heatmap.update_snapshot(snapshot, frame.findings)
        self.query_one(HeatmapPane).update_title()
        if self.selected is None or not self.heatmap.knows(self.selected):
            self.selected = self.heatmap.cursor_node
        now = self.port.clock()
        self.queue_pane.data_status = part_status(snapshot, Part.SLURM_JOBS, now) or no_source_note(snapshot, Part.SLURM_JOBS)
        self.pods_pane.data_status = part_status(snapshot, Part.PODS, now) or no_source_note(snapshot, Part.PODS)
        self.ib_pane.data_status = no_source_note(snapshot, Part.IB)
        self.mounts_pane.data_status = no_source_note(snapshot, Part.MOUNTS)
        self.queue_pane.set_rows(snapshot.jobs)
        if snapshot.pods is not self._pods_in:  # same pods: the same sorted list, so the table skips it
            self._pods_in, self._pods_rows = snapshot.pods, pod_trouble_first(snapshot.pods)
        self.pods_pane.set_rows(self._pods_rows)
        self.ib_pane.show(frame, self.selected)
        self.mounts_pane.show(frame, self.selected)
        self.problems_pane.show(frame)
        self.events_pane.show(frame, self.selected)
        self._show_node()
        self.update_status()
        self._fit_panes()
        self._apply_tab()

    def update_health(self, frame: Frame) -> None:
        """Same data, new source health (an error, a retry): status line and pane markers only."""
        self.frame = frame
        self.snapshot = frame.snapshot
        self.update_status()

    def update_status(self) -> None:
        if self.snapshot is None or getattr(self.app, "shutting_down", False):
            return
        port = self.port
        content = status_content(self.snapshot.cluster, self.snapshot.sources, port.clock(), port.poll_intervals(),
                                 port.thresholds, read_only=port.read_only or self.wall, wall=self.wall,
                                 subject="" if self.wall else self.subject().text())
        self.query_one(StatusLine).show(content)
        now = port.clock()
        ctl_marker = part_status(self.snapshot, Part.CONTROLLER, now)  # sdiag failing: don't claim "ok"
        subtitle = ctl_marker or controller_summary(self.snapshot.controller)
        if subtitle != self._queue_subtitle:  # a new subtitle repaints the whole pane: only on change
            self._queue_subtitle = subtitle
            set_border_text(self.queue_pane, Content(subtitle), subtitle=True)
        queues = k8s_queue_summary(self.snapshot.k8s_queues)
        if queues != self._pods_subtitle:  # Kueue/Volcano queues under the pods they schedule
            self._pods_subtitle = queues
            set_border_text(self.pods_pane, Content(queues), subtitle=True)
        for pane, part in ((self.queue_pane, Part.SLURM_JOBS), (self.pods_pane, Part.PODS)):
            marker = part_status(self.snapshot, part, now) or no_source_note(self.snapshot, part)
            if marker != pane.data_status:
                pane.data_status = marker
                pane.update_title()

    def _show_node(self) -> None:
        if self.frame is not None:
            self.gpu_panel.show(self.frame, self.selected, self.port.thresholds, self.port.node_history)
            if self.selected is not None and self.selected != self._history_node:
                self._history_node = self.selected
                self.port.watch_series(self.selected)  # big clusters: chart what was looked at
                self._load_history(self.selected)

    def _load_history(self, node: str) -> None:
        """Ask a metrics source (Prometheus) for the node's history: a range query, off the draw path."""
        if self.port.history_source is not None:
            self.run_worker(self._fetch_history(node), group="node-history", exclusive=True)

    async def _fetch_history(self, node: str) -> None:
        try:
            hist = await self.port.history(node, "util")
        except Exception as exc:  # a failed range query costs the chart, never the panel
            self.gpu_panel.show_history(node, [], f"history: {type(exc).__name__}: {exc}"[:80])
            return
        if hist is None:
            return
        window = hist.window_text if hist.points else f"{hist.window_text}: no data"
        self.gpu_panel.show_history(node, [v for _, v in hist.points], window)

    # -- messages up ----------------------------------------------------------
    # -- the subject: what every node/job key acts on, wherever focus is --------------
    def subject(self) -> Subject:
        """Marked nodes, else the selected node; the last job and pod named."""
        marked = self.heatmap.marked_nodes
        nodes = marked or ((self.selected,) if self.selected else ())
        return Subject(nodes=nodes, marked=bool(marked), job=self.subject_job, pod=self.subject_pod,
                       last=self.subject_last)

    def name_job(self, job: SlurmJob | None) -> None:
        """The last selection named ``job`` (g JOBID, the queue cursor)."""
        self.subject_job = job
        self.subject_last = "job" if job is not None else self.subject_last
        self.update_status()

    @on(VirtualTable.Highlighted)
    def _row_highlighted(self, event: VirtualTable.Highlighted) -> None:
        """The queue's or the pod table's cursor moved (by the user: it has focus): its row is named."""
        table = event.table
        if not table.has_focus:
            return
        if table is self.queue_pane.table and isinstance(table.cursor_row, SlurmJob):
            self.name_job(table.cursor_row)
        elif table is self.pods_pane.table and isinstance(table.cursor_row, Pod):
            self.subject_pod = table.cursor_row
            self.subject_last = "pod"
            self.update_status()

    @on(NodeHeatmap.Highlighted)
    def _node_highlighted(self, event: NodeHeatmap.Highlighted) -> None:
        self._follow_cursor(event.node)  # (the cursor's own moves were followed already: a no-op then)

    def _follow_cursor(self, node: str | None) -> None:
        """The heatmap's cursor is on ``node``: the panes that follow the selected node follow it."""
        if node == self.selected:
            return
        self.selected = node
        job = self.subject_job
        if self.subject_last != "node" and not (job is not None and node in job_nodes(job)):
            self.subject_last = "node"  # a node of its own: no longer the named job's
        self.update_status()
        self._show_node()
        if self.narrow:
            self.query_one(TabBar).show(self.tab, self._badges())
        if self.snapshot is not None:
            if not self.ib_pane.scope_all:
                self.ib_pane.show(None, self.selected)
            else:
                self.ib_pane.node = self.selected
            if not self.mounts_pane.scope_all:
                self.mounts_pane.show(None, self.selected)
            else:
                self.mounts_pane.node = self.selected
            if not self.events_pane.scope_all:
                self.events_pane.show(None, self.selected)
            else:
                self.events_pane.node = self.selected

    # -- triage ---------------------------------------------------------------
    def show_view(self, name: str, focus: bool = True) -> None:
        """Show the pane ``name`` (a key of PANES, or "node": the node panel) and focus it: the
        queue, problem list and event timeline share the middle-left slot; in a narrow
        terminal it becomes the one pane on screen (its tab)."""
        self.tab = name
        if name in VIEWS:
            self.view = name
            self.query_one("#views", ContentSwitcher).current = VIEWS[name]
        self._apply_tab()
        if focus:
            if name == "heatmap":
                self.set_focus(self.heatmap)
            elif name == "node":
                self.set_focus(self.gpu_panel)
            else:
                self.set_focus(self.query_one(f"#{PANES[name]}", TablePane).table)

    def show_pane(self, pane: TablePane) -> None:
        """Make ``pane`` visible (for panes that share the middle-left slot)."""
        for name, pane_id in VIEWS.items():
            if pane.id == pane_id:
                self.show_view(name, focus=False)

    def select_node(self, node: str) -> bool:
        """Select ``node`` everywhere: the heatmap cursor moves, the panes follow."""
        if not self.heatmap.select(node):
            self.notify(f"{node}: not in the node list", severity="warning", timeout=2, markup=False)
            return False
        return True

    def next_problem(self, step: int) -> None:
        # (a file system's group, "fs/<fs>/<target>" findings, is listed but not a node to select)
        nodes = [n for n in self.problems_pane.nodes if self.heatmap.knows(n)]
        node = self.problems_pane.walk.next(nodes, self.heatmap.cursor_node, step)
        if node is None:
            self.notify("no problems of warning or worse", timeout=2)
            return
        self.select_node(node)
        self.problems_pane.problems.point_at(node)

    def go_to(self, text: str | None) -> None:
        """Select what ``g`` named: a node; a job (its first node, and its detail opens);
        a pod (its node); a hostlist (its nodes marked, the first selected)."""
        if not text or self.snapshot is None:
            return
        from hpctui.ui.screens.goto import resolve

        target = resolve(self.snapshot, self.heatmap.knows, text)
        if target.error is not None:
            self.notify(target.error, severity="warning", timeout=3)
            return
        if len(target.nodes) > 1 and target.job is None:  # a hostlist: mark it (a job's nodes are not
            if self.heatmap.marked:                       # marked: marks are action targets)
                self.heatmap.clear_marks()
            for node in target.nodes:
                self.heatmap.select(node)
                self.heatmap.action_toggle_mark()
        if target.nodes:
            self.select_node(target.nodes[0])
        if target.job is not None:
            from hpctui.ui.messages import JobDetailRequested

            self.name_job(target.job)
            self.post_message(JobDetailRequested(target.job))
        elif target.pod is not None:
            self.subject_pod = target.pod
            self.subject_last = "pod"
            self.update_status()
            self.notify(f"pod {target.pod.namespace}/{target.pod.name} on {target.pod.node or 'no node'}", timeout=3,
                        markup=False)

    def workload_here(self) -> None:
        """``w`` / ``enter`` on a node: the selected node's jobs and pods as rows (the queue and
        pod filters set to the node; a job on ``gpu[0002-0005]`` matches ``gpu0003``), the queue
        focused. A level of the view stack: ``esc`` goes back to the heatmap."""
        node = self.selected
        if node is None:
            return
        if not self.drill or self.drill[-1][1] != node:
            self.drill.append((self.pane_name(), node))
        from hpctui.ui.widgets.panes import FilterInput

        for pane in (self.queue_pane, self.pods_pane):
            box = pane.query_one(FilterInput)
            box.remove_class("-hidden")
            box.value = node
            pane.table.set_filter(node)
            pane.update_title()
        self.show_view("queue")

    @on(NodeHeatmap.ChartsRequested)
    def _charts_requested(self, event: NodeHeatmap.ChartsRequested) -> None:
        """``v``: the selected node's per-GPU and per-port history (hpctui.ui.screens.charts)."""
        from hpctui.ui.screens.charts import ChartsScreen

        self.app.push_screen(ChartsScreen(self.port, node=event.node))

    @on(NodeHeatmap.HistoryRequested)
    def _history_requested(self, event: NodeHeatmap.HistoryRequested) -> None:
        """``H``: the selected node's drains, resumes, cordons and dead jobs (hpctui.ui.screens.history)."""
        if event.node is None:
            return
        from hpctui.ui.screens.history import NodeHistoryScreen

        self.app.push_screen(NodeHistoryScreen(self.port, event.node))

    @on(NodeRequested)
    def _node_requested(self, event: NodeRequested) -> None:
        event.stop()
        self.select_node(event.node)

    # -- view stack (k9s): enter drills down, esc goes back ----------------------
    def pane_name(self) -> str:
        """The focused pane as a `:` command names it (nodes, jobs, pods, ib, …)."""
        node: DOMNode | None = self.focused
        while node is not None and node is not self:
            for name, pane_id in PANES.items():
                if node.id == pane_id or (name == "heatmap" and node is self.heatmap):
                    return {"heatmap": "nodes", "queue": "jobs"}.get(name, name)
            node = node.parent
        return "nodes"

    def stack_levels(self) -> list[str]:
        levels = [part for view, node in self.drill for part in (view, node)]
        return [*levels, self.pane_name()]

    def action_stack_back(self) -> None:
        """esc: undo the last drill-down (the node filters go, the pane it came from is focused)."""
        if not self.drill:
            from textual.actions import SkipAction

            raise SkipAction()
        view, node = self.drill.pop()
        from hpctui.ui.widgets.panes import FilterInput

        outer = self.drill[-1][1] if self.drill else ""  # the level below keeps its node's rows
        for pane in (self.queue_pane, self.pods_pane):
            box = pane.query_one(FilterInput)
            box.value = outer
            box.set_class(not outer, "-hidden")
            pane.table.set_filter(outer)
            pane.update_title()
        self.show_view({"nodes": "heatmap", "jobs": "queue"}.get(view, view))
        self.select_node(node)
        self._crumbs_changed()

    def _crumbs_changed(self) -> None:
        update = getattr(self.app, "update_breadcrumb", None)
        if callable(update):
            update()

    def action_select_row_node(self) -> None:
        focused = self.focused
        if focused is self.heatmap:
            if self.narrow:  # enter on a node: its panel, all GPUs (the node tab)
                self.show_view("node")
            else:  # drill down to its jobs and pods
                self.workload_here()
                self._crumbs_changed()
            return
        row = getattr(focused, "cursor_row", None)
        node = getattr(getattr(row, "port", None), "node", None) or getattr(getattr(row, "mount", None), "node", None)
        if node is None and focused is self.pods_pane.table:
            node = getattr(row, "node", None)
        if isinstance(node, str):
            self.select_node(node)
