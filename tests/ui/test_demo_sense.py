"""Pilot tests of the demo's data as the screens show it (issue #22 §8): partitions count physical
GPUs, a job at its time limit is highlighted in the queue, a cancel counts array tasks, the GPU
busy without a job is a problem, and ReqNodeNotAvail names the nodes in the queue and job detail."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
from textual.widgets import Button
from uikit import load

from hpctui.core.runtime import Runtime
from hpctui.model.action import ActionKind
from hpctui.ui.app import HpcApp
from hpctui.ui.messages import ActionRequested
from hpctui.ui.screens.action_dialog import ActionDialog
from hpctui.ui.screens.partitions import PartitionsScreen
from hpctui.ui.widgets.gpu_panel import GpuPanel
from hpctui.ui.widgets.tables import QueueTable


async def test_partitions_count_physical_gpus_not_mig_slices(make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime(seed=1)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await load(app, pilot)
        snap = rt.store.snapshot()
        await app.push_screen(PartitionsScreen(rt))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PartitionsScreen)
        rows = {r.name: r for r in screen.rows}
        for part in ("h100", "h200"):
            nodes = [n for n in snap.nodes.values() if n.slurm is not None and part in n.slurm.partitions]
            physical = sum(len(snap.gpus.get(n.name, ())) for n in nodes)
            assert physical == 32 * 8
            assert rows[part].gpus_total == physical, (part, rows[part].gpus_total)
            assert rows[part].gpus_used is not None and rows[part].gpus_used <= physical
        assert "/256" in screen.table._format_row(rows["h100"]).text


async def test_a_running_job_at_its_time_limit_is_highlighted(make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime(seed=1)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(200, 50)) as pilot:
        await load(app, pilot)
        queue = app.screen.query_one("#queue", QueueTable)
        col = {c.key: c for c in queue.columns}["time_left"]
        assert col.style is not None
        now = rt.clock()
        running = [j for j in queue.rows if j.state == "RUNNING" and j.time_limit_min]
        assert running and all(col.style(j) is None or col.text(j) != "0:00" for j in running)
        job = running[0]
        assert job.time_limit_min is not None
        over = msgspec.structs.replace(job, start_time=now - job.time_limit_min * 60 - 30)
        near = msgspec.structs.replace(job, start_time=now - job.time_limit_min * 60 + 120)
        assert col.text(over) == "0:00" and col.style(over) == "error"
        assert col.style(near) == "warning"
        pending = next(j for j in queue.rows if j.state == "PENDING")
        assert col.style(pending) is None


async def test_cancel_of_an_array_remainder_counts_its_tasks(make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime(seed=1)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        snap = rt.store.snapshot()
        rest = next(j for j in snap.jobs if j.array_task_str == "5-16%4")
        task = next(j for j in snap.jobs if j.array_job_id == rest.array_job_id and j.array_task_id is not None)
        app.post_message(ActionRequested(ActionKind.CANCEL_JOBS, (rest.display_id, task.display_id), {}))
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ActionDialog)
        assert str(dialog.query_one("#run", Button).label) == "Cancel 2 jobs (13 tasks)"
        await pilot.press("escape")
        await pilot.pause()
        plain = [j.display_id for j in snap.jobs if j.state == "RUNNING" and j.array_job_id is None][:2]
        app.post_message(ActionRequested(ActionKind.CANCEL_JOBS, tuple(plain), {}))
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ActionDialog)
        assert str(dialog.query_one("#run", Button).label) == "Cancel 2 jobs"


async def test_the_gpu_busy_without_a_job_is_a_problem_and_req_node_not_avail_names_nodes(
        make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime(seed=1)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await load(app, pilot)
        stray = rt.sources[0].sim.place.stray_node  # type: ignore[attr-defined]
        codes = {f.code for f in rt.findings().node(stray)}
        assert "gpu_stray_process" in codes
        app.dashboard.heatmap.select(stray)
        await pilot.pause()
        body = app.screen.query_one(GpuPanel).body_text
        assert "mallory" in body and "no job" in body, body
        queue = app.screen.query_one("#queue", QueueTable)
        job = next(j for j in queue.rows if (j.reason or "").startswith("ReqNodeNotAvail"))
        reason = {c.key: c for c in queue.columns}["reason"].text(job)
        assert "UnavailableNodes:gpu[" in reason
