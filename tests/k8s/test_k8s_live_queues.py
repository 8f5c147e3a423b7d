"""Kueue and Volcano objects on the real API server: absent CRDs mean no queues (and no
error); once minimal CRDs are installed and established, discovery finds them and their
objects (with the status a controller would have written) show up, pending ones with why."""

from __future__ import annotations

import time
from typing import Any

import pytest
from k8s_helpers import collect_until, make_source
from k8slab import K8sLab

from hpctui.model import Part

pytestmark = pytest.mark.live


def _crd(group: str, version: str, plural: str, kind: str, namespaced: bool) -> dict[str, Any]:
    loose = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced" if namespaced else "Cluster",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": f"{kind}List"},
                     "versions": [{"name": version, "served": True, "storage": True, "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                       "spec": loose, "status": loose}}}}]}}


CRDS = [("kueue.x-k8s.io", "v1beta1", "clusterqueues", "ClusterQueue", False),
        ("kueue.x-k8s.io", "v1beta1", "localqueues", "LocalQueue", True),
        ("kueue.x-k8s.io", "v1beta1", "workloads", "Workload", True),
        ("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", True),
        ("scheduling.volcano.sh", "v1beta1", "queues", "Queue", False)]


def _install(lab: K8sLab) -> None:
    for group, version, plural, kind, namespaced in CRDS:
        status, doc = lab.http("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                               _crd(group, version, plural, kind, namespaced))
        assert status in (201, 409), doc
    deadline = time.monotonic() + 60
    for group, version, plural, _kind, _ns in CRDS:  # established and served
        while lab.http("GET", f"/apis/{group}/{version}/{plural}")[0] != 200:
            assert time.monotonic() < deadline, f"{plural}.{group} not served"
            time.sleep(0.2)


def _create(lab: K8sLab, path: str, body: dict[str, Any], status: dict[str, Any]) -> None:
    lab.ok("POST", path, body)
    lab.merge(f"{path}/{body['metadata']['name']}/status", {"status": status})


def _remove(lab: K8sLab) -> None:
    for group, _v, plural, _k, _n in CRDS:
        lab.http("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{plural}.{group}")


async def test_queues_absent_then_discovered(lab: K8sLab) -> None:
    lab.make_node("n1")
    _remove(lab)
    src = make_source(lab, queue_interval_s=0.5, events=False)
    try:
        res = await src.collect()
        assert res.k8s_queues == () and Part.K8S_QUEUES.value not in res.part_errors
        _install(lab)
        k = "/apis/kueue.x-k8s.io/v1beta1"
        _create(lab, f"{k}/clusterqueues", {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
                                            "metadata": {"name": "cq-gpu"}, "spec": {}},
                {"pendingWorkloads": 1, "admittedWorkloads": 2,
                 "conditions": [{"type": "Active", "status": "True", "reason": "Ready", "message": "ok",
                                 "lastTransitionTime": "2024-05-01T10:00:00Z"}]})
        _create(lab, f"{k}/namespaces/hpc/workloads", {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
                                                       "metadata": {"name": "job-train-1"},
                                                       "spec": {"queueName": "team-a", "podSets": []}},
                {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                                 "message": "couldn't assign flavors to pod set main: insufficient quota for "
                                            "nvidia.com/gpu in flavor h100, 8 more needed",
                                 "lastTransitionTime": "2024-05-01T10:00:00Z"}]})
        v = "/apis/scheduling.volcano.sh/v1beta1"
        _create(lab, f"{v}/namespaces/hpc/podgroups", {"apiVersion": "scheduling.volcano.sh/v1beta1",
                                                       "kind": "PodGroup", "metadata": {"name": "pg-1"},
                                                       "spec": {"queue": "research", "minMember": 4}},
                {"phase": "Pending", "conditions": [{"type": "Unschedulable", "status": "True",
                                                     "reason": "NotEnoughResources",
                                                     "message": "4/4 tasks in gang unschedulable"}]})
        _create(lab, f"{v}/queues", {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                     "metadata": {"name": "research"}, "spec": {"weight": 1}},
                {"state": "Open", "pending": 1, "running": 0})
        res = await collect_until(src, "4 queue objects", lambda r: len(r.k8s_queues or ()) == 4, timeout=120)
        items = {q.kind: q for q in res.k8s_queues or ()}
        assert (items["ClusterQueue"].pending, items["ClusterQueue"].admitted) == (1, 2)
        wl = items["Workload"]
        assert (wl.namespace, wl.queue, wl.state) == ("hpc", "team-a", "Pending")
        assert "insufficient quota for nvidia.com/gpu" in (wl.message or "")
        pg = items["PodGroup"]
        assert (pg.state, pg.queue) == ("Pending", "research") and "NotEnoughResources" in (pg.message or "")
        assert items["Queue"].state == "Open" and items["Queue"].api == "scheduling.volcano.sh/v1beta1"
    finally:
        await src.close()
        _remove(lab)
