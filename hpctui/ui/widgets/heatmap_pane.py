"""The heatmap with its legend line and a title naming the metric and counts."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from hpctui.health import Thresholds
from hpctui.ui.heat import GLYPH_LEGEND, METRIC_TITLES, Metric, legend_entries
from hpctui.ui.widgets.borders import set_border_text
from hpctui.ui.widgets.heatmap import NodeHeatmap


def legend_content(metric: Metric, thresholds: Thresholds) -> Content:
    pieces: list[tuple[str, str] | str] = []
    for var, label in legend_entries(metric, thresholds):
        pieces += [("  ", f"on ${var}"), f" {label} "]
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
        yield Static(legend_content(self.heatmap.metric, self.heatmap.thresholds), id="legend", markup=False)

    def on_mount(self) -> None:
        self.update_title()

    def update_title(self) -> None:
        hm = self.heatmap
        marked = f" · {len(hm.marked)} marked" if hm.marked else ""
        title = f"Nodes ({len(hm.names)}) · {METRIC_TITLES[hm.metric]}{marked}"
        if title != self._title:  # a new title repaints the whole pane: only on change
            self._title = title
            set_border_text(self, title)

    @on(NodeHeatmap.MetricChanged)
    def _metric_changed(self, event: NodeHeatmap.MetricChanged) -> None:
        self.query_one("#legend", Static).update(legend_content(event.metric, self.heatmap.thresholds))
        self.update_title()

    @on(NodeHeatmap.MarksChanged)
    def _marks_changed(self, event: NodeHeatmap.MarksChanged) -> None:
        self.update_title()
