"""Kubernetes as 1.19+ clusters write it, without a server (issue #21 §2): events.k8s.io series,
GPUs of init containers and native sidecars by Kubernetes' own rule, MIG resource names, Kueue and
Volcano quota/usage. Real inputs where they exist (tests/fixtures/k8s/README.md); the live
counterparts are in tests/k8s/test_k8s_live_v119.py. Below them: the real objects with every field the
model keeps checked (Kueue Workload statuses as Kueue's guide shows them, events.k8s.io events, the GPU
Operator's validator pod, a GFD-labelled MIG node), and whole Kueue/Volcano queue items."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from hpctui.model import Pod, QueueGpus, Severity
from hpctui.model.jobs import K8sQueueItem
from hpctui.model.validate import Drops
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


def _workloads() -> dict[str, dict[str, Any]]:
    docs = yaml.safe_load_all((FIX / "kueue_workload-statuses_troubleshooting-docs.yaml").read_text())
    return {d["metadata"]["name"]: d for d in docs}


def _item(name: str) -> Any:
    return convert.queue_item("Workload", "kueue.x-k8s.io/v1beta2", _workloads()[name])


def test_kueue_workloads_from_the_troubleshooting_guide() -> None:
    admitted = _item("admitted")
    assert (admitted.kind, admitted.api, admitted.name, admitted.namespace) == (
        "Workload", "kueue.x-k8s.io/v1beta2", "admitted", None)
    assert (admitted.state, admitted.message, admitted.checks, admitted.cluster_queue) == ("Admitted", None, (), None)
    pending = _item("pending")
    assert pending.state == "Pending"
    assert pending.message == ("Pending: couldn't assign flavors to pod set main: insufficient quota for cpu "
                               "in flavor default-flavor in ClusterQueue")
    checks = _item("pending-checks")
    assert (checks.state, checks.cluster_queue, checks.checks) == ("QuotaReserved", "dws-cluster-queue",
                                                                   ("dws-prov (Pending)",))
    assert checks.message == "waiting for admission checks: dws-prov (Pending)"
    inadmissible = _item("inadmissible")
    assert (inadmissible.state, inadmissible.message) == ("Pending",
                                                          "Inadmissible: LocalQueue user-queue doesn't exist")
    preempted = _item("preempted")  # Evicted wins over the QuotaReserved=False retry
    assert (preempted.state, preempted.message) == ("Evicted",
                                                    "Preempted: Preempted to accommodate a higher priority Workload")


def test_a_ready_check_is_not_pending_and_quota_without_checks_has_no_message() -> None:
    wl = _workloads()["pending-checks"]
    wl["status"]["admissionChecks"][0]["state"] = "Ready"
    item = convert.queue_item("Workload", "kueue.x-k8s.io/v1beta2", wl)
    assert (item.state, item.checks, item.message) == ("QuotaReserved", (), None)
    wl["status"]["admissionChecks"] = [{"name": "x"}]  # no state yet: Pending
    assert convert.queue_item("Workload", "v", wl).checks == ("x (Pending)",)


def test_series_event_every_field() -> None:
    obj = json.loads((FIX / "event_failedscheduling_series_kube-apiserver-v1.20.2.json").read_text())
    ev = convert.event(obj)
    assert (ev.time, ev.source, ev.object, ev.severity) == (
        parse_time("2024-05-01T10:05:00Z"), "k8s", "pod/hpc/p1", Severity.WARNING)
    assert ev.message == "FailedScheduling: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu. (×2)"
    assert convert.event_key(obj) == ("3f8acc34-acf5-4802-8ead-5a411ce05c99", "||2|2024-05-01T10:05:00.000000Z")
    del obj["series"]
    once = convert.event(obj)
    assert once.time == parse_time("2024-05-01T10:00:00Z") and not once.message.endswith(")")
    obj["involvedObject"] = {"kind": "Node", "name": "gpu01.lab"}
    assert convert.event(obj, lambda n: n.split(".")[0]).object == "node/gpu01"
    assert convert.event(obj).object == "node/gpu01.lab"


def test_events_k8s_io_event_every_field() -> None:
    obj = yaml.safe_load((FIX / "event_scheduled_events-k8s-io_kspan.yaml").read_text())
    ev = convert.event(obj)
    assert (ev.time, ev.object, ev.severity) == (parse_time("2020-12-03T17:53:51.917155Z"),
                                                 "pod/default/hello-world-f77b4f6c8-6tcj2", Severity.INFO)
    assert convert.event_key(obj) == ("e60e3be1-9c3e-41ec-805b-2ddfdf4f2b42", "|||")
    obj["eventTime"] = None  # the older fallbacks, in order: firstTimestamp, then creationTimestamp
    assert convert.event(obj).time == parse_time("2020-12-03T17:53:51Z")
    obj["firstTimestamp"] = "2020-12-03T17:00:00Z"
    assert convert.event(obj).time == parse_time("2020-12-03T17:00:00Z")
    bare = convert.event({"involvedObject": {"name": "x"}})
    assert (bare.object, bare.message, bare.time) == ("object/x", "(no message)", 0.0)
    assert convert.event_key({"metadata": {"name": "n"}, "count": 3}) == ("n", "3|||")


def test_validator_pod_every_field() -> None:
    obj = yaml.safe_load((FIX / "gpu-operator_plugin-workload-validation.yaml").read_text())
    obj["metadata"].update(name="nvidia-device-plugin-validator-x7k2p", namespace="gpu-operator", uid="u-1",
                           creationTimestamp="2024-05-01T10:00:00Z",
                           ownerReferences=[{"kind": "ClusterPolicy", "name": "cluster-policy"}])
    obj["spec"]["initContainers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    obj["spec"]["nodeName"] = "gpu01"
    obj["status"] = {"phase": "Pending", "startTime": "2024-05-01T10:00:05Z",
                     "conditions": [{"type": "Ready", "status": "False"}],
                     "initContainerStatuses": [{"restartCount": 2, "state": {"waiting": {"reason": "PodInitializing"}}}]}
    drops = Drops()
    p = convert.pod(obj, drops)
    assert (p.namespace, p.name, p.node, p.phase, p.reason, p.message) == (
        "gpu-operator", "nvidia-device-plugin-validator-x7k2p", "gpu01", "Pending", None, None)
    assert (p.gpus_requested, p.gpu_resources, p.owner_kind, p.owner_name) == (
        1, {"nvidia.com/gpu": 1}, "ClusterPolicy", "cluster-policy")
    assert (p.queue, p.pod_group, p.scheduler, p.restarts, p.ready, p.mirror, p.uid) == (
        None, None, None, 2, False, False, "u-1")
    assert (p.start_time, p.created) == (parse_time("2024-05-01T10:00:05Z"), parse_time("2024-05-01T10:00:00Z"))
    assert p.labels == {"app": "nvidia-device-plugin-validator"} and drops.warnings() == []
    obj["metadata"]["deletionTimestamp"] = "2024-05-01T10:01:00Z"
    assert convert.pod(obj).reason == "Terminating"
    obj["spec"]["nodeName"] = "bad node!"
    with pytest.raises(convert.BadObject):
        convert.pod(obj)


def test_crashloop_names_the_last_exit_and_restarts_add_up() -> None:
    obj = yaml.safe_load((FIX / "gpu-operator_plugin-workload-validation.yaml").read_text())
    obj["metadata"]["name"] = "v"
    obj["status"] = {"containerStatuses": [
        {"restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
         "lastState": {"terminated": {"reason": "Error", "exitCode": 1}}},
        {"restartCount": 3, "state": {"terminated": {"reason": "OOMKilled", "message": "oom"}}}]}
    p = convert.pod(obj)
    assert (p.reason, p.message, p.restarts, p.phase) == ("CrashLoopBackOff", "last exit: Error (code 1)", 7,
                                                          "Unknown")
    obj["status"]["containerStatuses"][0]["state"] = {"terminated": {"reason": "Completed"}}
    assert (convert.pod(obj).reason, convert.pod(obj).message) == ("OOMKilled", "oom")
    obj["status"] = {"reason": "Evicted", "message": "The node was low on resource: memory."}
    assert (convert.pod(obj).reason, convert.pod(obj).message) == ("Evicted", "The node was low on resource: memory.")


def test_mig_node_from_real_gfd_labels_every_field() -> None:
    labels = json.loads((FIX / "gpu-operator_node-labels_h100-80gb-hbm3_mig-mixed_all-balanced.json").read_text())
    labels["feature.node.kubernetes.io/cpu-cpuid.AVX512F"] = "true"
    drops = Drops()
    info = convert.node_info({
        "metadata": {"name": "h100-1", "labels": labels},
        "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule",
                             "timeAdded": "2024-05-01T10:00:00Z"}, {}]},
        "status": {"capacity": {"nvidia.com/mig-1g.10gb": "2", "nvidia.com/mig-2g.20gb": "1", "cpu": "64"},
                   "allocatable": {"nvidia.com/mig-1g.10gb": "2", "nvidia.com/mig-2g.20gb": "-1"},
                   "conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady",
                                   "message": "PLEG is not healthy"}, {"type": "DiskPressure"}]}}, drops)
    assert info.mig_capacity == {"1g.10gb": 2, "2g.20gb": 1} and info.mig_allocatable == {"1g.10gb": 2}
    assert drops.warnings() and "allocatable nvidia.com/mig-2g.20gb" in drops.warnings()[0]
    assert (info.gpu_capacity, info.gpu_allocatable, info.unschedulable) == (None, None, False)
    assert info.conditions == {"Ready": "False", "DiskPressure": "Unknown"}
    assert info.condition_messages == {"Ready": "KubeletNotReady PLEG is not healthy"}
    t = info.taints
    assert (t[0].key, t[0].value, t[0].effect, t[0].time_added) == (
        "nvidia.com/gpu", "present", "NoSchedule", parse_time("2024-05-01T10:00:00Z"))
    assert (t[1].key, t[1].effect, t[1].value, t[1].time_added) == ("?", "?", None, None)
    assert not any(k.startswith("feature.node.kubernetes.io/") for k in info.labels)
    assert info.labels["nvidia.com/mig.strategy"] == "mixed"
    with pytest.raises(convert.BadObject):
        convert.node_info({"metadata": {"name": "bad node"}})


@pytest.mark.parametrize(("text", "n"), [("8", 8), (" 2 ", 2), ("1k", 1000), ("2M", 2_000_000), ("1G", 10**9),
                                         ("1Ki", None), ("x", None), ("", None), ("1" * 21, None)])
def test_quantities(text: str, n: int | None) -> None:
    assert convert.parse_quantity_int(text) == n


def test_local_queue_and_cluster_queue_whole_items() -> None:
    """Kueue's single-ClusterQueue setup (kubernetes-sigs/kueue site/static/examples/admin/
    single-clusterqueue-setup.yaml) with the status the controller writes."""
    lq = {"metadata": {"namespace": "default", "name": "user-queue"}, "spec": {"clusterQueue": "cluster-queue"},
          "status": {"pendingWorkloads": 2, "reservingWorkloads": 1,
                     "conditions": [{"type": "Active", "status": "True", "reason": "Ready"}]}}
    assert convert.queue_item("LocalQueue", "kueue.x-k8s.io/v1beta2", lq) == K8sQueueItem(
        kind="LocalQueue", api="kueue.x-k8s.io/v1beta2", name="user-queue", namespace="default",
        queue="cluster-queue", state="Active", pending=2, admitted=1)
    lq["status"]["admittedWorkloads"] = 3
    lq["status"]["conditions"] = [{"type": "Active", "status": "False", "reason": "ClusterQueueDoesNotExist",
                                   "message": "Can't submit new workloads to clusterQueue"}]
    assert convert.queue_item("LocalQueue", "kueue.x-k8s.io/v1beta2", lq) == K8sQueueItem(
        kind="LocalQueue", api="kueue.x-k8s.io/v1beta2", name="user-queue", namespace="default",
        queue="cluster-queue", state="Inactive", pending=2, admitted=3,
        message="ClusterQueueDoesNotExist: Can't submit new workloads to clusterQueue")
    cq = {"metadata": {"name": "cluster-queue"}, "spec": {"resourceGroups": [{
        "coveredResources": ["cpu", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"], "flavors": [
            {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": 9},
                                                     {"name": "nvidia.com/gpu", "nominalQuota": 8},
                                                     {"name": "nvidia.com/mig-1g.10gb", "nominalQuota": "7"}]}]}]},
        "status": {"flavorsUsage": [{"name": "default-flavor", "resources": [
            {"name": "nvidia.com/gpu", "total": "6"}, {"name": "cpu", "total": "3"}]},
            {"name": "spot", "resources": [{"name": "nvidia.com/gpu", "total": 1}]}]}}
    assert convert.queue_item("ClusterQueue", "kueue.x-k8s.io/v1beta2", cq) == K8sQueueItem(
        kind="ClusterQueue", api="kueue.x-k8s.io/v1beta2", name="cluster-queue", state="Active", gpus=(
            QueueGpus(resource="nvidia.com/gpu", flavor="default-flavor", quota=8, used=6),
            QueueGpus(resource="nvidia.com/mig-1g.10gb", flavor="default-flavor", quota=7),
            QueueGpus(resource="nvidia.com/gpu", flavor="spot", used=1)))


def test_volcano_queue_podgroup_and_job_whole_items() -> None:
    """Field names as in the Volcano CRDs (tests/fixtures/k8s/crds/)."""
    queue = {"metadata": {"name": "research"},
             "spec": {"capability": {"cpu": "256", "nvidia.com/gpu": "32"},
                      "deserved": {"nvidia.com/mig-1g.10gb": "7"}},
             "status": {"state": "Open", "pending": 2, "running": 1, "inqueue": 3,
                        "allocated": {"nvidia.com/gpu": "8", "pods": "8"}}}
    assert convert.queue_item("Queue", "scheduling.volcano.sh/v1beta1", queue) == K8sQueueItem(
        kind="Queue", api="scheduling.volcano.sh/v1beta1", name="research", state="Open", pending=2, admitted=1,
        inqueue=3, gpus=(QueueGpus(resource="nvidia.com/gpu", quota=32, used=8),
                         QueueGpus(resource="nvidia.com/mig-1g.10gb", deserved=7)))
    pg = {"metadata": {"name": "mpi-pg", "namespace": "hpc"}, "spec": {"queue": "research", "minMember": 4},
          "status": {"phase": "Pending", "conditions": [
              {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
               "message": "3/4 tasks in gang unschedulable"},
              {"type": "Scheduled", "status": "True"},
              {"type": "Unschedulable", "status": "False", "reason": "old"}]}}
    assert convert.queue_item("PodGroup", "scheduling.volcano.sh/v1beta1", pg) == K8sQueueItem(
        kind="PodGroup", api="scheduling.volcano.sh/v1beta1", name="mpi-pg", namespace="hpc", queue="research",
        state="Pending", message="NotEnoughResources: 3/4 tasks in gang unschedulable", min_member=4)
    pg["status"]["phase"] = "Running"
    assert convert.queue_item("PodGroup", "v", pg).message is None
    job = {"metadata": {"name": "mpi", "namespace": "hpc"}, "spec": {"queue": "research", "minAvailable": 4},
           "status": {"state": {"phase": "Running", "reason": "x", "message": "y"}, "pending": 0, "running": 4}}
    assert convert.queue_item("Job", "batch.volcano.sh/v1alpha1", job) == K8sQueueItem(
        kind="Job", api="batch.volcano.sh/v1alpha1", name="mpi", namespace="hpc", queue="research",
        state="Running", pending=0, admitted=4, min_member=4)
    job["status"]["state"] = {"phase": "Aborted", "message": "killed by user"}
    assert convert.queue_item("Job", "v", job).message == "killed by user"
    assert convert.queue_item("Job", "v", {"metadata": {"name": "j"}}).state == "Pending"
    assert convert.queue_item("Queue", "v", {"metadata": {"name": "q"}}).state == "Unknown"
