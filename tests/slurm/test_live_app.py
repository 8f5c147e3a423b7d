"""The installed program against the real Slurm test bed: headless snapshot, actions
driven from the UI with their effect visible on the next refresh, and a controller
that dies and comes back while the rest of the UI keeps refreshing."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from slurmlab import SlurmLab
from textual.widgets import Button, Input, Static

from hpctui.core.config import load_config
from hpctui.core.runtime import Runtime, runtime_from_config
from hpctui.ui.app import HpcApp
from hpctui.ui.screens.action_dialog import ActionDialog
from hpctui.ui.widgets.heatmap import NodeHeatmap
from hpctui.ui.widgets.panes import TablePane
from hpctui.ui.widgets.status import StatusLine
from hpctui.ui.widgets.tables import QueueTable

pytestmark = [pytest.mark.live, pytest.mark.slurm]


def write_config(tmp_path: Path, lab: SlurmLab, *, with_demo: bool = False, interval_s: float = 0.5,
                 timeout_s: float = 3.0) -> Path:
    text = f"""
audit_log = "{tmp_path / 'audit.jsonl'}"
[clusters.lab]
[[clusters.lab.sources]]
kind = "slurm"
backend = "cli"
slurm_conf = "{lab.slurm_conf}"
interval_s = {interval_s}
timeout_s = {timeout_s}
"""
    if with_demo:
        text += '[[clusters.lab.sources]]\nkind = "demo"\nsize = 4\ninterval_s = 0.5\n'
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def runtime_for(path: Path) -> Runtime:
    return runtime_from_config(load_config(path), "lab")


async def wait_for(pilot: object, pred: Callable[[], bool], timeout: float = 20.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.1)  # type: ignore[attr-defined]


def node_line(lab: SlurmLab, node: str) -> str:
    return lab.run("scontrol", "-o", "show", "node", node).stdout


def test_headless_snapshot_shows_real_nodes_and_jobs(lab: SlurmLab, tmp_path: Path) -> None:
    jid = lab.sbatch("-p", "gpu", "-w", "gpu02", "--gres=gpu:h100:2", "-J", "snap-probe")
    lab.wait_state(jid, "RUNNING")
    path = write_config(tmp_path, lab)
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "hpctui", "snapshot", "--config", str(path), "--format", "json"],
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    nodes = data["nodes"]
    assert {"gpu01", "gpu02", "cpu01"} <= set(nodes)
    gpu02 = nodes["gpu02"]["slurm"]
    assert gpu02["gpus_total"] == 8 and gpu02["gpus_alloc"] == 2
    assert "gpu" in gpu02["partitions"]
    job = next(j for j in data["jobs"] if str(j["job_id"]) == jid)
    assert job["state"] == "RUNNING" and job["nodes"] == "gpu02" and job["name"] == "snap-probe"
    table = subprocess.run([sys.executable, "-m", "hpctui", "snapshot", "--config", str(path)],
                           capture_output=True, text=True, timeout=60, env=env)
    assert table.returncode == 0 and "source slurm (slurm): ok" in table.stdout


async def run_dialog(app: HpcApp, pilot: object, key: str, reason: str | None = None,
                     confirm: str | None = None) -> ActionDialog:
    await pilot.press(key)  # type: ignore[attr-defined]
    await wait_for(pilot, lambda: isinstance(app.screen, ActionDialog), 5, "the action dialog")
    dialog = app.screen
    assert isinstance(dialog, ActionDialog)
    if reason is not None:
        dialog.query_one("#param-reason", Input).value = reason
        await pilot.pause()  # type: ignore[attr-defined]
    if confirm is not None:
        dialog.query_one("#confirm", Input).value = confirm
        await pilot.pause()  # type: ignore[attr-defined]
    assert dialog.plan.runnable, dialog.plan.errors
    assert not dialog.query_one("#run", Button).disabled
    await pilot.click("#run")  # type: ignore[attr-defined]
    await wait_for(pilot, lambda: dialog.result is not None, 30, "the action result")
    return dialog


async def test_drain_resume_and_requeue_from_the_ui(lab: SlurmLab, tmp_path: Path) -> None:
    jid = lab.sbatch("-p", "gpu", "-w", "gpu03", "--gres=gpu:a100:1", "--requeue", "-J", "ui-victim")
    lab.wait_state(jid, "RUNNING")
    runtime = runtime_for(write_config(tmp_path, lab))
    app = HpcApp(runtime)
    async with app.run_test(size=(160, 50)) as pilot:
        heatmap = app.screen.query_one(NodeHeatmap)
        await wait_for(pilot, lambda: heatmap.knows("gpu03"), 20, "gpu03 in the heatmap")
        assert heatmap.select("gpu03")
        heatmap.focus()

        dialog = await run_dialog(app, pilot, "d", reason="ui test: bad gpu")
        assert dialog.result is not None and dialog.result.ok, dialog.result
        assert any("State=DRAIN" in c for c in dialog.plan.commands)
        assert any(jid in a for a in dialog.plan.affected), dialog.plan.affected
        await pilot.press("escape")
        assert "DRAIN" in node_line(lab, "gpu03") and "ui test: bad gpu" in node_line(lab, "gpu03")
        await wait_for(pilot, lambda: (n := runtime.store.snapshot().nodes.get("gpu03")) is not None
                       and n.slurm is not None and n.slurm.display_state.startswith("DRAINING"), 20, "DRAINING")

        # requeue the job on the draining node from the queue pane
        queue = app.screen.query_one("#queue", QueueTable)
        queue.focus()
        queue.set_filter(jid)
        await wait_for(pilot, lambda: queue.cursor_key is not None and queue.cursor_key.startswith(jid), 10,
                       "job in queue")
        dialog = await run_dialog(app, pilot, "R")
        assert dialog.result is not None and dialog.result.ok, dialog.result
        await pilot.press("escape")
        await wait_for(pilot, lambda: any(str(j.job_id) == jid and j.state == "PENDING" and j.restart_count == 1
                                          for j in runtime.store.snapshot().jobs), 20, "requeued job PENDING")
        # with its only job gone, the drained node is DRAINED
        await wait_for(pilot, lambda: runtime.store.snapshot().nodes["gpu03"].slurm.display_state  # type: ignore[union-attr]
                       .startswith("DRAINED"), 30, "DRAINED")

        heatmap.focus()
        assert heatmap.select("gpu03")
        dialog = await run_dialog(app, pilot, "u")
        assert dialog.result is not None and dialog.result.ok, dialog.result
        await pilot.press("escape")
        assert "DRAIN" not in node_line(lab, "gpu03").split("Reason=")[0]
        await wait_for(pilot, lambda: "DRAIN" not in (runtime.store.snapshot().nodes["gpu03"].slurm.display_state  # type: ignore[union-attr]
                                                      ), 20, "node resumed")
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    audit = [r for r in records if r["phase"] == "outcome"]
    assert [r["id"] for r in records if r["phase"] == "intent"] == [r["id"] for r in audit]  # intent first
    assert [r["action"] for r in audit] == ["drain", "requeue", "resume"]
    assert all(r["refused"] is None for r in audit)


async def test_dead_controller_costs_a_stale_marker_not_the_ui(lab: SlurmLab, tmp_path: Path) -> None:
    runtime = runtime_for(write_config(tmp_path, lab, with_demo=True, interval_s=0.5, timeout_s=2.0))
    app = HpcApp(runtime)
    status = lambda: str(app.screen.query_one(StatusLine).render())  # noqa: E731
    async with app.run_test(size=(160, 50)) as pilot:
        queue_pane = app.screen.query_one("#queue-pane", TablePane)
        await wait_for(pilot, lambda: "slurm ✓" in status() and "demo ✓" in status(), 20, "both sources healthy")
        lab.kill_ctld()
        try:
            await wait_for(pilot, lambda: "slurm ✗" in status(), 30, "the Slurm source marked in the status line")
            await wait_for(pilot, lambda: "slurmctld unreachable" in status() or "timed out" in status(), 30,
                           "the Slurm error in the status line")
            await wait_for(pilot, lambda: "✗" in str(queue_pane.border_title), 10, "stale marker on the queue")
            assert "old" in str(queue_pane.border_title)
            assert runtime.store.snapshot().nodes, "old Slurm data is kept"
            # the rest keeps refreshing while Slurm is down
            before = runtime.store.health()["demo"].last_success or 0.0
            await asyncio.sleep(1.0)
            await pilot.pause()
            assert (runtime.store.health()["demo"].last_success or 0.0) > before
            assert "demo ✓" in status()
        finally:
            lab.restart_ctld()
        runtime.refresh_now()
        await wait_for(pilot, lambda: "slurm ✓" in status(), 60, "Slurm recovering by itself")
        await wait_for(pilot, lambda: "✗" not in str(queue_pane.border_title), 10, "stale marker gone")


async def test_job_detail_shows_real_fairshare_and_qos(lab: SlurmLab, tmp_path: Path) -> None:
    if lab.no_accounting:
        pytest.skip(lab.no_accounting)
    if not lab.accounting:
        pytest.fail("the Slurm bed runs without accounting") if os.environ.get("CI") == "true" else pytest.skip(
            "no accounting in this bed")
    jid = lab.sbatch("-p", "cpu", "-n", "1", "-J", "fairshare-probe")
    lab.wait_state(jid, "RUNNING")
    runtime = runtime_for(write_config(tmp_path, lab))
    app = HpcApp(runtime)
    async with app.run_test(size=(160, 50)) as pilot:
        queue = app.screen.query_one("#queue", QueueTable)
        await wait_for(pilot, lambda: any(str(j.job_id) == jid for j in runtime.store.snapshot().jobs), 20, "job")
        queue.focus()
        queue.set_filter(jid)
        await wait_for(pilot, lambda: queue.cursor_key == jid, 10, "job under the cursor")
        await pilot.press("enter")
        from hpctui.ui.screens.job_detail import JobDetailScreen

        await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen), 5, "job detail")
        body = app.screen.query_one("#job-accounting", Static)
        await wait_for(pilot, lambda: "Fair-share" in str(body.render()), 20, "fair-share rows")
        text = str(body.render())
        assert "ml" in text and "root" in text, text
        assert "QoS" in text and "normal" in text, text


async def test_hold_release_cancel_and_reboot_from_the_ui(lab: SlurmLab, tmp_path: Path) -> None:
    running = lab.sbatch("-p", "gpu", "-w", "gpu04", "--gres=gpu:a100:1", "-J", "ui-reboot-victim")
    lab.wait_state(running, "RUNNING")
    pending = lab.sbatch("-p", "gpu", "-w", "gpu04", "--gres=gpu:a100:4", "-J", "ui-pending")
    runtime = runtime_for(write_config(tmp_path, lab))
    app = HpcApp(runtime)

    def job_state(jid: str) -> tuple[str, str | None] | None:
        job = next((j for j in runtime.store.snapshot().jobs if str(j.job_id) == jid), None)
        return None if job is None else (job.state, job.reason)

    async with app.run_test(size=(160, 50)) as pilot:
        queue = app.screen.query_one("#queue", QueueTable)
        await wait_for(pilot, lambda: job_state(pending) is not None, 20, "pending job")
        queue.focus()
        queue.set_filter(pending)
        await wait_for(pilot, lambda: queue.cursor_key == pending, 10, "pending job under the cursor")
        held = ("JobHeldUser", "JobHeldAdmin")  # root's hold is an admin hold
        for key, check in (("z", lambda s: s is not None and s[1] in held),
                           ("Z", lambda s: s is not None and s[1] not in held),
                           ("x", lambda s: s is None or s[0] in ("CANCELLED", "COMPLETING"))):
            dialog = await run_dialog(app, pilot, key)
            assert dialog.result is not None and dialog.result.ok, (key, dialog.result)
            await pilot.press("escape")
            runtime.refresh_now()
            await wait_for(pilot, lambda c=check: c(job_state(pending)), 20, f"effect of {key}")  # type: ignore[misc]

        heatmap = app.screen.query_one(NodeHeatmap)
        heatmap.focus()
        assert heatmap.select("gpu04")
        dialog = await run_dialog(app, pilot, "b", reason="firmware update")
        assert dialog.result is not None and dialog.result.ok, dialog.result
        assert any("reboot" in c and "ASAP" in c for c in dialog.plan.commands), dialog.plan.commands
        await pilot.press("escape")
        assert "REBOOT" in node_line(lab, "gpu04").upper() or "Reboot ASAP" in node_line(lab, "gpu04")
        dialog = await run_dialog(app, pilot, "B")
        assert dialog.result is not None and dialog.result.ok, dialog.result
        await pilot.press("escape")
        line = node_line(lab, "gpu04")
        assert "REBOOT_REQUESTED" not in line, line
    assert job_state(running) is not None
