"""Kubernetes objects and watch streams under mutation: convert.py, KubeClient.watch and K8sSource._watch.

Declared errors: ``convert`` raises :class:`BadObject` for an object the model cannot hold (the
source turns it into one dropped record); ``KubeClient.watch`` and ``K8sSource._watch`` raise
:class:`K8sError` (an ERROR event, a dropped connection), which ``_run`` answers with a relist or
a backoff. Anything else from ``_watch`` is a bug: it ends the watch, the stream relists from
scratch and reports "TypeName: ..." instead of costing the one bad record.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from fuzzkit import assert_clean, check, chunked, clean_message, mutated_bytes, mutated_json, seed_json, time_bound
from hypothesis import example, given
from hypothesis import strategies as st

from hpctui.sources.k8s import convert
from hpctui.sources.k8s.client import K8sError, KubeClient
from hpctui.sources.k8s.settings import K8sSettings
from hpctui.sources.k8s.source import K8sSource

LABELS = seed_json("k8s/gpu-operator_node-labels_h100-80gb-hbm3_mig-mixed_all-balanced.json")
NODE = {
    "metadata": {"name": "gpu01", "uid": "u-1", "resourceVersion": "41", "labels": LABELS},
    "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule", "timeAdded": "2024-05-01T10:00:00Z"}],
             "unschedulable": False},
    "status": {"capacity": {"nvidia.com/gpu": "8", "nvidia.com/mig-1g.10gb": "7", "cpu": "96"},
               "allocatable": {"nvidia.com/gpu": "8", "nvidia.com/mig-1g.10gb": "7"},
               "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                               "message": "kubelet is posting ready status"},
                              {"type": "MemoryPressure", "status": "False"}]},
}
POD = {
    "metadata": {"name": "train-0", "namespace": "hpc", "uid": "p-1", "resourceVersion": "42",
                 "creationTimestamp": "2024-05-01T10:00:00Z", "labels": {"kueue.x-k8s.io/queue-name": "q"},
                 "annotations": {"volcano.sh/queue-name": "v"},
                 "ownerReferences": [{"kind": "Job", "name": "train", "controller": True}]},
    "spec": {"nodeName": "gpu01", "schedulerName": "default-scheduler",
             "containers": [{"resources": {"limits": {"nvidia.com/gpu": "2"}, "requests": {"nvidia.com/gpu": "2"}}}]},
    "status": {"phase": "Running", "startTime": "2024-05-01T10:00:01Z",
               "conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}],
               "containerStatuses": [{"restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff",
                                                                             "message": "back-off"}},
                                      "lastState": {"terminated": {"reason": "Error", "exitCode": 1}}}]},
}
EVENT = {
    "metadata": {"name": "gpu01.17a", "uid": "e-1", "resourceVersion": "43"},
    "involvedObject": {"kind": "Node", "name": "gpu01", "namespace": ""}, "reason": "NodeNotReady",
    "message": "Node gpu01 status is now: NodeNotReady", "type": "Warning", "count": 3,
    "lastTimestamp": "2024-05-01T10:00:00Z", "eventTime": None,
}
QUEUES = [
    ("Workload", {"metadata": {"name": "w", "namespace": "hpc"}, "spec": {"queueName": "q"},
                  "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                                             "message": "waiting for quota"}]}}),
    ("ClusterQueue", {"metadata": {"name": "cq"}, "spec": {"clusterQueue": "cq"},
                      "status": {"pendingWorkloads": 3, "admittedWorkloads": "2",
                                 "conditions": [{"type": "Active", "status": "False", "reason": "Stopped"}]}}),
    ("PodGroup", {"metadata": {"name": "pg", "namespace": "hpc"}, "spec": {"queue": "default"},
                  "status": {"phase": "Pending", "conditions": [{"type": "Unschedulable", "status": "True",
                                                                "reason": "NotEnoughResources", "message": "3/4"}]}}),
    ("Queue", {"metadata": {"name": "default"}, "status": {"state": "Open", "pending": 1, "running": 2}}),
]
OBJECTS = [NODE, POD, EVENT, *(obj for _kind, obj in QUEUES)]


def _convert_all(obj: Any) -> list[Any]:
    out: list[Any] = []
    for fn in (convert.node_info, convert.pod, lambda o: convert.event(o, lambda n: n),
               *(lambda o, k=kind: convert.queue_item(k, "x.io/v1", o) for kind, _ in QUEUES)):
        got = check(lambda fn=fn: fn(obj), raises=convert.BadObject)
        out.append(got)
    with time_bound():
        convert.event_key(obj)  # an identity (uid, count), never shown: raw strings are fine
    return out


def _edited(obj: dict[str, Any], path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    out = json.loads(json.dumps(obj))
    at = out
    for key in path[:-1]:
        at = at[key]
    at[path[-1]] = value
    return out


# Found by this test: a quantity "8²" passed isdigit() and int() raised ValueError (the node was
# dropped as a crash); a CrashLoopBackOff's exitCode went into the message raw, escapes and all.
@example(_edited(NODE, ("status", "capacity", "nvidia.com/gpu"), "8\u00b2"))
@example(_edited(NODE, ("status", "allocatable", "nvidia.com/mig-1g.10gb"), "\u00b2k"))
@example(_edited(POD, ("status", "containerStatuses", 0, "lastState", "terminated", "exitCode"), "\x1b]0;owned\x07"))
@given(mutated_json(OBJECTS, max_edits=6))
def test_convert_raises_only_bad_object(obj: Any) -> None:
    _convert_all(obj)


# -- watch streams ----------------------------------------------------------------------------

class _Raw:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def stream(self, amt: Any = None, decode_content: bool = False) -> Iterator[bytes]:
        yield from self.chunks

    def release_conn(self) -> None:
        pass


class _Resp:
    status = 200
    reason = "OK"

    def __init__(self, chunks: list[bytes]) -> None:
        self.response = _Raw(chunks)


class _FakeKube(KubeClient):
    """KubeClient whose watch request answers with fixed bytes (no API server, no kubeconfig)."""

    def __init__(self, chunks: list[bytes]) -> None:
        super().__init__(K8sSettings(), api_client=object())
        self.chunks = chunks

    def _call(self, method: str, path: str, **_kw: Any) -> Any:
        return _Resp(self.chunks)


def _events(kind: str, obj: Any) -> list[dict[str, Any]]:
    return [{"type": "ADDED", "object": obj}, {"type": "MODIFIED", "object": obj},
            {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "99"}}}, {"type": "DELETED", "object": obj}]


SEED_LINES = {res: [json.dumps(ev) for ev in _events(res, obj)]
              for res, obj in (("nodes", NODE), ("pods", POD), ("events", EVENT))}


@st.composite
def watch_bytes(draw: st.DrawFn) -> tuple[str, list[bytes]]:
    """A resource and the watch stream's bytes: its real event lines with events mutated as JSON,
    then the whole stream mutated as bytes, cut anywhere."""
    resource = draw(st.sampled_from(sorted(SEED_LINES)))
    events = [json.loads(line) for line in SEED_LINES[resource]]
    lines = [json.dumps(ev) for ev in draw(st.lists(mutated_json(events, max_edits=3), min_size=1, max_size=4))]
    data = ("\n".join(lines) + "\n").encode()
    data = draw(st.one_of(st.just(data), mutated_bytes([data], max_edits=4)))
    return resource, draw(chunked(data))


def _watched(resource: str, chunks: list[bytes]) -> K8sSource:
    src = K8sSource(K8sSettings())
    src.client = _FakeKube(chunks)
    stream = next(s for s in src.streams if s.resource == resource)
    stream.rv = "1"
    with time_bound():
        try:
            src._watch(stream)
        except K8sError as exc:
            clean_message(exc)
    return src


# Found by this test: a DELETED event whose metadata is not an object raised AttributeError out
# of _watch (the watch ended, the stream relisted and showed "AttributeError: ...").
@example(("pods", [json.dumps({"type": "DELETED", "object": {"metadata": ["x"]}}).encode() + b"\n"]))
@example(("nodes", [b'{"type": "DELETED", "object": {"metadata": "gpu01"}}\n']))
# ... and an ERROR event's reason reached the status line raw (K8sError cleaned only the message).
@example(("pods", [b'{"type": "ERROR", "object": {"code": 500, "reason": "\\u001b[2J", "message": "x"}}\n']))
# ... and a nameless object's namespace reached the "dropped N malformed object(s)" warning raw.
@example(("pods", [b'{"type": "ADDED", "object": {"metadata": {"namespace": "\\u001b]0;owned\\u0007"}}}\n']))
@given(watch_bytes())
def test_watch_lines_raise_only_k8s_error(case: tuple[str, list[bytes]]) -> None:
    resource, chunks = case
    src = _watched(resource, chunks)
    for s in src.streams:
        s.synced = True  # listed (empty) before the watch: the result shows what the watch brought
    stream = next(s for s in src.streams if s.resource == resource)
    assert_clean(stream.error)
    check(src._result)  # the model objects and warnings the UI gets (items' keys are identities only)
