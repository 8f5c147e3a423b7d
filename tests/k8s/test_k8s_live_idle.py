"""Idle GPUs of real pods on the live kube-apiserver: GPU-requesting pods read through the K8s source,
GPU readings as dcgm-exporter reports them (the bed has no GPUs: given here, with dcgm-exporter's pod
attribution on one node and none on the other); the idle pods are flagged, the busy ones are not,
and a busy GPU on a node without pods is busy with no owner."""

from __future__ import annotations

import pytest
from k8s_helpers import collect_until, gfd_labels, make_source
from k8slab import K8sLab

from hpctui.core.store import NodeNameMap, Store
from hpctui.findings.correlate import workload_index
from hpctui.findings.idle import IdleSettings, IdleTracker
from hpctui.model import Gpu, GpuProcess, SourceResult

pytestmark = pytest.mark.live


def readings(t: float) -> SourceResult:
    """gpu-a: GPUs 0-1 labelled hpc/idle-0 at 0 %, GPUs 2-3 labelled hpc/busy-0 at 90 %;
    gpu-b: no labels, all 0 % (its one pod waits for data); gpu-c: no pods, GPU 0 at 75 %."""
    def gpu(node: str, i: int, util: float, pod: str | None = None) -> Gpu:
        procs = (GpuProcess(gpu_index=i, pod=pod, container="c"),) if pod else ()
        return Gpu(node=node, index=i, util_pct=util, memory_used_mib=4.0, processes=procs)
    return SourceResult(source="dcgm", time=t, gpus={
        "gpu-a": tuple(gpu("gpu-a", i, 0.0 if i < 2 else 90.0, "hpc/idle-0" if i < 2 else "hpc/busy-0")
                       for i in range(4)),
        "gpu-b": tuple(gpu("gpu-b", i, 0.0) for i in range(4)),
        "gpu-c": tuple(gpu("gpu-c", i, 75.0 if i == 0 else 0.0) for i in range(4))})


async def test_idle_pods_on_the_real_api_server(lab: K8sLab) -> None:
    for name in ("gpu-a.lab", "gpu-b.lab", "gpu-c.lab"):
        lab.make_node(name, labels=gfd_labels("gpu-operator_node-labels_h100-80gb-hbm3_mig-single_all-disabled.json"),
                      gpus=4)
    lab.make_pod("hpc", "idle-0", "gpu-a.lab", gpus=2, owner=("Job", "idle"))
    lab.make_pod("hpc", "busy-0", "gpu-a.lab", gpus=2, owner=("Job", "busy"))
    lab.make_pod("hpc", "solo-0", "gpu-b.lab", gpus=4, owner=("Job", "solo"))
    src = make_source(lab, name_map=NodeNameMap(strip_suffix=".lab"))
    try:
        res = await collect_until(src, "the three pods running", lambda r: len(
            [p for p in r.pods or () if p.phase == "Running" and p.gpus_requested]) == 3)
    finally:
        await src.close()
    store = Store("lab", name_map=NodeNameMap(strip_suffix=".lab"))
    store.apply(res)
    store.apply(readings(res.time))
    snap = store.snapshot()
    assert {p.name: p.node for p in snap.pods} == {"idle-0": "gpu-a", "busy-0": "gpu-a", "solo-0": "gpu-b"}
    report = IdleTracker(IdleSettings(after_s=0.0, grace_s=0.0)).update(snap, workload_index(snap))
    got = {a.id: (a.gpus, a.count) for a in report.allocations}
    assert got == {"hpc/idle-0": ((("gpu-a", 0), ("gpu-a", 1)), 2), "hpc/solo-0": ((("gpu-b", -1),), 4)}
    assert [(f.code, f.object) for f in report.findings["gpu-c"]] == [("gpu_busy_unowned", "gpu/gpu-c/0")]
    assert {f.code for f in report.findings["gpu-a"]} == {"gpu_idle"}
