"""The heatmap with its legend line and a title naming the metric and counts."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from hpctui.health import Thresholds
from hpctui.ui.heat import GLYPH_LEGEND, METRIC_TITLES, SEVERITY_GLYPHS, Metric, legend_entries, level_colours
from hpctui.ui.widgets.borders import set_border_text
from hpctui.ui.widgets.heatmap import NodeHeatmap


def legend_content(metric: Metric, thresholds: Thresholds, palette: str = "default") -> Content:
    pieces: list[tuple[str, str] | str] = []
    fixed = level_colours(metric, palette)
    severity_glyphs = fixed is not None and metric is Metric.HEALTH
    for i, (var, label) in enumerate(legend_entries(metric, thresholds)):
        colour = f"on {fixed[i if i < len(fixed) - 1 else -1]}" if fixed is not None else f"on ${var}"
        swatch = f"{SEVERITY_GLYPHS[i]} " if severity_glyphs else "  "
        pieces += [(swatch, colour), f" {label} "]
    pieces.append("│")
    for glyph, label in GLYPH_LEGEND:
        pieces += [(f" {glyph}", "bold"), f" {label}"]
    pieces.append(" • marked")
    return Content.assemble(*pieces)


class HeatmapPane(Vertical):
    """Owns the legend; the heatmap tells it (by message) when the metric changes."""

    def __init__(self, heatmap: NodeHeatmap, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.heatmap = heatmap
        self._title = ""

    def compose(self) -> ComposeResult:
        yield self.heatmap
        yield Static(legend_content(self.heatmap.metric, self.heatmap.thresholds, self.heatmap.palette_name),
                     id="legend", markup=False)

    def on_mount(self) -> None:
        self.update_title()

    def update_title(self) -> None:
        hm = self.heatmap
        marked = f" · {len(hm.marked)} marked" if hm.marked else ""
        grouping = f" · by {hm.group_by}" if hm.group_by != "none" else ""
        grouping += f" · zoom {hm.zoom} (z: back)" if hm.zoom is not None else ""
        grouping += " · problems first" if hm.problems_first else ""
        title = f"Nodes ({len(hm.names)}) · {METRIC_TITLES[hm.metric]}{grouping}{marked}"
        if title != self._title:  # a new title repaints the whole pane: only on change
            self._title = title
            set_border_text(self, title)

    @on(NodeHeatmap.MetricChanged)
    def _metric_changed(self, event: NodeHeatmap.MetricChanged) -> None:
        self.query_one("#legend", Static).update(legend_content(event.metric, self.heatmap.thresholds,
                                                                self.heatmap.palette_name))
        self.update_title()

    @on(NodeHeatmap.GroupingChanged)
    def _grouping_changed(self, event: NodeHeatmap.GroupingChanged) -> None:
        self.update_title()

    @on(NodeHeatmap.MarksChanged)
    def _marks_changed(self, event: NodeHeatmap.MarksChanged) -> None:
        self.update_title()
