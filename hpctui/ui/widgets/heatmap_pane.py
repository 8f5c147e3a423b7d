"""The heatmap with its legend line and a title naming the metric and counts."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from hpctui.findings.health import Thresholds
from hpctui.ui.heat import GLYPH_LEGEND, METRIC_TITLES, SEVERITY_GLYPHS, Metric, legend_entries, level_colours
from hpctui.ui.widgets.borders import set_border_text
from hpctui.ui.widgets.heatmap import NodeHeatmap


def legend_content(metric: Metric, thresholds: Thresholds, palette: str = "default",
                   width: int | None = None) -> Content:
    """The colour swatches, then the glyphs; with ``width``, packed into lines of that width
    that break only between entries (a narrow pane never splits "K8s not ready")."""
    fixed = level_colours(metric, palette)
    severity_glyphs = fixed is not None and metric is Metric.HEALTH
    entries: list[list[tuple[str, str] | str]] = []
    for i, (var, label) in enumerate(legend_entries(metric, thresholds)):
        colour = f"on {fixed[i if i < len(fixed) - 1 else -1]}" if fixed is not None else f"on ${var}"
        swatch = f"{SEVERITY_GLYPHS[i]} " if severity_glyphs else "  "
        entries.append([(swatch, colour), f" {label} "])
    entries[-1].append("│")
    entries += [[(f" {glyph}", "bold"), f" {label}"] for glyph, label in GLYPH_LEGEND]
    entries.append([" • marked"])
    if width is None:
        return Content.assemble(*(piece for entry in entries for piece in entry))
    lines: list[list[tuple[str, str] | str]] = [[]]
    used = 0
    for entry in entries:
        size = sum(len(p if isinstance(p, str) else p[0]) for p in entry)
        if lines[-1] and used + size > width:
            lines.append([])
            used = 0
            if isinstance(entry[0], str):  # no leading blank at the start of a line
                entry = [entry[0].lstrip(), *entry[1:]]
            elif entry[0][0].startswith(" ") and entry[0][0].strip():
                entry = [(entry[0][0].lstrip(), entry[0][1]), *entry[1:]]
            size = sum(len(p if isinstance(p, str) else p[0]) for p in entry)
        lines[-1].extend(entry)
        used += size
    return Content("\n").join(Content.assemble(*line) for line in lines)


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

    def on_resize(self) -> None:
        self._draw_legend()

    def _draw_legend(self) -> None:
        width = self.size.width
        self.query_one("#legend", Static).update(
            legend_content(self.heatmap.metric, self.heatmap.thresholds, self.heatmap.palette_name, width or None))

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
        self._draw_legend()
        self.update_title()

    @on(NodeHeatmap.GroupingChanged)
    def _grouping_changed(self, event: NodeHeatmap.GroupingChanged) -> None:
        self.update_title()

    @on(NodeHeatmap.MarksChanged)
    def _marks_changed(self, event: NodeHeatmap.MarksChanged) -> None:
        self.update_title()
