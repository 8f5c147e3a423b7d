"""Health checks in the TUI: ``K`` on a node opens the check picker, the run's verdicts show, a failed
check offers the drain with the failure as the reason (through the drain's own preview), the node panel
shows the results, and a resume the gate holds shows an override field that lets it run."""

from __future__ import annotations

from collections.abc import Callable

from test_action_dialog import text_of, wait_result
from textual.widgets import Button, Input, RadioSet
from uikit import load

from hpctui.core.runtime import Runtime
from hpctui.model.action import ActionKind
from hpctui.ui.app import HpcApp
from hpctui.ui.screens.action_dialog import ActionDialog
from hpctui.ui.widgets.gpu_panel import GpuPanel
from hpctui.ui.widgets.node_heatmap import NodeHeatmap


def gated_node(rt: Runtime) -> str:
    s = rt.health_settings
    snap = rt.store.snapshot()
    return sorted({f.object.split("/")[1] for f in rt.findings(snap)
                   if f.object.startswith("gpu/") and s.gates(f.object, f.code, f.severity) is not None})[0]


async def test_check_key_picker_failure_offers_drain_and_panel_shows_it(make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime(size=64, seed=0)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(180, 55)) as pilot:
        await load(app, pilot)
        node = gated_node(rt)
        heatmap = app.screen.query_one(NodeHeatmap)
        heatmap.select(node)
        heatmap.focus()
        await pilot.press("K")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ActionDialog)
        picker = dialog.query_one("#check-choice", RadioSet)
        assert dialog.focused is picker and dialog.params["check"] == "dcgm-r2"
        assert "dcgmi diag -r 2 -j" in text_of(dialog.query_one("#plan"))
        await pilot.press("down")  # dcgm-r3
        await pilot.press("enter")
        await pilot.pause()
        assert dialog.params["check"] == "dcgm-r3" and "dcgmi diag -r 3 -j" in text_of(dialog.query_one("#plan"))
        await pilot.press("up", "enter")
        await pilot.pause()
        dialog.query_one("#run", Button).press()
        await wait_result(dialog, pilot)
        assert dialog.result is not None and not dialog.result.ok
        assert f"{node}: failed: diag r2 failed: memory GPU" in text_of(dialog.query_one("#result"))
        drain = dialog.query_one("#drain-failed", Button)
        assert drain.display and str(drain.label) == "Drain 1 failed"
        drain.press()
        await pilot.pause()
        drain_dialog = app.screen
        assert isinstance(drain_dialog, ActionDialog) and drain_dialog.kind is ActionKind.DRAIN_NODES
        reason = drain_dialog.query_one("#param-reason", Input).value
        assert reason.startswith("health check dcgm-r2 failed: memory GPU") and drain_dialog.targets == (node,)
        await pilot.press("escape")
        await pilot.pause()
        panel = app.screen.query_one(GpuPanel)
        panel.redraw()
        await pilot.pause()
        assert "Health checks" in panel.body_text and "failed  diag r2 failed: memory GPU" in panel.body_text
        assert "resume needs a passing gpu check" in panel.body_text


async def test_resume_held_by_the_gate_runs_with_an_override(make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime(size=64, seed=0)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(180, 55)) as pilot:
        await load(app, pilot)
        node = gated_node(rt)
        from test_action_dialog import open_dialog

        dialog = await open_dialog(app, pilot, ActionKind.RESUME_NODES, (node,))
        run = dialog.query_one("#run", Button)
        assert run.disabled and "no passing gpu check since" in text_of(dialog.query_one("#plan"))
        field = dialog.query_one("#param-override", Input)
        field.focus()
        await pilot.press(*"vendor swapped GPU")
        await pilot.pause()
        assert not run.disabled and "resume gate overridden: vendor swapped GPU" in text_of(dialog.query_one("#plan"))
        run.press()
        await wait_result(dialog, pilot)
        assert dialog.result is not None and dialog.result.refused is None
        assert dialog.result.plan.params["override"] == "vendor swapped GPU"
