"""Issue #27 §5: GPU pods' pending claims and volume mount failures put on their storage class and CSI driver,
against the real kube-apiserver: StorageClass, PersistentVolumeClaims (Pending as the API server leaves them
without a provisioner; one bound through the status subresource), GPU pods mounting them, a CSI node plugin
pod that is not ready, and Warning Events carrying real kubelet / attach-detach messages."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest
from k8s_helpers import FIXTURES, collect_until, make_source
from k8slab import K8sLab

from hpctui.core.store import Store
from hpctui.findings.health import Thresholds
from hpctui.findings.index import findings_for
from hpctui.model import Severity

pytestmark = pytest.mark.live
NS = "hpc"
CSI = FIXTURES / "csi"


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _claim(name: str, storage_class: str, volume: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteMany"], "storageClassName": storage_class,
                            "resources": {"requests": {"storage": "5Gi"}}}
    if volume:
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec}


def _gpu_pod(lab: K8sLab, name: str, node: str | None, claims: list[str], phase: str) -> None:
    volumes = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    volumes.append({"name": "dshm", "emptyDir": {"medium": "Memory"}})  # not a claim
    spec: dict[str, Any] = {"containers": [{"name": "train", "image": "pytorch",
                                            "resources": {"limits": {"nvidia.com/gpu": "8"}}}], "volumes": volumes}
    if node:
        spec["nodeName"] = node
    lab.ok("POST", f"/api/v1/namespaces/{NS}/pods", {"apiVersion": "v1", "kind": "Pod",
                                                    "metadata": {"name": name}, "spec": spec})
    lab.merge(f"/api/v1/namespaces/{NS}/pods/{name}/status", {"status": {"phase": phase}})


def _event(lab: K8sLab, name: str, pod: str, reason: str, message: str, component: str) -> None:
    lab.ok("POST", f"/api/v1/namespaces/{NS}/events", {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
        "involvedObject": {"kind": "Pod", "namespace": NS, "name": pod, "apiVersion": "v1"},
        "reason": reason, "message": message, "type": "Warning", "count": 9,
        "firstTimestamp": _now(), "lastTimestamp": _now(), "source": {"component": component}})


def test_pending_claims_and_mount_failures_land_on_their_storage_class(k8s_lab: K8sLab) -> None:
    lab = k8s_lab
    made: list[str] = []
    try:
        lab.ok("POST", "/apis/storage.k8s.io/v1/storageclasses", {
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "efs-sc"},
            "provisioner": "efs.csi.aws.com", "volumeBindingMode": "Immediate"})
        lab.ok("POST", "/apis/storage.k8s.io/v1/storageclasses", {
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {
                "name": "ceph-rbd", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "rook-ceph.rbd.csi.ceph.com", "volumeBindingMode": "WaitForFirstConsumer"})
        for body in (_claim("datasets", "efs-sc", "pvc-355a60d3-1835-4de2-92c6-02ac8248ddfc"),
                     _claim("ckpt", "ceph-rbd")):
            lab.ok("POST", f"/api/v1/namespaces/{NS}/persistentvolumeclaims", body)
        lab.merge(f"/api/v1/namespaces/{NS}/persistentvolumeclaims/datasets/status", {"status": {"phase": "Bound"}})
        lab.make_node("csigpu01", gpus=8)
        lab.make_node("csigpu02", gpus=8)
        _gpu_pod(lab, "csi-train-0", "csigpu01", ["datasets"], "Pending")  # ContainerCreating: its mount fails
        _gpu_pod(lab, "csi-train-1", None, ["ckpt"], "Pending")  # waits on the pending claim
        made += ["csi-train-0", "csi-train-1"]
        lab.make_pod(NS, "efs-csi-node-7xk2p", "csigpu01", owner=("DaemonSet", "efs-csi-node"), phase="Pending")
        lab.make_pod(NS, "csi-cm-pod", "csigpu02", gpus=1, phase="Pending")
        made += ["efs-csi-node-7xk2p", "csi-cm-pod"]
        _event(lab, "csi-train-0.mount", "csi-train-0", "FailedMount",
               (CSI / "failedmount_efs-csi_mount-denied.txt").read_text(), "kubelet")
        _event(lab, "csi-cm-pod.mount", "csi-cm-pod", "FailedMount",  # a ConfigMap volume: nobody's driver
               (CSI / "failedmount_configmap-not-found.txt").read_text(), "kubelet")

        src = make_source(lab, namespaces=[NS])
        store = Store("k8s")
        try:
            def ready(r: Any) -> bool:  # every read goes into the store: events come once
                store.apply(r)
                snap = store.snapshot()
                return (len(snap.volumes.claims) == 2 and len(snap.volumes.classes) == 2
                        and {"csi-train-0", "csi-train-1", "csi-cm-pod", "efs-csi-node-7xk2p"} <= {p.name for p in
                                                                                            snap.pods}
                        and len([e for e in snap.events if "csi-" in e.object]) >= 2)

            asyncio.run(collect_until(src, "claims, classes, pods and events", ready))
        finally:
            asyncio.run(src.close())
        snap = store.snapshot()
        claims = {c.name: c for c in snap.volumes.claims}
        assert claims["ckpt"].phase == "Pending" and claims["ckpt"].storage_class == "ceph-rbd"
        volume = claims["datasets"].volume
        assert claims["datasets"].phase == "Bound" and volume is not None and volume.startswith("pvc-355a60d3")
        classes = {c.name: c for c in snap.volumes.classes}
        assert classes["ceph-rbd"].default and classes["efs-sc"].provisioner == "efs.csi.aws.com"
        pods = {p.name: p for p in snap.pods}
        assert pods["csi-train-0"].claims == ("datasets",)  # (generic ephemeral volumes are alpha in v1.20: unit test)
        index = findings_for(store.snapshot(), Thresholds(pvc_pending_s=0))
        efs = index.node("storage/efs-sc")
        assert [f.code for f in efs] == ["volume_mount_failed"] and efs[0].severity is Severity.ERROR
        assert efs[0].message.startswith("storage class efs-sc (driver efs.csi.aws.com): volumes of 1 GPU pod(s) on "
                                         "csigpu01 failed to attach or mount in the last 15m; CSI node plugin not "
                                         "ready on csigpu01: MountVolume.SetUp failed for volume \"pvc-355a60d3")
        rbd = index.node("storage/ceph-rbd")
        assert [f.code for f in rbd] == ["pvc_pending"]
        assert "storage class ceph-rbd (driver rook-ceph.rbd.csi.ceph.com): 1 PVC(s) Pending" in rbd[0].message
        assert "for 1 GPU pod(s): hpc/csi-train-1" in rbd[0].message
        assert not [k for k in index.by_node if k.startswith("storage/") and k not in ("storage/efs-sc",
                                                                                        "storage/ceph-rbd")]
    finally:
        for pod in made:
            lab.http("DELETE", f"/api/v1/namespaces/{NS}/pods/{pod}?gracePeriodSeconds=0")
        for pvc in ("datasets", "ckpt"):
            lab.http("DELETE", f"/api/v1/namespaces/{NS}/persistentvolumeclaims/{pvc}")
        for sc in ("efs-sc", "ceph-rbd"):
            lab.http("DELETE", f"/apis/storage.k8s.io/v1/storageclasses/{sc}")
        for ev in ("csi-train-0.mount", "csi-cm-pod.mount"):
            lab.http("DELETE", f"/api/v1/namespaces/{NS}/events/{ev}")
        for node in ("csigpu01", "csigpu02"):
            lab.http("DELETE", f"/api/v1/nodes/{node}")
