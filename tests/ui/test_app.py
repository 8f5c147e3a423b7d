"""Pilot tests of the dashboard: panes, focus, cursor, marks, themes, read-only, status, filter."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Input
from uikit import FIXED, Clock, load

from hpctui.core.runtime import Runtime
from hpctui.model.action import ActionKind
from hpctui.ui.app import HpcApp
from hpctui.ui.messages import ActionRequested
from hpctui.ui.widgets.footer import KeyBar
from hpctui.ui.widgets.gpu_panel import GpuPanel
from hpctui.ui.widgets.heatmap import NodeHeatmap
from hpctui.ui.widgets.status import StatusLine
from hpctui.ui.widgets.tables import QueueTable

PANES = ("#status", "#heatmap", "#legend", "#gpu-panel", "#queue", "#pods", "#ib", "#mounts")


def _status_text(app: HpcApp) -> str:
    return str(app.screen.query_one(StatusLine).render())


async def test_starts_and_shows_every_pane(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        for selector in PANES:
            widget = app.screen.query_one(selector)
            assert widget.region.width > 0 and widget.region.height > 0, selector
        assert app.screen.query_one(KeyBar)
        heatmap = app.screen.query_one(NodeHeatmap)
        assert len(heatmap.names) == len(app.runtime.store.snapshot().nodes)
        assert app.screen.query_one("#queue", QueueTable).view, "queue has rows"
        assert "demo ✓" in _status_text(app)


async def test_focus_moves_between_panes(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        seen = [app.focused.id if app.focused else None]
        for _ in range(5):
            await pilot.press("tab")
            seen.append(app.focused.id if app.focused else None)
        assert seen == ["heatmap", "gpu-panel", "queue", "pods", "ib", "mounts"]
        await pilot.press("shift+tab")
        assert app.focused is not None and app.focused.id == "ib"


async def test_cursor_moves_gpu_panel_node(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        heatmap = app.screen.query_one(NodeHeatmap)
        panel = app.screen.query_one(GpuPanel)
        first = heatmap.names[0]
        assert panel.node == first
        await pilot.press("right")
        assert panel.node == heatmap.names[1]
        await pilot.press("down")
        assert panel.node == heatmap.names[1 + heatmap.columns]
        await pilot.click(NodeHeatmap, offset=(0, 0))
        assert panel.node == first
        assert first in panel.body_text


async def test_marking_nodes_requests_action_on_marked(make_runtime: Callable[..., Runtime],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    requested: list[ActionRequested] = []
    monkeypatch.setattr(HpcApp, "on_action_requested", lambda self, m: requested.append(m))
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        heatmap = app.screen.query_one(NodeHeatmap)
        await pilot.press("space", "right", "right", "space")
        assert heatmap.marked_nodes == (heatmap.names[0], heatmap.names[2])
        await pilot.press("d")
        await pilot.pause()
        assert [(m.kind, m.targets) for m in requested] == [(ActionKind.DRAIN_NODES, heatmap.marked_nodes)]
        await pilot.press("escape", "c")  # unmark all: the cursor node is the target
        await pilot.pause()
        assert requested[-1].kind is ActionKind.CORDON_NODES and requested[-1].targets == (heatmap.names[2],)


async def test_job_keys_request_job_actions(make_runtime: Callable[..., Runtime],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    requested: list[ActionRequested] = []
    monkeypatch.setattr(HpcApp, "on_action_requested", lambda self, m: requested.append(m))
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        queue = app.screen.query_one(QueueTable)
        queue.focus()
        first = queue.cursor_key
        await pilot.press("x")
        await pilot.pause()
        assert requested[-1].kind is ActionKind.CANCEL_JOBS and requested[-1].targets == (first,)
        await pilot.press("space", "space", "R")  # marks two jobs, cursor advances
        await pilot.pause()
        assert requested[-1].kind is ActionKind.REQUEUE_JOBS and len(requested[-1].targets) == 2


async def test_action_key_opens_dialog(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        await pilot.press("d")
        await pilot.pause()
        assert type(app.screen).__name__ == "ActionDialog"


async def test_theme_key_cycles_theme(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await load(app, pilot)
        assert app.theme == "dark"
        heatmap = app.screen.query_one(NodeHeatmap)
        before = app.theme_variables["heat-4"]
        cell_before = heatmap._base[0]
        await pilot.press("t")
        await pilot.pause()
        assert app.theme != "dark" and app.theme in {"light", "wall"}
        assert app.theme_variables["heat-4"] != before
        assert heatmap._base[0] != cell_before, "render_line styles rebuilt from the new theme"


async def test_theme_from_constructor(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), theme="light", autostart=False)
    async with app.run_test(size=(80, 24)):
        assert app.theme == "light"


async def test_q_quits_and_stops_runtime(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime()
    app = HpcApp(runtime, autostart=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert runtime.poller._tasks, "poller started on mount"
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0
    assert not runtime.poller._tasks, "poller stopped on exit"


@pytest.mark.parametrize("size", [(80, 24), (40, 12), (20, 6)])
async def test_small_terminal_does_not_crash(make_runtime: Callable[..., Runtime], size: tuple[int, int]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=size) as pilot:
        await load(app, pilot)
        await pilot.press("right", "down", "tab", "down", "tab", "m", "t")
        await pilot.pause()
        assert app.screen.query_one(NodeHeatmap).region.height > 0


async def test_read_only_hides_action_keys(make_runtime: Callable[..., Runtime],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    requested: list[ActionRequested] = []
    monkeypatch.setattr(HpcApp, "on_action_requested", lambda self, m: requested.append(m))
    app = HpcApp(make_runtime(read_only=True), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        shown = {b.binding.description for b in app.screen.active_bindings.values() if b.binding.show}
        assert "Drain" not in shown and "Reboot" not in shown
        assert "Metric" in shown
        await pilot.press("d")
        await pilot.pause()
        assert not requested
        assert any("read-only" in str(n.message) for n in app._notifications)
        assert "READ-ONLY" in _status_text(app)


async def test_writable_shows_action_keys(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        shown = {b.binding.description for b in app.screen.active_bindings.values() if b.binding.show}
        assert {"Drain", "Resume", "Reboot", "Cordon", "Uncordon"} <= shown


async def test_wall_mode_is_read_only(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), wall=True, autostart=False)  # a writable runtime: wall mode alone must lock it
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        assert app.theme == "wall"
        heatmap = app.screen.query_one(NodeHeatmap)
        assert heatmap.cell_width >= 3  # the wall screen: bigger cells where they fit (they shrink to 1 only for thousands of nodes)
        shown = {b.binding.description for b in app.screen.active_bindings.values() if b.binding.show}
        assert "Drain" not in shown
        dashboard = app.screen
        for key in ("d", "u", "b", "B", "c", "C", "R", "X"):  # every node action key on the heatmap
            await pilot.press(key)
            await pilot.pause()
            assert app.screen is dashboard, f"{key!r} opened {type(app.screen).__name__}"
        app.screen.query_one(QueueTable).focus()
        for key in ("x", "R", "H", "z", "Z"):  # every job action key on the queue
            await pilot.press(key)
            await pilot.pause()
            assert app.screen is dashboard, f"{key!r} opened {type(app.screen).__name__}"
        assert not app.runtime.executor.audit.read(), "nothing reached the executor"


async def test_status_line_shows_stale_and_error(make_runtime: Callable[..., Runtime], clock: Clock) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        assert "demo ✓ 0s" in _status_text(app)
        clock.t = FIXED + 42
        app.runtime.store.record_error("demo", "slurmctld unreachable")
        app.refresh_from_store()
        await pilot.pause()
        assert "demo ✗ stale 42s: slurmctld unreachable" in _status_text(app)


async def test_status_line_error_but_fresh(make_runtime: Callable[..., Runtime], clock: Clock) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        clock.t = FIXED + 1
        app.runtime.store.record_error("demo", "one slow poll")
        app.refresh_from_store()
        await pilot.pause()
        text = _status_text(app)
        assert "demo ✗ 1s: one slow poll" in text and "stale" not in text


async def test_queue_filter(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        queue = app.screen.query_one(QueueTable)
        total = len(queue.view)
        queue.focus()
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press(*"pending")
        await pilot.pause()
        assert 0 < len(queue.view) < total
        assert all(j.state == "PENDING" or "pending" in (j.reason or "").lower() for j in queue.view)
        await pilot.press("escape")
        await pilot.pause()
        assert len(queue.view) == total and app.focused is queue


async def test_coalesces_bursts(make_runtime: Callable[..., Runtime], monkeypatch: pytest.MonkeyPatch) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await load(app, pilot)
        drawn: list[int] = []
        original = app.dashboard.update_snapshot
        monkeypatch.setattr(app.dashboard, "update_snapshot", lambda s: (drawn.append(1), original(s)))
        for _ in range(3):  # three data changes before the app gets to run: one redraw
            app.runtime.store.add_events(())
            app._on_store_change()
        await pilot.pause()
        assert len(drawn) == 1
        assert not app.refresh_from_store(), "same version is not redrawn"
        health: list[int] = []
        original_health = app.dashboard.update_health
        monkeypatch.setattr(app.dashboard, "update_health", lambda s: (health.append(1), original_health(s)))
        app.runtime.store.record_error("demo", "controller unreachable")  # health only: no full redraw
        app._on_store_change()
        await pilot.pause()
        assert len(drawn) == 1 and len(health) == 1


async def test_help_screen_lists_keys(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await load(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        text = str(app.screen.query_one("#help-box Static").render())
        assert "Drain" in text and "Requeue" in text and "Theme" in text
        await pilot.press("escape")
        assert app.screen is app.dashboard


async def test_metric_key_changes_legend(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        legend = app.screen.query_one("#legend")
        assert "crit" in str(legend.render())
        await pilot.press("m")
        await pilot.pause()
        assert app.screen.query_one(NodeHeatmap).metric.value == "util"
        assert "≥80%" in str(legend.render())


async def test_big_cluster_rows_arrive_from_worker_threads(tmp_path: Path, clock: Clock,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Above 2,048 nodes, heatmap levels and cluster-wide IB rows are built off the event loop."""
    import threading

    from hpctui.model import IbPort, SlurmNodeInfo, SourceResult
    from hpctui.ui.widgets import heatmap as heatmap_module

    threads: dict[str, set[str]] = {"levels": set(), "ib": set()}

    def recording(what: str, func: Callable[..., object]) -> Callable[..., object]:
        def wrapper(*args: object) -> object:
            threads[what].add(threading.current_thread().name)
            return func(*args)
        return wrapper

    monkeypatch.setattr(heatmap_module, "compute_levels", recording("levels", heatmap_module.compute_levels))

    n = 3000
    runtime = Runtime("synth", [], clock=clock, audit_path=tmp_path / "audit.jsonl")
    nodes = {f"n{i:04d}": SlurmNodeInfo(base_state="IDLE" if i % 500 else "DOWN") for i in range(n)}
    ib = {name: (IbPort(node=name, device="mlx5_0", port=1, state="ACTIVE" if i % 700 else "DOWN",
                        phys_state="LinkUp", rate_gbps=400.0),) for i, name in enumerate(nodes)}
    runtime.store.apply(SourceResult(source="synth", time=FIXED, slurm_nodes=nodes, ib=ib))
    app = HpcApp(runtime, autostart=False)
    pane = app.dashboard.ib_pane
    pane.rows_for = recording("ib", pane.rows_for)  # type: ignore[assignment]
    async with app.run_test(size=(120, 40)) as pilot:
        app.refresh_from_store()
        await app.workers.wait_for_complete()
        await pilot.pause()
        heatmap = app.screen.query_one(NodeHeatmap)
        assert len(heatmap.levels) == n and heatmap.levels[0] >= 3  # n0000 is DOWN
        ib_table = app.screen.query_one("#ib")
        assert len(ib_table.view) == n
        assert ib_table.view[0].port.state == "DOWN", "problems first"
    main = threading.main_thread().name
    assert threads["levels"] and main not in threads["levels"], threads
    assert threads["ib"] and main not in threads["ib"], threads


async def test_quitting_a_headless_app_arms_no_exit_deadline(make_runtime: Callable[..., Runtime]) -> None:
    """The exit deadline ends the process: never armed where the app runs inside another one."""
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("q")
    assert app._exit_deadline is None
