"""The simulated cluster: determinism, size, incidents, consistency, movement."""

from __future__ import annotations

import msgspec
import pytest

from hpctui.model import MountState, SourceResult
from hpctui.model.hostlist import expand
from hpctui.sim import H100, H200, SimCluster
from hpctui.sim.workload import idx_str

T0 = 1_700_000_000.0


def run(size: int = 64, seed: int = 0, ticks: int = 1, step: float = 2.0) -> tuple[SimCluster, SourceResult]:
    sim = SimCluster(size=size, seed=seed, start_time=T0)
    result = sim.to_result(T0)
    for k in range(1, ticks + 1):
        sim.advance(T0 + k * step)
        result = sim.to_result(T0 + k * step)
    return sim, result


def enc(r: SourceResult) -> bytes:
    return msgspec.json.encode(r)


def test_same_seed_same_results_different_seed_differs() -> None:
    _, a = run(seed=3, ticks=3)
    _, b = run(seed=3, ticks=3)
    _, c = run(seed=4, ticks=3)
    assert enc(a) == enc(b)
    assert enc(a) != enc(c)


def test_default_size_and_names() -> None:
    _, r = run()
    assert r.gpus is not None and r.slurm_nodes is not None and r.k8s_nodes is not None
    assert len(r.gpus) >= 64 and all(len(g) == 8 for g in r.gpus.values())
    assert "gpu0001" in r.gpus and "gpu0064" in r.gpus and "cpu01" in r.slurm_nodes
    models = {g.model for gs in r.gpus.values() for g in gs}
    assert models == {H100, H200}
    totals = {g.model: g.memory_total_mib for gs in r.gpus.values() for g in gs if not g.lost}
    assert totals == {H100: 81559, H200: 143771}
    parts = {p for n in r.slurm_nodes.values() for p in n.partitions}
    assert {"h100", "h200", "cpu", "debug"} <= parts
    assert set(r.gpus) <= set(r.k8s_nodes)  # every GPU node is also a K8s node
    k = r.k8s_nodes["gpu0001"]
    assert k.labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3" and k.labels["nvidia.com/gpu.count"] == "8"
    assert "nvidia.com/mig.config" in k.labels and k.gpu_capacity == 8


def test_size_knob_scales() -> None:
    sim, r = run(size=1024, ticks=1)
    assert r.gpus is not None and len(r.gpus) == 1024
    assert "gpu1024" in r.gpus and "cpu256" in (r.slurm_nodes or {})
    xid_pos = int(sim.place.xid_node[3:]) / 1024  # incidents sit at fixed relative positions
    assert 0.05 < xid_pos < 0.2
    lost = [g for gs in r.gpus.values() for g in gs if g.lost]
    assert len(lost) == 1


def test_mig_gpus() -> None:
    _, r = run()
    assert r.gpus is not None
    mig = [g for gs in r.gpus.values() for g in gs if g.mig_mode_current]
    assert mig, "some GPUs run MIG"
    for g in mig:
        assert g.util_pct is None and g.mig_instances
        assert all(m.engine_active is not None for m in g.mig_instances)
    profiles = {m.profile for g in mig for m in g.mig_instances}
    assert {"1g.10gb", "2g.20gb", "3g.40gb"} <= profiles and {"1g.18gb", "2g.35gb", "3g.71gb"} <= profiles


def test_every_incident_is_present() -> None:
    _, r = run(ticks=1)
    assert r.gpus and r.ib and r.mounts and r.k8s_nodes and r.slurm_nodes
    gpus = [g for gs in r.gpus.values() for g in gs]
    xid = [g for g in gpus if g.last_xid == 79]
    assert len(xid) == 1 and xid[0].lost and xid[0].util_pct is None and xid[0].temp_c is None
    assert "79, pid=" in xid[0].xid_events[0].message and "fallen off the bus" in xid[0].xid_events[0].message
    assert xid[0].xid_events[0].message.startswith("NVRM: Xid (PCI:0000:")
    assert any(g.remap_pending and (g.ecc_uncorrected_volatile or 0) > 0 for g in gpus)
    assert any(g.thermal_throttled and (g.temp_c or 0) >= 87 for g in gpus)
    ports = [p for ps in r.ib.values() for p in ps]
    degraded = [p for p in ports if p.degraded_rate]
    assert len(degraded) == 1 and degraded[0].rate_text == "200 Gb/sec (4X HDR)"
    assert all(p.rate_text == "400 Gb/sec (4X NDR)" for p in ports if p.node.startswith("gpu") and not p.degraded_rate)
    hung = [m for ms in r.mounts.values() for m in ms if m.state is MountState.HUNG]
    assert len(hung) == 1 and hung[0].latency_ms is None and hung[0].target == "/lustre/scratch"
    assert any(m.state is MountState.SLOW for ms in r.mounts.values() for m in ms)
    notready = [k for k in r.k8s_nodes.values() if k.ready != "True"]
    assert len(notready) == 1
    assert any(t.key == "node.kubernetes.io/unreachable" for t in notready[0].taints)
    drained = [n for n in r.slurm_nodes.values() if n.display_state.startswith("DRAIN")]
    assert drained and drained[0].reason == "xid 79 gpu3 - RMA ticket 4411" and drained[0].reason_user == "root"
    assert drained[0].reason_time is not None and "DRAIN" in drained[0].flags


def test_incidents_evolve_and_emit_events() -> None:
    sim = SimCluster(start_time=T0)
    first = sim.to_result(T0)
    assert first.events and {e.source for e in first.events} >= {"gpu", "ib", "mount", "k8s", "slurm"}
    assert any(e.object == f"gpu/{sim.place.xid_node}/3" for e in first.events)

    def ecc(r: SourceResult) -> int:
        assert r.gpus is not None
        return max(g.ecc_uncorrected_volatile or 0 for gs in r.gpus.values() for g in gs)

    def flap(r: SourceResult) -> tuple[int, str | None]:
        assert r.ib is not None
        port = next(p for p in r.ib[sim.place.flap_node] if p.device == sim.place.flap_dev)
        return port.counters["link_downed"], port.state

    states = []
    before = ecc(first)
    downs = flap(first)[0]
    for k in range(1, 5):
        sim.advance(T0 + 2 * k)
        r = sim.to_result(T0 + 2 * k)
        assert ecc(r) > before
        before = ecc(r)
        states.append(flap(r)[1])
        assert r.events is not None and all(e.time >= T0 for e in r.events)  # only new ones
    assert {"ACTIVE", "DOWN"} <= set(states)
    assert flap(r)[0] > downs


def test_pending_reasons_and_arrays() -> None:
    _, r = run()
    assert r.slurm_jobs is not None
    reasons = {(j.reason or "").split(",")[0] for j in r.slurm_jobs if j.state == "PENDING"}
    assert {"Resources", "Priority", "Dependency", "JobHeldUser", "QOSMaxJobsPerUserLimit",
            "ReqNodeNotAvail"} <= reasons
    tasks = [j for j in r.slurm_jobs if j.array_task_id is not None and j.state == "RUNNING"]
    rest = [j for j in r.slurm_jobs if j.array_task_str]
    assert len(tasks) >= 2 and rest and rest[0].display_id == f"{rest[0].array_job_id}_[5-16%4]"
    assert tasks[0].display_id == f"{tasks[0].array_job_id}_{tasks[0].array_task_id}"
    held = next(j for j in r.slurm_jobs if j.reason == "JobHeldUser")
    assert held.priority == 0


def test_jobs_and_node_allocation_agree() -> None:
    _, r = run(ticks=3)
    assert r.slurm_jobs is not None and r.slurm_nodes is not None
    gpus: dict[str, set[int]] = {}
    for job in r.slurm_jobs:
        if job.state != "RUNNING":
            continue
        assert job.nodes and job.start_time is not None and job.time_limit_min
        names = expand(job.nodes)
        assert len(names) == job.num_nodes and set(job.gpus_alloc) <= set(names)
        for node, idx in job.gpus_alloc.items():
            ids = {int(i) for part in idx.split(",") for i in _range(part)}
            assert not gpus.get(node, set()) & ids, f"GPU double-booked on {node}"
            gpus.setdefault(node, set()).update(ids)
    for name, info in r.slurm_nodes.items():
        if info.gpus_total is not None and "gpu:" in (info.gres_used or ""):
            assert info.gpus_alloc == len(gpus.get(name, set())), name
        busy = name in gpus or any(j.state == "RUNNING" and j.nodes and name in expand(j.nodes) for j in r.slurm_jobs)
        assert (info.base_state in ("ALLOCATED", "MIXED")) == busy, (name, info.base_state)
        if info.base_state == "ALLOCATED":
            assert info.cpus_alloc == info.cpus_total


def _range(part: str) -> range:
    lo, _, hi = part.partition("-")
    return range(int(lo), int(hi or lo) + 1)


def test_idx_str() -> None:
    assert idx_str([0, 1, 2, 3]) == "0-3"
    assert idx_str([6, 0, 1, 4]) == "0-1,4,6"
    assert idx_str([]) == ""


def test_values_move_between_ticks() -> None:
    sim = SimCluster(start_time=T0)
    a = sim.to_result(T0)
    sim.advance(T0 + 5)
    b = sim.to_result(T0 + 5)
    assert a.gpus and b.gpus and a.ib and b.ib
    busy = [(n, g.index) for n, gs in a.gpus.items() for g in gs if g.util_pct and g.util_pct > 50]
    assert busy
    moved = [k for k in busy if a.gpus[k[0]][k[1]].power_w != b.gpus[k[0]][k[1]].power_w]
    assert len(moved) > len(busy) // 2
    node = busy[0][0]
    xa = a.ib[node][0].counters["port_xmit_data"]
    xb = b.ib[node][0].counters["port_xmit_data"]
    assert xb > xa and b.ib[node][0].deltas["port_xmit_data"] == xb - xa
    assert b.controller is not None and b.controller.jobs_running


@pytest.mark.parametrize("size", [1, 8])
def test_tiny_sizes_work(size: int) -> None:
    _, r = run(size=size, ticks=2)
    assert r.gpus is not None and len(r.gpus) == size


def test_no_job_starts_before_it_was_submitted() -> None:
    _, r = run(ticks=5)
    assert r.slurm_jobs
    for job in r.slurm_jobs:
        if job.start_time is not None and job.submit_time is not None:
            assert job.submit_time <= job.start_time, job.display_id


def test_a_drain_lets_running_jobs_finish() -> None:
    """The drain preview says "running jobs finish first": the demo must not end them early."""
    sim = SimCluster(size=64, seed=0, start_time=T0)
    sim.to_result(T0)
    node = next(n for n in sim.workload.alloc if sim.workload.running_on(n)
                and all((j.planned_end or 0) > T0 + 60 for j in sim.workload.running_on(n)))
    jobs = [j.job_id for j in sim.workload.running_on(node)]
    sim.drain(node, "test", "root", T0)
    for k in range(1, 11):
        sim.advance(T0 + k * 2.0)
        result = sim.to_result(T0 + k * 2.0)
    assert result.slurm_nodes is not None
    assert result.slurm_nodes[node].display_state.startswith("DRAINING")
    running = {j.job_id for j in result.slurm_jobs or () if j.state == "RUNNING"}
    assert set(jobs) <= running
