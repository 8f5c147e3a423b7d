"""Idle and unowned GPUs from the Prometheus path (dcgm-exporter, no process lists), on the real
8×H100 recording (tests/fixtures/prometheus): every GPU reads 0 % and GPU 0 carries the pod labels
of the workload it is allocated to (the kubelet's pod-resources attribution)."""

from __future__ import annotations

import msgspec
from promtext import fixture_samples
from test_prom_field import answer

from hpctui.findings.correlate import workload_index
from hpctui.findings.idle import IdleSettings, IdleTracker
from hpctui.model import ClusterSnapshot, Gpu, Node, Pod, SlurmJob
from hpctui.model.node import K8sNodeInfo, SlurmNodeInfo
from hpctui.sources.prometheus.parse import Collector, NodeNamer

H100 = "dcgm-exporter_metrics_8x-h100_gpu-operator_drv580.105.08_sampled.prom"
NODE = "gpu-node-1"
T = 1_773_114_089.0
NOW = IdleSettings(after_s=0.0, grace_s=0.0)


def recorded_gpus() -> tuple[Gpu, ...]:
    c = Collector(NodeNamer(["Hostname", "instance"], r"^([^:]+)", r"\1"))
    answer(c, fixture_samples(H100))
    return c.build_gpus()[NODE]


def test_recording_reads_idle_and_names_the_pod() -> None:
    gpus = recorded_gpus()
    assert len(gpus) == 8 and all(g.util_pct == 0.0 for g in gpus)
    assert [p.pod for p in gpus[0].processes] and not any(g.processes for g in gpus[1:])


def test_slurm_job_on_the_recorded_gpus_is_idle() -> None:
    gpus = recorded_gpus()
    job = SlurmJob(job_id=77, user="alice", account="ml", state="RUNNING", nodes=NODE, gpus_requested=8,
                   gpus_alloc={NODE: "0-7"}, start_time=T - 86_400)
    s = ClusterSnapshot(cluster="c", time=T, nodes={NODE: Node(name=NODE, slurm=SlurmNodeInfo(base_state="ALLOCATED"))},
                        gpus={NODE: gpus}, jobs=(job,))
    report = IdleTracker(NOW).update(s, workload_index(s), T)
    (alloc,) = report.allocations
    assert alloc.id == "77" and alloc.count == 8 and alloc.gpu_text == f"{NODE}:0-7"
    assert report.findings[NODE][0].code == "gpu_idle"


def test_pod_of_the_recorded_labels_is_idle() -> None:
    gpus = recorded_gpus()
    ns, name = gpus[0].processes[0].pod.split("/", 1)  # type: ignore[union-attr]
    pod = Pod(namespace=ns, name=name, node=NODE, phase="Running", gpus_requested=1, start_time=T - 86_400)
    s = ClusterSnapshot(cluster="c", time=T, nodes={NODE: Node(name=NODE, k8s=K8sNodeInfo(name=NODE))},
                        gpus={NODE: gpus}, pods=(pod,))
    report = IdleTracker(NOW).update(s, workload_index(s), T)
    (alloc,) = report.allocations
    assert (alloc.kind, alloc.id, alloc.gpus) == ("pod", f"{ns}/{name}", ((NODE, 0),))


def test_busy_recorded_gpu_that_no_job_holds() -> None:
    gpus = recorded_gpus()
    busy = (*gpus[:5], msgspec.structs.replace(gpus[5], util_pct=97.0), *gpus[6:])  # the recording, one GPU at work
    job = SlurmJob(job_id=77, state="RUNNING", nodes=NODE, gpus_alloc={NODE: "0-3"})
    s = ClusterSnapshot(cluster="c", time=T, nodes={NODE: Node(name=NODE, slurm=SlurmNodeInfo(base_state="MIXED"))},
                        gpus={NODE: busy}, jobs=(job,))
    report = IdleTracker(IdleSettings()).update(s, workload_index(s), T)
    codes = [(f.code, f.object) for f in report.findings[NODE]]
    assert ("gpu_busy_unowned", f"gpu/{NODE}/5") in codes
