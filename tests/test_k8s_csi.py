"""Issue #27 §5 units: PVC / StorageClass conversion (objects as the real kube-apiserver served them), the
claims of a pod, and the storage-class findings (which failures are a driver's, which pods count)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from hpctui.findings.health import Thresholds
from hpctui.findings.index import findings_for
from hpctui.findings.volumes import volume_findings
from hpctui.model import ClusterSnapshot, Event, Pod, Severity
from hpctui.model.volumes import StorageClassInfo, VolumeClaim, Volumes, merge_volumes
from hpctui.sources.k8s import convert
from hpctui.ui.widgets.problems import finding_part, object_node

CSI = Path(__file__).parent / "fixtures" / "k8s" / "csi"
NOW = 1_800_000_000.0


def test_recorded_claim_and_class_convert() -> None:
    claim = convert.volume_claim(json.loads((CSI / "pvc_ckpt_pending.json").read_text()))
    assert claim == VolumeClaim(namespace="hpc", name="ckpt", phase="Pending", storage_class="ceph-rbd",
                                requested="500Gi", created=claim.created, uid="85d70900-3fce-4fd5-8676-b98ab2d0c093")
    assert claim.created is not None and claim.volume is None
    sc = convert.storage_class(json.loads((CSI / "storageclass_ceph-rbd_default.json").read_text()))
    assert sc == StorageClassInfo(name="ceph-rbd", provisioner="rook-ceph.rbd.csi.ceph.com", default=True,
                                  binding_mode="WaitForFirstConsumer")


def test_pod_claims_direct_and_generic_ephemeral() -> None:
    spec = {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "datasets"}},
                        {"name": "dshm", "emptyDir": {"medium": "Memory"}},
                        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                        {"name": "again", "persistentVolumeClaim": {"claimName": "datasets"}}]}
    # a generic ephemeral volume's claim is named <pod>-<volume> (Kubernetes' ephemeral volume docs)
    assert convert.pod_claims("train-0", spec) == ("datasets", "train-0-scratch")
    assert convert.pod_claims("p", {"volumes": "junk"}) == ()


def _gpu_pod(name: str, node: str | None, claims: tuple[str, ...], phase: str = "Pending", gpus: int = 8) -> Pod:
    return Pod(namespace="hpc", name=name, node=node, phase=phase, gpus_requested=gpus, claims=claims)


def _event(pod: str, reason: str, message: str, age_s: float = 60.0) -> Event:
    return Event(time=NOW - age_s, source="k8s", object=f"pod/hpc/{pod}", severity=Severity.WARNING,
                 message=f"{reason}: {message} (×9)")


def _snapshot(pods: tuple[Pod, ...], events: tuple[Event, ...]) -> ClusterSnapshot:
    claims = (VolumeClaim(namespace="hpc", name="datasets", phase="Bound", storage_class="efs-sc",
                          volume="pvc-355a60d3-1835-4de2-92c6-02ac8248ddfc", created=NOW - 86_400),
              VolumeClaim(namespace="hpc", name="ckpt", phase="Pending", storage_class="ceph-rbd", created=NOW - 1800),
              VolumeClaim(namespace="hpc", name="fresh", phase="Pending", storage_class="ceph-rbd", created=NOW - 30),
              VolumeClaim(namespace="hpc", name="rbd-data", phase="Bound", storage_class="ceph-rbd",
                          volume="pvc-b9dda9de-bbaf-42ae-b68f-accc35d4a12d", created=NOW - 86_400))
    classes = (StorageClassInfo(name="efs-sc", provisioner="efs.csi.aws.com"),
               StorageClassInfo(name="ceph-rbd", provisioner="rook-ceph.rbd.csi.ceph.com", default=True))
    return ClusterSnapshot(cluster="c", time=NOW, pods=pods, events=events,
                           volumes=Volumes(claims=claims, classes=classes))


def test_failures_and_pending_claims_per_storage_class() -> None:
    mount = (CSI / "failedmount_efs-csi_mount-denied.txt").read_text()
    attach = (CSI / "failedattach_rook-ceph-rbd.txt").read_text()
    configmap = (CSI / "failedmount_configmap-not-found.txt").read_text()
    pods = (_gpu_pod("train-0", "gpu01", ("datasets",)), _gpu_pod("train-1", "gpu02", ("datasets", "ckpt")),
            _gpu_pod("train-2", None, ("ckpt",)), _gpu_pod("train-3", None, ("fresh",)),
            _gpu_pod("rbd-0", "gpu03", ("rbd-data",)), _gpu_pod("cm", "gpu04", ("datasets",)),
            _gpu_pod("cpu-only", "cpu01", ("ckpt",), gpus=0),
            Pod(namespace="kube-system", name="efs-csi-node-x", node="gpu02", phase="Running", ready=False,
                owner_kind="DaemonSet", owner_name="efs-csi-node"))
    events = (_event("train-0", "FailedMount", mount), _event("train-1", "FailedMount", mount),
              _event("rbd-0", "FailedAttachVolume", attach), _event("cm", "FailedMount", configmap),
              _event("cpu-only", "FailedMount", mount),  # not a GPU pod
              _event("train-0", "FailedMount", mount, age_s=3600),  # older than the window
              _event("train-0", "BackOff", "Back-off restarting failed container"))
    found = volume_findings(_snapshot(pods, events), Thresholds())
    assert sorted(found) == ["storage/ceph-rbd", "storage/efs-sc"]
    efs = found["storage/efs-sc"]
    assert [f.code for f in efs] == ["volume_mount_failed"] and efs[0].severity is Severity.ERROR
    assert efs[0].message.startswith(
        "storage class efs-sc (driver efs.csi.aws.com): volumes of 2 GPU pod(s) on gpu[01-02] failed to attach or "
        "mount in the last 15m; CSI node plugin not ready on gpu02: MountVolume.SetUp failed for volume "
        "\"pvc-355a60d3-1835-4de2-92c6-02ac8248ddfc\" : rpc error")
    assert efs[0].message.endswith("…")  # the first line, cut
    rbd = found["storage/ceph-rbd"]
    assert [f.code for f in rbd] == ["volume_mount_failed", "pvc_pending"]  # worst first
    assert "volumes of 1 GPU pod(s) on gpu03" in rbd[0].message and "AttachVolume.Attach failed" in rbd[0].message
    assert rbd[1].message == ("storage class ceph-rbd (driver rook-ceph.rbd.csi.ceph.com): 1 PVC(s) Pending up to "
                              "30m for 2 GPU pod(s): hpc/train-1, hpc/train-2")  # not "fresh": 30 s < 300 s
    # the index: one group per storage class; the problem list groups and names them the same way
    index = findings_for(_snapshot(pods, events), Thresholds())
    assert [f.code for f in index.node("storage/efs-sc")] == ["volume_mount_failed"]
    assert object_node(efs[0].object) == "storage/efs-sc"
    assert finding_part(efs[0]).value == "volumes"
    assert volume_findings(_snapshot(pods, events), Thresholds(pvc_pending_s=10))["storage/ceph-rbd"][1].message \
        .startswith("storage class ceph-rbd (driver rook-ceph.rbd.csi.ceph.com): 2 PVC(s) Pending")


def test_no_claims_no_findings_and_merge() -> None:
    snap = _snapshot((), ())
    assert volume_findings(msgspec.structs.replace(snap, volumes=Volumes()), Thresholds()) == {}
    a = Volumes(claims=snap.volumes.claims[:1], classes=snap.volumes.classes)
    b = Volumes(claims=snap.volumes.claims[1:], classes=(StorageClassInfo(name="efs-sc", provisioner="other"),))
    merged = merge_volumes([a, b])
    assert merged.claims == snap.volumes.claims and merged.classes == snap.volumes.classes
