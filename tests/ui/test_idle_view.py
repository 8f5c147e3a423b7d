"""Pilot tests of ``:idle`` (hpctui.ui.screens.idle): the demo's idle 8-GPU job by job, user and
account, sortable; requeue/cancel through the one action dialog with the reason; notify as the
configured custom action; the wall's "idle GPUs now"."""

from __future__ import annotations

from collections.abc import Callable

from uikit import load

from hpctui.core.runtime import Runtime
from hpctui.findings.idle import NOTIFY_JOB_ACTION, IdleAllocation, IdleReport, IdleSettings
from hpctui.model.action import ActionKind
from hpctui.ui.app import HpcApp
from hpctui.ui.screens.action_dialog import ActionDialog
from hpctui.ui.screens.idle import IdleScreen, owner_rows
from hpctui.ui.screens.wall import wall_counts


def _alloc(id_: str, user: str, account: str, count: int, hours: float, since: float) -> IdleAllocation:
    return IdleAllocation(kind="job", id=id_, user=user, account=account, gpus=tuple(("g1", i) for i in range(count)),
                          count=count, held=count, since=since, gpu_hours=hours, reason="no process")


def test_owner_rows_sum_by_user_and_account() -> None:
    report = IdleReport(time=5000.0, allocations=(
        _alloc("1", "alice", "ml", 8, 4.0, 1000.0), _alloc("2", "alice", "vision", 2, 1.0, 3000.0),
        _alloc("3", "bob", "ml", 4, 2.0, 2000.0)),
        today={"alice\tml": 5.0, "alice\tvision": 1.0, "bob\tml": 2.0, "carol\tml": 3.0})
    users = {r.key: r for r in owner_rows(report, "users")}
    assert (users["alice"].gpus_now, users["alice"].today, users["alice"].jobs) == (10, 6.0, ("1", "2"))
    assert users["alice"].account == "ml,vision" and users["alice"].idle_s == 4000.0
    assert users["carol"].gpus_now == 0 and users["carol"].today == 3.0  # idle earlier today, not now
    accounts = {r.key: r for r in owner_rows(report, "accounts")}
    assert (accounts["ml"].gpus_now, accounts["ml"].today) == (12, 10.0)
    assert [r.key for r in owner_rows(report, "users")] == ["alice", "bob", "carol"]  # most idle GPUs first


async def test_idle_view_rows_modes_sort_and_actions(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime()
    runtime.set_idle_settings(IdleSettings(after_s=0.0, notify_command=["mail", "-s", "idle GPUs {job}", "{user}"]))
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(200, 40)) as pilot:
        await load(app, pilot)
        idle = runtime.frame().idle
        (alloc,) = idle.allocations
        assert alloc.count == 8
        await app.run_command("idle")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, IdleScreen)
        (row,) = screen.table.view
        assert (row.key, row.gpus_now, row.user) == (alloc.id, 8, alloc.user)
        text = screen.table._format_row(row).text
        assert "8/8" in text and alloc.id in text and "GiB held" in text
        await pilot.press("a")  # by user
        assert screen.mode == "users" and [r.key for r in screen.table.view] == [alloc.user]
        await pilot.press("a")  # by account
        assert screen.mode == "accounts" and [r.key for r in screen.table.view] == [alloc.account]
        screen.table.sort_by("today")  # sortable like every table view
        await pilot.press("a")
        assert screen.mode == "allocations"
        await pilot.press("R")  # requeue: the one dialog, the reason prefilled (audited with the plan)
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ActionDialog) and dialog.kind is ActionKind.REQUEUE_JOBS
        assert dialog.targets == (alloc.id,) and dialog.params["reason"].startswith("idle GPUs: 8 GPUs idle")
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, IdleScreen)
        await pilot.press("m")  # notify: the configured command as a custom action (preview first)
        await pilot.pause()
        from hpctui.ui.screens.custom_result import CustomPreviewScreen

        preview = app.screen
        assert isinstance(preview, CustomPreviewScreen)
        assert preview.plan.action.name == NOTIFY_JOB_ACTION and preview.plan.runnable
        assert [tuple(i.argv) for i in preview.plan.invocations] == [("mail", "-s", f"idle GPUs {alloc.id}", alloc.user)]


async def test_idle_view_without_idle_gpus_and_notify_unset(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime()
    runtime.set_idle_settings(IdleSettings(after_s=3600.0))  # seen for the first time: not long enough yet
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await load(app, pilot)
        await app.push_screen(IdleScreen(runtime))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, IdleScreen) and not screen.table.view
        assert "no allocated GPU is idle · 8 GPUs idle, not for long enough yet" in screen.info_text
        await pilot.press("R")
        await pilot.pause()
        assert app.screen is screen  # nothing chosen: no dialog


def test_wall_counts_idle_gpus() -> None:
    from hpctui.core.frame import Frame
    from hpctui.findings.health import Thresholds
    from hpctui.model import ClusterSnapshot

    snap = ClusterSnapshot(cluster="c", time=0.0)
    frame = Frame.of(snap, Thresholds(), idle=IdleReport(gpus_now=16))
    assert wall_counts(snap, frame.findings, frame.idle.gpus_now).gpus_idle == 16
