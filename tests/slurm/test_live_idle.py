"""Idle GPUs on the live Slurm bed: a real job's GPU allocation (``--gres=gpu:h100:2`` on gpu01,
IDX 0-1 from Slurm itself) with readings that say 0 % (the bed has no real GPUs: the readings are a
metrics source's, here given), flagged idle; a GPU of the node busy that no real job holds; the
job cancelled from the idle view's action with its reason, through the real scancel."""

from __future__ import annotations

import pytest
from slurm_helpers import act, job, poll, run, snapshot, source
from slurmlab import SlurmLab, scenario

from hpctui.core.store import Store
from hpctui.findings.correlate import workload_index
from hpctui.findings.idle import IdleSettings, IdleTracker
from hpctui.model import Gpu, SourceResult
from hpctui.model.action import ActionKind

pytestmark = [pytest.mark.live, pytest.mark.slurm]


def readings(t: float) -> SourceResult:
    """gpu01's 8 GPUs as a metrics source reports them: 0 % everywhere but GPU 5 (97 %, 30 GiB)."""
    gpus = tuple(Gpu(node="gpu01", index=i, util_pct=97.0 if i == 5 else 0.0,
                     memory_used_mib=30_000.0 if i == 5 else 2.0) for i in range(8))
    return SourceResult(source="metrics", time=t, gpus={"gpu01": gpus})


def test_real_job_gpus_idle_and_unowned_gpu(lab: SlurmLab) -> None:
    ids = scenario(lab)

    async def go() -> None:
        src = source(lab, "cli")
        try:
            result, _ = await snapshot(src)
            real = job(result, ids["gpu"])
            assert real.gpus_alloc == {"gpu01": "0-1"}  # Slurm's own IDX
            store = Store("lab")
            store.apply(result)
            store.apply(readings(result.time))
            snap = store.snapshot()
            report = IdleTracker(IdleSettings(after_s=0.0, grace_s=0.0)).update(snap, workload_index(snap))
            (alloc,) = report.allocations
            assert (alloc.id, alloc.user, alloc.gpus, alloc.reason) == (
                ids["gpu"], "root", (("gpu01", 0), ("gpu01", 1)), "no process")
            assert sorted((f.code, f.object) for f in report.findings["gpu01"]) == [
                ("gpu_busy_unowned", "gpu/gpu01/5"), ("gpu_idle", "node/gpu01")]
            # the idle view's cancel: the plan carries the reason, the real scancel ends the job
            plan, results = await act(src, ActionKind.CANCEL_JOBS, (ids["gpu"],),
                                      {"reason": "idle GPUs: 2 GPUs idle, 0.0 GPU-h (hpctui :idle)"})
            assert plan.params["reason"].startswith("idle GPUs") and all(r.ok for r in results)
            await poll(src, lambda r: job(r, ids["gpu"]) is None or job(r, ids["gpu"]).state != "RUNNING")
        finally:
            await src.close()

    run(go())
