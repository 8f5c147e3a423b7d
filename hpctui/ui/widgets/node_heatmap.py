"""The node heatmap: one cell per node, ONE widget, drawn with the Line API.

At 16,384 nodes one widget per node costs seconds per frame (DESIGN.md); here a
``ScrollView`` with a ``virtual_size`` renders only the visible rows from
prebuilt ``Segment``s (one per colour/glyph/mark combination, built from the theme)
and caches each row's ``Strip`` until the data, the size, the metric or the
theme changes. Values are kept as ``bytes`` so drawing never touches the model.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from functools import partial

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.actions import SkipAction
from textual.binding import Binding, BindingType
from textual.color import Color
from textual.geometry import Size
from textual.message import Message
from textual.reactive import var
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.theme import Theme
from textual.worker import Worker

from hpctui.core.heatmap_settings import GROUP_ORDER, HeatmapSettings
from hpctui.findings.health import Thresholds
from hpctui.findings.index import FindingsIndex, findings_for
from hpctui.model import ClusterSnapshot
from hpctui.model.action import JOB_ACTIONS, ActionKind
from hpctui.model.hostlist import collect
from hpctui.ui.heatmap_levels import (
    GLYPH_NONE,
    GLYPHS,
    METRIC_ORDER,
    NA_LEVEL,
    NO_GROUP,
    SEVERITY_GLYPHS,
    LevelCache,
    Metric,
    compute_levels,
    group_nodes,
    level_colours,
    level_vars,
    node_names,
)
from hpctui.ui.keys import (
    HEATMAP_KEYS,
    HEATMAP_VIEW_KEYS,
    MIG_KEYS,
    NODE_ACTION_KEYS,
    NODE_JOB_ACTION_KEYS,
    NODE_LOG_KEYS,
    NODE_SHELL_KEYS,
    bindings,
    move_bindings,
)
from hpctui.ui.labels import unique_labels
from hpctui.ui.messages import ActionRequested, LogsRequested, MigWizardRequested, ShellRequested
from hpctui.ui.palette import Palette
from hpctui.ui.workers import LatestOnly

THREAD_ABOVE = 2048  # nodes: above this, levels are computed in a worker thread
_NAV: list[BindingType] = [
    Binding("up", "move(0,-1)", "Up", show=False), Binding("down", "move(0,1)", "Down", show=False),
    Binding("left", "move(-1,0)", "Left", show=False), Binding("right", "move(1,0)", "Right", show=False),
    Binding("pageup", "page(-1)", show=False), Binding("pagedown", "page(1)", show=False),
    Binding("home", "jump(0)", show=False), Binding("end", "jump(-1)", show=False),
    *move_bindings("move(0,1)", "move(0,-1)", "move(-1,0)", "move(1,0)"),
]


MAX_CELL_WIDTH = 7
LABEL_MIN_WIDTH = 5


def fit_cells(nodes: int, rows_needed: Callable[[int], int], width: int, height: int, *, min_width: int = 1,
              max_width: int = MAX_CELL_WIDTH, max_height: int = 1) -> tuple[int, int]:
    """The biggest cell (width, height in lines) that still fits every node in ``width`` × ``height``:
    the largest area, then the wider; a cell is never taller than half its width (terminal cells
    are about twice as tall as wide). ``rows_needed(cols)``: cell rows for that many columns.
    Nothing fits: the smallest cell (the heatmap scrolls)."""
    best = (min_width, 1)
    if nodes == 0 or height <= 0:
        return best
    best_key = (0, 0)
    for h in range(1, max(1, max_height) + 1):
        for w in range(max(min_width, 2 * h - 1 if h > 1 else 1), max_width + 1):
            cols = width // w
            if cols == 0:
                break
            if rows_needed(cols) * h <= height and (w * h, w) > best_key:
                best, best_key = (w, h), (w * h, w)
    return best


class NodeHeatmap(ScrollView, can_focus=True):
    """Cells coloured by the chosen metric; a cursor cell selects the node shown elsewhere."""

    BINDINGS = _NAV + bindings(HEATMAP_KEYS, HEATMAP_VIEW_KEYS, NODE_ACTION_KEYS, NODE_JOB_ACTION_KEYS, MIG_KEYS,
                               NODE_SHELL_KEYS, NODE_LOG_KEYS)
    # A stable gutter keeps the column count from flipping when the scrollbar appears.
    DEFAULT_CSS = """
    NodeHeatmap { scrollbar-gutter: stable; }
    """

    class Highlighted(Message):
        """The cursor moved to ``node`` (None when there are no nodes)."""

        def __init__(self, node: str | None) -> None:
            super().__init__()
            self.node = node

    class MetricChanged(Message):
        def __init__(self, metric: Metric) -> None:
            super().__init__()
            self.metric = metric

    class GroupingChanged(Message):
        """Grouping, zoom or problems-first changed (the pane's title names them)."""

    class ChartsRequested(Message):
        def __init__(self, node: str | None) -> None:
            super().__init__()
            self.node = node

    class HistoryRequested(Message):
        """``H``: the selected node's history (hpctui.ui.screens.history)."""

        def __init__(self, node: str | None) -> None:
            super().__init__()
            self.node = node

    # Widget state as Textual reactives, as DataTable keeps its cursor: an assignment is
    # validated (validate_cursor clamps it to the nodes) and its watcher redraws and tells.
    cursor: var[int] = var(0, init=False)  # index into ``names`` of the selected cell
    metric: var[Metric] = var(Metric.HEALTH, init=False)  # what the cells are coloured by

    class MarksChanged(Message):
        def __init__(self, marked: tuple[str, ...]) -> None:
            super().__init__()
            self.marked = marked

    def __init__(self, thresholds: Thresholds | None = None, *, cell_width: int = 2,
                 actions_enabled: bool = True, settings: HeatmapSettings | None = None,
                 max_cell_width: int = MAX_CELL_WIDTH, max_cell_height: int = 1,
                 id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        settings = settings or HeatmapSettings()
        self.group_by: str = settings.group_by
        self.palette_name: str = settings.palette
        # problems first: always, never, or (None in the settings) while not every node fits, so
        # the problem nodes are on screen at any size without scrolling
        # Called with the new cursor node as the cursor moves, before Highlighted is posted (set by the
        # screen): what follows the cursor is then drawn in the same screen update as its cells.
        self.cursor_listener: Callable[[str | None], None] | None = None
        self.auto_problems_first = settings.problems_first is None
        self.problems_first = bool(settings.problems_first)
        self.rack_of = settings.rack_of()
        self.zoom: str | None = None  # the group shown alone (larger cells), or None
        # (label, start, end) over self.names; one unlabelled group when not grouping
        self.groups: list[tuple[str, int, int]] = []
        self._first_rows: list[int] = [0]
        self._group_starts: list[int] = [0]
        self._total_rows = 0
        self.thresholds = thresholds or Thresholds()
        self.min_cell_width = max(1, cell_width)
        self.cell_width = self.min_cell_width  # grows when few nodes leave room (see fit_cells)
        self.max_cell_width = max(self.min_cell_width, max_cell_width)
        self.max_cell_height = max(1, max_cell_height)  # >1: cells several lines tall (the wall)
        self.cell_height = 1
        self.actions_enabled = actions_enabled
        self.names: list[str] = []
        self._index: dict[str, int] = {}
        self.levels = b""
        self.glyphs = b""
        self.marked: set[int] = set()
        self._snapshot: ClusterSnapshot | None = None
        self._findings: FindingsIndex | None = None  # the snapshot's (from its frame)
        self._cols = 1
        self._palette: Palette | None = None
        self._base: list[Style] = []
        self._cursor_styles: list[Style] = []
        self._segments: dict[tuple[int, int, bool, bool, str], Segment] = {}
        self._lines: dict[int, Strip] = {}
        self._levels_job: LatestOnly[tuple[bytes, bytes]] = LatestOnly(self, "heatmap-levels", self._apply_levels)
        self._level_cache = LevelCache()
        self._full_redraw = True

    # -- data down ------------------------------------------------------------
    def update_snapshot(self, snapshot: ClusterSnapshot, findings: FindingsIndex | None = None) -> None:
        """Take a new snapshot and its findings (the frame's): recompute the per-node bytes and drop
        cached rows. Without ``findings`` (a heatmap used on its own) they are computed here."""
        if findings is None:
            findings = findings_for(snapshot, self.thresholds)
        self._snapshot = snapshot
        self._findings = findings
        names, groups = self._arrange(snapshot)
        if names != self.names or groups != self.groups:
            current = self.cursor_node
            marked = {self.names[i] for i in self.marked if i < len(self.names)}
            self.names = names
            self.groups = groups
            self._index = {n: i for i, n in enumerate(names)}
            self.marked = {self._index[n] for n in marked if n in self._index}
            # (no watcher: every row is redrawn, and Highlighted follows once, below)
            self.set_reactive(NodeHeatmap.cursor, self._index.get(current, 0) if current else 0)
            self._full_redraw = True  # positions moved: every row is stale
            self._update_virtual_size()
            self.post_message(self.Highlighted(self.cursor_node))
        self._recompute()

    @property
    def labelled(self) -> bool:
        """Group label rows are drawn (grouping on, and not zoomed into one group)."""
        return self.group_by != "none" and self.zoom is None

    def _arrange(self, snapshot: ClusterSnapshot) -> tuple[list[str], list[tuple[str, int, int]]]:
        """The node order and groups for the grouping, zoom and problems-first settings."""
        names = node_names(snapshot)
        if self.auto_problems_first:  # decided before arranging: no second pass, no second worker
            self.problems_first = self._overflows(len(names))
        if self.group_by == "none" and not self.problems_first:
            return names, [(NO_GROUP, 0, len(names))]
        severity: dict[str, int] | None = None
        if self.problems_first and self._findings is not None:
            # only the nodes with findings: at 16k nodes a dict of every node costs ~8 ms a snapshot
            severity = {n: int(v) for n, v in self._findings.severities().items() if v}
        grouped = group_nodes(snapshot, names, self.group_by, self.rack_of, severity)
        if self.zoom is not None:
            grouped = [g for g in grouped if g[0] == self.zoom] or grouped
            if len(grouped) > 1:  # the zoomed group is gone: show everything again
                self.zoom = None
        out: list[str] = []
        groups: list[tuple[str, int, int]] = []
        for label, members in grouped:
            groups.append((label, len(out), len(out) + len(members)))
            out.extend(members)
        return out, groups

    def set_grouping(self, group_by: str | None = None, *, problems_first: bool | None = None,
                     zoom: str | bool | None = False, auto: bool = False) -> None:
        """Change grouping / problems-first / zoom (``zoom=False`` keeps it) and re-lay out; a
        problems-first choice not made ``auto`` (by the overflow rule) ends the automatic one."""
        if problems_first is not None and not auto:
            self.auto_problems_first = False
        if group_by is not None and group_by != self.group_by:
            self.group_by = group_by
            self.zoom = None
        if problems_first is not None:
            self.problems_first = problems_first
        if zoom is not False:
            self.zoom = zoom if isinstance(zoom, str) else None
        self._full_redraw = True
        self.levels = self.glyphs = b""  # new order: no stale colours while a worker recomputes them
        if self._snapshot is not None:
            self.update_snapshot(self._snapshot, self._findings)
        self._update_virtual_size()
        self._invalidate()
        self.post_message(self.GroupingChanged())

    def set_palette(self, name: str) -> None:
        if name != self.palette_name:
            self.palette_name = name
            self._build_styles()
            self._invalidate()
            self.post_message(self.MetricChanged(self.metric))  # the legend follows the colours

    def group_of(self, index: int) -> tuple[str, int, int] | None:
        if not self.groups:
            return None
        return self.groups[max(0, bisect_right(self._group_starts, index) - 1)]

    def _recompute(self) -> None:
        if self._snapshot is None:
            return
        if len(self.names) < THREAD_ABOVE:
            self._levels_job.cancel()
            self._apply_levels(compute_levels(self._snapshot, self.names, self.metric, self.thresholds,
                                              self._level_cache, self._findings))
            return
        # 16k nodes take a while: computed off the event loop on the frozen snapshot; only the
        # newest computation lands (hpctui.ui.workers.LatestOnly).
        self._levels_job.run(partial(compute_levels, self._snapshot, list(self.names), self.metric, self.thresholds,
                                     self._level_cache, self._findings), "heatmap levels")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if self._levels_job.take(event):
            event.stop()

    def _apply_levels(self, result: tuple[bytes, bytes]) -> None:
        """Take new levels; only rows whose cells changed are redrawn (an idle cluster writes little)."""
        old_levels, old_glyphs = self.levels, self.glyphs
        self.levels, self.glyphs = result
        if self._full_redraw or len(old_levels) != len(self.levels) or len(old_glyphs) != len(self.glyphs):
            self._full_redraw = False
            self._invalidate()
            return
        if old_levels == self.levels and old_glyphs == self.glyphs:
            return
        levels, glyphs = self.levels, self.glyphs
        for row in list(self._lines):
            cells = self.row_cells(row)
            if not isinstance(cells, tuple):
                continue
            a, b = cells
            if levels[a:b] != old_levels[a:b] or glyphs[a:b] != old_glyphs[a:b]:
                del self._lines[row]
                self.refresh_line(row)

    def set_metric(self, metric: Metric) -> None:
        """Colour the cells by ``metric`` (the ``m`` key, the wall's settings)."""
        self.metric = metric

    def watch_metric(self, metric: Metric) -> None:
        self._segments.clear()
        self._build_styles()
        self._full_redraw = True
        self._recompute()
        self.post_message(self.MetricChanged(metric))

    def select(self, node: str) -> bool:
        """Move the cursor to ``node``; False when unknown."""
        index = self._index.get(node)
        if index is None and self.zoom is not None and self._snapshot is not None and (
                node in self._snapshot.nodes or node in self._snapshot.gpus):
            self.set_grouping(zoom=None)  # a node outside the zoomed group: show everything again
            index = self._index.get(node)
        if index is None:
            return False
        self._move_cursor(index)
        return True

    def knows(self, node: str) -> bool:
        return node in self._index

    @property
    def cursor_node(self) -> str | None:
        return self.names[self.cursor] if 0 <= self.cursor < len(self.names) else None

    @property
    def marked_nodes(self) -> tuple[str, ...]:
        return tuple(self.names[i] for i in sorted(self.marked) if i < len(self.names))

    def targets(self) -> tuple[str, ...]:
        """Marked nodes, or the cursor node when nothing is marked."""
        if self.marked:
            return self.marked_nodes
        node = self.cursor_node
        return (node,) if node else ()

    # -- geometry -------------------------------------------------------------
    @property
    def columns(self) -> int:
        return self._cols

    def _fit_cell(self, width: int, height: int) -> tuple[int, int]:
        """The biggest cell that still fits every node on screen (:func:`fit_cells`), so a small
        cluster gets big cells with node numbers, and 16k nodes get small ones. Cells are one line
        tall while group labels are drawn."""
        return fit_cells(len(self.names), self._rows_needed, width, height, min_width=self.min_cell_width,
                         max_width=self.max_cell_width, max_height=1 if self.labelled else self.max_cell_height)

    def _overflows(self, nodes: int) -> bool:
        """Whether ``nodes`` cells (and the current groups' label rows) do not all fit on screen,
        even with the smallest cell: the rule of the automatic problems-first order."""
        region = self.scrollable_content_region
        width, height = region.width or self.size.width, region.height or self.size.height
        if width <= 0 or height <= 0 or not nodes:
            return False
        cols = max(1, width // self.min_cell_width)
        labels = len(self.groups) if self.labelled else 0
        return -(-nodes // cols) + labels > height

    def _fit_cell_width(self, width: int, height: int) -> int:
        """The width of :meth:`_fit_cell`'s cell."""
        return self._fit_cell(width, height)[0]

    def _rows_needed(self, cols: int) -> int:
        label = 1 if self.labelled else 0
        return sum(label + -(-(end - start) // cols) for _, start, end in self.groups or [("", 0, len(self.names))])

    def _relayout(self) -> None:
        """First row of each group (its label row when labelled) for the current column count."""
        if not self.groups:
            self.groups = [(NO_GROUP, 0, len(self.names))]
        label = 1 if self.labelled else 0
        first: list[int] = []
        row = 0
        for _, start, end in self.groups:
            first.append(row)
            row += label + -(-(end - start) // self._cols)
        self._first_rows = first
        self._group_starts = [start for _, start, _ in self.groups]
        self._total_rows = row if self.names else 0

    def row_cells(self, row: int) -> tuple[int, int] | str | None:
        """(start, end) node indexes drawn on ``row``, a group label, or None past the end."""
        if row < 0 or row >= self._total_rows:
            return None
        g = bisect_right(self._first_rows, row) - 1
        label, start, end = self.groups[g]
        r = row - self._first_rows[g]
        if self.labelled:
            if r == 0:
                return label
            r -= 1
        a = start + r * self._cols
        return (a, min(a + self._cols, end))

    def index_row(self, index: int) -> int:
        g = max(0, bisect_right(self._group_starts, index) - 1)
        _, start, _ = self.groups[g]
        return self._first_rows[g] + (1 if self.labelled else 0) + (index - start) // self._cols

    def _update_virtual_size(self) -> None:
        region = self.scrollable_content_region
        width = region.width or self.size.width
        cell, cell_h = self._fit_cell(width, region.height or self.size.height)
        if (cell, cell_h) != (self.cell_width, self.cell_height):
            self.cell_width, self.cell_height = cell, cell_h
            self._segments.clear()
            self._lines.clear()
        cols = max(1, width // self.cell_width)
        if cols != self._cols:
            self._cols = cols
            self._lines.clear()
        self._relayout()
        self.virtual_size = Size(self._cols * self.cell_width, self._total_rows * self.cell_height)
        if self.auto_problems_first and self.names and self._overflows(len(self.names)) != self.problems_first:
            self.set_grouping(problems_first=not self.problems_first, auto=True)  # resized past the edge

    def on_resize(self, event: events.Resize) -> None:
        self._update_virtual_size()
        self._scroll_cursor_visible()
        self.refresh()

    def on_mount(self) -> None:
        self._build_styles()
        self.app.theme_changed_signal.subscribe(self, self._on_theme_changed)

    def _on_theme_changed(self, theme: Theme) -> None:
        self._build_styles()
        self._invalidate()

    # -- drawing --------------------------------------------------------------
    def _build_styles(self) -> None:
        """Resolve theme variables into one base style per level (and its cursor variant)."""
        self._palette = palette = Palette.from_app(self.app)
        fixed = level_colours(self.metric, self.palette_name)
        if fixed is not None:  # a fixed (colour-blind-safe) ramp: text contrasts with each cell
            colours = [Color.parse(c) for c in fixed]
            self._base = [Style(bgcolor=c.rich_color, color=c.get_contrast_text(1.0).rich_color) for c in colours]
            self._cursor_styles = [Style(bgcolor=c.get_contrast_text(1.0).rich_color, color=c.rich_color, bold=True)
                                   for c in colours]
        else:
            names = level_vars(self.metric)
            text = palette.color("cell-text")
            self._base = [Style(bgcolor=palette.color(n), color=text) for n in names]
            self._cursor_styles = [Style(bgcolor=text, color=palette.color(n), bold=True) for n in names]
        self._label_style = Style(color=palette.color("accent"), bold=True)
        self._segments.clear()
        self._lines.clear()

    def _segment(self, level: int, glyph: int, marked: bool, cursor: bool, label: str = "") -> Segment:
        key = (level, glyph, marked, cursor, label)
        segment = self._segments.get(key)
        if segment is None:
            w = self.cell_width
            chars = [GLYPHS[glyph]] + [" "] * (w - 1)
            if glyph == GLYPH_NONE and self.metric is Metric.HEALTH and self.palette_name == "colorblind":
                chars[0] = SEVERITY_GLYPHS[min(level, NA_LEVEL)]  # severity by shape, not by hue alone
            if label:  # wide cells: the node's number between the glyph and the mark
                space = w - 2
                text = label if len(label) <= space else label[0] + label[-(space - 1):]
                text = text.rjust(space)
                chars[1:w - 1] = list(text)
            if cursor and chars[0] == " ":
                chars[0] = "■"
            if marked:
                chars[-1] = "•" if w > 1 or chars[0] == " " else chars[-1]
            level = min(level, NA_LEVEL)
            style = (self._cursor_styles if cursor else self._base)[level]
            segment = self._segments[key] = Segment("".join(chars), style)
        return segment

    def _invalidate(self) -> None:
        self._lines.clear()
        self.refresh()

    def _invalidate_index(self, index: int) -> None:
        h = self.cell_height
        first = self.index_row(index) * h
        for line in range(first, first + h):
            self._lines.pop(line, None)
            self.refresh_line(line)

    def _build_line(self, line: int) -> Strip:
        """One screen line: the whole cell row when cells are one line tall; else the middle line
        of a cell carries its glyph and label, the others only its colour."""
        h = self.cell_height
        if h == 1:
            return self._build_row(line)
        row, sub = divmod(line, h)
        if sub == h // 2:
            return self._build_row(row)
        cells = self.row_cells(row)
        if not isinstance(cells, tuple) or len(self.levels) < cells[1]:
            return Strip.blank(0)
        start, end = cells
        levels, cursor, blank = self.levels, self.cursor, self._blank_segment
        return Strip([blank(levels[i], i == cursor) for i in range(start, end)], (end - start) * self.cell_width)

    def _blank_segment(self, level: int, cursor: bool) -> Segment:
        key = (level, -1, False, cursor, "")
        segment = self._segments.get(key)
        if segment is None:
            style = (self._cursor_styles if cursor else self._base)[min(level, NA_LEVEL)]
            segment = self._segments[key] = Segment(" " * self.cell_width, style)
        return segment

    def _build_row(self, row: int) -> Strip:
        if not self._base:
            self._build_styles()
        cells = self.row_cells(row)
        if cells is None:
            return Strip.blank(0)
        if isinstance(cells, str):  # a group label row
            return self._label_row(cells)
        start, end = cells
        levels, glyphs, marked, cursor = self.levels, self.glyphs, self.marked, self.cursor
        if len(levels) < end:  # data not computed yet
            return Strip.blank(0)
        segment = self._segment
        if self.cell_width >= LABEL_MIN_WIDTH:
            labels = self._cell_labels()
            segments = [segment(levels[i], glyphs[i], i in marked, i == cursor, labels[i])
                        for i in range(start, end)]
        else:
            segments = [segment(levels[i], glyphs[i], i in marked, i == cursor) for i in range(start, end)]
        return Strip(segments, (end - start) * self.cell_width)

    def _label_row(self, label: str) -> Strip:
        group = next((g for g in self.groups if g[0] == label), None)
        count = group[2] - group[1] if group else 0
        bad = 0
        if group is not None and len(self.levels) >= group[2] and self.metric is Metric.HEALTH:
            bad = sum(1 for lv in self.levels[group[1]:group[2]] if 2 <= lv < NA_LEVEL)
        text = f"▾ {label} · {count} node{'s' if count != 1 else ''}" + (f" · {bad} problem" if bad else "")
        text = text + ("s" if bad > 1 else "")
        width = self._cols * self.cell_width
        return Strip([Segment(text[:width].ljust(width), self._label_style)], width)

    def _cell_labels(self) -> list[str]:
        """Unique short labels for the current names and cell width (see hpctui.ui.labels)."""
        key = (id(self.names), len(self.names), self.cell_width)
        cached: tuple[object, list[str]] | None = getattr(self, "_label_cache", None)
        if cached is None or cached[0] != key:
            cached = self._label_cache = (key, unique_labels(self.names, self.cell_width - 2))
        return cached[1]

    def render_line(self, y: int) -> Strip:
        line = y + int(self.scroll_offset.y)
        if line < 0 or line >= self._total_rows * self.cell_height:
            return Strip.blank(0)
        strip = self._lines.get(line)
        if strip is None:
            if not self._base:
                self._build_styles()
            strip = self._lines[line] = self._build_line(line)
        return strip

    # -- cursor and marks -----------------------------------------------------
    def _move_cursor(self, index: int) -> None:
        if self.names:
            self.cursor = index

    def validate_cursor(self, index: int) -> int:
        """The cursor stays on a node: clamped to ``names``."""
        return max(0, min(len(self.names) - 1, index))

    def watch_cursor(self, old: int, index: int) -> None:
        """Redraw the two cells, keep the new one in view, and tell the screen."""
        self._invalidate_index(old)
        self._invalidate_index(index)
        self._scroll_cursor_visible()
        if self.cursor_listener is not None:
            # At once, in this key's handling: through the message alone, the cells went to the
            # screen first and the node panel a frame later (Textual's frame timer then waits
            # 17-33 ms): ~30 ms of every arrow key's latency.
            self.cursor_listener(self.cursor_node)
        self.post_message(self.Highlighted(self.cursor_node))

    def _scroll_cursor_visible(self) -> None:
        row = self.index_row(self.cursor) if self.names else 0
        if self.labelled and row > 0 and self.row_cells(row - 1).__class__ is str:
            row -= 1  # show the group's label with its first row
        h = self.cell_height
        top = int(self.scroll_offset.y)
        height = max(1, self.scrollable_content_region.height)
        if row * h < top:
            self.scroll_to(y=row * h, animate=False)
        elif (row + 1) * h > top + height:
            self.scroll_to(y=(row + 1) * h - height, animate=False)

    def action_move(self, dx: int, dy: int) -> None:
        if dy == 0 or not self.names:
            self._move_cursor(self.cursor + dx)
            return
        self._move_cursor(self._vertical(self.cursor, dy))

    def _vertical(self, index: int, dy: int) -> int:
        """The node ``dy`` cell rows above/below ``index`` (label rows skipped), same column."""
        row = self.index_row(index)
        cells = self.row_cells(row)
        col = index - cells[0] if isinstance(cells, tuple) else 0
        step = 1 if dy > 0 else -1
        left = abs(dy)
        target = index
        while left:
            row += step
            cells = self.row_cells(row)
            if cells is None:
                break
            if isinstance(cells, str):
                continue
            target = min(cells[0] + col, cells[1] - 1)
            left -= 1
        return target

    def action_page(self, direction: int) -> None:
        rows = max(1, self.scrollable_content_region.height // self.cell_height - 1)
        self._move_cursor(self._vertical(self.cursor, direction * rows) if self.names else 0)

    def action_jump(self, where: int) -> None:
        self._move_cursor(0 if where == 0 else len(self.names) - 1)

    def action_toggle_mark(self) -> None:
        if not self.names:
            return
        self.marked.symmetric_difference_update({self.cursor})
        self._invalidate_index(self.cursor)
        self.post_message(self.MarksChanged(self.marked_nodes))

    def action_clear_marks(self) -> None:
        if not self.marked:  # nothing to unmark: esc goes on to the view stack (back)
            raise SkipAction()
        self.clear_marks()

    def clear_marks(self) -> None:
        """Unmark every node (callers that set marks of their own: go-to, the drained view)."""
        if self.marked:
            self.marked.clear()
            self._invalidate()
            self.post_message(self.MarksChanged(()))

    def action_cycle_group(self) -> None:
        i = GROUP_ORDER.index(self.group_by) if self.group_by in GROUP_ORDER else -1
        self.set_grouping(GROUP_ORDER[(i + 1) % len(GROUP_ORDER)])
        self.notify(f"heatmap grouped by {self.group_by}", timeout=1.5)

    def action_toggle_zoom(self) -> None:
        if self.zoom is not None:
            self.set_grouping(zoom=None)
            return
        group = self.group_of(self.cursor)
        if self.group_by == "none" or group is None:
            self.notify("zoom needs a grouping: press the group key first", timeout=2)
            return
        self.set_grouping(zoom=group[0])

    def action_toggle_problems_first(self) -> None:
        self.set_grouping(problems_first=not self.problems_first)
        self.notify(f"problem nodes first: {'on' if self.problems_first else 'off'}", timeout=1.5)

    def action_open_charts(self) -> None:
        self.post_message(self.ChartsRequested(self.cursor_node))

    def action_open_history(self) -> None:
        self.post_message(self.HistoryRequested(self.cursor_node))

    def action_cycle_metric(self) -> None:
        i = METRIC_ORDER.index(self.metric)
        self.set_metric(METRIC_ORDER[(i + 1) % len(METRIC_ORDER)])

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        col = offset.x // self.cell_width
        cells = self.row_cells((offset.y + int(self.scroll_offset.y)) // self.cell_height)
        if not isinstance(cells, tuple):
            return
        index = cells[0] + col
        if col < self._cols and index < cells[1]:
            self._move_cursor(index)
            if event.ctrl or event.shift:
                self.action_toggle_mark()

    # -- actions (intents go up) ----------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("request_action", "mig_wizard"):
            return self.actions_enabled  # False hides the key; the app answers "read-only"
        return True

    def action_mig_wizard(self) -> None:
        """The MIG wizard on the marked nodes (or the cursor node)."""
        self.post_message(MigWizardRequested(tuple(self.targets())))

    def action_open_shell(self) -> None:
        """``s``: a shell on the cursor node (one node, never the marks)."""
        node = self.cursor_node
        if node:
            self.post_message(ShellRequested(ActionKind.SHELL_NODE, node))

    def action_node_logs(self) -> None:
        """The kernel/journal log of the marked nodes (or the cursor node) in the log viewer."""
        targets = tuple(self.targets())
        if targets:
            self.post_message(LogsRequested("node", nodes=targets))

    def action_request_action(self, kind: str) -> None:
        targets = self.targets()
        if not targets:
            return
        action = ActionKind(kind)
        if action in JOB_ACTIONS:  # e.g. requeue everything running on the marked nodes
            self.post_message(ActionRequested(action, (), {"on_nodes": collect(targets)}))
        else:
            self.post_message(ActionRequested(action, targets))
