"""Custom actions in the app: a key on the heatmap selection → preview (exact argv) → result view
with the folded output; the palette and ``run_custom_action``; read-only; remapping by id."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
from uikit import load

from hpctui.actions.custom import CustomActionSettings
from hpctui.actions.fold import label_set
from hpctui.core.runtime import Runtime
from hpctui.ui.app import HpcApp
from hpctui.ui.screens.custom_result import CustomPreviewScreen, CustomResultScreen, plan_text, result_text

PARITY = ["sh", "-c", 'case "$1" in *[13579]) echo odd;; *) echo even;; esac', "sh", "{node}"]


def parity(**kw: object) -> CustomActionSettings:
    return msgspec.convert({"name": "parity", "key": "ctrl+g", "command": PARITY, "description": "odd or even", **kw},
                           CustomActionSettings)


async def _until_done(app: HpcApp, pilot: object) -> CustomResultScreen:
    for _ in range(200):  # bounded wait for the subprocesses, not a timed assertion
        screen = app.screen
        if isinstance(screen, CustomResultScreen) and screen.run.result is not None:
            await pilot.pause(0.3)  # type: ignore[attr-defined]
            return screen
        await pilot.pause(0.05)  # type: ignore[attr-defined]
    raise AssertionError(f"no finished result view: {app.screen!r}")


async def test_key_on_heatmap_selection_previews_then_shows_folded_output(
        make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime(size=8, seed=1)
    rt.custom_actions = (parity(),)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        await pilot.press("space", "right", "space", "right", "space", "right", "space")
        marked = app.dashboard.heatmap.marked_nodes
        assert len(marked) == 4
        await pilot.press("ctrl+g")
        await pilot.pause()
        preview = app.screen
        assert isinstance(preview, CustomPreviewScreen)
        shown = plan_text(preview.plan).plain
        assert f"{marked[1]} (1): sh -c" in shown and shown.count("$ ") == 4  # the exact argv per node
        await pilot.press("enter")  # not dangerous, no confirm: enter runs it
        result = await _until_done(app, pilot)
        text = result_text(result.run).plain
        odd = [n for n in marked if int(n[-1]) % 2]
        even = [n for n in marked if not int(n[-1]) % 2]
        assert f"---------------- {label_set(odd)} ({len(odd)}) ----------------\nodd\n" in text
        assert f"---------------- {label_set(even)} ({len(even)}) ----------------\neven\n" in text
        head = str(result.query_one("#custom-head").render())
        assert "done: 4/4 ok" in head
        await pilot.press("escape")
        assert app.screen is app.dashboard
    outcome = rt.executor.audit.read()[-1]  # type: ignore[union-attr]
    assert outcome["action"] == "custom" and outcome["targets"] == list(marked)


async def test_palette_entry_and_dangerous_word(make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime(size=8, seed=1)
    rt.custom_actions = (parity(dangerous=True),)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        assert any(c.title == "Custom: parity" for c in app.get_system_commands(app.screen))
        assert app.run_custom_action("parity", ["gpu0001", "gpu0002"])
        await pilot.pause()
        preview = app.screen
        assert isinstance(preview, CustomPreviewScreen)
        await pilot.press("enter")  # an empty word: nothing runs
        assert app.screen is preview
        await pilot.press(*"parity-2", "enter")
        result = await _until_done(app, pilot)
        assert result.run.result is not None and len(result.run.result.outputs) == 2


async def test_read_only_refuses_and_remapping_by_id(make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime(size=8, seed=1, read_only=True)
    rt.custom_actions = (parity(), parity(name="diag", key="ctrl+y", read_only_ok=True))
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert app.screen is app.dashboard  # refused with a notice, no preview
        app.update_keymap({"custom.diag": "ctrl+t"})
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert isinstance(app.screen, CustomPreviewScreen) and app.screen.plan.action.name == "diag"
    assert rt.executor.audit.read() == []  # type: ignore[union-attr]


async def test_a_taken_key_is_not_bound(make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime(size=8, seed=1)
    rt.custom_actions = (parity(key="d"),)
    app = HpcApp(rt, autostart=False)
    assert app.custom_key_error is not None and "'d' is taken" in app.custom_key_error


async def test_big_runs_fold_in_a_thread(make_runtime: Callable[..., Runtime], monkeypatch: object) -> None:
    import hpctui.ui.screens.custom_result as view

    monkeypatch.setattr(view, "THREAD_ABOVE", 0)  # type: ignore[attr-defined]
    rt = make_runtime(size=8, seed=1)
    rt.custom_actions = (parity(),)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        assert app.run_custom_action("parity", ["gpu0001", "gpu0002", "gpu0003"])
        await pilot.pause()
        await pilot.press("enter")
        result = await _until_done(app, pilot)
        for _ in range(100):
            shown = str(result.query_one("#custom-output").render())
            if "even" in shown and not result._drawing:
                break
            await pilot.pause(0.05)
        assert "gpu[0001,0003] (2)" in shown and "gpu0002 (1)" in shown
