"""Kubernetes as 1.19+ clusters write it, on the real kube-apiserver v1.20.2 (issue #21 §2):
events posted through events.k8s.io/v1 and repeated with ``series`` (as kube-scheduler does),
GPUs requested only by an init container (the GPU Operator's validator pod) and a MIG slice, and
the real Kueue / Volcano CRDs (tests/fixtures/k8s/crds, trimmed upstream manifests) with quota,
usage, admission checks, gang sizes and a Volcano Job."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from k8s_helpers import FIXTURES, collect_until, make_source
from k8slab import K8sLab

from hpctui.model import Event, QueueGpus
from hpctui.sources.k8s.convert import parse_time

pytestmark = pytest.mark.live
CRDS = sorted((FIXTURES / "crds").glob("*.yaml"))


def _events_k8s_io(name: str) -> dict[str, Any]:
    """An Event as kube-scheduler's events.k8s.io recorder creates it (no count, no lastTimestamp)."""
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name, "namespace": "hpc"},
            "eventTime": "2024-05-01T10:00:00.000000Z", "reportingController": "default-scheduler",
            "reportingInstance": "default-scheduler-cp1", "action": "Scheduling", "reason": "FailedScheduling",
            "regarding": {"kind": "Pod", "namespace": "hpc", "name": "train-0", "apiVersion": "v1"},
            "note": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.", "type": "Warning"}


def _sched(events: list[Event]) -> list[Event]:
    return [e for e in events if "FailedScheduling" in e.message]


async def test_scheduler_series_repeats_reach_the_event_log(lab: K8sLab) -> None:
    lab.make_node("n1")
    path = "/apis/events.k8s.io/v1/namespaces/hpc/events"
    src = make_source(lab, queues=False)
    seen: list[Event] = []
    try:
        await src.collect()  # lists and starts the watch before the first occurrence
        lab.ok("POST", path, _events_k8s_io("train-0.17c1"))
        res = await collect_until(src, "the first occurrence", lambda r: _sched(list(r.events or ())))
        seen += _sched(list(res.events or ()))
        for count, minute in ((2, "05"), (3, "10")):  # the recorder's heartbeat: PATCH series on the same object
            lab.merge(f"{path}/train-0.17c1", {"series": {"count": count,
                                                          "lastObservedTime": f"2024-05-01T10:{minute}:00.000000Z"}})
            res = await collect_until(src, f"repeat {count}", lambda r: _sched(list(r.events or ())))
            seen += _sched(list(res.events or ()))
    finally:
        await src.close()
    assert [e.message.rsplit(" ", 1)[-1] for e in seen] == ["nvidia.com/gpu.", "(×2)", "(×3)"]
    assert [e.time for e in seen] == [parse_time(f"2024-05-01T10:{m}:00Z") for m in ("00", "05", "10")]
    relisted = make_source(lab, queues=False)  # a fresh list sees the series once, with its latest state
    try:
        res = await collect_until(relisted, "the listed event", lambda r: _sched(list(r.events or ())))
    finally:
        await relisted.close()
    (ev,) = _sched(list(res.events or ()))
    assert ev.message.endswith("(×3)") and ev.time == parse_time("2024-05-01T10:10:00Z")


async def test_init_container_gpus_and_mig_slices_on_the_real_server(lab: K8sLab) -> None:
    lab.make_node("gpu01", gpus=8, extra={"nvidia.com/mig-1g.10gb": "7"})
    for name, resource in (("plugin-validator", "nvidia.com/gpu"), ("mig-validator", "nvidia.com/mig-1g.10gb")):
        pod = yaml.safe_load((FIXTURES / "gpu-operator_plugin-workload-validation.yaml").read_text())
        pod["metadata"] = {"name": name, "labels": pod["metadata"]["labels"],
                           "annotations": {"scheduling.k8s.io/group-name": f"{name}-pg"}}
        pod["spec"]["nodeName"] = "gpu01"
        pod["spec"].pop("serviceAccountName")
        for c in pod["spec"]["initContainers"] + pod["spec"]["containers"]:
            c["image"] = "busybox"
        pod["spec"]["initContainers"][0]["resources"] = {"limits": {resource: "1"}, "requests": {resource: "1"}}
        lab.ok("POST", "/api/v1/namespaces/gpu-operator/pods", pod)
    src = make_source(lab, events=False, queues=False)
    try:
        res = await collect_until(src, "both validator pods", lambda r: len(r.pods or ()) == 2)
    finally:
        await src.close()
    pods = {p.name: p for p in res.pods or ()}
    assert pods["plugin-validator"].gpus_requested == 1 and pods["plugin-validator"].gpu_text == "1 GPU"
    mig = pods["mig-validator"]
    assert mig.gpu_resources == {"nvidia.com/mig-1g.10gb": 1} and mig.gpu_text == "1 mig-1g.10gb"
    assert mig.pod_group == "mig-validator-pg"


# -- Kueue and Volcano with their real CRDs ---------------------------------------------
def _crd_name(path: Path) -> str:
    return str(yaml.safe_load(path.read_text())["metadata"]["name"])


def _install_real_crds(lab: K8sLab) -> None:
    deadline = time.monotonic() + 90
    for path in CRDS:  # a CRD of the same name (another test's loose one) must be gone first
        name = _crd_name(path)
        lab.http("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        while lab.http("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")[0] != 404:
            assert time.monotonic() < deadline, f"{name} not deleted"
            time.sleep(0.2)
        status, doc = lab.http("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                               yaml.safe_load(path.read_text()))
        assert status == 201, (path.name, doc)
    for group, version, plural in (("kueue.x-k8s.io", "v1beta2", "clusterqueues"),
                                   ("kueue.x-k8s.io", "v1beta2", "workloads"),
                                   ("scheduling.volcano.sh", "v1beta1", "queues"),
                                   ("scheduling.volcano.sh", "v1beta1", "podgroups"),
                                   ("batch.volcano.sh", "v1alpha1", "jobs")):
        while lab.http("GET", f"/apis/{group}/{version}/{plural}")[0] != 200:
            assert time.monotonic() < deadline, f"{plural}.{group} not served"
            time.sleep(0.2)


def _remove_real_crds(lab: K8sLab) -> None:
    for path in CRDS:
        lab.http("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{_crd_name(path)}")


def _create(lab: K8sLab, path: str, body: dict[str, Any], status: dict[str, Any]) -> None:
    """Create, then write the status a controller would: through /status where the CRD has that
    subresource, else on the object (Volcano's PodGroup CRD has none; its controller updates the whole)."""
    lab.ok("POST", path, body)
    where = f"{path}/{body['metadata']['name']}"
    code, _ = lab.http("PATCH", f"{where}/status", {"status": status}, content_type="application/merge-patch+json")
    if code == 404:
        lab.merge(where, {"status": status})
    else:
        assert code == 200, (where, code)


KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
VOLCANO = "/apis/scheduling.volcano.sh/v1beta1"
VCJOB = "/apis/batch.volcano.sh/v1alpha1"


def _objects(lab: K8sLab) -> None:
    _create(lab, f"{KUEUE}/clusterqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq-gpu"},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"], "flavors": [
            {"name": "h100", "resources": [{"name": "cpu", "nominalQuota": "512"},
                                           {"name": "nvidia.com/gpu", "nominalQuota": "16"}]}]}]}},
        {"pendingWorkloads": 1, "admittedWorkloads": 2, "reservingWorkloads": 3,
         "flavorsUsage": [{"name": "h100", "resources": [{"name": "cpu", "total": "96", "borrowed": "0"},
                                                         {"name": "nvidia.com/gpu", "total": "12", "borrowed": "0"}]}],
         "conditions": [{"type": "Active", "status": "True", "reason": "Ready", "message": "Can admit new workloads",
                         "lastTransitionTime": "2024-05-01T10:00:00Z"}]})
    _create(lab, f"{KUEUE}/namespaces/hpc/workloads", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": "job-train-1"},
        "spec": {"queueName": "team-a", "podSets": [{"name": "main", "count": 4, "template": {"spec": {
            "containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}]}},
        {"admission": {"clusterQueue": "cq-gpu", "podSetAssignments": [{"name": "main", "count": 4,
                                                                          "flavors": {"nvidia.com/gpu": "h100"}}]},
         "admissionChecks": [{"name": "prov-req", "state": "Pending", "message": "Waiting for capacity",
                              "lastTransitionTime": "2024-05-01T10:00:00Z"}],
         "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                         "message": "Quota reserved in ClusterQueue cq-gpu", "lastTransitionTime": "2024-05-01T10:00:00Z"}]})
    _create(lab, f"{VOLCANO}/queues", {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "research"},
        "spec": {"weight": 1, "capability": {"nvidia.com/gpu": "32"}, "deserved": {"nvidia.com/gpu": "16"}}},
        {"state": "Open", "pending": 1, "running": 1, "inqueue": 1, "allocated": {"nvidia.com/gpu": "8", "cpu": "64"}})
    _create(lab, f"{VOLCANO}/namespaces/hpc/podgroups", {
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "mpi-job-pg"},
        "spec": {"queue": "research", "minMember": 4}},
        {"phase": "Inqueue", "conditions": [{"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
                                             "message": "4/4 tasks in gang unschedulable",
                                             "lastTransitionTime": "2024-05-01T10:00:00Z"}]})
    _create(lab, f"{VCJOB}/namespaces/hpc/jobs", {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "mpi-job"},
        "spec": {"queue": "research", "minAvailable": 4, "schedulerName": "volcano",
                 "tasks": [{"name": "worker", "replicas": 4, "template": {"spec": {"containers": [
                     {"name": "w", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}]}},
        {"state": {"phase": "Pending", "reason": "PodGroupPending", "message": "gang of 4 waits for GPUs"},
         "pending": 4, "running": 0, "minAvailable": 4})


async def test_kueue_and_volcano_with_their_real_crds(lab: K8sLab) -> None:
    lab.make_node("n1")
    _install_real_crds(lab)
    src = make_source(lab, queue_interval_s=0.5, events=False)
    try:
        _objects(lab)
        res = await collect_until(src, "5 queue objects", lambda r: len(r.k8s_queues or ()) == 5, timeout=120)
    finally:
        await src.close()
        _remove_real_crds(lab)
    items = {q.kind: q for q in res.k8s_queues or ()}
    cq = items["ClusterQueue"]
    assert cq.api == "kueue.x-k8s.io/v1beta2" and (cq.pending, cq.admitted) == (1, 2)
    assert cq.gpus == (QueueGpus(resource="nvidia.com/gpu", flavor="h100", quota=16, used=12),)
    wl = items["Workload"]
    assert (wl.state, wl.queue, wl.cluster_queue) == ("QuotaReserved", "team-a", "cq-gpu")
    assert wl.checks == ("prov-req (Pending): Waiting for capacity",)
    q = items["Queue"]
    assert (q.inqueue, q.gpu_text) == (1, "GPU 8/32 (deserved 16)")
    assert items["PodGroup"].min_member == 4 and "NotEnoughResources" in (items["PodGroup"].message or "")
    job = items["Job"]
    assert (job.api, job.state, job.min_member, job.pending, job.queue) == (
        "batch.volcano.sh/v1alpha1", "Pending", 4, 4, "research")
    assert job.message == "PodGroupPending: gang of 4 waits for GPUs"
