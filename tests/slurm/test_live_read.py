"""Reads through every backend show the real cluster: nodes, partitions, GPUs, real jobs."""

from __future__ import annotations

import time

import pytest
from slurm_helpers import BACKENDS, backends_of, job, run, snapshot, source
from slurmlab import NODES, SlurmLab, scenario

pytestmark = [pytest.mark.live, pytest.mark.slurm]


@pytest.mark.slurm2511
@pytest.mark.parametrize("backend", BACKENDS)
def test_read_real_cluster(lab: SlurmLab, backend: str) -> None:
    ids = scenario(lab)

    async def go() -> None:
        src = source(lab, backend)
        try:
            result, snap = await snapshot(src)
        finally:
            await src.close()
        nodes = result.slurm_nodes or {}
        assert set(nodes) == set(NODES)
        assert nodes["gpu01"].gpus_total == 8 and nodes["gpu03"].gpus_total == 4
        assert nodes["gpu01"].gpu_type == "h100"
        assert nodes["gpu01"].gpus_alloc == 2
        # 24.11's backfill pass (every 5 s) may also flag gpu01 PLANNED for the pending 16-GPU job
        assert nodes["gpu01"].base_state == "MIXED" and nodes["gpu01"].flags <= {"PLANNED"}
        assert lab.version != "22.05" or nodes["gpu01"].display_state == "MIXED"
        assert set(nodes["gpu02"].partitions) == {"gpu", "debug"}
        assert set(nodes["cpu01"].partitions) == {"cpu", "debug"}
        assert not nodes["cpu02"].gpus_total
        gpu_job = job(result, ids["gpu"])
        assert gpu_job is not None and gpu_job.state == "RUNNING"
        assert gpu_job.nodes == "gpu01" and gpu_job.gpus_alloc == {"gpu01": "0-1"}
        assert gpu_job.name == "train-llm" and gpu_job.user == "root"
        task0 = job(result, f"{ids['array']}_0")
        assert task0 is not None and task0.state == "RUNNING" and task0.array_job_id == int(ids["array"])
        big = job(result, ids["big"])
        # the scheduler moves it between Resources and Priority across passes (seen on 24.11 and 25.11)
        assert big is not None and big.state == "PENDING" and big.reason in ("Resources", "Priority")
        held = job(result, ids["held"])
        assert held is not None and held.state == "PENDING" and held.reason == "JobHeldUser"
        assert result.controller is not None and result.controller.reachable
        assert snap.nodes["gpu01"].slurm == nodes["gpu01"]

    run(go())


@pytest.mark.slurm2511(backends=("pyslurm",))
@pytest.mark.parametrize("backend", BACKENDS)
def test_one_call_for_nodes_and_one_for_jobs_per_refresh(lab: SlurmLab, backend: str) -> None:
    lab.sbatch("-p", "debug", "-N", "6", "-n", "6")  # a job touching every node

    async def go() -> list[list[str]]:
        src = source(lab, backend)
        try:
            seen = []
            for _ in range(3):
                await src.collect()
                seen.append(list(src.calls))
            return seen
        finally:
            await src.close()

    for calls in run(go())[1:]:  # the first refresh also discovers the REST version
        node_calls = [c for c in calls if c in ("sinfo --json", "scontrol --json show nodes", "scontrol -o show nodes",
                                                "pyslurm.Nodes.load()") or c.endswith("/nodes")]
        job_calls = [c for c in calls if c.startswith("squeue") or c.endswith("/jobs") or c == "pyslurm.Jobs.load()"]
        assert len(node_calls) == 1 and len(job_calls) == 1, calls
        assert len(calls) <= 4, calls  # + sdiag/diag (+ partitions only when nodes lack them)
        assert not any("NodeName=" in c or "/node/" in c for c in calls)


def test_refresh_wall_time_cli_vs_rest(lab: SlurmLab, capsys: pytest.CaptureFixture[str]) -> None:
    """Not a benchmark gate: measures one refresh per backend and prints it for the report."""
    scenario(lab)

    async def timed(backend: str) -> float:
        src = source(lab, backend)
        try:
            await src.collect()
            best = float("inf")
            for _ in range(5):
                t0 = time.perf_counter()
                await src.collect()
                best = min(best, time.perf_counter() - t0)
            return best
        finally:
            await src.close()

    times = {b: run(timed(b)) for b in backends_of(lab)}
    with capsys.disabled():
        print("\n[slurm bed] one refresh (best of 5): " + ", ".join(f"{b} {t * 1000:.1f} ms" for b, t in times.items()))
    assert all(t < 5 for t in times.values())
