"""The MIG wizard screen on the demo: opened with M on marked nodes, layout picked, confirmation
typed, the checklist followed to the end; escape closes; read-only refuses."""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import Input, Label, OptionList, Static
from textual.widgets._toast import Toast
from uikit import load

from hpctui.actions.audit import AuditLog
from hpctui.actions.mig import Status
from hpctui.core.runtime import Runtime
from hpctui.sources.demo.source import DemoSource
from hpctui.ui.app import HpcApp
from hpctui.ui.screens.mig_wizard import MigWizardScreen
from hpctui.ui.widgets.heatmap import NodeHeatmap


def _mig_node(runtime: Runtime) -> str:
    src = runtime.sources[0]
    assert isinstance(src, DemoSource)
    src.mig_delay_s = 0.0  # frozen clock: the new layout shows at once
    return next(n for n, v in src.sim.mig.items() if v[0] is not None)


async def test_wizard_runs_end_to_end_from_the_heatmap(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime()
    node = _mig_node(runtime)
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        heatmap = app.screen.query_one(NodeHeatmap)
        heatmap.focus()
        heatmap.marked = {heatmap.names.index(node)}
        await pilot.press("M")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MigWizardScreen) and screen.nodes == [node]
        layouts = screen.query_one("#mig-layouts", OptionList)
        names = [layouts.get_option_at_index(i).id for i in range(layouts.option_count)]
        assert names == ["all-disabled", "all-1g", "all-balanced", "all-7g"]
        layouts.highlighted = names.index("all-1g")
        await pilot.press("enter")
        await pilot.pause()
        wf = screen.workflow
        assert wf is not None and wf.step("layout").status is Status.OK
        assert screen.query_one("#mig-confirm", Input).has_focus
        assert "nvidia-smi mig -i 0 -cgi 1g.10gb" in str(screen.query_one("#mig-preview", Static).render())
        await pilot.press("escape")  # nothing runs yet: escape closes
        await pilot.pause()
        assert not isinstance(app.screen, MigWizardScreen)
        await pilot.press("M")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MigWizardScreen)
        screen.query_one("#mig-layouts", OptionList).highlighted = 1
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press(*"mig-1", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        wf = screen.workflow
        assert wf is not None and wf.done and wf.ok
        steps = str(screen.query_one("#mig-steps", Static).render())
        assert "[✓] Verify instances" in steps and "[!] Slurm gres.conf / slurmd" in steps
        assert f"NodeName={node} Name=gpu Type=1g.10gb Count=56" in steps
        assert "done: all-1g" in str(screen.query_one("#mig-status", Static).render())
    await runtime.collect_once()
    gpus = runtime.store.snapshot().gpus[node]
    assert all([m.profile for m in g.mig_instances] == ["1g.10gb"] * 7 for g in gpus)
    audit = AuditLog(app.runtime.executor.audit.path).read() if app.runtime.executor.audit else []
    assert any(r["action"] == "mig_reconfigure" and r["source"] == "demo" for r in audit)


async def test_wizard_refuses_in_read_only(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime(read_only=True)
    node = _mig_node(runtime)
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        app.push_screen(MigWizardScreen(runtime, [node]))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MigWizardScreen)
        assert "read-only" in str(screen.query_one("#mig-status", Static).render())
        await pilot.press("enter")
        await pilot.pause()
        assert screen.query_one("#mig-confirm", Input).disabled
        assert screen.workflow is not None and screen.workflow.step("layout").status is Status.FAILED
        heatmap = app.dashboard.query_one(NodeHeatmap)
        assert heatmap.check_action("mig_wizard", ()) is False


async def test_mig_command_takes_the_marked_nodes_and_config_layouts(make_runtime: Callable[..., Runtime]) -> None:
    from hpctui.model.mig_layouts import MigLayoutSpec

    runtime = make_runtime()
    node = _mig_node(runtime)
    runtime.mig_layouts = {"two-3g": MigLayoutSpec(devices={"3g.40gb": 2}),
                           "h200-only": MigLayoutSpec(devices={"3g.71gb": 2})}
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        heatmap = app.dashboard.query_one(NodeHeatmap)
        heatmap.marked = {heatmap.names.index(node)}
        app.push_screen(MigWizardScreen(runtime))  # what `:mig` opens: no nodes given
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MigWizardScreen) and screen.nodes == [node]
        layouts = screen.query_one("#mig-layouts", OptionList)
        names = [layouts.get_option_at_index(i).id for i in range(layouts.option_count)]
        assert names == ["all-disabled", "all-1g", "all-balanced", "all-7g", "two-3g"]  # H100: not h200-only
        layouts.highlighted = names.index("two-3g")
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press(*"mig-1", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.workflow is not None and screen.workflow.ok
    await runtime.collect_once()
    assert all([m.profile for m in g.mig_instances] == ["3g.40gb", "3g.40gb"] for g in runtime.store.snapshot().gpus[node])


async def test_a_node_unreachable_in_verify_fails_the_step_and_the_app_keeps_running(
        make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime()
    node = _mig_node(runtime)

    async def down(name: str) -> dict[int, tuple[bool, tuple[str, ...]]]:
        raise OSError(113, "No route to host")  # the node is resetting its GPU

    runtime.sources[0].read_mig = down  # type: ignore[attr-defined]  # what the SSH route's backend has
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        app.push_screen(MigWizardScreen(runtime, [node]))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MigWizardScreen)
        screen.query_one("#mig-layouts", OptionList).highlighted = 1  # all-1g
        await pilot.press("enter")
        await pilot.pause()
        assert screen.workflow is not None
        screen.workflow.verify_timeout_s = 0.0
        await pilot.press(*"mig-1", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.is_running and app.screen is screen
        wf = screen.workflow
        assert wf.done and not wf.ok and wf.step("verify").status is Status.FAILED
        assert "[✗] Verify instances" in str(screen.query_one("#mig-steps", Static).render())
        assert "stopped at 'Verify instances'" in str(screen.query_one("#mig-status", Static).render())
        await pilot.press("escape")  # nothing runs any more: escape closes
        await pilot.pause()
        assert not isinstance(app.screen, MigWizardScreen)
    await runtime.collect_once()
    slurm = runtime.store.snapshot().nodes[node].slurm
    assert slurm is not None and slurm.reason == "hpctui mig: verify failed: node unreachable"
    audit = AuditLog(app.runtime.executor.audit.path).read() if app.runtime.executor.audit else []
    assert any(r["source"] == "mig-wizard" and r["params"]["step"] == "verify" and not r["results"][0]["ok"]
               for r in audit)


async def test_wizard_leaves_collecting_to_the_running_poller(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime()
    node = _mig_node(runtime)
    calls: list[str] = []

    async def collect_once() -> None:
        calls.append("collect_once")

    app = HpcApp(runtime)  # autostart: the poller runs, as in `hpctui`
    async with app.run_test(size=(160, 50)) as pilot:
        for _ in range(200):  # bounded rounds until the poller's first collect landed
            if runtime.store.snapshot().gpus.get(node):
                break
            await pilot.pause(0.05)
        assert runtime.poller.running
        runtime.collect_once = collect_once  # type: ignore[method-assign]
        runtime.poller.poll_all_once = collect_once  # type: ignore[method-assign]
        app.push_screen(MigWizardScreen(runtime, [node]))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MigWizardScreen)
        screen.query_one("#mig-layouts", OptionList).highlighted = 1  # all-1g
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press(*"mig-1", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        wf = screen.workflow
        assert wf is not None and wf.ok, [(s.key, s.status, s.detail) for s in wf.steps] if wf else None
    assert calls == []
    assert all([m.profile for m in g.mig_instances] == ["1g.10gb"] * 7 for g in runtime.store.snapshot().gpus[node])


HOSTILE = ("gpu[/]x", "n[@click=app.quit]y[/]")


async def test_hostile_node_names_and_errors_are_shown_as_text_not_markup(
        make_runtime: Callable[..., Runtime]) -> None:
    """Node names, GPU models and audit errors are cluster strings: `[/]` must not raise a MarkupError
    when drawn, and `[@click=…]` must not become an action."""
    runtime = make_runtime()
    node = _mig_node(runtime)
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        await load(app, pilot)
        app.push_screen(MigWizardScreen(runtime, list(HOSTILE)))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MigWizardScreen)
        title = str(screen.query_one("#mig-title", Label).render())
        assert "gpu[/]x,n[@click=app.quit]y[/] (2 node(s))" in title
        await pilot.press("enter")  # all-disabled: refused, both nodes unknown
        await pilot.pause()
        assert screen.workflow is not None and screen.workflow.errors == [f"unknown node {n!r}" for n in HOSTILE]
        assert "unknown node 'gpu[/]x'" in str(screen.query_one("#mig-status", Static).render())
        await pilot.click("#mig-title")  # a click on the name runs nothing
        await pilot.press("escape")
        await pilot.pause()
        assert app.is_running
        app.push_screen(MigWizardScreen(runtime, [node]))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MigWizardScreen)
        screen.query_one("#mig-layouts", OptionList).highlighted = 1
        await pilot.press("enter")
        await pilot.pause()
        runtime.executor.audit_errors.append("audit log /var/[/]log/[@click=app.quit]x[/]: Permission denied")
        await pilot.press(*"mig-1", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        toasts = list(app._notifications)
        assert [t.message for t in toasts] == ["audit log /var/[/]log/[@click=app.quit]x[/]: Permission denied"]
        await pilot.pause()
        [toast] = app.screen.query(Toast)
        assert str(toast.render()).endswith("audit log /var/[/]log/[@click=app.quit]x[/]: Permission denied")
        assert app.is_running and screen.workflow is not None and screen.workflow.ok
