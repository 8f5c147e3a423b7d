"""Pilot tests of the full-screen views of issue #12/#10: partitions, drained nodes (sinfo -R),
the audit trail; and the queue's TIME/TIME_LEFT/PRIORITY columns."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

import pytest
from textual.widgets import Input, Static
from uikit import FIXED, load

from hpctui.core.runtime import Runtime
from hpctui.model.action import ActionKind
from hpctui.ui.app import HpcApp
from hpctui.ui.screens.action_dialog import ActionDialog
from hpctui.ui.screens.audit import AuditRecordScreen, AuditScreen
from hpctui.ui.screens.drained import DrainedScreen
from hpctui.ui.screens.partitions import PartitionsScreen
from hpctui.ui.widgets.tables import QueueTable


async def test_queue_has_time_time_left_priority_sortable(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(220, 50)) as pilot:
        await load(app, pilot)
        queue = app.screen.query_one("#queue", QueueTable)
        keys = [c.key for c in queue.columns]
        assert keys[keys.index("state") + 1:keys.index("state") + 4] == ["time", "time_left", "priority"]
        col = {c.key: c for c in queue.columns}
        running = next(j for j in queue.rows if j.state == "RUNNING" and j.start_time and j.time_limit_min)
        pending = next(j for j in queue.rows if j.state == "PENDING")
        elapsed = int(app.runtime.clock() - running.start_time)  # the runtime's (frozen) clock
        assert col["time"].text(running).endswith(f"{elapsed % 60:02d}")
        assert col["time"].text(pending) == "0:00" and col["time_left"].text(pending) == "N/A"
        assert col["priority"].text(running) == str(running.priority)
        queue.sort_by("priority", reverse=True)
        prios = [j.priority for j in queue.view if j.priority is not None]
        assert prios == sorted(prios, reverse=True)
        queue.sort_by("time_left")
        lefts = [col["time_left"].text(j) for j in queue.view]
        assert lefts[-1] == "N/A"  # jobs that have not started sort last
        queue.sort_by("time", reverse=True)
        assert queue.view[0].state == "RUNNING"


async def test_partitions_view_rows_sort_and_set_state(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await load(app, pilot)
        await app.push_screen(PartitionsScreen(app.runtime))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PartitionsScreen)
        rows = {r.name: r for r in screen.rows}
        assert set(rows) == {"h100", "h200", "debug", "cpu"}
        h100 = rows["h100"]
        assert h100.default and h100.state == "UP" and h100.nodes == 32
        assert h100.alloc + h100.idle + h100.drained + h100.down + h100.other == h100.nodes
        snap = app.runtime.store.snapshot()
        assert h100.running == sum(1 for j in snap.jobs if j.partition == "h100" and j.state == "RUNNING")
        assert rows["cpu"].gpus_total is None and rows["cpu"].unlimited
        text = screen.table._format_row(h100).text
        assert "h100*" in text and "UP" in text and "3-00:00:00" in text
        screen.table.sort_by("pending", reverse=True)
        assert screen.table.view[0].pending == max(r.pending for r in screen.rows)
        await pilot.press("j")  # j/k move the cursor
        assert screen.table.cursor == 1
        await pilot.press("k")
        assert screen.table.cursor == 0
        screen.table.sort_by("name")
        await pilot.press("home", "j", "space")  # mark "debug" (sorted: cpu, debug, h100, h200)
        await pilot.press("s")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ActionDialog)
        assert dialog.kind is ActionKind.PARTITION_STATE and dialog.targets == ("debug",)
        await pilot.press("escape")


async def test_partitions_state_key_refused_read_only(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(read_only=True), autostart=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await load(app, pilot)
        await app.push_screen(PartitionsScreen(app.runtime))
        await pilot.pause()
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, PartitionsScreen)  # no dialog
        assert "read-only" in str(app.screen.query_one("#view-info", Static).render())
        await pilot.press("escape")
        assert app.screen is app.dashboard


async def test_drained_view_folds_sorts_and_marks_on_enter(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime()
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await load(app, pilot)
        sim = runtime.sources[0].sim  # type: ignore[attr-defined]
        for name in ("gpu0010", "gpu0011", "gpu0012", "gpu0020"):
            sim.drain(name, "IB link flapping", "alice", FIXED + 60)
        sim.drain("gpu0030", "bad PSU", "bob", FIXED + 120)
        sim.cordon("gpu0040", True, FIXED + 30)
        await pilot.pause()
        await app.push_screen(DrainedScreen(runtime))
        runtime.clock.t = FIXED + 180  # type: ignore[attr-defined]
        await load(app, pilot)  # the open view follows the new snapshot
        screen = app.screen
        assert isinstance(screen, DrainedScreen)
        rows = screen.table.view
        assert [(r.reason, r.user) for r in rows[:3]] == [
            ("bad PSU", "bob"), ("IB link flapping", "alice"), ("cordoned (unschedulable)", None)]
        flapping = rows[1]
        assert flapping.nodelist == "gpu[0010-0012,0020]" and flapping.scheduler == "slurm"
        assert rows[2].scheduler == "k8s" and rows[2].nodes == ("gpu0040",) and rows[2].time == FIXED + 30
        assert any(r.reason.startswith("xid 79") for r in rows)  # the demo's own drained node
        assert "2025-06-15 15:07Z" in screen.table._format_row(flapping).text
        screen.table.set_filter("alice")
        assert [r.reason for r in screen.table.view] == ["IB link flapping"]
        screen.table.set_filter("")
        await pilot.press("home", "j")  # the second row: IB link flapping
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is app.dashboard
        assert app.dashboard.heatmap.marked_nodes == ("gpu0010", "gpu0011", "gpu0012", "gpu0020")
        assert app.dashboard.heatmap.cursor_node == "gpu0010"


async def _run_action(runtime: Runtime, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str]) -> None:
    plan = runtime.executor.plan(kind, targets, params, runtime.store.snapshot())
    await runtime.executor.execute(plan, confirmation=plan.confirm_word or True)


async def test_audit_view_rows_filter_enter_and_live(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime()
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await load(app, pilot)
        await _run_action(runtime, ActionKind.DRAIN_NODES, ("gpu0003", "gpu0004"), {"reason": "fan noise"})
        await app.push_screen(AuditScreen(runtime))
        await pilot.pause()
        await app.workers.wait_for_complete()  # the file is read in a worker thread
        screen = app.screen
        assert isinstance(screen, AuditScreen)
        assert [(e.action, e.result, e.reason) for e in screen.table.view] == [("drain", "ok", "fan noise")]
        assert "gpu[0003-0004]" in screen.table._format_row(screen.table.view[0]).text
        # a new record appears without reopening the view (the next snapshot or the 2 s check)
        await _run_action(runtime, ActionKind.HOLD_JOBS, ("999999",), {})
        await load(app, pilot)
        await app.workers.wait_for_complete()
        assert [e.action for e in screen.table.view] == ["hold", "drain"]
        assert screen.table.view[0].result == "refused"  # an unknown job: the plan refuses it
        # filter: "/" then the structured syntax
        await pilot.press("slash")
        await pilot.press(*"action:drain")
        await pilot.pause()
        assert screen.query_one("#view-filter", Input).value == "action:drain"
        assert [e.action for e in screen.table.view] == ["drain"]
        await pilot.press("enter")  # leaves the filter, back on the table
        await pilot.press("enter")  # the full record
        await pilot.pause()
        record = app.screen
        assert isinstance(record, AuditRecordScreen)
        assert "scontrol update" in record.text and "per-target results (2 ok, 0 failed)" in record.text
        await pilot.press("escape")
        await pilot.press("escape")  # closes the filter first
        assert isinstance(app.screen, AuditScreen) and len(screen.table.view) == 2
        await pilot.press("escape")
        assert app.screen is app.dashboard


async def test_audit_view_reads_in_a_thread_and_a_hung_read_does_not_freeze_it(
        make_runtime: Callable[..., Runtime], monkeypatch: pytest.MonkeyPatch) -> None:
    import hpctui.ui.screens.audit as audit_screen

    real = audit_screen.load_tail
    release = threading.Event()
    threads: list[threading.Thread] = []

    def hung(*args: object, **kw: object) -> object:  # an NFS mount that does not answer (until released)
        threads.append(threading.current_thread())
        release.wait(30)
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(audit_screen, "load_tail", hung)
    runtime = make_runtime()
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await load(app, pilot)
        await _run_action(runtime, ActionKind.DRAIN_NODES, ("gpu0003",), {"reason": "fan noise"})
        screen = AuditScreen(runtime)
        await app.push_screen(screen)
        await pilot.pause()
        assert threads and threads[0] is not threading.main_thread()
        # the UI answers while the read hangs: the filter opens and takes keys; checks do not pile up
        await pilot.press("slash", *"drain")
        await pilot.pause()
        assert screen.query_one("#view-filter", Input).value == "drain"
        screen.reload()
        screen.reload()
        assert len(threads) == 1 and screen.entries == []
        release.set()
        await app.workers.wait_for_complete()
        assert [e.action for e in screen.entries] == ["drain"]


async def test_audit_view_of_a_huge_file_shows_its_newest_records(make_runtime: Callable[..., Runtime]) -> None:
    runtime = make_runtime()
    audit = runtime.executor.audit
    assert audit is not None
    rec = {"phase": "outcome", "time": 0, "cluster": runtime.cluster, "user": "alice", "action": "drain",
           "source": "demo", "targets": ["gpu0001"], "params": {"reason": "p" * 10_000}, "commands": [],
           "refused": None, "results": []}
    total = (50 << 20) // len(json.dumps(rec)) + 1  # 50 MB
    audit.path.write_text("".join(json.dumps({**rec, "id": f"r{i}", "time": i}) + "\n" for i in range(total)))
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await load(app, pilot)
        screen = AuditScreen(runtime)
        await app.push_screen(screen)
        await pilot.pause()
        await app.workers.wait_for_complete()
        assert screen.cut and 0 < len(screen.entries) <= (4 << 20) // 10_000 + 1
        assert screen.entries[0].id == f"r{total - 1}"  # newest first
        assert "newest" in screen.info_text and "last 4 MB" in screen.info_text


async def test_palette_opens_each_view(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await load(app, pilot)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        for title, cls in ((":partitions", PartitionsScreen), (":drained", DrainedScreen), (":audit", AuditScreen)):
            commands[title].callback()
            await pilot.pause()
            await pilot.pause()
            assert isinstance(app.screen, cls) and app.screen.table.has_focus
            await pilot.press("escape")
            assert app.screen is app.dashboard


async def test_j_k_type_into_the_open_filter(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await load(app, pilot)
        await app.push_screen(DrainedScreen(app.runtime))
        await pilot.pause()
        await pilot.press("slash", "j", "k", "x")
        await pilot.pause()
        assert app.screen.query_one("#view-filter", Input).value == "jkx"
        assert isinstance(app.screen, DrainedScreen) and app.screen.table.view == []


HOSTILE = "evil[/]x[@click=app.quit]"


def _toasts(app: HpcApp) -> list[str]:
    """What each notification's toast shows (tests run with toasts off: render them here,
    as Textual's Toast does, so markup in a message raises or turns into a link)."""
    from textual.widgets._toast import Toast

    return [Toast(n).render().plain for n in app._notifications]


async def test_drained_view_shows_hostile_names_and_reasons_as_text(make_runtime: Callable[..., Runtime]) -> None:
    """Cluster strings are text, never markup: ``[/]`` must not raise, ``[@click=…]`` must not be a link."""
    from hpctui.ui.screens.drained import DrainRow

    runtime = make_runtime()
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await load(app, pilot)
        sim = runtime.sources[0].sim  # type: ignore[attr-defined]
        sim.drain("gpu0010", f"reason {HOSTILE}", "mallory", FIXED + 60)
        await app.push_screen(DrainedScreen(runtime))
        await load(app, pilot)
        screen = app.screen
        assert isinstance(screen, DrainedScreen)
        assert any(HOSTILE in r.reason for r in screen.table.view)
        row = DrainRow(scheduler="slurm", reason=HOSTILE, user="mallory", time=FIXED, states="DRAINED",
                       nodes=("gpu0010",), nodelist=HOSTILE)
        screen.table.set_rows([row])
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is app.dashboard and app.is_running
        assert any(f"marked {HOSTILE} (1 node(s))" in t for t in _toasts(app))


async def test_typed_commands_and_names_in_notices_are_text(make_runtime: Callable[..., Runtime]) -> None:
    from hpctui.ui.nav import run_command

    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await load(app, pilot)
        await run_command(app, HOSTILE)
        await run_command(app, f"cluster {HOSTILE}")
        app.dashboard.select_node(HOSTILE)
        await pilot.pause()
        shown = _toasts(app)
        assert len(shown) == 3 and all(HOSTILE in t for t in shown), shown


async def test_big_cluster_views_build_rows_in_a_worker_thread(make_runtime: Callable[..., Runtime],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Above THREAD_ABOVE nodes the drained and partitions rows (hostlist folding) are built off
    the UI thread; the newest snapshot's rows are the ones shown."""
    import threading

    import hpctui.ui.screens.drained as drained_mod
    import hpctui.ui.screens.tableview as tableview

    monkeypatch.setattr(tableview, "THREAD_ABOVE", 10)  # the demo's 64 nodes count as big here
    threads: list[str] = []
    real = drained_mod.drained_rows

    def recording(snapshot: object) -> list[drained_mod.DrainRow]:
        threads.append(threading.current_thread().name)
        return real(snapshot)  # type: ignore[arg-type]

    monkeypatch.setattr(drained_mod, "drained_rows", recording)
    runtime = make_runtime()
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await load(app, pilot)
        sim = runtime.sources[0].sim  # type: ignore[attr-defined]
        sim.drain("gpu0010", "threaded", "alice", FIXED + 60)
        await app.push_screen(DrainedScreen(runtime))
        await load(app, pilot)
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DrainedScreen)
        assert any(r.reason == "threaded" and r.nodes == ("gpu0010",) for r in screen.table.view)
        assert threads and threading.main_thread().name not in threads
        await pilot.press("escape")
        await app.push_screen(PartitionsScreen(runtime))
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, PartitionsScreen) and app.screen.table.view
