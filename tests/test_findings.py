"""FindingsCache: incremental by object identity, same answers as running the rules afresh."""

from __future__ import annotations

import msgspec

from hpctui.core.frame import Frame
from hpctui.core.store import Store
from hpctui.findings.health import Thresholds, all_findings, mount_findings, node_findings
from hpctui.findings.index import FindingsCache, FindingsIndex
from hpctui.model import ClusterSnapshot
from hpctui.sim import SimCluster
from hpctui.ui.heatmap_levels import LevelCache, Metric, compute_levels, node_names
from hpctui.ui.widgets.panes import ib_node_rows, mount_node_rows
from hpctui.ui.widgets.tables import link_row, mount_row, severity_first

T0 = 1_700_000_000.0
T = Thresholds(gpu_temp_warn_c=60.0)  # low, so the demo has plenty of findings to compare
CACHE = FindingsCache()  # one owner's cache for the whole module (as a runtime keeps one)


def findings_for(snapshot: ClusterSnapshot, thresholds: Thresholds) -> FindingsIndex:
    return CACHE.index(snapshot, thresholds)


def last_recomputed(thresholds: Thresholds) -> int:
    return CACHE.last_recomputed(thresholds)


def _store_after_ticks(ticks: int, size: int = 64) -> tuple[Store, SimCluster]:
    sim = SimCluster(size=size, seed=3, start_time=T0)
    store = Store("demo", clock=lambda: T0)
    for k in range(ticks):
        sim.advance(T0 + 2.0 * k)
        store.apply(sim.to_result(T0 + 2.0 * k))
    return store, sim


def test_incremental_matches_a_fresh_computation_every_tick() -> None:
    sim = SimCluster(size=600, seed=3, start_time=T0)  # > 512 nodes: a rolling share is re-read per tick
    store = Store("demo", clock=lambda: T0)
    for k in range(6):
        sim.advance(T0 + 2.0 * k)
        store.apply(sim.to_result(T0 + 2.0 * k))
        snap = store.snapshot()
        index = findings_for(snap, T)
        for name in node_names(snap):
            assert list(index.node(name)) == node_findings(snap, name, T)
        assert list(index) == all_findings(snap, T)
        if k:
            assert 0 < last_recomputed(T) < len(snap.nodes)  # only the nodes whose data changed


def test_unchanged_data_is_not_recomputed_and_a_change_is() -> None:
    store, sim = _store_after_ticks(2)
    first = findings_for(store.snapshot(), T)
    assert findings_for(store.snapshot(), T) is first  # same snapshot: shared
    result = sim.to_result(T0 + 10.0)
    store.apply(msgspec.structs.replace(result, gpus=dict(store.snapshot().gpus)))
    same = findings_for(store.snapshot(), T)
    gpus = store.snapshot().gpus
    # nodes whose GPUs run processes (the demo's stray one) are recomputed every time (jobs decide them)
    with_processes = {n for n, g in gpus.items() if any(x.processes for x in g)}
    assert last_recomputed(T) == len(with_processes) and same is not first
    name = next(n for n in same.by_node if n not in with_processes)
    hot = (msgspec.structs.replace(gpus[name][0], temp_c=95.0), *gpus[name][1:])
    store.apply(msgspec.structs.replace(result, gpus={**gpus, name: hot}))
    changed = findings_for(store.snapshot(), T)
    assert last_recomputed(T) == 1 + len(with_processes)
    assert any(f.code == "temp" and f.object == f"gpu/{name}/0" for f in changed.node(name))
    assert changed.by_object(f"gpu/{name}/0") == tuple(f for f in changed.node(name) if f.object == f"gpu/{name}/0")


def test_readers_agree_with_the_rules() -> None:
    store, _ = _store_after_ticks(3)
    snap = store.snapshot()
    names = node_names(snap)
    cache = LevelCache()
    for metric in Metric:
        once = compute_levels(snap, names, metric, T, cache)
        assert once == compute_levels(snap, names, metric, T)  # cached == uncached
        assert compute_levels(snap, names, metric, T, cache) == once
    ports = [p for ps in snap.ib.values() for p in ps]
    mounts = [m for ms in snap.mounts.values() for m in ms]
    ib, mnt = ib_node_rows(T), mount_node_rows(T)
    frame = Frame.of(snap, T)
    fabric = snap.fabric  # the demo's cabling: every row names its switch port
    assert ib(frame, None) == severity_first([link_row(p, None, fabric) for p in ports])
    assert ib(frame, None) == severity_first([link_row(p, None, fabric) for p in ports])  # second call: reused rows
    assert all(r.remote for r in ib(frame, None))
    # (a CephFS mount's finding names its cluster: the rule reads the snapshot's Ceph health)
    assert mnt(frame, None) == severity_first([mount_row(m, mount_findings(m, snap.ceph)) for m in mounts])
    name = names[0]
    assert ib(frame, name) == severity_first([link_row(p, None, fabric) for p in snap.ib.get(name, ())])


def test_a_platform_pod_or_a_stopped_job_changes_an_otherwise_unchanged_node() -> None:
    """A node's findings also read the pods on it and the running jobs (a stray GPU process):
    the incremental cache must not keep them when only those changed."""
    from hpctui.model import Gpu, GpuProcess, Node, Pod, SlurmJob, SlurmNodeInfo

    node = Node(name="g1", slurm=SlurmNodeInfo(base_state="ALLOCATED"))
    gpu = (Gpu(node="g1", index=0, processes=(GpuProcess(pid=7, slurm_job_id="42"),)),)
    ok_pod = Pod(namespace="gpu-operator", name="nvidia-driver-daemonset-x", node="g1", phase="Running",
                 ready=True, owner_kind="DaemonSet", owner_name="nvidia-driver-daemonset")
    job = SlurmJob(job_id=42, state="RUNNING", nodes="g1")

    def snap(pod: Pod, state: str) -> ClusterSnapshot:
        return ClusterSnapshot(cluster="c", time=T0, nodes={"g1": node}, gpus={"g1": gpu}, pods=(pod,),
                               jobs=(msgspec.structs.replace(job, state=state),))

    assert [f.code for f in findings_for(snap(ok_pod, "RUNNING"), T).node("g1")] == []
    bad_pod = msgspec.structs.replace(ok_pod, ready=False)
    assert [f.code for f in findings_for(snap(bad_pod, "RUNNING"), T).node("g1")] == ["platform_pod"]
    assert "gpu_stray_process" in {f.code for f in findings_for(snap(ok_pod, "COMPLETED"), T).node("g1")}


def test_incremental_equals_fresh_through_removals_additions_and_pod_changes() -> None:
    """Entries that go away (a node's mounts, a whole node), come back, and pods that change on
    an otherwise unchanged node: after each step the incremental result equals a fresh one."""
    from hpctui.findings.index import _Incremental
    from hpctui.model import Pod

    store, _ = _store_after_ticks(2)
    base = store.snapshot()
    first = findings_for(base, T)
    name = next(n for n in base.nodes if any(f.object.startswith("mount/") for f in first.node(n)))
    other = next(n for n in sorted(base.nodes) if n != name)
    no_mounts = msgspec.structs.replace(base, mounts={k: v for k, v in base.mounts.items() if k != name})
    without = msgspec.structs.replace(
        no_mounts, **{part: {k: v for k, v in getattr(no_mounts, part).items() if k != other}
                      for part in ("nodes", "gpus", "ib", "mounts")})
    bad_pod = Pod(namespace="gpu-operator", name="nvidia-device-plugin-x", node=other, phase="Running", ready=False,
                  owner_kind="DaemonSet", owner_name="nvidia-device-plugin-daemonset")
    with_pod = msgspec.structs.replace(base, pods=(*base.pods, bad_pod))
    steps = [base, no_mounts, without, no_mounts, with_pod, msgspec.structs.replace(with_pod), base]
    state = _Incremental()
    for i, snap in enumerate(steps):
        got = state.compute(snap, T)
        fresh = _Incremental().compute(snap, T)
        assert got.by_node == fresh.by_node, i
        assert list(got.by_node) == list(fresh.by_node), i  # same node order (the problem list's tie order)
        assert all(got.severity(n) == fresh.severity(n) for n in fresh.by_node), i
        assert list(got) == list(fresh), i
    assert any(f.code == "platform_pod" for f in state.compute(with_pod, T).node(other))


def test_each_cache_owns_its_state() -> None:
    """No module-global cache: a second owner (another cluster's runtime) neither shares nor
    evicts the first one's results; the one-shot ``findings_for`` keeps nothing."""
    from hpctui.findings import index as index_module

    store, _ = _store_after_ticks(2)
    snap = store.snapshot()
    a, b = FindingsCache(), FindingsCache()
    first = a.index(snap, T)
    assert a.index(snap, T) is first and b.index(snap, T) is not first
    assert b.index(snap, T).by_node == first.by_node
    assert index_module.findings_for(snap, T) is not index_module.findings_for(snap, T)
    assert not [name for name in vars(index_module) if name.startswith("_cache") or name == "_incremental"]
