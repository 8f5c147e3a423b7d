"""Pilot tests of issue #24 §4–5 on the demo cluster: the :users, :reservations and :scheduler views,
the job detail's priority breakdown and expected start, and their findings in the problem list."""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import Static
from uikit import load

from hpctui.core.runtime import Runtime
from hpctui.model.action import ActionKind
from hpctui.model.scheduler import CTLD_USER_RPCS
from hpctui.ui.app import HpcApp
from hpctui.ui.registry import BY_NAME
from hpctui.ui.screens.action_dialog import ActionDialog
from hpctui.ui.screens.job_detail import JobDetailScreen
from hpctui.ui.screens.reservations import ReservationsScreen
from hpctui.ui.screens.scheduler import SchedulerScreen
from hpctui.ui.screens.users import UsersScreen


def test_the_views_are_commands_of_the_registry() -> None:
    assert BY_NAME["users"].screen == ("hpctui.ui.screens.users", "UsersScreen")
    assert BY_NAME["resv"] is BY_NAME["reservations"] and BY_NAME["sdiag"] is BY_NAME["scheduler"]


async def test_users_view_counts_gpus_and_reasons_and_marks_their_nodes(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime()
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(200, 45)) as pilot:
        await load(app, pilot)
        await app.push_screen(UsersScreen(runtime))
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, UsersScreen)
        snap = runtime.store.snapshot()
        top = screen.rows[0]
        mine = [j for j in snap.jobs if j.user == top.user and j.account == top.account]
        assert top.gpus_running == sum(j.gpus_requested or 0 for j in mine if j.state == "RUNNING") > 0
        assert top.jobs_pending == sum(1 for j in mine if j.state == "PENDING")
        assert sum(sum(r.pending_by.values()) for r in screen.rows) == sum(1 for j in snap.jobs if j.state == "PENDING")
        assert any(r.pending_by.get("qos") for r in screen.rows)  # the demo's QOSMaxJobsPerUserLimit showcase
        assert top.fairshare is not None, screen.fairshare_note  # sshare -a of the demo, loaded off the UI thread
        await pilot.press("home", "m")
        await pilot.pause()
        assert app.screen is app.dashboard
        assert set(app.dashboard.heatmap.marked_nodes) == top.nodes or len(top.nodes) == 1
        await app.push_screen(UsersScreen(runtime))
        await pilot.pause()
        await pilot.press("a")  # by account
        assert all(r.user is None for r in app.screen.rows)  # type: ignore[attr-defined]


async def test_reservations_view_shows_the_drained_node_and_deletes_through_the_dialog(
        make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime()
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(200, 45)) as pilot:
        await load(app, pilot)
        await app.push_screen(ReservationsScreen(runtime))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReservationsScreen)
        maint = next(r for r in screen.rows if r.resv.maintenance)
        assert maint.state == "PLANNED" and maint.when == "in 2h"
        xid = maint.resv.name.removeprefix("maint_")
        assert maint.bad_nodes == xid  # the demo's node drained for Xid 79
        text = screen.table._format_row(maint).text
        assert "MAINT" in text and xid in text
        screen.table.set_filter(maint.resv.name)
        await pilot.press("x")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ActionDialog)
        assert dialog.kind is ActionKind.DELETE_RESERVATION and dialog.targets == (maint.resv.name,)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("m")
        await pilot.pause()
        assert app.screen is app.dashboard
        assert xid in app.dashboard.heatmap.marked_nodes


async def test_scheduler_view_names_the_user_hammering_slurmctld(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime()
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(200, 50)) as pilot:
        await load(app, pilot)
        runtime.clock.t += 10  # type: ignore[attr-defined]
        await load(app, pilot)  # two samples: a rate over the last refresh
        await app.push_screen(SchedulerScreen(runtime))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, SchedulerScreen)
        top = screen.table.view[0]
        assert top.stat.name == "judy" and (top.share or 0) > 0.5 and top.rate is not None and top.rate > 20
        assert top.recent is not None and abs(top.recent - 40) < 1  # the demo's loop: 40 RPCs a second
        assert len(runtime.node_history(CTLD_USER_RPCS + "judy")) >= 2
        info = str(screen.query_one("#view-info", Static).render())
        assert "server threads" in info and "backfill" in info and "RPCs by user" in info
        await pilot.press("v")
        assert screen.table.view[0].stat.name == "REQUEST_JOB_INFO"


async def test_job_detail_of_a_pending_job_shows_priority_and_expected_start(
        make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime()
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        job = next(j for j in runtime.store.snapshot().jobs if j.state == "PENDING" and j.reason == "Priority")
        await app.push_screen(JobDetailScreen(runtime, job))
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        text = str(app.screen.query_one("#job-outlook", Static).render())
        assert "priority" in text and "qos" in text and "Expected start" in text, text


async def test_problem_list_has_the_reservation_and_slurmctld_findings(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime()
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(200, 50)) as pilot:
        await load(app, pilot)
        codes = {f.code for f in app.runtime.frame().findings}
        assert {"resv_unusable", "resv_maint_soon", "ctld_rpc_user"} <= codes
