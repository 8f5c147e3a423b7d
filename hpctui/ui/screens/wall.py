"""The wall display (``hpctui --wall``): a read-only screen meant to be read across a room.

Counts in large digits (nodes down, nodes drained, GPUs in error, jobs pending), the clock and
the data's age always on screen, and one big view at a time, rotating every ``rotate_s``
seconds (config ``[wall]``): the heatmap next to the worst problem node, the problem list,
the queue, the event timeline.

The heatmap view fills the screen: the heatmap's cells are as big as the node count and the
screen allow (up to 12×3, down to one character at thousands of nodes: :func:`wall_heat_layout`),
the worst node's reason and next step sit on a line of their own that wraps rather than cuts,
and the problem list under it shows every finding when they fit, else one row per problem node,
every one of them, or as many as fit and a last row "+N more" with their counts by kind
(:func:`fit_problem_rows`). Nothing on it takes focus and no key is shown: the app
disables every binding but quit while the wall is up (see ``HpcApp.check_action``).

Rotation and the clock follow the port's ``clock`` (ticked once a second by a timer), so a test
with a fake clock can drive hours of it without waiting.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Digits, Static

from hpctui.core.frame import Frame
from hpctui.core.ports import UiPort
from hpctui.core.wall_settings import WallSettings
from hpctui.findings.health import Finding, Thresholds
from hpctui.findings.index import FindingsIndex
from hpctui.model import ClusterSnapshot, Severity
from hpctui.ui.fmt import age
from hpctui.ui.widgets.borders import set_border_text
from hpctui.ui.widgets.column_fit import TABLE_FITS
from hpctui.ui.widgets.events import EventsPane
from hpctui.ui.widgets.gpu_panel import GpuPanel
from hpctui.ui.widgets.heatmap_legend_pane import HeatmapPane, legend_content
from hpctui.ui.widgets.node_heatmap import NodeHeatmap, fit_cells
from hpctui.ui.widgets.panes import TablePane
from hpctui.ui.widgets.problems import SEVERITY_WORD, ProblemRow, ProblemsPane
from hpctui.ui.widgets.status import StatusLine, status_content
from hpctui.ui.widgets.tables import QueueTable, pod_table, pod_trouble_first
from hpctui.ui.widgets.vtable import Fit

WALL_CELL_WIDTH = 1  # the heatmap's smallest cell on the wall: one character (thousands of nodes)
WALL_MAX_CELL = (16, 5)  # and its biggest: a node name in a block five lines tall
WALL_PROBLEM_FIT = {**TABLE_FITS["problems"], "what": Fit(99, 12, grow=1)}
WALL_PANEL_MIN = 40  # the node panel's narrowest: what it gives up when the heatmap needs the width
WALL_PROBLEM_LINES = 8  # the problem list keeps at least this many lines (header and borders included)
VIEW_TITLES = {"heatmap": "Nodes", "problems": "Problems", "queue": "Slurm queue", "events": "Events",
               "pods": "K8s pods"}


@dataclass(frozen=True, slots=True)
class WallCounts:
    nodes_down: int
    nodes_drained: int
    gpus_error: int
    jobs_pending: int
    gpus_idle: int = 0


COUNT_LABELS = (("nodes_down", "NODES DOWN"), ("nodes_drained", "DRAINED"), ("gpus_error", "GPUs IN ERROR"),
                ("jobs_pending", "JOBS PENDING"), ("gpus_idle", "IDLE GPUs NOW"))


def wall_counts(snapshot: ClusterSnapshot, findings: FindingsIndex, gpus_idle: int = 0) -> WallCounts:
    """What the big digits say, from the snapshot and its shared findings.

    - nodes down: Slurm base state DOWN (NOT_RESPONDING included); a node Kubernetes alone knows
      counts when its Ready condition is not "True";
    - drained: the Slurm DRAIN flag (DRAINED and DRAINING); a Kubernetes-only node when cordoned;
    - GPUs in error: GPUs (``gpu/<node>/<i>``) with a finding of error or worse, or lost;
    - jobs pending: Slurm jobs in state PENDING;
    - idle GPUs now: allocated GPUs idle past ``[idle] after_s`` (the frame's idle report, ``gpus_idle``).
    """
    down = drained = 0
    for node in snapshot.nodes.values():
        if node.slurm is not None:
            down += node.slurm.base_state.upper().startswith("DOWN")
            drained += "DRAIN" in node.slurm.flags
        elif node.k8s is not None:
            down += node.k8s.ready != "True"
            drained += node.k8s.unschedulable
    bad_gpus = {f.object for f in findings if f.severity >= Severity.ERROR and f.object.startswith("gpu/")}
    bad_gpus |= {f"gpu/{g.node}/{g.index}" for gpus in snapshot.gpus.values() for g in gpus if g.lost}
    pending = sum(1 for j in snapshot.jobs if j.state.upper() == "PENDING")
    return WallCounts(nodes_down=down, nodes_drained=drained, gpus_error=len(bad_gpus), jobs_pending=pending,
                      gpus_idle=gpus_idle)


def worst_node(findings: FindingsIndex) -> str | None:
    """The node with the worst finding (then the most findings, then the name): the wall's node panel."""
    best: tuple[int, int, str] | None = None
    for node, fs in findings.by_node.items():
        if not fs:
            continue
        key = (-max(f.severity for f in fs), -len(fs), node)
        if best is None or key < best:
            best = key
    return None if best is None else best[2]


class WallCount(Vertical):
    """One number in large digits over its label."""

    def __init__(self, name: str, label: str) -> None:
        super().__init__(id=f"wall-{name.replace('_', '-')}", classes="wall-count")
        self.digits = Digits("-")
        self.label = label

    def compose(self) -> ComposeResult:
        yield self.digits
        yield Static(self.label, classes="wall-label", markup=False)

    def show(self, value: int | None) -> None:
        text = "-" if value is None else str(value)
        if self.digits.value != text:
            self.digits.update(text)
        self.set_class(bool(value), "-nonzero")


def wall_heat_layout(nodes: int, width: int, height: int, problem_nodes: int, legend_lines: int,
                     worst_lines: int) -> tuple[int, int, int, bool]:
    """How the wall's left column (``width`` × ``height``, borders included) is shared: the heatmap
    pane's height, its cells' (width, height), and whether every node fits. The problem list gets
    what the heatmap does not need, and at least its rows for every problem node (or
    ``WALL_PROBLEM_LINES``), whichever is less, while the heatmap keeps a third of the height at
    least; the heatmap takes the biggest cells that fit what is left (:func:`fit_cells`)."""
    inner_w = max(1, width - 2 - 2)  # borders, the heatmap's scrollbar gutter
    full = min(max(WALL_PROBLEM_LINES, problem_nodes + 3), max(WALL_PROBLEM_LINES, height // 2))
    # every problem row if the nodes still fit; else the list gives back lines ("+N more") until they do
    for problems in dict.fromkeys((full, WALL_PROBLEM_LINES)):
        budget = max(height // 3, height - problems - worst_lines - legend_lines - 2)  # a small wall: a third at least
        cw, ch = fit_cells(nodes, lambda cols: -(-nodes // cols), inner_w, budget, min_width=WALL_CELL_WIDTH,
                           max_width=WALL_MAX_CELL[0], max_height=WALL_MAX_CELL[1])
        rows = -(-nodes // max(1, inner_w // cw)) if nodes else 1
        if rows * ch <= budget:
            break
    return min(budget, rows * ch) + legend_lines + 2, cw, ch, rows * ch <= budget


def kind_of(finding: Finding) -> str:
    """``gpu``, ``ib``, ``mount``, ``node``, … (the object's kind): what "+N more" counts by."""
    return finding.object.split("/", 1)[0]


def node_rows(rows: Sequence[ProblemRow]) -> list[ProblemRow]:
    """One row per problem node: its first (worst) row, saying how many more findings it has."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.node] = counts.get(r.node, 0) + 1
    out = []
    for r in rows:
        if r.first:
            more = counts[r.node] - 1
            f = r.finding
            if more:
                f = Finding(severity=f.severity, object=f.object, code=f.code, message=f"{f.message} (+{more} more)")
            out.append(ProblemRow(number=r.number, first=True, node=r.node, gpu=r.gpu, finding=f, since=r.since,
                                  source=r.source))
    return out


def fit_problem_rows(rows: Sequence[ProblemRow], all_rows: Sequence[ProblemRow], lines: int) -> list[ProblemRow]:
    """``rows`` (one per node) when they fit in ``lines``; else the first ``lines - 1`` and a last row
    "+N more nodes: 3 ib, 2 gpu" counting the hidden nodes' findings (``all_rows``) by kind."""
    if lines <= 0 or len(rows) <= lines:
        return list(rows)
    shown, hidden = list(rows[:lines - 1]), {r.node for r in rows[lines - 1:]}
    kinds: dict[str, int] = {}
    worst = Severity.WARNING
    for r in all_rows:
        if r.node in hidden:
            kinds[kind_of(r.finding)] = kinds.get(kind_of(r.finding), 0) + 1
            worst = max(worst, r.severity)
    by_kind = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
    more = Finding(severity=worst, object="node/", code="more", message=f"+{len(hidden)} more nodes: {by_kind}")
    shown.append(ProblemRow(number=0, first=False, node="", gpu=None, finding=more, since=rows[-1].since, source=""))
    return shown


class WallProblemsPane(ProblemsPane):
    """The problem list without its key hints (nothing on the wall is actionable): every finding
    when they fit, else one row per problem node, all of them or as many as fit and "+N more"
    (see :func:`fit_problem_rows`)."""

    def __init__(self, thresholds: Thresholds, *, id: str | None = None) -> None:
        super().__init__(thresholds, id=id)
        self.problems.column_fit = WALL_PROBLEM_FIT  # columns share the width; WHAT is the last to go
        self._all: list[ProblemRow] = []
        self._per_node: list[ProblemRow] = []

    def set_rows(self, rows: Sequence[ProblemRow]) -> None:
        self._all = list(rows)
        self._per_node = node_rows(rows)
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        """Every finding when they all fit; else one row per node; else as many nodes as fit and "+N more"."""
        lines = self.problems.size.height - 1 if self.problems.size.height else 0  # less the header line
        if len(self._all) <= lines or not lines:
            super().set_rows(self._all)
            return
        super().set_rows(fit_problem_rows(self._per_node, self._all, lines))

    def update_title(self, extra: str = "") -> None:
        n = len(self.nodes)
        super().update_title(extra or (f"{n} node{'s' if n != 1 else ''}" if n else "nothing of warning or worse"))


def worst_content(node: str | None, findings: FindingsIndex, width: int = 0) -> Content:
    """The worst node's worst finding and its next step, for the line that never cuts it; when
    ``width`` is so narrow that the step would wrap past two lines, the reason alone."""
    if node is None or not findings.node(node):
        return Content.assemble(("No problem node", "bold $success"))
    f = findings.node(node)[0]
    colour = "$error" if f.severity >= Severity.ERROR else "$warning"
    reason = Content.assemble((f"WORST {node}", f"bold {colour}"), " · ", (SEVERITY_WORD.get(f.severity, ""), colour),
                              " ", (f.message, "bold"))
    full = Content.assemble(reason, ("  → ", "$text-muted"), (f.action, "$foreground"))
    return full if width <= 0 or len(full.wrap(width)) <= 2 else reason


class WallScreen(Screen[None]):
    """Read-only, rotating, large: see the module docstring."""

    AUTO_FOCUS = None  # nothing here takes focus: no widget's keys are reachable
    CSS = """
    WallScreen { background: $background; layout: vertical; }
    WallScreen #wall-top { height: 5; }
    WallScreen .wall-count { width: 1fr; height: 5; align-horizontal: center; }
    WallScreen .wall-count Digits { width: auto; color: $success; text-style: bold; }
    WallScreen .wall-count.-nonzero Digits { color: $error; }
    WallScreen #wall-jobs-pending.-nonzero Digits { color: $warning; }
    WallScreen .wall-label { width: auto; color: $text-muted; text-style: bold; }
    WallScreen #wall-clock-box { width: auto; min-width: 28; height: 5; align-horizontal: right; padding: 0 1; }
    WallScreen #wall-clock { width: auto; color: $foreground; }
    WallScreen #wall-age { width: 28; text-align: right; text-style: bold; }
    WallScreen #wall-status { height: 1; background: $panel; text-wrap: nowrap; text-overflow: ellipsis; }
    WallScreen #wall-views { height: 1fr; }
    WallScreen #wall-heatmap-view { height: 1fr; }
    WallScreen #wall-heatmap-left { width: 2fr; }
    WallScreen #wall-heatmap-left HeatmapPane { height: 3fr; }
    WallScreen #wall-heatmap-left ProblemsPane { height: 1fr; }
    WallScreen #wall-worst { height: auto; padding: 0 1; background: $surface; }
    WallScreen #wall-heatmap-view GpuPanel { width: 1fr; min-width: 40; }
    WallScreen #wall-views TablePane { height: 1fr; }
    WallScreen #wall-views HeatmapPane, WallScreen #wall-views GpuPanel, WallScreen #wall-views TablePane {
        border: heavy $primary; border-title-color: $foreground; border-title-style: bold; background: $surface;
    }
    """

    def __init__(self, port: UiPort, settings: WallSettings | None = None) -> None:
        super().__init__(id="wall")
        self.port = port
        self.settings = settings or port.wall_settings
        self.views: list[str] = list(self.settings.views)
        self.view_index = 0
        self.frame: Frame | None = None
        self.snapshot: ClusterSnapshot | None = None
        self.counts: WallCounts | None = None
        self.worst: str | None = None
        self._shown_at: float | None = None  # runtime clock when the current view came up
        self._pods_in: object = None
        self._panel_title = ""
        self._age_shown: tuple[str, bool] | None = None
        self._heat_fit: tuple[object, ...] | None = None
        self._worst_shown: Content | None = None
        thresholds: Thresholds = port.thresholds
        self.heatmap = NodeHeatmap(thresholds, cell_width=WALL_CELL_WIDTH, actions_enabled=False,
                                   max_cell_width=WALL_MAX_CELL[0], max_cell_height=WALL_MAX_CELL[1], id="wall-heatmap")
        self.heatmap.can_focus = False
        self.gpu_panel = GpuPanel(id="wall-node")
        self.problems_pane = WallProblemsPane(thresholds, id="wall-problems")
        self.top_problems = WallProblemsPane(thresholds, id="wall-top-problems")  # under the heatmap
        self.queue_pane = TablePane("Slurm queue", QueueTable(actions_enabled=False, clock=port.clock,
                                                                 id="wall-queue-table"),
                                    id="wall-queue")
        self.events_pane = EventsPane((), id="wall-events")
        self.pods_pane = TablePane("K8s pods", pod_table(id="wall-pods-table", actions_enabled=False), id="wall-pods")
        self.count_widgets = {name: WallCount(name, label) for name, label in COUNT_LABELS}

    @property
    def view(self) -> str:
        return self.views[self.view_index]

    def compose(self) -> ComposeResult:
        with Horizontal(id="wall-top"):
            yield from self.count_widgets.values()
            with Vertical(id="wall-clock-box"):
                yield Digits("--:--", id="wall-clock")
                yield Static("", id="wall-age", markup=False)
        yield StatusLine("starting…", id="wall-status", markup=False)
        panes = {
            "heatmap": Horizontal(Vertical(HeatmapPane(self.heatmap, id="wall-heatmap-pane"),
                                           Static("", id="wall-worst"), self.top_problems, id="wall-heatmap-left"),
                                  self.gpu_panel, id="wall-heatmap-view"),
            "problems": self.problems_pane, "queue": self.queue_pane, "events": self.events_pane,
            "pods": self.pods_pane,
        }
        with ContentSwitcher(initial=panes[self.view].id, id="wall-views"):
            for name in self.views:
                yield panes[name]

    def on_mount(self) -> None:
        for widget in self.query("*"):  # read-only and keyless: nothing on the wall can hold focus
            widget.can_focus = False
        self.set_focus(None)
        self.events_pane.scope_all = True
        self._shown_at = self.port.clock()
        self.set_interval(1.0, self.tick)
        self.tick()
        latest = self.port.frame()
        if latest.snapshot.nodes or latest.snapshot.jobs:  # data already there (pushed after the first poll)
            self.show_frame(latest)

    # -- time -----------------------------------------------------------------
    def tick(self) -> None:
        """Once a second: clock, data age, and the next view when this one has been up long enough."""
        if not self.is_attached:
            return
        now = self.port.clock()
        if self._shown_at is None or now < self._shown_at:  # a clock that went back: start over
            self._shown_at = now
        if len(self.views) > 1 and now - self._shown_at >= self.settings.rotate_s:
            self.rotate()
        self.query_one("#wall-clock", Digits).update(time.strftime("%H:%M:%S", time.gmtime(now)))
        self._show_status(now)

    def rotate(self, step: int = 1) -> None:
        """Show the next view (wrapping around)."""
        self.view_index = (self.view_index + step) % len(self.views)
        self._shown_at = self.port.clock()
        switcher = self.query_one("#wall-views", ContentSwitcher)
        target = {"heatmap": "wall-heatmap-view", "problems": "wall-problems", "queue": "wall-queue",
                  "events": "wall-events", "pods": "wall-pods"}[self.view]
        switcher.current = target
        if self.snapshot is not None:
            self._show_tables(self.snapshot)
        self._show_status(self.port.clock())

    def _data_age(self, snapshot: ClusterSnapshot, now: float) -> float | None:
        ages = [a for a in (h.age(now) for h in snapshot.sources.values()) if a is not None]
        return max(ages) if ages else None

    def _show_status(self, now: float) -> None:
        port = self.port
        snapshot = port.frame().snapshot  # the newest source health (not pushed to the wall: read each tick)
        seconds = self._data_age(snapshot, now)
        intervals = port.poll_intervals()
        stale = seconds is None or any(
            (h.age(now) or 0) > port.thresholds.stale_factor * interval_s or h.last_success is None
            for name, interval_s in intervals.items() if (h := snapshot.sources.get(name)) is not None)
        age_text = "no data yet" if seconds is None else f"data {age(seconds)} old"
        shown = (f"UTC · {age_text}", stale)
        if shown != self._age_shown:  # fixed width: a repaint of this line, no layout pass
            self._age_shown = shown
            self.query_one("#wall-age", Static).update(
                Content.assemble((shown[0], "bold $error" if stale else "bold $success")), layout=False)
        line = status_content(snapshot.cluster, snapshot.sources, now, intervals, port.thresholds,
                              read_only=True, wall=True)
        left = (max(0.0, self.settings.rotate_s - (now - (self._shown_at or now)))
                if len(self.views) > 1 else None)
        position = f"  {VIEW_TITLES[self.view]} ({self.view_index + 1}/{len(self.views)})"
        tail = position + (f" · next in {int(left + 0.999)}s" if left is not None else "")
        self.query_one("#wall-status", StatusLine).show(Content.assemble(line, (tail, "bold $accent")))

    # -- data -----------------------------------------------------------------
    def show_frame(self, frame: Frame) -> None:
        """Counts, worst node, heatmap, problem lists and the table on screen, from ``frame``."""
        if not self.is_attached:
            return
        self.frame = frame
        snapshot = self.snapshot = frame.snapshot
        findings = frame.findings
        self.counts = counts = wall_counts(snapshot, findings, frame.idle.gpus_now)
        for name, widget in self.count_widgets.items():
            widget.show(getattr(counts, name))
        self.worst = worst_node(findings)
        if "heatmap" in self.views:
            worst = worst_content(self.worst, findings, self.query_one("#wall-heatmap-left").size.width - 2)
            if worst != self._worst_shown:
                self._worst_shown = worst
                self.query_one("#wall-worst", Static).update(worst)
            self.heatmap.update_snapshot(snapshot, findings)
            self._fit_heatmap(findings)
            self.query_one(HeatmapPane).update_title()
            if self.worst is not None:
                self.heatmap.select(self.worst)
            self.gpu_panel.show(frame, self.worst, self.port.thresholds, self.port.node_history)
            title = f"Worst node: {self.worst}" if self.worst else "No problem node"
            if title != self._panel_title:  # a border title repaints the panel: only on change
                self._panel_title = title
                set_border_text(self.gpu_panel, Content(title))
            self.top_problems.show(frame)  # problem lists on every frame: their flap memory needs each
        if "problems" in self.views:
            self.problems_pane.show(frame)
        self._show_tables(snapshot)
        self._show_status(self.port.clock())

    def on_resize(self) -> None:
        if self.frame is not None and "heatmap" in self.views:
            self._fit_heatmap(self.frame.findings)

    def _fit_heatmap(self, findings: FindingsIndex) -> None:
        """Share the left column between the heatmap and the problem list (wall_heat_layout); when
        the nodes do not fit in its usual two thirds of the width, the node panel narrows to
        WALL_PANEL_MIN and the heatmap takes the rest."""
        left = self.query_one("#wall-heatmap-left")
        view = self.query_one("#wall-heatmap-view")
        view_w, height = view.size.width, view.size.height
        if not view_w or not height:
            return
        problem_nodes = sum(1 for n in findings.by_node if findings.severity(n) >= Severity.WARNING)
        problem_nodes += sum(1 for f in findings.leading if f.severity >= Severity.WARNING)  # suspect switches
        problem_nodes += any(f.severity >= Severity.WARNING for f in findings.cluster)  # slurmctld's group
        worst = self.query_one("#wall-worst", Static)
        key = (view_w, height, len(self.heatmap.names), problem_nodes, self._worst_shown)
        if key == self._heat_fit:
            return
        self._heat_fit = key
        usual = min(view_w * 2 // 3, view_w - WALL_PANEL_MIN)  # the CSS's 2fr : 1fr, the panel's min-width
        for width in (usual, view_w - WALL_PANEL_MIN):
            worst_lines = len(self._worst_shown.wrap(max(1, width - 2))) if self._worst_shown else 1  # padding
            legend = str(legend_content(self.heatmap.metric, self.heatmap.thresholds, self.heatmap.palette_name,
                                        max(1, width - 2))).count("\n") + 1
            pane_h, _, _, fits = wall_heat_layout(len(self.heatmap.names), width, height, problem_nodes, legend,
                                                  worst_lines)
            if fits:
                break
        left.styles.width = "2fr" if width == usual else width
        self.query_one("#wall-heatmap-pane", HeatmapPane).styles.height = pane_h
        worst.styles.height = worst_lines

    def _show_tables(self, snapshot: ClusterSnapshot) -> None:
        """The queue, pod and event tables: only the one on screen (the next view catches up when shown)."""
        if self.view == "queue":
            self.queue_pane.set_rows(snapshot.jobs)
        elif self.view == "pods" and snapshot.pods is not self._pods_in:
            self._pods_in = snapshot.pods
            self.pods_pane.set_rows(pod_trouble_first(snapshot.pods))
        elif self.view == "events":
            self.events_pane.show(self.frame, None)

    def update_health(self, frame: Frame) -> None:
        self._show_status(self.port.clock())


__all__ = ["WallCounts", "WallScreen", "fit_problem_rows", "node_rows", "wall_counts", "wall_heat_layout", "worst_node"]
