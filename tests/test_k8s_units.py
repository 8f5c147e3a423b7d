"""Kubernetes source without a server: object conversion (real GFD labels, missing/null
fields, wrong types, control characters), settings and config, one bad record, action plans."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hpctui.base.sanitize import PLACEHOLDER
from hpctui.core.config import ConfigError, parse_config
from hpctui.model import ClusterSnapshot, K8sNodeInfo, Node, Pod
from hpctui.model.action import ActionKind
from hpctui.sources.k8s import convert
from hpctui.sources.k8s.settings import K8sSettings
from hpctui.sources.k8s.source import K8sSource
from hpctui.sources.registry import PLANNED_SOURCE_KINDS, SOURCE_KINDS

FIX = Path(__file__).resolve().parent / "fixtures" / "k8s"


def test_node_from_real_gpu_operator_labels() -> None:
    labels = json.loads((FIX / "gpu-operator_node-labels_h100-80gb-hbm3_mig-single_all-disabled.json").read_text())
    info = convert.node_info({"metadata": {"name": "h100-1", "labels": labels},
                              "spec": {"unschedulable": True, "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]},
                              "status": {"capacity": {"nvidia.com/gpu": "1"}, "allocatable": {"nvidia.com/gpu": "1"},
                                         "conditions": [{"type": "Ready", "status": "True"},
                                                        {"type": "MemoryPressure", "status": "False"}]}})
    assert info.labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert info.mig_config == "all-disabled" and info.mig_state == "success"
    assert info.gpu_capacity == 1 and info.unschedulable and info.taints[0].key == "nvidia.com/gpu"
    assert info.conditions == {"Ready": "True", "MemoryPressure": "False"}


@pytest.mark.parametrize("obj", [
    {"metadata": {"name": "n"}},
    {"metadata": {"name": "n"}, "spec": None, "status": None},
    {"metadata": {"name": "n", "labels": None}, "status": {"conditions": None, "capacity": {"nvidia.com/gpu": "x"}}},
    {"metadata": {"name": "n"}, "status": {"conditions": [None, {"type": None}, {"type": "Ready"}]},
     "spec": {"taints": [None, {"key": "k"}]}},
])
def test_node_with_missing_or_null_fields(obj: dict[str, Any]) -> None:
    info = convert.node_info(obj)
    assert info.name == "n" and info.gpu_capacity is None
    assert info.ready in ("Unknown",)


def test_objects_without_a_name_are_bad() -> None:
    for obj in ({}, {"metadata": None}, {"metadata": {"name": ""}}, {"metadata": {"name": 5}}):
        with pytest.raises(convert.BadObject):
            convert.pod(obj)


def test_pod_reasons_and_control_characters() -> None:
    p = convert.pod({
        "metadata": {"name": "a\x1b[2Jb", "namespace": "hpc", "labels": {"volcano.sh/queue-name": "q\x07"},
                     "annotations": {"kubernetes.io/config.mirror": "x"},
                     "ownerReferences": [{"kind": "DaemonSet", "name": "ds", "controller": True}]},
        "spec": {"containers": [{"resources": {"limits": {"nvidia.com/mig-1g.10gb": "2"}}}, None]},
        "status": {"phase": "Running", "containerStatuses": [
            {"restartCount": 3, "state": {"waiting": {"reason": "ImagePullBackOff", "message": "pull \x1b]0;x\x07"}}},
            {"restartCount": None, "state": {"terminated": {"reason": "OOMKilled"}}}]}})
    assert p.name == f"a{PLACEHOLDER}b" and p.queue == f"q{PLACEHOLDER}"
    assert p.reason == "ImagePullBackOff" and "\x1b" not in (p.message or "") and p.restarts == 3
    assert p.gpus_requested == 2 and p.daemonset and p.mirror


def test_pending_unschedulable_and_terminated_reasons() -> None:
    pending = convert.pod({"metadata": {"name": "w"}, "status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/8 nodes are available: 8 Insufficient nvidia.com/gpu."}]}})
    assert pending.namespace == "default" and pending.reason == "Unschedulable"
    assert pending.message == "0/8 nodes are available: 8 Insufficient nvidia.com/gpu."
    oom = convert.pod({"metadata": {"name": "o"}, "status": {"phase": "Failed", "containerStatuses": [
        {"state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]}})
    assert oom.reason == "OOMKilled"
    cfg = convert.pod({"metadata": {"name": "c"}, "status": {"phase": "Pending", "containerStatuses": [
        {"state": {"waiting": {"reason": "CreateContainerConfigError", "message": 'secret "x" not found'}}}]}})
    assert cfg.reason == "CreateContainerConfigError"


def test_event_targets_map_node_names() -> None:
    ev = convert.event({"involvedObject": {"kind": "Node", "name": "gpu01.lab"}, "reason": "NodeNotReady",
                        "message": "Node is not ready", "type": "Warning", "count": 3,
                        "lastTimestamp": "2024-05-01T10:00:00Z"}, lambda n: n.removesuffix(".lab"))
    assert ev.object == "node/gpu01" and ev.message == "NodeNotReady: Node is not ready (×3)" and ev.time > 0


def test_settings_registry_and_config() -> None:
    assert "k8s" in SOURCE_KINDS and "k8s" not in PLANNED_SOURCE_KINDS
    cfg = parse_config({"clusters": {"c": {"sources": [{"kind": "k8s", "context": "prod", "namespaces": ["a"]}]}}})
    assert cfg.clusters["c"].sources[0]["context"] == "prod"
    with pytest.raises(ConfigError, match="unknown key"):
        parse_config({"clusters": {"c": {"sources": [{"kind": "k8s", "kubeconfg": "x"}]}}})
    with pytest.raises(ConfigError, match="in_cluster"):
        parse_config({"clusters": {"c": {"sources": [{"kind": "k8s", "in_cluster": True, "context": "x"}]}}})
    with pytest.raises(ValueError):
        K8sSettings(drain_timeout_s=0)


class _FakeClient:
    closed = False

    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def list_all(self, path: str, **_kw: Any) -> tuple[list[Any], str]:
        return self.items, "5"

    def close(self) -> None:
        self.closed = True


async def test_one_bad_record_costs_one_record() -> None:
    src = K8sSource(K8sSettings(events=False))
    src.client = _FakeClient([{"metadata": {"name": "ok", "namespace": "a"}},
                              {"metadata": {"namespace": "a", "name": {"bad": 1}}}])  # type: ignore[assignment]
    stream = next(s for s in src.streams if s.resource == "pods")
    src._list(stream)
    nodes = next(s for s in src.streams if s.resource == "nodes")
    nodes.synced = True
    res = src._result()
    assert [p.name for p in res.pods or ()] == ["ok"]
    assert any("dropped 1 malformed object" in w for w in res.warnings)
    await src.close()


def test_plans_name_the_pods_and_reject_unknown_nodes() -> None:
    src = K8sSource(K8sSettings())
    snap = ClusterSnapshot(cluster="c", time=0.0, nodes={
        "gpu01": Node(name="gpu01", k8s=K8sNodeInfo(name="gpu01.k8s", labels={"nvidia.com/mig.capable": "true"})),
        "cpu01": Node(name="cpu01")},
        pods=(Pod(namespace="hpc", name="t", node="gpu01", owner_kind="Job", owner_name="t", gpus_requested=8),
              Pod(namespace="kube-system", name="static", node="gpu01", mirror=True),
              Pod(namespace="hpc", name="bare", node="gpu01")))
    plan = src.plan(ActionKind.K8S_DRAIN_NODES, ("gpu01", "cpu01"), {}, snap)
    assert plan.targets == ("gpu01",) and plan.rejected_targets == ("cpu01",)
    assert "evict hpc/t (Job/t), 8 GPU, Unknown on gpu01" in plan.affected
    assert "skip kube-system/static on gpu01: mirror (static) pod" in plan.affected
    assert any("no controller" in w for w in plan.warnings)
    assert plan.commands[0].startswith("PATCH /api/v1/nodes/gpu01.k8s ")
    mig = src.plan(ActionKind.MIG_RECONFIGURE, ("gpu01",), {"layout": "all-1g.10gb; rm -rf /"}, snap)
    assert not mig.runnable and "not a valid label value" in mig.errors[0]
    ok = src.plan(ActionKind.MIG_RECONFIGURE, ("gpu01",), {"layout": "all-balanced"}, snap)
    assert ok.runnable and any("use GPUs" in w for w in ok.warnings)


def test_platform_pods_not_ready_are_node_findings() -> None:
    from hpctui.findings.health import Thresholds
    from hpctui.findings.index import findings_for

    snap = ClusterSnapshot(cluster="c", time=0.0, nodes={"gpu01": Node(name="gpu01", k8s=K8sNodeInfo(
        name="gpu01", conditions={"Ready": "True"}))}, pods=(
        Pod(namespace="gpu-operator", name="nvidia-device-plugin-daemonset-x", node="gpu01", phase="Running",
            owner_kind="DaemonSet", owner_name="nvidia-device-plugin-daemonset", reason="CrashLoopBackOff"),
        Pod(namespace="gpu-operator", name="nvidia-dcgm-exporter-y", node="gpu01", phase="Running", ready=True,
            owner_kind="DaemonSet", owner_name="nvidia-dcgm-exporter"),
        Pod(namespace="kube-system", name="ebs-csi-node-z", node="gpu01", phase="Pending",
            owner_kind="DaemonSet", owner_name="ebs-csi-node"),
        Pod(namespace="hpc", name="train", node="gpu01", phase="Failed", owner_kind="Job")))
    found = findings_for(snap, Thresholds()).node("gpu01")
    assert [(f.code, f.message) for f in found] == [
        ("platform_pod", "device plugin pod gpu-operator/nvidia-device-plugin-daemonset-x: CrashLoopBackOff"),
        ("platform_pod", "CSI node plugin pod kube-system/ebs-csi-node-z: Pending"),
    ]


def test_queue_items_from_kueue_and_volcano_objects() -> None:
    wl = convert.queue_item("Workload", "kueue.x-k8s.io/v1beta2", {
        "metadata": {"name": "w", "namespace": "hpc"}, "spec": {"queueName": "q"},
        "status": {"conditions": [{"type": "QuotaReserved", "status": "True"},
                                  {"type": "Admitted", "status": "True"}]}})
    assert (wl.state, wl.queue, wl.message) == ("Admitted", "q", None)
    evicted = convert.queue_item("Workload", "kueue.x-k8s.io/v1beta1", {
        "metadata": {"name": "e"}, "status": {"conditions": [
            {"type": "Evicted", "status": "True", "reason": "Preempted", "message": "by higher priority"}]}})
    assert (evicted.state, evicted.message) == ("Evicted", "Preempted: by higher priority")
    for kind in ("Workload", "ClusterQueue", "LocalQueue", "PodGroup", "Queue"):  # null everything
        item = convert.queue_item(kind, "x/v9", {"metadata": {"name": "n"}, "spec": None, "status": None})
        assert item.name == "n" and item.kind == kind
