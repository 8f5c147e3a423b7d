"""Readable at a glance (issue #22 §4): every state colour reads at WCAG AA (4.5:1) on every
background and cursor it is drawn on, in every shipped theme; the wall shows no cursor."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from rich.segment import Segment
from textual.color import Color
from uikit import load

from hpctui.core.runtime import Runtime
from hpctui.ui.app import HpcApp
from hpctui.ui.contrast import MIN_RATIO, contrast_ratio, readable
from hpctui.ui.themes import load_themes
from hpctui.ui.widgets.tables import JOB_STATE_VAR, POD_PHASE_VAR, SEVERITY_VAR
from hpctui.ui.widgets.vtable import VirtualTable

MakeRuntime = Callable[..., Runtime]
THEMES = sorted(load_themes())
# Every colour drawn as text for a state: severities, job states, pod phases, plus plain text.
STATE_TEXT = sorted({*(v for v in SEVERITY_VAR.values() if v), *JOB_STATE_VAR.values(), *POD_PHASE_VAR.values(),
                     "foreground", "accent"})


def test_the_ratio_is_wcag() -> None:
    assert contrast_ratio(Color(0, 0, 0), Color(255, 255, 255)) == pytest.approx(21.0)
    assert contrast_ratio(Color(119, 119, 119), Color(255, 255, 255)) == pytest.approx(4.48, abs=0.01)
    red, teal = Color.parse("#E0565B"), Color.parse("#213C55")
    assert contrast_ratio(red, teal) < MIN_RATIO <= contrast_ratio(readable(red, teal), teal)


def test_shipped_themes_cover_the_state_colours() -> None:
    assert {"dark", "light", "wall"} <= set(THEMES)


def _colour(app: HpcApp, name: str) -> Color:
    background = Color.parse(app.theme_variables["background"])
    return background + Color.parse(app.theme_variables[name])


@pytest.mark.parametrize("theme", THEMES)
async def test_state_colours_read_on_every_background(make_runtime: MakeRuntime, theme: str) -> None:
    """As the panes draw them with CSS ($error on the node panel, $sev-critical-text in findings)."""
    app = HpcApp(make_runtime(theme=theme), theme=theme, autostart=False)
    async with app.run_test(size=(120, 40)):
        bad = []
        for bg in ("background", "surface", "panel"):
            for fg in STATE_TEXT:
                ratio = contrast_ratio(_colour(app, fg), _colour(app, bg))
                if ratio < MIN_RATIO:
                    bad.append(f"{theme}: {fg} on {bg}: {ratio:.2f}")
        assert not bad, "\n".join(bad)


def _segments_ratios(table: VirtualTable[object], y: int, default_fg: Color, default_bg: Color) -> list[float]:
    out = []
    for seg in table.render_line(y):
        assert isinstance(seg, Segment)
        if not seg.text.strip() or seg.style is None:
            continue
        fg = Color.from_rich_color(seg.style.color) if seg.style.color is not None else default_fg
        bg = Color.from_rich_color(seg.style.bgcolor) if seg.style.bgcolor is not None else default_bg
        out.append(contrast_ratio(fg, bg))
    return out


@pytest.mark.parametrize("theme", THEMES)
async def test_cursor_rows_read_in_every_theme(make_runtime: MakeRuntime, theme: str) -> None:
    """The hung-Lustre mount (critical) and the problem list's top row under the cursor, focused
    and not, and every other row of those tables: each cell at 4.5:1 on what it is drawn on."""
    app = HpcApp(make_runtime(theme=theme, seed=1), theme=theme, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        screen = app.dashboard
        fg, bg = _colour(app, "foreground"), _colour(app, "surface")
        bad = []
        for view, table in (("mounts", screen.mounts_pane.table), ("ib", screen.ib_pane.table),
                            ("problems", screen.problems_pane.table), ("queue", screen.queue_pane.table)):
            screen.show_view(view)
            await pilot.pause()
            assert table.view
            for focused in (True, False):
                if not focused:
                    screen.heatmap.focus()
                    await pilot.pause()
                assert table.has_focus == focused
                for y in range(1, min(len(table.view), table.size.height - 1) + 1):
                    low = [r for r in _segments_ratios(table, y, fg, bg) if r < MIN_RATIO]
                    if low:
                        bad.append(f"{theme} {view} row {y} {'focused' if focused else 'blurred'}: {low}")
        assert screen.mounts_pane.table.view[0].severity >= 3  # the hung mount is the row checked
        assert not bad, "\n".join(bad)


async def test_wall_tables_show_no_cursor(make_runtime: MakeRuntime) -> None:
    from hpctui.ui.screens.wall import WallScreen

    app = HpcApp(make_runtime(seed=1), wall=True, autostart=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await load(app, pilot)
        wall = app.screen
        assert isinstance(wall, WallScreen)
        table = wall.top_problems.table
        assert table.view
        top, second = table.render_line(1), table.render_line(2)
        cursor_bg = {s.style.bgcolor for s in top if s.style is not None and s.text.strip()}
        other_bg = {s.style.bgcolor for s in second if s.style is not None and s.text.strip()}
        assert cursor_bg <= other_bg | {None}, "the wall's top problem is drawn under a cursor bar"
