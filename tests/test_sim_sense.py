"""Demo data that makes sense (issue #22 §8): idle GPUs are idle, a GPU busy without a job is a
finding, running jobs are within their time limit, ReqNodeNotAvail names its nodes."""

from __future__ import annotations

import asyncio

import pytest

from hpctui.core.runtime import demo_runtime
from hpctui.findings.health import gpu_process_findings
from hpctui.model import ClusterSnapshot
from hpctui.model.hostlist import expand
from hpctui.model.pending_reasons import explain_pending_reason
from hpctui.sim import SimCluster

T0 = 1_750_000_000.0
IDLE_POWER_MAX_W = 80.0  # the sim's idle draw is 68 ± 6 W
IDLE_MEM_MAX_MIB = 256.0


def _snapshot(seed: int, size: int = 64, ticks: int = 0) -> tuple[SimCluster, ClusterSnapshot]:
    clock = [T0]
    runtime = demo_runtime(size=size, seed=seed, clock=lambda: clock[0], start_time=T0)

    async def collect() -> None:
        for k in range(ticks + 1):
            clock[0] = T0 + 2.0 * k
            await runtime.collect_once()

    asyncio.run(collect())
    return runtime.sources[0].sim, runtime.store.snapshot()  # type: ignore[attr-defined]


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_idle_gpus_draw_idle_power_and_hold_no_memory(seed: int) -> None:
    """A GPU no job, pod or process holds (MIG or not) reads idle: power near idle draw, memory ~0."""
    sim, snap = _snapshot(seed)
    mig_nodes = [n for n in sim.mig if sim.mig_on(n)]
    assert mig_nodes, "the demo has MIG nodes"
    checked = 0
    for name in mig_nodes:
        assert not sim.workload.alloc[name].jobs
        for g in snap.gpus[name]:
            if g.processes:
                continue
            assert g.power_w is not None and g.power_w <= IDLE_POWER_MAX_W, (name, g.index, g.power_w)
            assert g.memory_used_mib is not None and g.memory_used_mib <= IDLE_MEM_MAX_MIB, (name, g.index)
            assert all((m.engine_active or 0.0) == 0.0 for m in g.mig_instances)
            checked += 1
    assert checked >= 8


@pytest.mark.parametrize("seed", [0, 1])
def test_a_gpu_busy_without_a_job_raises_the_stray_process_finding(seed: int) -> None:
    sim, snap = _snapshot(seed)
    node, idx = sim.place.stray_node, sim.place.stray_gpu
    assert node and not sim.workload.alloc[node].jobs, "no job on the node"
    gpu = snap.gpus[node][idx]
    assert gpu.util_pct and gpu.util_pct > 50 and (gpu.memory_used_mib or 0) > 10_000
    findings = gpu_process_findings(snap, gpu)
    assert [f.code for f in findings] == ["gpu_stray_process"]
    assert "no job" in findings[0].message
    # every other GPU of the node is idle
    assert all(not g.util_pct and not g.processes for g in snap.gpus[node] if g.index != idx)


@pytest.mark.parametrize(("seed", "size", "ticks"), [(0, 64, 0), (1, 64, 0), (7, 64, 0), (1, 64, 30), (3, 512, 2)])
def test_running_jobs_are_within_their_time_limit(seed: int, size: int, ticks: int) -> None:
    sim, snap = _snapshot(seed, size, ticks)
    now = T0 + 2.0 * ticks
    running = [j for j in snap.jobs if j.state == "RUNNING"]
    assert running
    over = [(j.display_id, now - (j.start_time or now), j.time_limit_min) for j in running
            if j.time_limit_min is not None and now - (j.start_time or now) >= j.time_limit_min * 60]
    assert over == []
    for job in sim.workload.jobs.values():  # and each one is planned to end by its limit
        if job.state == "RUNNING" and job.start_time is not None and job.planned_end is not None:
            assert job.planned_end <= job.start_time + job.time_limit_min * 60.0


def test_a_job_that_reaches_its_limit_ends_as_timeout() -> None:
    sim = SimCluster(size=64, seed=1, start_time=T0)
    job = next(j for j in sim.workload.jobs.values() if j.state == "RUNNING" and j.array_job_id is None)
    assert job.start_time is not None
    job.planned_end = job.start_time + job.time_limit_min * 60.0
    sim.workload._ends.append((job.planned_end, job.job_id))
    sim.workload._ends.sort()
    sim.advance(job.planned_end + 1)
    assert job.state == "TIMEOUT"


def test_req_node_not_avail_names_the_unavailable_nodes() -> None:
    sim, snap = _snapshot(1)
    job = next(j for j in snap.jobs if (j.reason or "").startswith("ReqNodeNotAvail"))
    assert job.reason is not None and ", UnavailableNodes:" in job.reason  # squeue's words (FACTS samples)
    nodes = expand(job.reason.split("UnavailableNodes:", 1)[1])
    assert sim.place.xid_node in nodes
    for name in nodes:  # each one really is unavailable: drained or reserved
        assert not sim.schedulable(name)
        assert job.partition in sim.topo.by_name[name].partitions
    assert explain_pending_reason(job.reason, job).endswith(job.reason.split("UnavailableNodes:", 1)[1])


@pytest.mark.parametrize(("ident", "tasks"), [("1234", 1), ("1234_7", 1), ("1234_[5-16%4]", 12), ("1234_[1,3,8-10]", 5),
                                              ("1234_[0-20:5]", 5), ("1234_[x]", 1), ("1234_[9-2]", 1), ("1234_[", 1)])
def test_array_task_count(ident: str, tasks: int) -> None:
    from hpctui.model.jobs import array_task_count

    assert array_task_count(ident) == tasks
