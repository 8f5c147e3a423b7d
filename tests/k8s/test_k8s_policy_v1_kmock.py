"""The policy/v1 Eviction path (Kubernetes >= 1.22), which the 1.20 test server cannot serve,
against kmock's KubernetesEmulator: a real aiohttp server that the real client talks to.
Discovery says policy/v1, so the drain posts policy/v1 Evictions; a PDB refusal (429)
is retried until the emulator lets the eviction through (its default create → 201)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import kmock as km

from hpctui.model import ClusterSnapshot, K8sNodeInfo, Node, Pod
from hpctui.model.action import ActionKind
from hpctui.sources.k8s.settings import K8sSettings
from hpctui.sources.k8s.source import K8sSource

NODE = "gpu-a"


def _kubeconfig(tmp_path: Path, url: str) -> str:
    path = tmp_path / "kubeconfig.json"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "emu",
        "clusters": [{"name": "emu", "cluster": {"server": url}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "emu", "context": {"cluster": "emu", "user": "u"}}]}))
    return str(path)


def _pod(name: str, owner: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "hpc",
                         "ownerReferences": [{"kind": owner, "name": f"{name}-owner", "controller": True}]},
            "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "x"}]}, "status": {"phase": "Running"}}


async def test_drain_uses_policy_v1_by_discovery(kmock: km.KubernetesEmulator, tmp_path: Path) -> None:
    kmock["get /apis/policy"] << {"kind": "APIGroup", "apiVersion": "v1", "name": "policy",
                                  "versions": [{"groupVersion": "policy/v1", "version": "v1"},
                                               {"groupVersion": "policy/v1beta1", "version": "v1beta1"}],
                                  "preferredVersion": {"groupVersion": "policy/v1", "version": "v1"}}
    kmock["get /api/v1/pods"] << {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "7"},
                                  "items": [_pod("worker", "ReplicaSet"), _pod("exporter", "DaemonSet")]}
    kmock.objects[km.resource("v1/nodes"), None, NODE] = {"apiVersion": "v1", "kind": "Node",
                                                         "metadata": {"name": NODE}, "spec": {}}
    blocked = {"on": True}
    kmock["post /api/v1/namespaces/hpc/pods/worker/eviction", lambda _req: blocked["on"]] << 429 << {
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "TooManyRequests", "code": 429,
        "message": "Cannot evict pod as it would violate the pod's disruption budget."}

    src = K8sSource(K8sSettings(kubeconfig=_kubeconfig(tmp_path, str(kmock.url)), drain_retry_s=0.2,
                                drain_timeout_s=60.0))
    snap = ClusterSnapshot(cluster="emu", time=0.0, nodes={NODE: Node(name=NODE, k8s=K8sNodeInfo(name=NODE))},
                           pods=(Pod(namespace="hpc", name="worker", node=NODE, owner_kind="ReplicaSet"),
                                 Pod(namespace="hpc", name="exporter", node=NODE, owner_kind="DaemonSet")))
    plan = src.plan(ActionKind.K8S_DRAIN_NODES, (NODE,), {}, snap)
    assert plan.runnable and any(a.startswith("skip hpc/exporter") for a in plan.affected)

    async def unblock() -> None:
        for _ in range(2400):  # the drain's thread reports the refusal in src.progress
            if any("blocked (429)" in p for p in src.progress):
                break
            await asyncio.sleep(0.05)
        blocked["on"] = False
    helper = asyncio.create_task(unblock())
    try:
        results = await asyncio.wait_for(src.execute(plan), timeout=120)
    finally:
        helper.cancel()
        await src.close()
    assert results[0].ok, results
    assert "evicted 1 pod(s) via policy/v1" in results[0].message and "exporter (DaemonSet)" in results[0].message
    evictions = [r.data for r in kmock["post"] if str(r.url).endswith("/eviction")]
    assert len(evictions) >= 2  # refused once, then accepted
    assert all(e["apiVersion"] == "policy/v1" and e["kind"] == "Eviction" for e in evictions)
    assert not any("exporter" in str(r.url) for r in kmock["post"])  # DaemonSet pods are never evicted
    assert kmock.objects[km.resource("v1/nodes"), None, NODE]["spec"] == {"unschedulable": True}  # cordoned
