"""Pilot tests of the node-history and accounting views (issue 24): ``:history`` ranks the demo's
Xid node first, ``enter`` and the heatmap's ``H`` open its history, ``:sacct`` and ``:gpuhours``
read their answers off the UI thread."""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import Static
from uikit import load

from hpctui.core.runtime import Runtime
from hpctui.ui.app import HpcApp
from hpctui.ui.screens.history import AcctJobsScreen, GpuHoursScreen, NodeHistoryScreen, OffendersScreen
from hpctui.ui.widgets.node_heatmap import NodeHeatmap


async def _settle(pilot: object, screen: object, attr: str = "rows") -> None:
    for _ in range(50):
        await pilot.pause()  # type: ignore[attr-defined]
        if screen.table.rows:  # type: ignore[attr-defined]
            return


def _info(app: HpcApp) -> str:
    return str(app.screen.query_one("#view-info", Static).render())


async def test_history_ranking_node_history_and_heatmap_key(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(180, 45)) as pilot:
        await load(app, pilot)
        xid = app.runtime.sources[0].sim.place.xid_node  # type: ignore[attr-defined]
        await app.run_command("history")
        screen = app.screen
        assert isinstance(screen, OffendersScreen)
        await _settle(pilot, screen)
        top = screen.table.rows[0]
        assert top.node == xid and top.causes["Xid 79"] == 4
        await pilot.press("enter")
        await pilot.pause()
        node_screen = app.screen
        assert isinstance(node_screen, NodeHistoryScreen) and node_screen.node == xid
        await _settle(pilot, node_screen)
        assert "resumed by alice twice" in _info(app)
        whats = [r.what for r in node_screen.table.rows]
        assert whats.count("drain") == 4 and any(w.startswith("job ") for w in whats)
        app.back_to_dashboard()
        await pilot.pause()
        heatmap = app.dashboard.query_one(NodeHeatmap)
        heatmap.select(xid)
        heatmap.focus()
        await pilot.press("H")
        await pilot.pause()
        assert isinstance(app.screen, NodeHistoryScreen) and app.screen.node == xid


async def test_sacct_and_gpu_hours_views(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(180, 45)) as pilot:
        await load(app, pilot)
        await app.run_command("sacct")
        jobs = app.screen
        assert isinstance(jobs, AcctJobsScreen)
        for _ in range(50):
            await pilot.pause()
            if "job(s)" in _info(app):
                break
        assert "failed/node_fail/oom/timeout" in _info(app)
        app.back_to_dashboard()
        await app.run_command("gpuhours")
        usage = app.screen
        assert isinstance(usage, GpuHoursScreen)
        await _settle(pilot, usage)
        assert usage.table.rows and "GPU-hours in all" in _info(app)


async def test_sacct_filters_from_the_command_line(make_runtime: Callable[..., Runtime]) -> None:
    from hpctui.ui.screens.history import parse_sacct_filters

    q = parse_sacct_filters("since=30d state=NODE_FAIL,FAILED user=alice nodes=gpu[01-04]", 1000.0 + 30 * 86400)
    assert (q.start, q.states, q.user, q.nodes, q.account) == (1000.0, ("NODE_FAIL", "FAILED"), "alice",
                                                                 "gpu[01-04]", None)
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(180, 45)) as pilot:
        await load(app, pilot)
        await app.run_command("sacct since=30d state=NODE_FAIL")
        jobs = app.screen
        assert isinstance(jobs, AcctJobsScreen) and "since=30d state=NODE_FAIL" in jobs.title_text
        await _settle(pilot, jobs)
        assert jobs.table.rows and {j.state for j in jobs.table.rows} == {"NODE_FAIL"}
        app.back_to_dashboard()
        await app.run_command("sacct bogus=1")
        for _ in range(10):
            await pilot.pause()
        assert "filters are since=" in _info(app)
        app.back_to_dashboard()
        await app.run_command("sacct user=a;b")
        for _ in range(10):
            await pilot.pause()
        assert "invalid user name" in _info(app)
