"""Live reads against a real kube-apiserver v1.20.2: list + watch of nodes, pods and Warning
events through the official client over real HTTPS; 410 relist, bookmarks, RBAC 403, restarts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from k8s_helpers import collect_until, gfd_labels, make_source
from k8slab import K8sLab

from hpctui.base.sanitize import PLACEHOLDER
from hpctui.core.store import NodeNameMap, Store
from hpctui.model import Part, Severity
from hpctui.sources.base import SourceError
from hpctui.sources.k8s.settings import K8sSettings
from hpctui.sources.k8s.source import K8sSource

pytestmark = pytest.mark.live


def _event(lab: K8sLab, ns: str, name: str, *, kind: str = "Pod", obj: str = "p0", reason: str = "BackOff",
           message: str = "Back-off restarting failed container", etype: str = "Warning") -> None:
    lab.ok("POST", f"/api/v1/namespaces/{ns}/events", {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": ns},
        "involvedObject": {"kind": kind, "name": obj, "namespace": ns if kind != "Node" else None},
        "reason": reason, "message": message, "type": etype, "count": 1,
        "firstTimestamp": "2024-05-01T10:00:00Z", "lastTimestamp": "2024-05-01T10:00:00Z"})


async def test_list_nodes_pods_events(lab: K8sLab) -> None:
    lab.make_node("gpu-a.lab", labels=gfd_labels(), gpus=0,
                  extra={"nvidia.com/mig-1g.10gb": "2", "nvidia.com/mig-2g.20gb": "1", "nvidia.com/mig-3g.40gb": "1"})
    lab.make_node("gpu-b.lab", labels=gfd_labels("gpu-operator_node-labels_h100-80gb-hbm3_mig-single_all-disabled.json"),
                  gpus=8, ready="Unknown")
    lab.ok("PATCH", "/api/v1/nodes/gpu-b.lab/status", {"status": {"conditions": [{
        "type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
        "message": "Kubelet stopped posting node status.\x1b]0;pwned\x07"}]}},
        content_type="application/strategic-merge-patch+json")
    lab.ok("PATCH", "/api/v1/nodes/gpu-b.lab", {"spec": {"unschedulable": True, "taints": [
        {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}]}},
        content_type="application/strategic-merge-patch+json")
    lab.make_pod("hpc", "train-0", "gpu-b.lab", gpus=4, owner=("Job", "train"),
                 labels={"kueue.x-k8s.io/queue-name": "team-a"})
    lab.make_pod("hpc", "crash", "gpu-b.lab", gpus=1, owner=("ReplicaSet", "srv-5d9"))
    lab.merge("/api/v1/namespaces/hpc/pods/crash/status", {"status": {"containerStatuses": [{
        "name": "c", "image": "busybox", "imageID": "", "ready": False, "restartCount": 7,
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s"}},
        "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]}})
    lab.make_pod("hpc", "waiting", None, gpus=8, phase="Pending")
    lab.merge("/api/v1/namespaces/hpc/pods/waiting/status", {"status": {"conditions": [{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "message": "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."}]}})
    _event(lab, "hpc", "crash.1", obj="crash", message="Back-off restarting \x1b[2J failed container")
    _event(lab, "hpc", "normal.1", obj="train-0", reason="Scheduled", etype="Normal")

    src = make_source(lab, name_map=NodeNameMap(strip_suffix=".lab"))
    try:
        res = await src.collect()
    finally:
        await src.close()
    assert res.k8s_nodes is not None and res.pods is not None and res.events is not None
    a, b = res.k8s_nodes["gpu-a.lab"], res.k8s_nodes["gpu-b.lab"]
    assert a.ready == "True" and a.mig_capacity == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    assert a.gpu_capacity == 0 and a.mig_config == "all-balanced" and a.mig_state == "success"
    assert a.labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert not any(k.startswith("feature.node.kubernetes.io/") for k in a.labels)
    assert b.ready == "Unknown" and b.unschedulable and b.gpu_capacity == 8 and b.gpu_allocatable == 8
    assert [t.key for t in b.taints] == ["node.kubernetes.io/unreachable"]
    assert b.condition_messages["Ready"] == f"NodeStatusUnknown Kubelet stopped posting node status.{PLACEHOLDER}"
    pods = {p.name: p for p in res.pods}
    assert pods["train-0"].gpus_requested == 4 and pods["train-0"].queue == "team-a"
    assert pods["train-0"].owner_kind == "Job" and pods["train-0"].node == "gpu-b.lab"
    crash = pods["crash"]
    assert (crash.reason, crash.restarts) == ("CrashLoopBackOff", 7) and "OOMKilled" in (crash.message or "")
    waiting = pods["waiting"]
    assert waiting.node is None and waiting.reason == "Unschedulable"
    assert "Insufficient nvidia.com/gpu" in (waiting.message or "")
    assert [e.object for e in res.events] == ["pod/hpc/crash"]  # Warning events only
    assert res.events[0].severity is Severity.WARNING and "\x1b" not in res.events[0].message

    store = Store("lab", name_map=NodeNameMap(strip_suffix=".lab"))
    store.register_source(src.name, src.kind)
    store.apply(res)
    snap = store.snapshot()
    assert set(snap.nodes) == {"gpu-a", "gpu-b"}  # joined to Slurm names through node_map
    assert {p.node for p in snap.pods} == {"gpu-b", None}


async def test_watch_updates_without_relist(lab: K8sLab) -> None:
    lab.make_node("n1")
    lab.make_pod("hpc", "p0", "n1")
    src = make_source(lab)
    try:
        res = await src.collect()
        assert res.pods is not None and [p.phase for p in res.pods] == ["Running"]
        lab.merge("/api/v1/namespaces/hpc/pods/p0/status", {"status": {"phase": "Failed", "reason": "Evicted",
                                                                         "message": "The node was low on memory."}})
        lab.make_pod("hpc", "p1", "n1")
        res = await collect_until(src, "p0 Failed and p1 present", lambda r: r.pods is not None and {
            (p.name, p.phase) for p in r.pods} == {("p0", "Failed"), ("p1", "Running")})
        assert next(p for p in res.pods or () if p.name == "p0").reason == "Evicted"
        lab.ok("DELETE", "/api/v1/namespaces/hpc/pods/p1?gracePeriodSeconds=0")
        lab.ok("PATCH", "/api/v1/nodes/n1", {"spec": {"unschedulable": True}},
               content_type="application/strategic-merge-patch+json")
        await collect_until(src, "p1 gone and n1 cordoned", lambda r: r.pods is not None and len(r.pods) == 1
                            and r.k8s_nodes is not None and r.k8s_nodes["n1"].unschedulable)
        stats = src.stats()
        pods = next(v for k, v in stats.items() if k.startswith("pods:"))
        assert pods["lists"] == 1 and pods["watch_events"] >= 3  # updates came by watch, not by relisting
    finally:
        await src.close()


async def test_bookmarks_move_the_resource_version(lab: K8sLab) -> None:
    """The 1.20 watch cache sends a BOOKMARK (every minute, and 2 s before a watch's timeout)
    carrying a resourceVersion newer than this watch has seen: changes it filtered out (pods of
    another namespace) then need no replay when the watch resumes."""
    lab.make_node("n1")
    src = make_source(lab, watch_timeout_s=5, events=False, namespaces=["gpu-operator"])
    key = "pods:/api/v1/namespaces/gpu-operator/pods"
    try:
        await src.collect()
        listed = int(src.stats()[key]["rv"] or 0)
        lab.make_pod("hpc", "elsewhere", "n1")  # moves the pods cache on, invisible to this watch
        await collect_until(src, "a bookmark past the list's resourceVersion",
                            lambda _r: src.stats()[key]["bookmarks"] > 0 and int(src.stats()[key]["rv"]) > listed,
                            timeout=120)
        assert src.stats()[key]["lists"] == 1
    finally:
        await src.close()


async def test_410_gone_after_compaction_relists(lab: K8sLab) -> None:
    """Events are watched from etcd here (no watch cache): after a compaction, resuming a watch
    from the old resourceVersion gets 410 Gone, and the source relists."""
    lab.make_node("n1")
    _event(lab, "hpc", "e1", obj="p1", message="first")
    src = make_source(lab, watch_timeout_s=3)
    try:
        res = await src.collect()
        assert [e.message for e in res.events or ()] == ["BackOff: first"]
        key = "events:/api/v1/events"
        assert src.stats()[key]["relists_410"] == 0
        for i in range(5):  # move etcd's revision past the watcher's, on a collection it does not watch
            lab.ok("POST", "/api/v1/namespaces/hpc/configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                                                  "metadata": {"name": f"bump{i}"}})
        lab.http("DELETE", "/api/v1/namespaces/hpc/configmaps")
        lab.etcd_compact()
        await collect_until(src, "a 410 relist of events", lambda _r: src.stats()[key]["relists_410"] >= 1)
        _event(lab, "hpc", "e2", obj="p2", message="after the relist")
        res = await collect_until(src, "the new event", lambda r: any("after the relist" in e.message
                                                                      for e in r.events or ()))
        assert not any("first" in e.message for e in res.events or ())  # no duplicate after the relist
    finally:
        await src.close()


async def test_403_on_pods_only_fails_that_part(lab: K8sLab) -> None:
    lab.make_node("n1")
    lab.make_pod("hpc", "p0", "n1")
    rules = [{"apiGroups": [""], "resources": ["nodes", "events"], "verbs": ["get", "list", "watch"]}]
    lab.http("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterroles/hpctui-nodes-only")
    lab.http("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/hpctui-nodes-only")
    lab.ok("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "hpctui-nodes-only"}, "rules": rules})
    lab.ok("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "hpctui-nodes-only"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "hpctui-nodes-only"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "restricted"}]})
    src = make_source(lab, token="restricted-token", user="restricted")
    try:
        res = await collect_until(src, "nodes listed", lambda r: r.k8s_nodes is not None)
        assert res.pods is None and set(res.k8s_nodes or {}) == {"n1"}
        err = res.part_errors[Part.PODS.value]
        assert err.startswith("403 Forbidden: list pods refused") and 'User "restricted"' in err
        store = Store("lab")
        store.register_source(src.name, src.kind)
        store.apply(res)
        snap = store.snapshot()
        assert snap.part_errors(Part.PODS) == [f"k8s: {err}"]
        assert snap.part_errors(Part.K8S_NODES) == []
        assert any("403" in w for w in snap.sources["k8s"].warnings)
    finally:
        await src.close()
    nobody = make_source(lab, token="restricted-token", user="restricted", namespaces=["gpu-operator"])
    lab.http("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/hpctui-nodes-only")
    try:  # nothing readable at all: the source fails as a whole, naming what was refused
        with pytest.raises(SourceError, match="403 Forbidden: list nodes refused"):
            await nobody.collect()
    finally:
        await nobody.close()


async def test_bad_kubeconfig_and_server_restart(lab: K8sLab, tmp_path: Path) -> None:
    missing = K8sSource(K8sSettings(kubeconfig=str(tmp_path / "nope.yaml"), timeout_s=5))
    try:
        with pytest.raises(SourceError, match="kubeconfig"):
            await missing.collect()
    finally:
        await missing.close()
    lab.make_node("n1")
    expired = make_source(lab, token="expired-token", user="expired")  # a token the server does not know
    try:
        with pytest.raises(SourceError, match="401 Unauthorized: list nodes: Unauthorized"):
            await expired.collect()
    finally:
        await expired.close()
    src = make_source(lab, watch_timeout_s=30)
    try:
        await src.collect()
        lab.stop_process("apiserver")  # every watch drops mid-stream, the server stops answering
        with pytest.raises(SourceError):
            for _ in range(900):  # until every collection has noticed
                await src.collect()
                await asyncio.sleep(0.1)
        lab.start_apiserver()
        lab.make_node("n2")
        await collect_until(src, "recovery with n2", lambda r: r.k8s_nodes is not None and "n2" in r.k8s_nodes,
                            timeout=120)
    finally:
        await src.close()
