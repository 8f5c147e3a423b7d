"""The one dashboard screen: every pane, fed top-down from a snapshot.

The screen is the only place that knows all panes; it pushes each new snapshot
down and routes the heatmap's cursor (a message up) to the panes that follow
the selected node. Panes never talk to each other.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer

from hpctui.model import ClusterSnapshot, Part, Pod
from hpctui.runtime import Runtime
from hpctui.ui.widgets.borders import set_border_text
from hpctui.ui.widgets.gpu_panel import GpuPanel
from hpctui.ui.widgets.heatmap import NodeHeatmap
from hpctui.ui.widgets.heatmap_pane import HeatmapPane
from hpctui.ui.widgets.panes import ScopedPane, TablePane, ib_node_rows, mount_node_rows
from hpctui.ui.widgets.status import StatusLine, controller_summary, part_status, status_content
from hpctui.ui.widgets.tables import (
    LinkRow,
    MountRow,
    QueueTable,
    link_table,
    mount_table,
    pod_table,
    pod_trouble_first,
)


class DashboardScreen(Screen[None]):
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]

    def __init__(self, runtime: Runtime, *, wall: bool = False, actions_enabled: bool = True) -> None:
        super().__init__(id="dashboard")
        self.runtime = runtime
        self.wall = wall
        self.actions_enabled = actions_enabled and not wall
        self.snapshot: ClusterSnapshot | None = None
        self.selected: str | None = None
        self._queue_subtitle: str | None = None
        self._pods_in: tuple[Pod, ...] | None = None
        self._pods_rows: list[Pod] = []
        self.heatmap = NodeHeatmap(runtime.thresholds, cell_width=3 if wall else 2,
                                   actions_enabled=self.actions_enabled, id="heatmap")
        self.gpu_panel = GpuPanel(id="gpu-panel")
        self.queue_pane = TablePane("Slurm queue", QueueTable(actions_enabled=self.actions_enabled, id="queue"),
                                    id="queue-pane")
        self.pods_pane = TablePane("K8s pods", pod_table(id="pods"), id="pods-pane")
        self.ib_pane: ScopedPane[LinkRow] = ScopedPane("IB links", link_table(id="ib"),
                                                       ib_node_rows(runtime.thresholds), id="ib-pane")
        self.mounts_pane: ScopedPane[MountRow] = ScopedPane("Mounts", mount_table(id="mounts"),
                                                          mount_node_rows(runtime.thresholds),
                                                          id="mounts-pane")
        if wall:
            self.add_class("-wall")

    def compose(self) -> ComposeResult:
        yield StatusLine("starting…", id="status", markup=False)
        with Vertical(id="main"):
            with Horizontal(id="top", classes="row"):
                yield HeatmapPane(self.heatmap, id="heatmap-pane")
                yield self.gpu_panel
            with Horizontal(id="middle", classes="row"):
                yield self.queue_pane
                yield self.pods_pane
            with Horizontal(id="bottom", classes="row"):
                yield self.ib_pane
                yield self.mounts_pane
        yield Footer()

    def on_mount(self) -> None:
        self.heatmap.focus()

    # -- data down ------------------------------------------------------------
    def update_snapshot(self, snapshot: ClusterSnapshot) -> None:
        self.snapshot = snapshot
        self.heatmap.update_snapshot(snapshot)
        self.query_one(HeatmapPane).update_title()
        if self.selected is None or not self.heatmap.knows(self.selected):
            self.selected = self.heatmap.cursor_node
        now = self.runtime.clock()
        self.queue_pane.data_status = part_status(snapshot, Part.SLURM_JOBS, now)
        self.pods_pane.data_status = part_status(snapshot, Part.PODS, now)
        self.queue_pane.set_rows(snapshot.jobs)
        if snapshot.pods is not self._pods_in:  # same pods: the same sorted list, so the table skips it
            self._pods_in, self._pods_rows = snapshot.pods, pod_trouble_first(snapshot.pods)
        self.pods_pane.set_rows(self._pods_rows)
        self.ib_pane.show(snapshot, self.selected)
        self.mounts_pane.show(snapshot, self.selected)
        self._show_node()
        self.update_status()

    def update_health(self, snapshot: ClusterSnapshot) -> None:
        """Same data, new source health (an error, a retry): status line and pane markers only."""
        self.snapshot = snapshot
        self.update_status()

    def update_status(self) -> None:
        if self.snapshot is None or getattr(self.app, "shutting_down", False):
            return
        rt = self.runtime
        intervals = {s.name: s.interval_s for s in rt.sources}
        content = status_content(self.snapshot.cluster, self.snapshot.sources, rt.clock(), intervals,
                                 rt.thresholds, read_only=rt.read_only or self.wall, wall=self.wall)
        self.query_one(StatusLine).show(content)
        now = rt.clock()
        ctl_marker = part_status(self.snapshot, Part.CONTROLLER, now)  # sdiag failing: don't claim "ok"
        subtitle = ctl_marker or controller_summary(self.snapshot.controller)
        if subtitle != self._queue_subtitle:  # a new subtitle repaints the whole pane: only on change
            self._queue_subtitle = subtitle
            set_border_text(self.queue_pane, Content(subtitle), subtitle=True)
        for pane, part in ((self.queue_pane, Part.SLURM_JOBS), (self.pods_pane, Part.PODS)):
            marker = part_status(self.snapshot, part, now)
            if marker != pane.data_status:
                pane.data_status = marker
                pane.update_title()

    def _show_node(self) -> None:
        if self.snapshot is not None:
            self.gpu_panel.show(self.snapshot, self.selected, self.runtime.thresholds, self.runtime.store.history.get)

    # -- messages up ----------------------------------------------------------
    @on(NodeHeatmap.Highlighted)
    def _node_highlighted(self, event: NodeHeatmap.Highlighted) -> None:
        if event.node == self.selected:
            return
        self.selected = event.node
        self._show_node()
        if self.snapshot is not None:
            if not self.ib_pane.scope_all:
                self.ib_pane.show(None, self.selected)
            else:
                self.ib_pane.node = self.selected
            if not self.mounts_pane.scope_all:
                self.mounts_pane.show(None, self.selected)
            else:
                self.mounts_pane.node = self.selected
