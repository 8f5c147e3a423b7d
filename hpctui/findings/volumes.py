"""Kubernetes storage behind GPU pods (issue #27 §5): pending PersistentVolumeClaims and
``FailedMount`` / ``FailedAttachVolume`` events of GPU pods, put on the storage class and CSI driver
that serve them, so ten pods stuck on one broken driver read as one problem of that driver.

Pure functions of the snapshot. One group per storage class, keyed ``storage/<class>`` (a claim
without a class: ``storage/(none)``); a CSI node plugin pod that is not ready on a node where a mount
failed is named in the finding (the likely cause there).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hpctui.findings.health import Finding, Thresholds, platform_component
from hpctui.model import ClusterSnapshot, Pod, Severity
from hpctui.model.event import Event
from hpctui.model.hostlist import collect
from hpctui.model.volumes import StorageClassInfo, VolumeClaim

STORAGE_PREFIX = "storage/"
NO_CLASS = "(none)"
MOUNT_REASONS = ("FailedMount", "FailedAttachVolume")
_VOLUME = re.compile(r'for volume "(?P<volume>[^"]+)"')
MESSAGE_SHOWN = 160  # characters of the first failure's message kept in the finding


def _duration(seconds: float) -> str:
    minutes = int(seconds // 60)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


def _class_text(name: str, classes: dict[str, StorageClassInfo]) -> str:
    sc = classes.get(name)
    if sc is None:
        return f"storage class {name}" if name != NO_CLASS else "claims without a storage class"
    return f"storage class {name} (driver {sc.provisioner})"


def _mount_failure(event: Event) -> tuple[str, str, str] | None:
    """(namespace, pod, message) of a pod's FailedMount / FailedAttachVolume event, else None."""
    if not event.object.startswith("pod/"):
        return None
    reason, _, message = event.message.partition(": ")
    if reason not in MOUNT_REASONS:
        return None
    parts = event.object.split("/", 2)
    if len(parts) != 3:
        return None
    return parts[1], parts[2], message


def volume_findings(snapshot: ClusterSnapshot, t: Thresholds) -> dict[str, tuple[Finding, ...]]:
    """Per storage class: GPU pods waiting on a claim Pending for ``pvc_pending_s`` or more (warning), and
    GPU pods whose volumes failed to attach or mount within ``volume_event_window_s`` (error)."""
    volumes = snapshot.volumes
    if not volumes.claims:
        return {}
    claims: dict[tuple[str, str], VolumeClaim] = {(c.namespace, c.name): c for c in volumes.claims}
    by_volume = {(c.namespace, c.volume): c for c in volumes.claims if c.volume is not None}
    classes = {c.name: c for c in volumes.classes}
    gpu_pods = {(p.namespace, p.name): p for p in snapshot.pods if p.gpus_requested > 0 and p.claims}
    out: dict[str, list[Finding]] = {}
    # 1. GPU pods waiting on a pending claim
    pending: dict[str, tuple[set[str], list[Pod], float]] = {}
    for pod in gpu_pods.values():
        if pod.phase != "Pending":
            continue
        for name in pod.claims:
            c = claims.get((pod.namespace, name))
            if c is None or c.phase != "Pending" or c.created is None:
                continue
            waited = snapshot.time - c.created
            if waited < t.pvc_pending_s:
                continue
            key = c.storage_class or NO_CLASS
            names, pods, longest = pending.setdefault(key, (set(), [], 0.0))
            names.add(f"{c.namespace}/{c.name}")
            if pod not in pods:
                pods.append(pod)
            pending[key] = (names, pods, max(longest, waited))
    for key, (names, pods, longest) in sorted(pending.items()):
        shown = ", ".join(f"{p.namespace}/{p.name}" for p in pods[:3]) + (f" +{len(pods) - 3}" if len(pods) > 3 else "")
        out.setdefault(key, []).append(Finding(
            severity=Severity.WARNING, object=STORAGE_PREFIX + key, code="pvc_pending",
            message=f"{_class_text(key, classes)}: {len(names)} PVC(s) Pending up to {_duration(longest)} "
                    f"for {len(pods)} GPU pod(s): {shown}"))
    # 2. recent mount / attach failures of GPU pods
    failed: dict[str, tuple[list[Pod], set[str], str]] = {}
    for event in _recent(snapshot.events, snapshot.time - t.volume_event_window_s):
        hit = _mount_failure(event)
        if hit is None:
            continue
        sufferer = gpu_pods.get((hit[0], hit[1]))
        if sufferer is None:
            continue
        claim = _claim_of(sufferer, hit[2], claims, by_volume)
        if claim is None:  # a ConfigMap / Secret / hostPath volume: the pod's problem, not a driver's
            continue
        key = claim.storage_class or NO_CLASS
        pods, nodes, first = failed.setdefault(key, ([], set(), hit[2]))
        if sufferer not in pods:
            pods.append(sufferer)
        if sufferer.node:
            nodes.add(sufferer.node)
    for key, (pods, nodes, first) in sorted(failed.items()):
        where = f" on {collect(sorted(nodes))}" if nodes else ""
        sick = _sick_plugins(snapshot.pods, nodes)
        plugin = f"; CSI node plugin not ready on {collect(sorted(sick))}" if sick else ""
        first_line = first.splitlines()[0] if first else ""
        text = first_line[:MESSAGE_SHOWN] + ("…" if len(first_line) > MESSAGE_SHOWN else "")
        out.setdefault(key, []).append(Finding(
            severity=Severity.ERROR, object=STORAGE_PREFIX + key, code="volume_mount_failed",
            message=f"{_class_text(key, classes)}: volumes of {len(pods)} GPU pod(s){where} failed to attach or "
                    f"mount in the last {_duration(t.volume_event_window_s)}{plugin}: {text}"))
    return {STORAGE_PREFIX + k: tuple(sorted(v, key=lambda f: f.severity, reverse=True)) for k, v in out.items()}


def _recent(events: Iterable[Event], since: float) -> Iterable[Event]:
    return (e for e in events if e.time >= since)


def _claim_of(pod: Pod, message: str, claims: dict[tuple[str, str], VolumeClaim],
              by_volume: dict[tuple[str, str], VolumeClaim]) -> VolumeClaim | None:
    """The claim a failure names (``for volume "pvc-…"``: its bound volume, or the pod's volume of a claim's
    name), else the pod's only claim; None when the failure is not about one of its claims."""
    m = _VOLUME.search(message)
    if m:
        named = by_volume.get((pod.namespace, m["volume"]))
        if named is not None and named.name in pod.claims:
            return named
        direct = claims.get((pod.namespace, m["volume"]))
        if direct is not None and direct.name in pod.claims:
            return direct
        if not m["volume"].startswith("pvc-"):
            return None  # a named non-claim volume (a ConfigMap's)
    mine = [claims[(pod.namespace, n)] for n in pod.claims if (pod.namespace, n) in claims]
    return mine[0] if len(mine) == 1 else None


def _sick_plugins(pods: Iterable[Pod], nodes: set[str]) -> set[str]:
    """The nodes among ``nodes`` whose CSI node plugin pod is not running and ready."""
    out = set()
    for p in pods:
        healthy = p.phase == "Running" and p.ready is not False and not p.reason
        if p.node in nodes and not healthy and platform_component(p) == "CSI node plugin":
            out.add(p.node)
    return out
