"""Draw only what changed: new data redraws the lines that differ, not whole widgets."""

from __future__ import annotations

from typing import Any

import msgspec
from synth import jobs, snapshot
from textual.app import App, ComposeResult
from textual.containers import Vertical

from hpctui.findings.health import Thresholds
from hpctui.ui.heatmap_levels import Metric
from hpctui.ui.themes import DEFAULT_VARIABLES
from hpctui.ui.widgets.borders import set_border_text
from hpctui.ui.widgets.node_heatmap import NodeHeatmap
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


def _screen_text(app: Any) -> list[list[tuple[str, str]]]:
    """Every cell run of the screen as drawn now: (text, style) per segment, line by line."""
    return [[(seg.text, str(seg.style)) for seg in strip] for strip in app.screen._compositor.render_strips()]


async def test_focus_change_repaints_the_panes_not_their_lines(make_runtime: Any) -> None:
    """``tab`` moves the focus frame (border and title colour) without repainting the panes'
    children (the node panel's lines, a table's rows), and the screen is what a full restyle and
    repaint of every widget draws."""
    from textual.widgets import Static
    from uikit import load

    from hpctui.ui.app import HpcApp

    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        lines = list(app.dashboard.gpu_panel.query(Static))
        assert len(lines) > 10
        seen = [_count_refreshes(w) for w in lines]
        for key, focused in (("tab", "gpu-panel"), ("tab", "queue"), ("shift+tab", "gpu-panel"),
                             ("shift+tab", "heatmap")):
            await pilot.press(key)
            await pilot.pause()
            assert app.focused is not None and app.focused.id == focused
            assert not any(s["full"] or s["regions"] for s in seen), key
            drawn = _screen_text(app)
            app.stylesheet.update(app.screen)  # every node restyled, every widget drawn afresh
            for node in app.screen.walk_children(with_self=True):
                node.refresh()
            await pilot.pause()
            assert _screen_text(app) == drawn, key
            for s in seen:
                s["full"].clear()
                s["regions"].clear()


async def test_an_arrow_key_draws_the_cursor_and_the_node_panel_together(make_runtime: Any) -> None:
    """The node panel follows the heatmap cursor in the key's own handling, not a message later:
    the cursor's cells and the panel go to the terminal in one screen update (one frame)."""
    from uikit import load

    from hpctui.ui.app import HpcApp

    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        heatmap, panel = app.dashboard.heatmap, app.dashboard.gpu_panel
        before = heatmap.cursor_node
        heatmap.action_move(1, 0)  # what `right` runs; no await: nothing else has run yet
        assert heatmap.cursor_node != before
        assert app.dashboard.selected == heatmap.cursor_node == panel.node
        await pilot.pause()
        assert f"Node {heatmap.cursor_node}" in str(panel.border_title)
