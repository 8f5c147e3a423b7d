"""Triage views on the demo cluster: workload on a node, a job in full, actions through
the dialog (drain with reason, bulk typed confirmation, jobs on marked nodes), and the
controller summary."""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import Button, Input, Static
from uikit import load

from hpctui.core.runtime import Runtime
from hpctui.findings.correlate import workload_index
from hpctui.model import ControllerHealth
from hpctui.ui.app import HpcApp
from hpctui.ui.screens.action_dialog import ActionDialog
from hpctui.ui.screens.job_detail import JobDetailScreen, job_lines
from hpctui.ui.widgets.gpu_panel import GpuPanel
from hpctui.ui.widgets.heatmap import NodeHeatmap
from hpctui.ui.widgets.status import controller_summary
from hpctui.ui.widgets.tables import QueueTable


def busy_node(runtime: Runtime) -> tuple[str, list[str]]:
    snap = runtime.store.snapshot()
    index = workload_index(snap)
    for name in snap.nodes:
        jobs = index.jobs_on(name)
        if jobs and any(j.gpus_alloc.get(name) for j in jobs):
            return name, [j.display_id for j in jobs]
    raise AssertionError("demo has no busy GPU node")


async def test_gpu_panel_lists_jobs_with_gpu_indices_and_pods(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        name, job_ids = busy_node(app.runtime)
        app.screen.query_one(NodeHeatmap).select(name)
        await pilot.pause()
        body = app.screen.query_one(GpuPanel).body_text
        assert "Workload" in body and f"job {job_ids[0]}" in body and "GPUs " in body
        snap = app.runtime.store.snapshot()
        pod_node = next(p.node for p in snap.pods if p.node and p.phase == "Running")
        app.screen.query_one(NodeHeatmap).select(pod_node)
        await pilot.pause()
        body = app.screen.query_one(GpuPanel).body_text
        assert "pod " in body


async def test_enter_on_a_pending_job_explains_why_it_waits(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        queue = app.screen.query_one("#queue", QueueTable)
        pending = next(j for j in app.runtime.store.snapshot().jobs if j.reason == "Dependency")
        queue.focus()
        queue.set_filter(pending.display_id)
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, JobDetailScreen)
        text = str(app.screen.query_one("#job-body", Static).render())
        assert "Dependency" in text and "depend" in text.lower().split("dependency", 1)[1]
        accounting = app.screen.query_one("#job-accounting", Static)
        await app.workers.wait_for_complete()  # the accounting worker has answered
        await pilot.pause()
        shown = str(accounting.render())
        assert "Fair-share" in shown and (pending.user or "?") in shown and f"QoS  {pending.qos}" in shown
        await pilot.press("escape")
        assert not isinstance(app.screen, JobDetailScreen)


def test_job_lines_show_gpu_indices_per_node_and_decoded_exit() -> None:
    from hpctui.model import SlurmJob

    job = SlurmJob(job_id=7, state="RUNNING", nodes="gpu[01-02]", gpus_alloc={"gpu01": "0-3", "gpu02": "4-7"},
                   exit_code=1, exit_signal=9, time_limit_min=1500, start_time=900.0)
    text = str(job_lines(job, now=1000.0))
    assert "gpu01: 0-3" in text and "gpu02: 4-7" in text
    assert "code 1, signal 9" in text and "1-01:00:00" in text and "ago" in text


async def drive_dialog(app: HpcApp, pilot: object, reason: str | None = None, word: str | None = None) -> ActionDialog:
    dialog = app.screen
    assert isinstance(dialog, ActionDialog)
    if reason is not None:
        dialog.query_one("#param-reason", Input).value = reason
        await pilot.pause()  # type: ignore[attr-defined]
    if word is not None:
        assert dialog.query_one("#run", Button).disabled, "bulk action must wait for the typed word"
        dialog.query_one("#confirm", Input).value = word
        await pilot.pause()  # type: ignore[attr-defined]
    await pilot.click("#run")  # type: ignore[attr-defined]
    for _ in range(50):
        if dialog.result is not None:
            break
        await pilot.pause(0.05)  # type: ignore[attr-defined]
    assert dialog.result is not None
    return dialog


async def test_drain_from_the_heatmap_needs_a_reason_and_shows_on_refresh(
        make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        name, job_ids = busy_node(app.runtime)
        heatmap = app.screen.query_one(NodeHeatmap)
        heatmap.select(name)
        heatmap.focus()
        await pilot.press("d")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ActionDialog)
        assert dialog.query_one("#run", Button).disabled, "no reason yet"
        assert any(job_ids[0] in a for a in dialog.plan.affected)
        dialog = await drive_dialog(app, pilot, reason="fan failure")
        assert dialog.result is not None and dialog.result.ok
        await pilot.press("escape")
        await load(app, pilot)
        slurm = app.runtime.store.snapshot().nodes[name].slurm
        assert slurm is not None and slurm.display_state.startswith("DRAIN") and slurm.reason == "fan failure"


async def test_requeue_jobs_on_marked_nodes_needs_the_typed_word(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        snap = app.runtime.store.snapshot()
        index = workload_index(snap)
        busy = [n for n in snap.nodes if any(j.requeueable and j.batch for j in index.jobs_on(n))][:2]
        heatmap = app.screen.query_one(NodeHeatmap)
        heatmap.focus()
        for name in busy:
            heatmap.select(name)
            await pilot.press("space")
        await pilot.press("R")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ActionDialog)
        expected = {j.display_id for n in busy for j in index.jobs_on(n)}
        assert set(dialog.plan.targets) == expected
        assert any("running on" in note for note in dialog.plan.notes)
        assert len(expected) >= 2
        word = dialog.plan.confirm_word
        assert word == f"requeue-{len(expected)}"
        dialog = await drive_dialog(app, pilot, word=word)
        assert dialog.result is not None and dialog.result.refused is None
        await pilot.press("escape")
        await load(app, pilot)
        after = {j.display_id: j for j in app.runtime.store.snapshot().jobs}
        requeued = [after[t] for t in expected if t in after and after[t].state == "PENDING"]
        assert requeued and all(j.restart_count == 1 for j in requeued)


def test_controller_summary() -> None:
    assert controller_summary(None) == ""
    assert controller_summary(ControllerHealth(reachable=False, detail="timeout")) == "slurmctld unreachable: timeout"
    text = controller_summary(ControllerHealth(reachable=True, server_thread_count=3, agent_queue_size=0,
                                               mean_schedule_cycle_us=506.0))
    assert text == "slurmctld ok · 3 threads · agent queue 0 · sched cycle 0.5 ms"


async def test_markup_in_filter_and_errors_does_not_crash(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        queue = app.screen.query_one("#queue", QueueTable)
        queue.focus()
        await pilot.press("slash")
        for ch in "[/b]":
            await pilot.press(ch)
        await pilot.pause()
        app.runtime.store.record_error("demo", "bad [/red] markup [link=x]")
        app.refresh_from_store()
        await pilot.pause()
        assert "[/b]" in str(app.screen.query_one("#queue-pane").border_title)


async def test_dialog_runs_once_and_cannot_be_closed_mid_action(make_runtime: Callable[..., Runtime]) -> None:
    import asyncio

    runtime = make_runtime()
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        name, _ = busy_node(runtime)
        heatmap = app.screen.query_one(NodeHeatmap)
        heatmap.select(name)
        heatmap.focus()
        started: list[int] = []
        gate = asyncio.Event()
        original = runtime.executor.execute

        async def slow_execute(plan, *, confirmation):  # type: ignore[no-untyped-def]
            started.append(1)
            await gate.wait()
            return await original(plan, confirmation=confirmation)

        runtime.executor.execute = slow_execute  # type: ignore[method-assign]
        await pilot.press("u")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ActionDialog)
        dialog._start()
        dialog._start()  # a double Enter
        await pilot.pause()
        await pilot.press("escape")  # refused while running
        await pilot.pause()
        assert app.screen is dialog and dialog.running
        gate.set()
        for _ in range(40):
            if dialog.result is not None:
                break
            await pilot.pause(0.05)
        assert len(started) == 1 and dialog.result is not None
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is not dialog
