"""Raw Kubernetes objects (JSON dicts as the API server sends them) → the typed model.

Pure functions, no client: fed by lists and watch events of the source and by tests.
Every field may be missing or null (``_d``/``_l`` make that harmless); every string
goes through :func:`hpctui.base.sanitize.clean_text`. A malformed object raises
:class:`BadObject`, which the source turns into one dropped record and a warning. A count
that is present but not plausible (a negative or 300-digit GPU quantity) is N/A, recorded in
the ``drops`` a caller passes (:class:`hpctui.model.validate.Drops`): the source shows one warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hpctui.base.digits import is_uint
from hpctui.base.sanitize import clean_text
from hpctui.base.times import parse_time
from hpctui.model import Event, K8sNodeInfo, K8sQueueItem, Pod, QueueGpus, Severity, Taint
from hpctui.model.validate import COUNT, Drops, is_node_name, show_value
from hpctui.model.volumes import StorageClassInfo, VolumeClaim

GPU_RESOURCE = "nvidia.com/gpu"
MIG_PREFIX = "nvidia.com/mig-"
MIG_CONFIG = "nvidia.com/mig.config"
MIG_STATE = "nvidia.com/mig.config.state"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
# Queue labels/annotations: Kueue's LocalQueue label; Volcano's queue annotation (set on the pods of a vcjob).
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
VOLCANO_QUEUE_KEYS = ("volcano.sh/queue-name", "scheduling.volcano.sh/queue-name")
# the PodGroup of a pod (Volcano's KubeGroupNameAnnotationKey, volcano.sh/apis scheduling/v1beta1/labels.go)
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
NODE_LABEL_SKIP = ("feature.node.kubernetes.io/",)  # NFD CPU flags: hundreds per node, not shown
KNOWN_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable")


class BadObject(ValueError):
    """An object the model cannot hold (no name, wrong types)."""


def _d(obj: Any, key: str) -> dict[str, Any]:
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, dict) else {}


def _l(obj: Any, key: str) -> list[Any]:
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, list) else []


def _s(obj: Any, key: str) -> str | None:
    value = obj.get(key) if isinstance(obj, Mapping) else None
    if value is None:
        return None
    return clean_text(value if isinstance(value, str) else str(value))


def _i(value: Any) -> int | None:
    """A count (GPUs, MIG slices): a non-negative int below 2**31 (hpctui.model.validate.COUNT), else None."""
    if isinstance(value, bool):
        return None
    n = value if isinstance(value, int) else parse_quantity_int(value) if isinstance(value, str) else None
    return n if n is not None and COUNT.ok(n) else None


def _count(value: Any, drops: Drops | None, field: str, where: str) -> int | None:
    """:func:`_i`; a value that is present but no plausible count is recorded in ``drops``."""
    n = _i(value)
    if n is None and value is not None and drops is not None:
        drops.value(clean_text(field), value if isinstance(value, (int, float)) else str(value), where)
    return n


def parse_quantity_int(text: str) -> int | None:
    """Integer quantities as extended resources use them ("8", "1k"); None for anything else."""
    text = text.strip()
    if len(text) > 20:  # no count has that many digits (nor does int() take 5000 of them)
        return None
    if is_uint(text):
        return int(text)
    for suffix, mult in (("k", 1000), ("M", 1000**2), ("G", 1000**3)):
        if text.endswith(suffix) and is_uint(text[:-1]):
            return int(text[:-1]) * mult
    return None


def name_of(obj: Mapping[str, Any]) -> str:
    name = _d(obj, "metadata").get("name")
    if not isinstance(name, str) or not name:
        raise BadObject("object without metadata.name")
    return name


def node_info(obj: Mapping[str, Any], drops: Drops | None = None) -> K8sNodeInfo:
    """A core/v1 Node; an implausible GPU/MIG quantity is N/A, recorded in ``drops``."""
    name = clean_text(name_of(obj))
    if not is_node_name(name):  # the one node-name rule of every source (hpctui.model.validate)
        raise BadObject(f"invalid node name {show_value(name)}")
    meta, spec, status = _d(obj, "metadata"), _d(obj, "spec"), _d(obj, "status")
    conditions: dict[str, str] = {}
    messages: dict[str, str] = {}
    for cond in _l(status, "conditions"):
        ctype = _s(cond, "type")
        if not ctype:
            continue
        conditions[ctype] = _s(cond, "status") or "Unknown"
        text = " ".join(x for x in (_s(cond, "reason"), _s(cond, "message")) if x)
        if text:
            messages[ctype] = text
    taints = tuple(
        Taint(key=_s(t, "key") or "?", effect=_s(t, "effect") or "?", value=_s(t, "value"),
              time_added=parse_time(t.get("timeAdded")))
        for t in _l(spec, "taints") if isinstance(t, dict)
    )
    labels = {clean_text(str(k)): clean_text(str(v)) for k, v in _d(meta, "labels").items()
              if not str(k).startswith(NODE_LABEL_SKIP)}
    capacity, allocatable = _d(status, "capacity"), _d(status, "allocatable")
    where = f"node {name}"
    mig_cap = {clean_text(k[len(MIG_PREFIX):]): n for k, v in capacity.items()
               if k.startswith(MIG_PREFIX) and (n := _count(v, drops, f"capacity {k}", where)) is not None}
    mig_alloc = {clean_text(k[len(MIG_PREFIX):]): n for k, v in allocatable.items()
                 if k.startswith(MIG_PREFIX) and (n := _count(v, drops, f"allocatable {k}", where)) is not None}
    return K8sNodeInfo(
        name=name, conditions=conditions, condition_messages=messages, taints=taints, labels=labels,
        unschedulable=spec.get("unschedulable") is True,
        gpu_capacity=_count(capacity.get(GPU_RESOURCE), drops, f"capacity {GPU_RESOURCE}", where),
        gpu_allocatable=_count(allocatable.get(GPU_RESOURCE), drops, f"allocatable {GPU_RESOURCE}", where),
        mig_capacity=mig_cap, mig_allocatable=mig_alloc,
    )


def _gpu_request(container: Mapping[str, Any], drops: Drops | None = None, where: str = "") -> dict[str, int]:
    """GPU resources (``nvidia.com/gpu``, ``nvidia.com/mig-<profile>``) one container requests.

    Extended resources cannot be overcommitted: a limit is the request (the API server copies it)."""
    resources = _d(container, "resources")
    limits, requests = _d(resources, "limits"), _d(resources, "requests")
    out: dict[str, int] = {}
    for key in {*limits, *requests}:
        if isinstance(key, str) and (key == GPU_RESOURCE or key.startswith(MIG_PREFIX)):
            n = _count(limits.get(key, requests.get(key)), drops, f"resources {key}", where) or 0
            if n:
                out[clean_text(key)] = n
    return out


def _add(total: dict[str, int], more: Mapping[str, int]) -> None:
    for k, v in more.items():
        total[k] = total.get(k, 0) + v


def _max(total: dict[str, int], other: Mapping[str, int]) -> None:
    for k, v in other.items():
        total[k] = max(total.get(k, 0), v)


def effective_gpu_requests(spec: Mapping[str, Any], drops: Drops | None = None, where: str = "") -> dict[str, int]:
    """The pod's GPU request per resource, by Kubernetes' own rule (the scheduler's and the kubelet's).

    Per resource: max(sum of app containers + all sidecars, max over init containers), where a
    sidecar is an init container with ``restartPolicy: Always`` and a regular init container uses
    its own request plus that of the sidecars started before it. Source: kubernetes/kubernetes
    ``staging/src/k8s.io/component-helpers/resource/helpers.go``, ``aggregateContainerResourcesByFn``
    (KEP-753 "sidecar containers", resources calculation). Pod-level ``spec.resources`` holds only
    cpu/memory/hugepages, never GPUs; pod overhead neither.
    """
    result: dict[str, int] = {}
    for c in _l(spec, "containers"):
        if isinstance(c, dict):
            _add(result, _gpu_request(c, drops, where))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for c in _l(spec, "initContainers"):
        if not isinstance(c, dict):
            continue
        own = _gpu_request(c, drops, where)
        if c.get("restartPolicy") == "Always":  # a native sidecar: runs beside the app containers
            _add(result, own)
            _add(sidecars, own)
            _max(init_peak, sidecars)
        else:
            combined = dict(own)
            _add(combined, sidecars)
            _max(init_peak, combined)
    _max(result, init_peak)
    return {k: v for k, v in result.items() if v}


def _container_problem(statuses: list[Any], drops: Drops | None = None,
                       where: str = "") -> tuple[str | None, str | None, int]:
    """(reason, message, restarts) of the first container in trouble."""
    reason = message = None
    restarts = 0
    for cs in statuses:
        if not isinstance(cs, dict):
            continue
        restarts += _count(cs.get("restartCount"), drops, "restartCount", where) or 0
        if reason is not None:
            continue
        state, last = _d(cs, "state"), _d(cs, "lastState")
        waiting, terminated = _d(state, "waiting"), _d(state, "terminated")
        if waiting and _s(waiting, "reason") not in (None, "ContainerCreating", "PodInitializing"):
            reason, message = _s(waiting, "reason"), _s(waiting, "message")
            last_term = _d(last, "terminated")
            if reason == "CrashLoopBackOff" and last_term:
                code = _s(last_term, "exitCode")
                message = f"last exit: {_s(last_term, 'reason') or '?'} (code {code})"
        elif terminated and _s(terminated, "reason") not in (None, "Completed"):
            reason, message = _s(terminated, "reason"), _s(terminated, "message")
    return reason, message, restarts


def pod(obj: Mapping[str, Any], drops: Drops | None = None) -> Pod:
    """A core/v1 Pod; an implausible GPU request or restart count is N/A (0), recorded in ``drops``."""
    name = clean_text(name_of(obj))
    meta, spec, status = _d(obj, "metadata"), _d(obj, "spec"), _d(obj, "status")
    namespace = _s(meta, "namespace") or "default"
    where = f"pod {namespace}/{name}"
    labels, annotations = _d(meta, "labels"), _d(meta, "annotations")
    owner = next((o for o in _l(meta, "ownerReferences") if isinstance(o, dict) and o.get("controller")),
                 next((o for o in _l(meta, "ownerReferences") if isinstance(o, dict)), {}))
    reason, message, restarts = _container_problem(_l(status, "initContainerStatuses")
                                                   + _l(status, "containerStatuses"), drops, where)
    phase = _s(status, "phase") or "Unknown"
    if reason is None:
        for cond in _l(status, "conditions"):
            if _s(cond, "type") == "PodScheduled" and _s(cond, "status") == "False":
                reason, message = _s(cond, "reason") or "Unschedulable", _s(cond, "message")
        if reason is None and _s(status, "reason"):  # Evicted, NodeLost, ...
            reason, message = _s(status, "reason"), _s(status, "message")
    if meta.get("deletionTimestamp") and reason is None:
        reason = "Terminating"
    queue = labels.get(KUEUE_QUEUE_LABEL) or next(
        (v for k in VOLCANO_QUEUE_KEYS if (v := annotations.get(k) or labels.get(k))), None)
    gpu_resources = effective_gpu_requests(spec, drops, where)
    group = annotations.get(VOLCANO_GROUP_ANNOTATION)
    node = _s(spec, "nodeName")
    if node is not None and not is_node_name(node):  # Kubernetes node names are host names too
        raise BadObject(f"pod {show_value(name)} on an invalid node name {show_value(node)}")
    ready = None
    for cond in _l(status, "conditions"):
        if _s(cond, "type") == "Ready":
            ready = _s(cond, "status") == "True"
    return Pod(
        namespace=namespace, name=name, node=node, phase=phase, reason=reason, message=message,
        gpus_requested=sum(gpu_resources.values()), gpu_resources=gpu_resources, owner_kind=_s(owner, "kind"), owner_name=_s(owner, "name"),
        queue=clean_text(str(queue)) if queue else None,
        pod_group=clean_text(group) if isinstance(group, str) and group else None, scheduler=_s(spec, "schedulerName"), restarts=restarts,
        start_time=parse_time(status.get("startTime")), created=parse_time(meta.get("creationTimestamp")),
        ready=ready, mirror=MIRROR_ANNOTATION in annotations, uid=_s(meta, "uid"),
        labels={clean_text(str(k)): clean_text(str(v)) for k, v in labels.items()},
        containers=tuple(n for c in _l(spec, "containers") if (n := _s(c, "name"))),
        claims=pod_claims(name, spec),
    )


def pod_claims(pod_name: str, spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The PersistentVolumeClaims a pod mounts: ``persistentVolumeClaim.claimName`` volumes, and generic
    ephemeral volumes, whose claim Kubernetes names ``<pod>-<volume>``."""
    out: list[str] = []
    for v in _l(spec, "volumes"):
        claim = _s(_d(v, "persistentVolumeClaim"), "claimName")
        if claim is None and isinstance(v, Mapping) and isinstance(v.get("ephemeral"), dict):
            volume = _s(v, "name")
            claim = f"{pod_name}-{volume}" if volume else None
        if claim and claim not in out:
            out.append(claim)
    return tuple(out)


DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"


def volume_claim(obj: Mapping[str, Any]) -> VolumeClaim:
    """A core/v1 PersistentVolumeClaim."""
    name = clean_text(name_of(obj))
    meta, spec, status = _d(obj, "metadata"), _d(obj, "spec"), _d(obj, "status")
    storage = _d(_d(spec, "resources"), "requests").get("storage")
    return VolumeClaim(namespace=_s(meta, "namespace") or "default", name=name, phase=_s(status, "phase") or "Pending",
                       storage_class=_s(spec, "storageClassName"), volume=_s(spec, "volumeName"),
                       requested=clean_text(str(storage))[:32] if storage is not None else None,
                       created=parse_time(meta.get("creationTimestamp")), uid=_s(meta, "uid"))


def storage_class(obj: Mapping[str, Any]) -> StorageClassInfo:
    """A storage.k8s.io/v1 StorageClass; one without a provisioner is malformed."""
    name = clean_text(name_of(obj))
    provisioner = _s(obj, "provisioner")
    if not provisioner:
        raise BadObject(f"storage class {show_value(name)} without a provisioner")
    default = _d(_d(obj, "metadata"), "annotations").get(DEFAULT_CLASS_ANNOTATION) == "true"
    return StorageClassInfo(name=name, provisioner=provisioner, default=default,
                            binding_mode=_s(obj, "volumeBindingMode"))


def event(obj: Mapping[str, Any], node_name: Any = None) -> Event:
    """A core/v1 Event as a model Event; ``node_name`` maps K8s node names (the join key).

    Events written through ``events.k8s.io`` (the scheduler since 1.19, the kubelet later) have no
    ``count``/``lastTimestamp``: a repeat updates ``series`` (``count``, ``lastObservedTime``) of the
    same object. The time shown is the latest occurrence, the count the repeats of either kind."""
    involved = _d(obj, "involvedObject")
    kind = (_s(involved, "kind") or "object").lower()
    name = _s(involved, "name") or "?"
    ns = _s(involved, "namespace")
    if kind == "node" and node_name is not None:
        target = f"node/{node_name(name)}"
    elif ns:
        target = f"{kind}/{ns}/{name}"
    else:
        target = f"{kind}/{name}"
    series = _d(obj, "series")
    when = (parse_time(series.get("lastObservedTime")) or parse_time(obj.get("lastTimestamp"))
            or parse_time(obj.get("eventTime")) or parse_time(obj.get("firstTimestamp"))
            or parse_time(_d(obj, "metadata").get("creationTimestamp")))
    count = max(_i(series.get("count")) or 0, _i(obj.get("count")) or 0)
    text = ": ".join(x for x in (_s(obj, "reason"), _s(obj, "message")) if x) or "(no message)"
    if count > 1:
        text += f" (×{count})"
    severity = Severity.WARNING if _s(obj, "type") == "Warning" else Severity.INFO
    return Event(time=when or 0.0, source="k8s", object=target, severity=severity, message=text)


def event_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    """Identity of one event occurrence: uid plus what a repeat changes — ``count``/``lastTimestamp``
    (core/v1 recorders) or ``series.count``/``series.lastObservedTime`` (events.k8s.io recorders)."""
    meta, series = _d(obj, "metadata"), _d(obj, "series")
    seen = (obj.get("count"), obj.get("lastTimestamp"), series.get("count"), series.get("lastObservedTime"))
    return (str(meta.get("uid") or meta.get("name") or ""), "|".join("" if v is None else str(v) for v in seen))


# -- batch schedulers (CRDs, discovered) ---------------------------------------------
KUEUE_GROUP = "kueue.x-k8s.io"
VOLCANO_GROUP = "scheduling.volcano.sh"
VOLCANO_BATCH_GROUP = "batch.volcano.sh"
# group -> ((plural, kind, namespaced), ...)
QUEUE_RESOURCES: dict[str, tuple[tuple[str, str, bool], ...]] = {
    KUEUE_GROUP: (("clusterqueues", "ClusterQueue", False), ("localqueues", "LocalQueue", True),
                  ("workloads", "Workload", True)),
    VOLCANO_GROUP: (("queues", "Queue", False), ("podgroups", "PodGroup", True)),
    VOLCANO_BATCH_GROUP: (("jobs", "Job", True),),
}


def _conditions(status: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(c.get("type")): c for c in _l(status, "conditions") if isinstance(c, dict) and c.get("type")}


def _cond_text(cond: Mapping[str, Any]) -> str | None:
    return ": ".join(x for x in (_s(cond, "reason"), _s(cond, "message")) if x) or None


def _is_gpu(name: Any) -> bool:
    return isinstance(name, str) and (name == GPU_RESOURCE or name.startswith(MIG_PREFIX))


def _kueue_gpus(spec: Mapping[str, Any], status: Mapping[str, Any]) -> tuple[QueueGpus, ...]:
    """A ClusterQueue's GPU quota (``spec.resourceGroups[].flavors[].resources[].nominalQuota``) and use
    (``status.flavorsUsage[].resources[].total``), per flavor and GPU resource, in spec order."""
    rows: dict[tuple[str, str], dict[str, int | None]] = {}
    for group in _l(spec, "resourceGroups"):
        for flavor in _l(group, "flavors"):
            for res in _l(flavor, "resources"):
                if isinstance(res, dict) and _is_gpu(res.get("name")):
                    key = (_s(flavor, "name") or "?", clean_text(str(res["name"])))
                    rows.setdefault(key, {"quota": None, "used": None})["quota"] = _i(res.get("nominalQuota"))
    for flavor in _l(status, "flavorsUsage"):
        for res in _l(flavor, "resources"):
            if isinstance(res, dict) and _is_gpu(res.get("name")):
                key = (_s(flavor, "name") or "?", clean_text(str(res["name"])))
                rows.setdefault(key, {"quota": None, "used": None})["used"] = _i(res.get("total"))
    return tuple(QueueGpus(resource=r, flavor=f, quota=v["quota"], used=v["used"]) for (f, r), v in rows.items())


def _volcano_gpus(spec: Mapping[str, Any], status: Mapping[str, Any]) -> tuple[QueueGpus, ...]:
    """A Volcano Queue's GPU ``spec.capability`` / ``spec.deserved`` / ``status.allocated`` per resource."""
    capability, deserved, allocated = _d(spec, "capability"), _d(spec, "deserved"), _d(status, "allocated")
    names = [k for k in dict.fromkeys([*capability, *deserved, *allocated]) if _is_gpu(k)]
    return tuple(QueueGpus(resource=clean_text(k), quota=_i(capability.get(k)), deserved=_i(deserved.get(k)),
                           used=_i(allocated.get(k))) for k in names)


def _pending_checks(status: Mapping[str, Any]) -> tuple[str, ...]:
    """A Workload's admission checks that are not Ready: "name (State): message"."""
    out = []
    for check in _l(status, "admissionChecks"):
        state = _s(check, "state") or "Pending"
        if isinstance(check, dict) and state != "Ready":
            msg = _s(check, "message")
            out.append(f"{_s(check, 'name') or '?'} ({state})" + (f": {msg}" if msg else ""))
    return tuple(out)


def _workload(api: str, name: str, ns: str | None, spec: Mapping[str, Any],
              status: Mapping[str, Any]) -> K8sQueueItem:
    conds = _conditions(status)
    state, message = "Pending", None
    for ctype in ("Finished", "Evicted", "Admitted", "QuotaReserved"):
        if _s(conds.get(ctype, {}), "status") == "True":
            state = ctype
            message = _cond_text(conds[ctype]) if ctype == "Evicted" else None
            break
    checks = _pending_checks(status)
    if state == "Pending":
        message = _cond_text(conds.get("QuotaReserved") or conds.get("Admitted") or {})
    elif state == "QuotaReserved" and checks:  # quota is there; admission waits on its checks
        message = "waiting for admission checks: " + "; ".join(checks)
    return K8sQueueItem(kind="Workload", api=api, name=name, namespace=ns, queue=_s(spec, "queueName"),
                        state=state, message=message, cluster_queue=_s(_d(status, "admission"), "clusterQueue"),
                        checks=checks)


def queue_item(kind: str, api: str, obj: Mapping[str, Any]) -> K8sQueueItem:
    """One Kueue or Volcano object; unknown versions are read with the same field names."""
    name = clean_text(name_of(obj))
    meta, spec, status = _d(obj, "metadata"), _d(obj, "spec"), _d(obj, "status")
    conds = _conditions(status)
    ns = _s(meta, "namespace")
    if kind == "Workload":
        return _workload(api, name, ns, spec, status)
    if kind in ("ClusterQueue", "LocalQueue"):
        active = conds.get("Active")
        state = "Active" if active is None or _s(active, "status") == "True" else "Inactive"
        return K8sQueueItem(kind=kind, api=api, name=name, namespace=ns, queue=_s(spec, "clusterQueue"),
                            state=state, message=_cond_text(active) if state == "Inactive" and active else None,
                            pending=_i(status.get("pendingWorkloads")),
                            admitted=_i(status.get("admittedWorkloads", status.get("reservingWorkloads"))),
                            gpus=_kueue_gpus(spec, status) if kind == "ClusterQueue" else ())
    if kind == "PodGroup":
        phase = _s(status, "phase") or "Pending"
        why = None
        for c in reversed(_l(status, "conditions")):
            if isinstance(c, dict) and _s(c, "type") == "Unschedulable" and _s(c, "status") == "True":
                why = _cond_text(c)
                break
        return K8sQueueItem(kind=kind, api=api, name=name, namespace=ns, queue=_s(spec, "queue"), state=phase,
                            message=why if phase in ("Pending", "Inqueue", "Unknown") else None,
                            min_member=_i(spec.get("minMember")))
    if kind == "Job":  # batch.volcano.sh: status.state.phase Pending/Running/Completed/Failed/Aborted/...
        st = _d(status, "state")
        phase = _s(st, "phase") or "Pending"
        why = ": ".join(x for x in (_s(st, "reason"), _s(st, "message")) if x) or None
        return K8sQueueItem(kind=kind, api=api, name=name, namespace=ns, queue=_s(spec, "queue"), state=phase,
                            message=why if phase not in ("Running", "Completed") else None,
                            pending=_i(status.get("pending")), admitted=_i(status.get("running")),
                            min_member=_i(spec.get("minAvailable")))
    # Volcano Queue
    return K8sQueueItem(kind=kind, api=api, name=name, namespace=ns, state=_s(status, "state") or "Unknown",
                        pending=_i(status.get("pending")), admitted=_i(status.get("running")),
                        inqueue=_i(status.get("inqueue")), gpus=_volcano_gpus(spec, status))
