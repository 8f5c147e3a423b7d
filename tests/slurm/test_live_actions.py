"""Actions against the real cluster, judged by their visible effect on the next read."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from slurm_helpers import act, job, nodes, poll, run, snapshot, source
from slurmlab import SlurmLab

from hpctui.actions.executor import ActionExecutor
from hpctui.model.action import ActionKind

pytestmark = [pytest.mark.live, pytest.mark.slurm]


def test_drain_busy_node_then_drained_then_resume(lab: SlurmLab) -> None:
    jid = lab.sbatch("-p", "gpu", "-w", "gpu02", "--gres=gpu:1", "-J", "victim")
    lab.wait_state(jid, "RUNNING")

    async def go() -> None:
        src = source(lab, "cli")
        plan, results = await act(src, ActionKind.DRAIN_NODES, ("gpu02",), {"reason": "xid 79 on GPU3"})
        assert plan.commands == ("scontrol update NodeName=gpu02 State=DRAIN 'Reason=xid 79 on GPU3'",)
        assert any(f"job {jid} (root, victim) RUNNING on gpu02" in a for a in plan.affected)
        assert [r.ok for r in results] == [True]
        r = await poll(src, lambda r: nodes(r)["gpu02"].display_state == "DRAINING")
        assert nodes(r)["gpu02"].reason == "xid 79 on GPU3"
        _, results = await act(src, ActionKind.CANCEL_JOBS, (jid,))
        assert results[0].ok and "verified" in results[0].message
        await poll(src, lambda r: nodes(r)["gpu02"].display_state == "DRAINED")
        _, results = await act(src, ActionKind.RESUME_NODES, ("gpu02",))
        assert results[0].ok
        await poll(src, lambda r: nodes(r)["gpu02"].display_state == "IDLE")

    run(go())


def test_requeue_running_batch_job(lab: SlurmLab) -> None:
    jid = lab.sbatch("-p", "cpu", "-n", "1", "-J", "to-requeue")
    lab.wait_state(jid, "RUNNING")

    async def go() -> None:
        src = source(lab, "cli")
        plan, results = await act(src, ActionKind.REQUEUE_JOBS, (jid,))
        assert plan.commands == (f"scontrol requeue {jid}",)
        assert results[0].ok, results
        r = await poll(src, lambda r: job(r, jid) is not None and job(r, jid).state == "PENDING")
        assert job(r, jid).restart_count == 1
        lab.wait_settled("cpu")
        lab.run("scontrol", "update", f"JobId={jid}", "StartTime=now")
        # while slurmctld finishes the requeue cleanup the record can drop out of one read
        await poll(src, lambda r: job(r, jid) is not None and job(r, jid).state == "RUNNING")

    run(go())


def test_requeue_non_requeueable_job_gets_slurm_error_per_target(lab: SlurmLab) -> None:
    ok_id = lab.sbatch("-p", "cpu", "-n", "1")
    bad_id = lab.sbatch("-p", "cpu", "-n", "1", "--no-requeue")
    lab.wait_state(ok_id, "RUNNING")
    lab.wait_state(bad_id, "RUNNING")

    async def go() -> None:
        src = source(lab, "cli")
        _, results = await act(src, ActionKind.REQUEUE_HOLD_JOBS, (ok_id, bad_id))
        by = {r.target: r for r in results}
        assert by[ok_id].ok
        assert not by[bad_id].ok and "Requested operation is presently disabled" in by[bad_id].message
        r = await poll(src, lambda r: job(r, ok_id).state == "PENDING")
        assert job(r, ok_id).reason in ("JobHeldUser", "job requeued in held state")
        assert job(r, bad_id).state == "RUNNING"

    run(go())


@pytest.mark.parametrize("backend", ["cli", "rest-unix"])
def test_hold_release_cancel(lab: SlurmLab, backend: str) -> None:
    fill = lab.sbatch("-p", "gpu", "-w", "gpu03", "--gres=gpu:a100:4")  # fill gpu03 so the next one waits
    lab.wait_state(fill, "RUNNING")
    waiting = lab.sbatch("-p", "gpu", "-w", "gpu03", "--gres=gpu:a100:4", "-J", "waiting")
    lab.wait_state(waiting, "PENDING")

    async def go() -> None:
        src = source(lab, backend)
        try:
            plan, results = await act(src, ActionKind.HOLD_JOBS, (waiting,))
            if backend == "rest-unix":
                assert plan.commands == (f'POST /slurm/{lab.rest_version}/job/{waiting} {{"hold": true}}',)
            assert results[0].ok, results
            await poll(src, lambda r: job(r, waiting).reason == "JobHeldAdmin")
            _, results = await act(src, ActionKind.RELEASE_JOBS, (waiting,))
            assert results[0].ok, results
            await poll(src, lambda r: job(r, waiting).reason not in ("JobHeldAdmin", "JobHeldUser"))
            # "every job on gpu03" is expanded by the executor, as in the app
            _, snap = await snapshot(src)
            plan = ActionExecutor([src], None, cluster="lab").plan(ActionKind.CANCEL_JOBS, (), {"on_nodes": "gpu03"}, snap)
            assert plan.targets == (fill,)  # only the running one is *on* gpu03
            results = await src.execute(plan)
            assert results[0].ok and "verified" in results[0].message
            plan, results = await act(src, ActionKind.CANCEL_JOBS, (waiting,))
            assert results[0].ok
            j = job(await src.collect(), waiting)
            assert j is None or j.state == "COMPLETING"  # cancelled: gone, or still cleaning up
            await poll(src, lambda r: job(r, waiting) is None and not r.slurm_jobs)
        finally:
            await src.close()

    run(go())


def test_pending_array_remainder_hold_release_cancel(lab: SlurmLab) -> None:
    """The queue row of a pending array remainder (``ID_[1-6%2]``) is a working target."""
    fill = lab.sbatch("-p", "gpu", "-w", "gpu03", "--gres=gpu:a100:4")
    lab.wait_state(fill, "RUNNING")
    arr = lab.sbatch("-p", "gpu", "-w", "gpu03", "--gres=gpu:a100:4", "--array=1-6%2", "-J", "sweep")
    lab.wait_state(arr, "PENDING")
    held = ("JobHeldAdmin", "JobHeldUser")

    def tasks(r: object) -> list:  # type: ignore[type-arg]
        return [j for j in getattr(r, "slurm_jobs", None) or () if j.array_job_id == int(arr)]

    async def go() -> None:
        src = source(lab, "cli")
        _, snap = await snapshot(src)
        rem = next(j for j in snap.jobs if j.array_job_id == int(arr) and j.array_task_id is None)
        assert rem.display_id == f"{arr}_[1-6%2]"
        plan = src.plan(ActionKind.HOLD_JOBS, (rem.display_id,), {}, snap)
        assert plan.commands == (f"scontrol hold '{arr}_[1-6]'",), plan
        assert [r.ok for r in await src.execute(plan)] == [True]
        await poll(src, lambda r: bool(tasks(r)) and all((j.reason or "") in held for j in tasks(r)))
        _, results = await act(src, ActionKind.RELEASE_JOBS, (f"{arr}_[1-6]",))
        assert results[0].ok, results
        await poll(src, lambda r: bool(tasks(r)) and not any((j.reason or "") in held for j in tasks(r)))
        plan, results = await act(src, ActionKind.CANCEL_JOBS, (f"{arr}_[5-6]",))
        assert plan.commands == (f"scancel '{arr}_[5-6]'",)
        assert results[0].ok and "verified" in results[0].message, results
        plan, results = await act(src, ActionKind.CANCEL_JOBS, (arr,))
        assert plan.affected[0].startswith(f"job array {arr}: every task of the array")
        assert results[0].ok and "verified" in results[0].message, results
        await poll(src, lambda r: not tasks(r))
        assert job(await src.collect(), fill).state == "RUNNING"

    run(go())


def test_rest_drain_per_version_and_requeue_falls_back_to_cli(lab: SlurmLab) -> None:
    """22.05's v0.0.38 has no node update (the CLI drains, and says so); 24.11's v0.0.42 drains
    with POST node/{name}. Neither has a requeue (see test_rest_cannot_requeue_on_24_11)."""
    async def go() -> None:
        src = source(lab, "rest-unix")
        try:
            plan, results = await act(src, ActionKind.DRAIN_NODES, ("cpu[01-02]",), {"reason": "maint"})
            assert plan.targets == ("cpu01", "cpu02")
            if lab.version == "22.05":
                assert plan.commands == ("scontrol update 'NodeName=cpu[01-02]' State=DRAIN Reason=maint",)
                assert any("v0.0.38 cannot drain" in n for n in plan.notes)
            else:
                assert plan.commands == tuple(f'POST /slurm/{lab.rest_version}/node/{n} '
                                              '{"state": ["DRAIN"], "reason": "maint"}' for n in ("cpu01", "cpu02"))
                assert not any("cannot drain" in n for n in plan.notes)
            assert all(r.ok for r in results)
            await poll(src, lambda r: all(nodes(r)[n].display_state == "DRAINED" for n in ("cpu01", "cpu02")))
            _, snap = await snapshot(src)
            plan = src.plan(ActionKind.REQUEUE_JOBS, (), {}, snap)
            assert any(f"slurmrestd {lab.rest_version} cannot requeue" in n for n in plan.notes)
        finally:
            await src.close()

    run(go())


def _rest_post(lab: SlurmLab, path: str, body: dict[str, object]) -> dict[str, Any]:
    res = subprocess.run(["curl", "-s", "-X", "POST", "--unix-socket", lab.rest_socket, "-H",
                          "Content-Type: application/json", "-d", json.dumps(body), f"http://localhost{path}"],
                         capture_output=True, text=True, timeout=30, check=True)
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def test_rest_cannot_requeue_on_24_11(lab: SlurmLab) -> None:
    """What 24.11's data_parsers can do for a requeue (issue #21): none of v0.0.40-42 has one
    (POST job/{id} takes a job description; v0.0.41/42 say they ignore ``requeue``, and the job
    keeps running). So the REST source requeues with scontrol, says why, and it happens."""
    if lab.version != "24.11":
        pytest.skip("22.05's v0.0.38 has no requeue either: its note is checked in the drain test")
    jid = lab.sbatch("-p", "cpu", "-n", "1", "-J", "to-requeue")
    lab.wait_state(jid, "RUNNING")
    for v in ("v0.0.41", "v0.0.42"):
        answer = _rest_post(lab, f"/slurm/{v}/job/{jid}", {"job": {"requeue": True}})
        assert any('Ignoring unknown field "requeue"' in w.get("description", "")
                   for w in answer.get("warnings", [])), answer
    assert lab.state(jid) == "RUNNING"

    async def go() -> None:
        src = source(lab, "rest-unix")
        try:
            plan, results = await act(src, ActionKind.REQUEUE_JOBS, (jid,))
            assert plan.commands == (f"scontrol requeue {jid}",)
            assert any("slurmrestd v0.0.42 cannot requeue" in n for n in plan.notes), plan.notes
            assert results[0].ok, results
            r = await poll(src, lambda r: job(r, jid) is not None and job(r, jid).restart_count == 1)
            assert job(r, jid).state in ("PENDING", "REQUEUED", "COMPLETING", "RUNNING")
        finally:
            await src.close()

    run(go())


def test_reboot_and_cancel_reboot_flags(lab: SlurmLab) -> None:
    jid = lab.sbatch("-p", "cpu", "-w", "cpu01", "-n", "1")  # keeps cpu01 busy: the reboot waits
    lab.wait_state(jid, "RUNNING")

    async def go() -> None:
        src = source(lab, "cli")
        plan, results = await act(src, ActionKind.REBOOT_NODES, ("cpu01",), {"reason": "new driver"})
        assert plan.commands == ("scontrol reboot ASAP nextstate=RESUME 'reason=new driver' cpu01",)
        assert results[0].ok, results
        r = await poll(src, lambda r: "REBOOT_REQUESTED" in nodes(r)["cpu01"].flags)
        assert nodes(r)["cpu01"].display_state.startswith("DRAINING")
        _, results = await act(src, ActionKind.CANCEL_REBOOT, ("cpu01",))
        assert results[0].ok, results
        await poll(src, lambda r: "REBOOT_REQUESTED" not in nodes(r)["cpu01"].flags)

    run(go())


def test_plan_rejects_bad_and_unknown_targets(lab: SlurmLab) -> None:
    jid = lab.sbatch("-p", "cpu", "-n", "1")
    lab.wait_state(jid, "RUNNING")

    async def go() -> None:
        src = source(lab, "cli")
        _, snap = await snapshot(src)
        plan = src.plan(ActionKind.DRAIN_NODES, ("gpu01", "gpu[01-", "nosuch01", "gpu01;reboot"), {"reason": "x"}, snap)
        assert plan.targets == ("gpu01",)
        assert set(plan.rejected_targets) == {"gpu[01-", "nosuch01", "gpu01;reboot"}
        assert not plan.runnable and len(plan.errors) == 3
        results = await src.execute(plan)
        assert not any(r.ok for r in results)
        r = await src.collect()
        assert "DRAIN" not in nodes(r)["gpu01"].flags  # nothing ran
        plan = src.plan(ActionKind.CANCEL_JOBS, (jid, "abc", "99999", "1;ls"), {}, snap)
        assert plan.targets == (jid,) and set(plan.rejected_targets) == {"abc", "99999", "1;ls"}
        assert not plan.runnable
        plan = src.plan(ActionKind.DRAIN_NODES, ("gpu01",), {}, snap)
        assert "drain needs a reason" in plan.errors

    run(go())
