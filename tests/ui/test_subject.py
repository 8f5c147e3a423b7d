"""Issue #22 §1: one selected node for every key. After ``g gpu0007`` the node is the subject of
every node/job key and node view wherever focus is (``d``, ``v``, ``M``, ``E``, ``:charts``), the
status line names it, and a key that cannot act says why (``M`` in read-only mode too)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
from uikit import load

from hpctui.core.runtime import Runtime
from hpctui.model.action import ActionKind
from hpctui.ui.app import HpcApp
from hpctui.ui.screens.action_dialog import ActionDialog
from hpctui.ui.screens.charts import ChartsScreen
from hpctui.ui.screens.mig_wizard import MigWizardScreen
from hpctui.ui.widgets.status import StatusLine

NODE = "gpu0007"


def notices(app: HpcApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def go_to_with_focus_elsewhere(app: HpcApp, pilot: object) -> None:
    app.dashboard.show_view("problems")  # focus on the problem list, not the heatmap
    await pilot.pause()  # type: ignore[attr-defined]
    await pilot.press("g", *NODE, "enter")  # type: ignore[attr-defined]
    await pilot.pause()  # type: ignore[attr-defined]
    assert app.dashboard.selected == NODE
    assert app.focused is not app.dashboard.heatmap and app.focused is app.dashboard.problems_pane.table


async def back(app: HpcApp, pilot: object) -> None:
    await app.pop_screen()
    await pilot.pause()  # type: ignore[attr-defined]
    assert app.screen is app.dashboard


async def test_every_key_acts_on_the_node_g_named(make_runtime: Callable[..., Runtime], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    rt = make_runtime(seed=1)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        await go_to_with_focus_elsewhere(app, pilot)
        assert f"▸ {NODE}" in str(app.dashboard.query_one(StatusLine).render())

        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, ActionDialog), "d did nothing with the problem list focused"
        assert app.screen.kind is ActionKind.DRAIN_NODES and app.screen.targets == (NODE,)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.dashboard

        await pilot.press("v")
        await pilot.pause()
        assert isinstance(app.screen, ChartsScreen) and app.screen.node == NODE
        await back(app, pilot)

        await pilot.press("M")
        await pilot.pause()
        assert isinstance(app.screen, MigWizardScreen) and app.screen.nodes == [NODE]
        await back(app, pilot)

        await pilot.press("colon", *"charts", "enter")
        await pilot.pause()
        await pilot.pause()
        assert isinstance(app.screen, ChartsScreen), type(app.screen)
        assert app.screen.node == NODE, ":charts opened another node than the selected one"
        await back(app, pilot)

        await pilot.press("E")
        await pilot.pause()
        await app.workers.wait_for_complete()
    [out] = list((tmp_path / "state" / "hpctui" / "reports").iterdir())
    assert msgspec.json.decode((out / "report.json").read_bytes())["scope"]["nodes"] == [NODE]


async def test_job_keys_act_on_the_job_g_named(make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime(seed=1)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        job = next(j for j in rt.store.snapshot().jobs if j.state == "PENDING" and "Held" not in (j.reason or ""))
        app.dashboard.show_view("problems")
        await pilot.pause()
        await pilot.press("z")  # hold: no job named yet, says so
        await pilot.pause()
        assert any("no job selected" in n for n in notices(app))
        await pilot.press("g", *job.display_id, "enter")
        await pilot.pause()
        while app.screen is not app.dashboard:  # g JOBID opens its detail: close it
            await app.pop_screen()
            await pilot.pause()
        assert f"job {job.display_id}" in str(app.dashboard.query_one(StatusLine).render())
        await pilot.press("z")
        await pilot.pause()
        assert isinstance(app.screen, ActionDialog)
        assert app.screen.kind is ActionKind.HOLD_JOBS and app.screen.targets == (job.display_id,)


async def test_read_only_keys_say_why(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(seed=1, read_only=True), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        assert app.focused is app.dashboard.heatmap
        for key in ("M", "d"):
            before = len(notices(app))
            await pilot.press(key)
            await pilot.pause()
            assert app.screen is app.dashboard
            said = notices(app)[before:]
            assert said and "read-only" in said[-1], f"{key} in read-only mode was silent"
        await go_to_with_focus_elsewhere(app, pilot)
        before = len(notices(app))
        await pilot.press("M")
        await pilot.pause()
        assert any("read-only" in n for n in notices(app)[before:])
        await pilot.press("v")  # a view, not an action: works in read-only mode too
        await pilot.pause()
        assert isinstance(app.screen, ChartsScreen) and app.screen.node == NODE
