"""pyslurm 25.11 ``Node``/``Job`` objects → model, duck-typed (pyslurm is optional).

Attribute names follow pyslurm's ``pyslurm/core/node.pyx`` and ``job/job.pyx``: node
``name, state ("MIXED+DRAIN"), reason, reason_user, reason_time, partitions,
available_features/active_features, configured_gres / allocated_gres (dicts such as
{"gpu:h100": 8} or {"gpu:h100": {"count": 2, "indexes": "0-1"}}), total_cpus, alloc_cpus,
real_memory, alloc_memory``; job ``id, name, user_name, account, partition, qos, state,
state_reason, nodes, num_nodes, array_id/array_job_id, array_task_id,
array_tasks_waiting, submit_time, start_time, end_time, time_limit, exit_code,
exit_code_signal, requeue_count, is_requeueable, is_batch_job, priority, gres_per_node``.
Older pyslurm spelled some as ``*_raw`` ints next to formatted strings, and memory as
humanized strings; only ints are trusted, anything else is None.
"""

from __future__ import annotations

from collections.abc import Mapping

from hpctui.base.sanitize import clean_text
from hpctui.model.hostlist import HostlistError, expand, is_valid_hostname
from hpctui.model.jobs import SlurmJob
from hpctui.model.node import SlurmNodeInfo
from hpctui.sources.slurm.parse.errors import SlurmParseError
from hpctui.sources.slurm.parse.jobs import job_display_state
from hpctui.sources.slurm.parse.states import normalize_node_state
from hpctui.sources.slurm.parse.values import split_list, text

_MISSING = object()


def _get(obj: object, *names: str) -> object:
    for n in names:
        try:
            v = getattr(obj, n, _MISSING)
        except Exception:
            v = _MISSING
        if v is not _MISSING:
            return v
    return None


def _int(obj: object, *names: str) -> int | None:
    """First attribute (or its ``_raw`` twin) that is a real int; bools and strs rejected."""
    for n in names:
        for cand in (n, f"{n}_raw"):
            v = _get(obj, cand)
            if isinstance(v, int) and not isinstance(v, bool):
                return v if 0 <= v < 0xFFFFFFFE else None
    return None


def _epoch(obj: object, name: str) -> float | None:
    v = _int(obj, name)
    return float(v) if v else None


def _str(obj: object, *names: str) -> str | None:
    v = _get(obj, *names)
    return text(v) if isinstance(v, str) else None


def _gpu_gres(gres: object) -> tuple[str | None, int | None, dict[str, str]]:
    """pyslurm GRES dict → (type, count, {type: indexes})."""
    if gres is None:
        return None, None, {}
    if not isinstance(gres, Mapping):
        return None, None, {}
    total = 0
    types: list[str] = []
    idx: dict[str, str] = {}
    for key, val in gres.items():
        name, _, gtype = str(key).removeprefix("gres:").partition(":")
        if name != "gpu":
            continue
        if isinstance(val, Mapping):
            count = val.get("count")
            ind = val.get("indexes")
            if ind not in (None, "", "N/A"):
                idx[gtype or "gpu"] = str(ind)
        else:
            count = val
        try:
            total += int(count) if count is not None else 0
        except (TypeError, ValueError):
            return None, None, {}
        if gtype and gtype not in types:
            types.append(gtype)
    return (clean_text(",".join(types)) or None), total, {k: clean_text(v) for k, v in idx.items()}


def node_from_pyslurm(obj: object) -> SlurmNodeInfo:
    """A ``pyslurm.Node`` → SlurmNodeInfo (raises SlurmParseError on a bad name/state)."""
    name = _str(obj, "name")
    if name is None or not is_valid_hostname(name):
        raise SlurmParseError(f"pyslurm node: invalid node name {name!r}")
    state = _get(obj, "state")
    if not isinstance(state, (str, list)):
        raise SlurmParseError(f"pyslurm node {name}: no state")
    base, flags = normalize_node_state(state)
    gpu_type, gpus_total, _ = _gpu_gres(_get(obj, "configured_gres"))
    _, gpus_alloc, _ = _gpu_gres(_get(obj, "allocated_gres", "alloc_gres"))
    parts = _get(obj, "partitions")
    feats = _get(obj, "active_features", "available_features")
    return SlurmNodeInfo(
        base_state=base,
        flags=flags,
        reason=_str(obj, "reason"),
        reason_user=_str(obj, "reason_user"),
        reason_time=_epoch(obj, "reason_time"),
        partitions=split_list(parts) if isinstance(parts, (str, list)) else (),
        features=split_list(feats) if isinstance(feats, (str, list)) else (),
        cpus_total=_int(obj, "total_cpus", "cpus"),
        cpus_alloc=_int(obj, "alloc_cpus", "allocated_cpus"),
        memory_total_mb=_int(obj, "real_memory"),
        memory_alloc_mb=_int(obj, "alloc_memory", "allocated_memory"),
        gpus_total=gpus_total,
        gpus_alloc=gpus_alloc,
        gpu_type=gpu_type,
    )


def job_from_pyslurm(obj: object) -> SlurmJob:
    """A ``pyslurm.Job`` → SlurmJob (raises SlurmParseError without an id or state)."""
    job_id = _int(obj, "id", "job_id")
    if job_id is None:
        raise SlurmParseError("pyslurm job: no id")
    state = _get(obj, "state")
    if not isinstance(state, (str, list)):
        raise SlurmParseError(f"pyslurm job {job_id}: no state")
    nodes = _str(obj, "nodes", "nodelist")
    if nodes:
        try:
            expand(nodes)
        except HostlistError as exc:
            raise SlurmParseError(f"pyslurm job {job_id}: {exc}") from exc
    array_job = _int(obj, "array_job_id", "array_id") or None
    waiting = _str(obj, "array_tasks_waiting")
    num_nodes = _int(obj, "num_nodes")
    _, per_node, _ = _gpu_gres(_get(obj, "gres_per_node"))
    requeue = _get(obj, "is_requeueable")
    batch = _get(obj, "is_batch_job")
    code = _int(obj, "exit_code")
    sig = _int(obj, "exit_code_signal", "termination_signal")
    return SlurmJob(
        job_id=job_id,
        array_job_id=array_job,
        array_task_id=_int(obj, "array_task_id") if array_job else None,
        array_task_str=waiting if array_job else None,
        name=_str(obj, "name"),
        user=_str(obj, "user_name"),
        account=_str(obj, "account"),
        partition=_str(obj, "partition"),
        qos=_str(obj, "qos"),
        state=job_display_state(state),
        reason=_str(obj, "state_reason"),
        nodes=nodes,
        num_nodes=num_nodes,
        gpus_requested=None if not per_node else per_node * (num_nodes or 1),
        submit_time=_epoch(obj, "submit_time"),
        start_time=_epoch(obj, "start_time"),
        end_time=_epoch(obj, "end_time"),
        time_limit_min=_int(obj, "time_limit") or None,
        exit_code=None if sig else code,
        exit_signal=sig or None,
        restart_count=_int(obj, "requeue_count", "restart_count"),
        batch=batch if isinstance(batch, bool) else None,
        requeueable=requeue if isinstance(requeue, bool) else None,
        priority=_int(obj, "priority"),
    )
