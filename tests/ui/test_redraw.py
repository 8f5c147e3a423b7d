"""Draw only what changed: new data redraws the lines that differ, not whole widgets."""

from __future__ import annotations

from typing import Any

import msgspec
from synth import jobs, snapshot
from textual.app import App, ComposeResult
from textual.containers import Vertical

from hpctui.findings.health import Thresholds
from hpctui.ui.heat import Metric
from hpctui.ui.themes import DEFAULT_VARIABLES
from hpctui.ui.widgets.borders import set_border_text
from hpctui.ui.widgets.heatmap import NodeHeatmap
from hpctui.ui.widgets.spark import spark_content
from hpctui.ui.widgets.tables import QueueTable


def _count_refreshes(widget: Any) -> dict[str, list[Any]]:
    """Record refresh() calls on ``widget``: whole-widget ones and line regions."""
    seen: dict[str, list[Any]] = {"full": [], "regions": []}
    original = widget.refresh

    def refresh(*regions: Any, **kw: Any) -> Any:
        seen["regions" if regions else "full"].append(regions)
        return original(*regions, **kw)

    widget.refresh = refresh
    return seen


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield QueueTable(id="q")


async def test_table_redraws_only_the_changed_visible_line() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 20)) as pilot:
        table = app.query_one(QueueTable)
        rows = jobs(500)
        table.set_rows(rows)
        await pilot.pause()
        seen = _count_refreshes(table)
        changed = list(rows)
        changed[3] = msgspec.structs.replace(rows[3], name="renamed")
        table.set_rows(changed)
        assert not seen["full"]
        assert len(seen["regions"]) == 1 and seen["regions"][0][0].y == 4  # row 3 is screen line 4 (header)
        same = list(changed)
        table.set_rows(same)  # a new list, equal rows: nothing to draw
        assert len(seen["regions"]) == 1 and not seen["full"]
        await pilot.pause()
        assert "renamed" in table.render_line(4).text


class HeatmapApp(App[None]):
    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(DEFAULT_VARIABLES)

    def compose(self) -> ComposeResult:
        yield NodeHeatmap(Thresholds(), id="hm")


async def test_heatmap_redraws_only_rows_whose_cells_changed() -> None:
    app = HeatmapApp()
    async with app.run_test(size=(60, 20)) as pilot:
        hm = app.query_one(NodeHeatmap)
        hm.set_metric(Metric.UTIL)
        snap = snapshot(300, gpus_per_node=1)
        hm.update_snapshot(snap)
        await pilot.pause()
        cached = set(hm._lines)
        assert len(cached) > 3
        seen = _count_refreshes(hm)
        name = hm.names[hm.columns + 1]  # a node on the second row
        gpus = snap.gpus[name]
        util = 5.0 if (gpus[0].util_pct or 0) > 50 else 95.0
        hot = {**snap.gpus, name: (msgspec.structs.replace(gpus[0], util_pct=util),)}
        hm.update_snapshot(msgspec.structs.replace(snap, gpus=hot))
        assert not seen["full"]
        assert [r[0].y for r in seen["regions"]] == [1]
        assert set(hm._lines) == cached - {1}


async def test_border_text_sets_the_title_without_a_full_repaint() -> None:
    class PaneApp(App[None]):
        def compose(self) -> ComposeResult:
            yield Vertical(id="pane")

    app = PaneApp()
    async with app.run_test(size=(40, 10)) as pilot:
        pane = app.query_one("#pane", Vertical)
        pane.styles.border = ("round", "white")
        await pilot.pause()
        seen = _count_refreshes(pane)
        set_border_text(pane, "Nodes (4)")
        set_border_text(pane, "slurmctld ok", subtitle=True)
        assert pane.border_title == "Nodes (4)" and pane.border_subtitle == "slurmctld ok"
        assert not seen["full"] and len(seen["regions"]) == 2


def test_sparkline_runs_share_a_colour() -> None:
    content = spark_content([1, 1, 1, 9, 9, 9, 5], 80)
    assert content.plain == "▁▁▁███▅"
    assert len(content.spans) == 3  # three runs, not seven cells
    assert spark_content([1, 2, 3], 2).plain == "▁█"  # only the newest that fit
    assert spark_content([], 10).plain == ""
