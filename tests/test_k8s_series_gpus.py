"""Kubernetes as 1.19+ clusters write it, without a server (issue #21 §2): events.k8s.io series,
GPUs of init containers and native sidecars by Kubernetes' own rule, MIG resource names, Kueue and
Volcano quota/usage. Real inputs where they exist (tests/fixtures/k8s/README.md); the live
counterparts are in tests/k8s/test_k8s_live_v119.py."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from hpctui.model import Pod, QueueGpus
from hpctui.model.jobs import K8sQueueItem
from hpctui.sources.k8s import convert
from hpctui.sources.k8s.convert import effective_gpu_requests, parse_time
from hpctui.ui.fmt import k8s_queue_summary
from hpctui.ui.widgets.tables import POD_COLUMNS

FIX = Path(__file__).resolve().parent / "fixtures" / "k8s"


def _series_event() -> dict[str, Any]:
    """core/v1 view, as kube-apiserver v1.20.2 served it, of an events.k8s.io/v1 FailedScheduling with a series."""
    return dict(json.loads((FIX / "event_failedscheduling_series_kube-apiserver-v1.20.2.json").read_text()))


def test_series_event_shows_the_latest_time_and_the_repeat_count() -> None:
    ev = convert.event(_series_event())
    assert ev.time == parse_time("2024-05-01T10:05:00Z")  # series.lastObservedTime, not eventTime (10:00)
    assert ev.message.endswith("Insufficient nvidia.com/gpu. (×2)") and ev.object == "pod/hpc/p1"


def test_each_repeat_of_a_series_is_a_new_occurrence_a_resend_is_not() -> None:
    first = _series_event()
    del first["series"]
    second = _series_event()
    third = copy.deepcopy(second)
    third["series"] = {"count": 3, "lastObservedTime": "2024-05-01T10:10:00.000000Z"}
    keys = [convert.event_key(e) for e in (first, second, third)]
    assert len(set(keys)) == 3 and {k[0] for k in keys} == {"3f8acc34-acf5-4802-8ead-5a411ce05c99"}
    assert convert.event_key(copy.deepcopy(third)) == keys[2]  # the same state again (a relist): one occurrence
    legacy = {"metadata": {"uid": "u"}, "count": 4, "lastTimestamp": "2024-05-01T10:00:00Z"}
    assert convert.event_key(legacy) != convert.event_key(dict(legacy, count=5, lastTimestamp="2024-05-01T10:01:00Z"))


def test_real_events_k8s_io_scheduler_event_without_count_or_last_timestamp() -> None:
    obj = yaml.safe_load((FIX / "event_scheduled_events-k8s-io_kspan.yaml").read_text())
    ev = convert.event(obj)
    assert ev.time == parse_time("2020-12-03T17:53:51.917155Z")
    assert ev.message == "Scheduled: Successfully assigned default/hello-world-f77b4f6c8-6tcj2 to node2"


def _validator_pod(resource: str) -> dict[str, Any]:
    """GPU Operator's device-plugin validator pod, filled as the validator fills it
    (cmd/nvidia-validator/main.go: the init container's limits and requests = {resource: 1})."""
    pod = yaml.safe_load((FIX / "gpu-operator_plugin-workload-validation.yaml").read_text())
    pod["metadata"].update(name="nvidia-device-plugin-validator-x7k2p", namespace="gpu-operator")
    pod["spec"]["initContainers"][0]["resources"] = {"limits": {resource: 1}, "requests": {resource: 1}}
    return dict(pod)


def test_gpus_of_an_init_container_count() -> None:
    p = convert.pod(_validator_pod("nvidia.com/gpu"))
    assert p.gpus_requested == 1 and p.gpu_resources == {"nvidia.com/gpu": 1} and p.gpu_text == "1 GPU"


def test_a_mig_slice_keeps_its_profile() -> None:
    p = convert.pod(_validator_pod("nvidia.com/mig-1g.10gb"))
    assert p.gpus_requested == 1 and p.gpu_resources == {"nvidia.com/mig-1g.10gb": 1}
    assert p.gpu_text == "1 mig-1g.10gb"
    gpu_col = next(c for c in POD_COLUMNS if c.key == "gpus")
    assert gpu_col.text(p) == "1×1g.10gb"


def _c(name: str, gpus: int | None = None, *, sidecar: bool = False, res: str = "nvidia.com/gpu") -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": "x"}
    if gpus is not None:
        c["resources"] = {"limits": {res: str(gpus)}}
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


def test_effective_request_follows_kubernetes_sidecar_rule() -> None:
    # KEP-753 / component-helpers: max(sum(app) + sum(sidecars), max_i(init_i + sidecars started before i))
    spec = {"initContainers": [_c("sc1", 1, sidecar=True), _c("init", 4), _c("sc2", 2, sidecar=True)],
            "containers": [_c("app", 1)]}
    assert effective_gpu_requests(spec) == {"nvidia.com/gpu": 5}  # init (4) + sc1 (1) > app 1 + sc1 + sc2 = 4
    spec["initContainers"][1] = _c("init", 2)
    assert effective_gpu_requests(spec) == {"nvidia.com/gpu": 4}  # now the running phase is the peak
    assert effective_gpu_requests({"initContainers": [_c("a", 2), _c("b", 3)], "containers": [_c("m", 1)]}) == {
        "nvidia.com/gpu": 3}  # plain init containers run one at a time: their max, not their sum
    mixed = {"initContainers": [_c("v", 1, res="nvidia.com/mig-1g.10gb")], "containers": [_c("m", 2)]}
    assert effective_gpu_requests(mixed) == {"nvidia.com/gpu": 2, "nvidia.com/mig-1g.10gb": 1}
    assert Pod(namespace="n", name="p", gpus_requested=3,
               gpu_resources=effective_gpu_requests(mixed)).gpu_text == "2 GPU + 1 mig-1g.10gb"


def test_pod_group_of_a_volcano_pod() -> None:
    obj = {"metadata": {"name": "mpi-worker-0", "namespace": "hpc",
                        "annotations": {"scheduling.k8s.io/group-name": "mpi-job-pg",
                                        "volcano.sh/queue-name": "research"}},
           "spec": {"schedulerName": "volcano", "containers": [_c("w", 8)]}}
    p = convert.pod(obj)
    assert (p.pod_group, p.queue, p.gpus_requested) == ("mpi-job-pg", "research", 8)


CQ = {"metadata": {"name": "cq-gpu"},
      "spec": {"resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"], "flavors": [
          {"name": "h100", "resources": [{"name": "cpu", "nominalQuota": "512"},
                                         {"name": "nvidia.com/gpu", "nominalQuota": 16}]},
          {"name": "a100", "resources": [{"name": "cpu", "nominalQuota": "256"},
                                         {"name": "nvidia.com/gpu", "nominalQuota": "8"}]}]}]},
      "status": {"pendingWorkloads": 3, "admittedWorkloads": 2,
                 "flavorsUsage": [{"name": "h100", "resources": [{"name": "cpu", "total": "96", "borrowed": "0"},
                                                                 {"name": "nvidia.com/gpu", "total": "16",
                                                                  "borrowed": "0"}]},
                                  {"name": "a100", "resources": [{"name": "nvidia.com/gpu", "total": "0"}]}]}}


def test_kueue_cluster_queue_gpu_quota_and_usage() -> None:
    q = convert.queue_item("ClusterQueue", "kueue.x-k8s.io/v1beta2", CQ)
    assert q.gpus == (QueueGpus(resource="nvidia.com/gpu", flavor="h100", quota=16, used=16),
                      QueueGpus(resource="nvidia.com/gpu", flavor="a100", quota=8, used=0))
    assert q.gpu_text == "GPU 16/24"
    assert k8s_queue_summary([q]) == "ClusterQueue cq-gpu: 3 pending/2 admitted, GPU 16/24"


def test_kueue_workload_cluster_queue_and_pending_admission_checks() -> None:
    wl = {"metadata": {"name": "job-train-1", "namespace": "hpc"}, "spec": {"queueName": "team-a"},
          "status": {"admission": {"clusterQueue": "cq-gpu", "podSetAssignments": []},
                     "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
                                    {"type": "Admitted", "status": "False", "reason": "NoChecks"}],
                     "admissionChecks": [{"name": "prov-req", "state": "Pending",
                                          "message": "Waiting for ProvisioningRequest capacity"},
                                         {"name": "multikueue", "state": "Ready", "message": ""}]}}
    q = convert.queue_item("Workload", "kueue.x-k8s.io/v1beta2", wl)
    assert (q.state, q.queue, q.cluster_queue) == ("QuotaReserved", "team-a", "cq-gpu")
    assert q.checks == ("prov-req (Pending): Waiting for ProvisioningRequest capacity",)
    assert q.message == "waiting for admission checks: prov-req (Pending): Waiting for ProvisioningRequest capacity"


def test_volcano_queue_podgroup_and_job() -> None:
    queue = convert.queue_item("Queue", "scheduling.volcano.sh/v1beta1", {
        "metadata": {"name": "research"},
        "spec": {"weight": 1, "capability": {"cpu": "256", "nvidia.com/gpu": "32"}, "deserved": {"nvidia.com/gpu": "16"}},
        "status": {"state": "Open", "pending": 2, "running": 1, "inqueue": 1,
                   "allocated": {"cpu": "64", "nvidia.com/gpu": "8", "pods": "8"}}})
    assert queue.gpus == (QueueGpus(resource="nvidia.com/gpu", quota=32, deserved=16, used=8),)
    assert (queue.inqueue, queue.gpu_text) == (1, "GPU 8/32 (deserved 16)")
    pg = convert.queue_item("PodGroup", "scheduling.volcano.sh/v1beta1", {
        "metadata": {"name": "mpi-job-pg", "namespace": "hpc"}, "spec": {"queue": "research", "minMember": 4},
        "status": {"phase": "Inqueue"}})
    assert (pg.min_member, pg.state) == (4, "Inqueue")
    job = convert.queue_item("Job", "batch.volcano.sh/v1alpha1", {
        "metadata": {"name": "mpi-job", "namespace": "hpc"}, "spec": {"queue": "research", "minAvailable": 4},
        "status": {"state": {"phase": "Pending", "reason": "PodGroupPending", "message": "waiting for 4 GPUs"},
                   "pending": 4, "running": 0}})
    assert (job.kind, job.state, job.min_member, job.pending) == ("Job", "Pending", 4, 4)
    assert job.message == "PodGroupPending: waiting for 4 GPUs"
    assert K8sQueueItem(kind="Queue", api="v", name="q").gpu_text == ""
