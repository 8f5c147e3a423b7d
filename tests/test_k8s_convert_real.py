"""K8s object conversion on real objects (tests/fixtures/k8s/README.md): Kueue Workload statuses as the
Kueue guide shows them, events.k8s.io events, the GPU Operator's validator pod and a GFD-labelled MIG
node; every field the model keeps is checked, not only the headline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from hpctui.model import QueueGpus, Severity
from hpctui.model.jobs import K8sQueueItem
from hpctui.sources.k8s import convert
from hpctui.sources.k8s.convert import parse_time
from hpctui.validate import Drops

FIX = Path(__file__).resolve().parent / "fixtures" / "k8s"


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
