"""Actions against the real cluster, judged by their visible effect on the next read."""

from __future__ import annotations

import pytest
from slurm_helpers import act, job, nodes, poll, run, snapshot, source
from slurmlab import SlurmLab

from hpctui.actions.base import ActionKind
from hpctui.actions.executor import ActionExecutor

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
                assert plan.commands == (f'POST /slurm/v0.0.38/job/{waiting} {{"hold": true}}',)
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


def test_rest_v0038_drain_falls_back_to_cli_and_says_so(lab: SlurmLab) -> None:
    async def go() -> None:
        src = source(lab, "rest-unix")
        try:
            plan, results = await act(src, ActionKind.DRAIN_NODES, ("cpu[01-02]",), {"reason": "maint"})
            assert plan.targets == ("cpu01", "cpu02")
            assert plan.commands == ("scontrol update 'NodeName=cpu[01-02]' State=DRAIN Reason=maint",)
            assert any("v0.0.38 cannot drain" in n for n in plan.notes)
            assert all(r.ok for r in results)
            await poll(src, lambda r: all(nodes(r)[n].display_state == "DRAINED" for n in ("cpu01", "cpu02")))
            _, snap = await snapshot(src)
            plan = src.plan(ActionKind.REQUEUE_JOBS, (), {}, snap)
            assert any("cannot requeue" in n for n in plan.notes)
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
