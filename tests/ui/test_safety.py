"""Safety regressions of issue #11: keys typed into a filter never reach a table as actions,
and the cursor row of every table is visible in every theme, focused or not."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual import events
from textual.widgets import Input
from uikit import load

from hpctui.core.runtime import Runtime
from hpctui.ui.app import HpcApp
from hpctui.ui.palette import Palette
from hpctui.ui.widgets.panes import TablePane
from hpctui.ui.widgets.vtable import VirtualTable


def filterable_panes(app: HpcApp) -> list[TablePane]:
    return list(app.dashboard.query(TablePane))


async def _show(app: HpcApp, pilot: Any, pane: TablePane) -> None:
    """Bring a pane on screen (some share a slot) and focus its table."""
    show = getattr(app.dashboard, "show_pane", None)
    if show is not None:
        show(pane)
    await pilot.pause()
    pane.table.focus()
    await pilot.pause()


async def burst(app: HpcApp, pilot: Any, keys: str) -> None:
    """Keys as a fast typist (or a slow SSH link) delivers them: all queued before the app runs once.
    ``pilot.press`` waits for the app to go idle after every key, which hides the race."""
    driver = app._driver
    assert driver is not None
    for key in keys:
        name = "slash" if key == "/" else key
        event = events.Key(name, key)
        event.set_sender(app)
        driver.send_message(event)
    await pilot.pause()


async def _type_fast_everywhere(app: HpcApp, pilot: Any, words: tuple[str, ...]) -> None:
    panes = filterable_panes(app)
    assert {p.id for p in panes} >= {"queue-pane", "pods-pane", "ib-pane", "mounts-pane"}
    for pane in panes:
        for word in words:
            for typist in (("pilot", "burst") if word == words[0] else ("burst",)):  # a burst is the harder case
                await _show(app, pilot, pane)
                if typist == "pilot":
                    await pilot.press("slash", *word)  # no pause between the keys
                else:
                    await burst(app, pilot, "/" + word)
                where = f"{pane.id} ({typist}): /{word}"
                assert app.screen is app.dashboard, f"{where} opened {type(app.screen).__name__}"
                box = pane.query_one(Input)
                assert box.value == word, f"{where} typed {box.value!r}"
                await pilot.pause()
                assert pane.table.filter_text == word.lower(), where
                await pilot.press("escape")  # clears the filter and gives the table its focus back
                await pilot.pause()
                assert pane.table.filter_text == "" and app.focused is pane.table, where


FAST_WORDS = ("xyz", "1017", "heidixRHhlXdubcCnNpegwj")  # job id, action keys, triage keys


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])
async def test_keys_after_slash_go_to_the_filter_on_every_pane(make_runtime: Callable[..., Runtime],
                                                                size: tuple[int, int]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=size) as pilot:
        await load(app, pilot)
        await _type_fast_everywhere(app, pilot, FAST_WORDS)


async def test_keys_after_slash_go_to_the_filter_on_a_big_cluster(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(size=2048), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await load(app, pilot)
        await app.workers.wait_for_complete()
        await _type_fast_everywhere(app, pilot, ("xyz", "PENDING"))


def _row_background(table: VirtualTable[Any], y: int) -> set[str]:
    strip = table.render_line(y)
    return {str(seg.style.bgcolor.triplet) if seg.style and seg.style.bgcolor and seg.style.bgcolor.triplet else "?"
            for seg in strip if seg.text.strip()}


@pytest.mark.parametrize("theme", ["dark", "light", "wall", "textual-dark"])
async def test_cursor_row_is_visible_focused_and_not(make_runtime: Callable[..., Runtime], theme: str) -> None:
    app = HpcApp(make_runtime(), theme=theme, autostart=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await load(app, pilot)
        palette = Palette.from_app(app)
        for pane in filterable_panes(app):
            await _show(app, pilot, pane)
            table = pane.table
            if len(table.view) < 2:
                continue
            table.cursor = 0
            table._lines.clear()
            focused_bg = _row_background(table, 1)
            other_bg = _row_background(table, 2)
            assert len(focused_bg) == 1 and focused_bg != other_bg, f"{theme} {pane.id}: focused cursor row invisible"
            app.dashboard.heatmap.focus()
            await pilot.pause()
            assert not table.has_focus
            blurred_bg = _row_background(table, 1)
            assert len(blurred_bg) == 1 and blurred_bg != other_bg, f"{theme} {pane.id}: unfocused cursor invisible"
            assert blurred_bg != focused_bg, f"{theme} {pane.id}: unfocused cursor should be dimmer"
        assert palette.variables  # the theme resolved
