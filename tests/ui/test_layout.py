"""Responsive layout (issue #12): one pane at a time under a tab bar below 100 columns,
column priorities in between, panes and columns that grow above 200; the footer always
shows ``?`` and ``q``."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.color import Color
from textual.widgets import Static
from uikit import load

from hpctui.core.runtime import Runtime
from hpctui.ui.app import HpcApp
from hpctui.ui.screens.dashboard import TAB_SLOTS, fit_top
from hpctui.ui.widgets.footer import PINNED, KeyBar, KeyEntry
from hpctui.ui.widgets.heatmap import LABEL_MIN_WIDTH
from hpctui.ui.widgets.tabbar import TAB_NAMES, TABS, TabBar
from hpctui.ui.widgets.vtable import Column, Fit, fit_columns

MakeRuntime = Callable[..., Runtime]


def footer_keys(app: HpcApp) -> list[KeyEntry]:
    return [k for k in app.screen.query_one(KeyBar).entries if not k.palette]


def assert_help_and_quit_visible(app: HpcApp, width: int) -> None:
    """``?`` first, then the triage keys (n, p, g; #22) and ``q``: all on screen at this width."""
    keys = footer_keys(app)
    actions = [k.action for k in keys]
    pinned = [a for a in PINNED if a in actions]
    assert actions[:len(pinned)] == pinned and pinned[0] == "help" and "quit" in pinned, actions
    palette = [k for k in app.screen.query_one(KeyBar).entries if k.palette]
    right = palette[0].start if palette else width
    for key in keys[:len(pinned)]:
        assert key.end > key.start and key.end <= right, (key.action, key.start, key.end)


# -- narrow: tabs ---------------------------------------------------------------------------
async def test_every_tab_by_key_full_size_at_80x24(make_runtime: MakeRuntime) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await load(app, pilot)
        screen = app.dashboard
        main = screen.query_one("#main")
        assert main.region.height == 24 - 3  # status, tab bar, footer: the rest is the one pane
        assert screen.query_one(TabBar).display
        seen = []
        for i in range(len(TAB_NAMES)):
            if i:
                await pilot.press("right_square_bracket")
                await pilot.pause()
            seen.append(screen.tab)
            _, slot = TAB_SLOTS[screen.tab]
            pane = screen.query_one(f"#{slot}")
            shown = [slot]
            if screen.tab == "heatmap":  # 80 nodes leave room for the node's panel under the heatmap
                shown.append("gpu-panel")
                node_panel = screen.gpu_panel.region
                assert node_panel.width == 80 and node_panel.height >= 8
                assert pane.region.height + node_panel.height == main.region.height
            else:
                assert pane.region.height == main.region.height, (screen.tab, pane.region)
            assert pane.region.width == 80, (screen.tab, pane.region)
            others = [w for w in ("heatmap-pane", "gpu-panel", "views", "pods-pane", "ib-pane", "mounts-pane")
                      if w not in shown]
            assert all(screen.query_one(f"#{w}").region.area == 0 for w in others), screen.tab
            assert main.max_scroll_y == 0  # nothing scrolls the whole screen
            assert_help_and_quit_visible(app, 80)  # with this tab's pane focused
        assert seen == list(TAB_NAMES)
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert screen.tab == "heatmap"  # wraps around
        await pilot.press("left_square_bracket")
        await pilot.pause()
        assert screen.tab == "events"
        await pilot.press("p")  # the view keys switch tabs too
        await pilot.pause()
        assert screen.tab == "problems" and screen.query_one("#problems-pane").region.width == 80


async def test_big_cluster_heatmap_tab_is_the_heatmap_alone(make_runtime: MakeRuntime) -> None:
    app = HpcApp(make_runtime(size=128), autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await load(app, pilot)
        assert app.dashboard.query_one("#heatmap-pane").region.height == 24 - 3
        assert app.dashboard.gpu_panel.region.area == 0


async def test_show_view_and_enter_on_a_node_at_80x24(make_runtime: MakeRuntime) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await load(app, pilot)
        screen = app.dashboard
        for name in ("mounts", "pods", "heatmap"):
            screen.show_view(name)
            await pilot.pause()
            assert screen.tab == name
        await pilot.press("enter")  # on the heatmap: the node tab with the node's panel
        await pilot.pause()
        assert screen.tab == "node" and app.focused is screen.gpu_panel
        body = screen.gpu_panel.body_text
        gpus = app.runtime.store.snapshot().gpus[screen.selected]
        table = [line for line in body.splitlines() if line[:2].strip().isdigit()]
        assert len(table) == len(gpus) == 8  # every GPU, not only GPU 0
        assert screen.gpu_panel.region.height >= len(gpus) + 6  # all rows on screen, no scrolling
        top_lines = body.splitlines()[:len(gpus) + 4]
        assert sum(1 for line in top_lines if line[:2].strip().isdigit()) == 8  # GPUs right under the state


# -- footer ---------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)])
async def test_footer_starts_with_help_and_quit(make_runtime: MakeRuntime, size: tuple[int, int]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=size) as pilot:
        await load(app, pilot)
        for name in ("heatmap", "queue", "pods", "ib", "node"):
            app.dashboard.show_view(name)
            for _ in range(3):  # the footer recomposes after the next refresh
                await pilot.pause()
            assert_help_and_quit_visible(app, size[0])


# -- middle widths: column priorities ---------------------------------------------------------
async def test_120x40_keeps_reason_problem_and_pod_reasons(make_runtime: MakeRuntime) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await load(app, pilot)
        screen = app.dashboard
        queue = screen.queue_pane.table
        assert {"id", "state", "gpus", "nodes", "reason"} <= set(queue.shown_columns)
        assert "partition" not in queue.shown_columns or "name" in queue.shown_columns  # partition goes first
        assert queue.virtual_size.width <= queue.size.width  # no sideways scrolling
        assert "problem" in screen.ib_pane.table.shown_columns
        pods = screen.pods_pane.table
        reason_width = {c.key: w for c, w in pods.col_layout}["reason"]
        assert reason_width >= len("CrashLoopBackOff")
        lines = [pods.render_line(y).text for y in range(1, 6)]
        assert any("CrashLoopBackOff" in line for line in lines), lines
        assert any("Unschedulable" in line for line in lines), lines


async def test_legend_fits_its_pane_at_120x40(make_runtime: MakeRuntime) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await load(app, pilot)
        legend = app.dashboard.query_one("#legend", Static)
        text = str(legend.render())
        lines = text.splitlines()
        assert "marked" in lines[-1] and len(lines) == legend.region.height
        assert max(len(line) for line in lines) <= legend.region.width
        assert not any(line.rstrip().endswith("not") for line in lines)  # "K8s not ready" stays whole


async def test_160_nodes_keep_labels_at_120x40(make_runtime: MakeRuntime) -> None:
    app = HpcApp(make_runtime(size=128), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await load(app, pilot)
        heatmap = app.dashboard.heatmap
        assert len(heatmap.names) == 160
        assert heatmap.cell_width >= LABEL_MIN_WIDTH
        assert heatmap.max_scroll_y == 0  # every node on screen
        assert any(ch.isdigit() for ch in heatmap.render_line(0).text)


# -- wide: columns and panes grow --------------------------------------------------------------
async def test_300x80_long_nodelist_not_cut(make_runtime: MakeRuntime) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(300, 80)) as pilot:
        await load(app, pilot)
        screen = app.dashboard
        queue = screen.queue_pane.table
        longest = max((j.nodes or "" for j in queue.view), key=len)
        assert "," in longest and "[" in longest  # e.g. gpu[0053-0055,0057]
        widths = {c.key: w for c, w in queue.col_layout}
        assert widths["nodes"] >= len(longest)
        row = queue.view.index(next(j for j in queue.view if j.nodes == longest))
        queue.scroll_to(y=max(0, row - 2), animate=False)
        await pilot.pause()
        texts = [queue.render_line(y).text for y in range(1, queue.size.height)]
        assert any(longest in t for t in texts)
        # the top row is no taller than its panes need: the tables get the rest
        top = screen.query_one("#top")
        assert top.region.height < (80 - 2) // 2
        assert screen.query_one("#middle").region.height > top.region.height


def test_fit_top_gives_small_clusters_less_height() -> None:
    tall, _ = fit_top(300, 78, 16384, 8)
    short, width = fit_top(300, 78, 80, 8)
    assert short < tall and short >= 8 + 14
    assert 90 <= width <= 165


# -- column fitting --------------------------------------------------------------------------
def _cols(*spec: tuple[str, int]) -> list[Column[str]]:
    return [Column(key, key.upper(), width, str) for key, width in spec]


def test_fit_columns_drops_low_priority_first_and_grows() -> None:
    cols = _cols(("id", 8), ("part", 8), ("reason", 20))
    fit = {"id": Fit(100), "part": Fit(10), "reason": Fit(90, 10, grow=1)}
    assert [(c.key, w) for c, w in fit_columns(cols, fit, 39)] == [("id", 8), ("part", 8), ("reason", 20)]
    # (#22) a low-value column (priority below 50) goes before a column that matters is cut
    assert [(c.key, w) for c, w in fit_columns(cols, fit, 30)] == [("id", 8), ("reason", 20)]
    assert [(c.key, w) for c, w in fit_columns(cols, fit, 25)] == [("id", 8), ("reason", 15)]
    assert [(c.key, w) for c, w in fit_columns(cols, fit, 60)] == [("id", 8), ("part", 8), ("reason", 41)]
    assert [c.key for c, _ in fit_columns(cols, fit, 3)] == ["id"]  # never empty


# -- light theme -----------------------------------------------------------------------------
def _luminance(c: Color) -> float:
    def channel(v: int) -> float:
        x = v / 255
        return x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4
    return 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b)


def _contrast(a: Color, b: Color) -> float:
    """WCAG contrast ratio."""
    la, lb = _luminance(a) + 0.05, _luminance(b) + 0.05
    return max(la, lb) / min(la, lb)


@pytest.mark.parametrize("theme", ["dark", "light", "wall"])
async def test_unfocused_pane_borders_show(make_runtime: MakeRuntime, theme: str) -> None:
    app = HpcApp(make_runtime(), theme=theme, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await load(app, pilot)
        pane = app.dashboard.ib_pane  # not focused
        _, border_color = pane.styles.border_top
        assert _contrast(border_color, pane.styles.background) > 1.8, (theme, border_color.hex)


async def test_tab_key_stays_in_the_heatmap_tab_at_80x24(make_runtime: MakeRuntime) -> None:
    """``tab`` to the node panel under a small heatmap keeps the heatmap tab (both stay on screen)."""
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await load(app, pilot)
        await pilot.press("tab")
        await pilot.pause()
        assert app.focused is app.dashboard.gpu_panel and app.dashboard.tab == "heatmap"
        assert app.dashboard.heatmap.region.height > 0
        await pilot.press("tab")
        await pilot.pause()
        assert app.focused is app.dashboard.heatmap


async def test_tab_bar_highlights_the_shown_tab(make_runtime: MakeRuntime) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await load(app, pilot)
        bar = app.dashboard.query_one(TabBar)
        for name in ("pods", "ib"):
            app.dashboard.show_view(name)
            await pilot.pause()
            content = bar._drawn
            assert content is not None
            highlighted = [content.plain[s.start:s.end].strip() for s in content.spans if "reverse" in str(s.style)]
            assert highlighted == [dict(TABS)[name]], highlighted
