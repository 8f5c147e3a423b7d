"""pyslurm 25.11 ``Node``/``Job``/``Partition``/``Statistics`` objects → model, duck-typed
(pyslurm is optional).

Attribute names follow pyslurm 25.11.2's ``pyslurm/core/node.pyx``, ``job/job.pyx``,
``partition.pyx`` and ``slurmctld/stats.pyx``, checked against a real pyslurm on a real Slurm
25.11 (tests/testbed/slurm2511): node ``name, state ("MIXED+DRAIN"), reason, reason_user,
reason_time, partitions, available_features/active_features, configured_gres
({"gpu:h100": 8}), allocated_gres (from the node's TRES: {"gpu": 2, "gpu:h100": 2}, empty
unless AccountingStorageTRES has gres/gpu), total_cpus, allocated_cpus, real_memory,
allocated_memory``; job ``id, name, user_name, account, partition, qos, state, state_reason,
allocated_nodes, num_nodes, array_id, array_task_id, array_tasks_waiting (without squeue's
``%N`` limit: that is ``array_tasks_parallel``), heterogeneous_id,
submit_time, start_time, end_time, time_limit, exit_code, exit_code_signal, requeue_count,
is_requeueable, is_batch_job, priority``; its GPUs from ``gpus`` (TRES: {"gpu": GPU(count=4),
"gpu:h100": GPU(count=4)}), else ``gres_per_node`` ({"gres/gpu:h100": 4}: Slurm's
``gres/`` prefix kept), and per node from ``get_resource_layout_per_node()`` ({node: {"gres":
{"gpu:h100": {"count": 2, "indexes": "0-1"}}}}). A GRES dict lists a typed entry and, from
the TRES, the untyped total of the same GPUs: the total is taken, never the sum of both.
Older pyslurm spelled some as ``*_raw`` ints next to formatted strings, and memory as
humanized strings; only ints are trusted, anything else is None.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from hpctui.base.sanitize import clean_text
from hpctui.model.hostlist import HostlistError, expand, is_valid_hostname
from hpctui.model.jobs import SlurmJob
from hpctui.model.node import SlurmNodeInfo
from hpctui.model.partition import SlurmPartition
from hpctui.model.scheduler import RpcStat, SchedulerStats
from hpctui.model.snapshot import ControllerHealth
from hpctui.sources.slurm.parse.diag import RPC_ROWS, _health
from hpctui.sources.slurm.parse.errors import SlurmParseError
from hpctui.sources.slurm.parse.jobs import job_display_state
from hpctui.sources.slurm.parse.partitions import _hostlist_ok
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


_BAD = -1


def _count(val: object) -> int:
    """A GRES dict value → its count: an int (or digits), {"count": n, ...} or an object with
    ``.count`` (pyslurm's ``GPU``); a missing count is 0, an unreadable one ``_BAD``."""
    if isinstance(val, Mapping):
        val = val.get("count")
    elif val is not None and not isinstance(val, (int, str)):
        val = getattr(val, "count", _BAD)
    if val is None:
        return 0
    if isinstance(val, str) and val.isascii() and val.isdigit():
        val = int(val)
    if isinstance(val, int) and not isinstance(val, bool) and 0 <= val < 0xFFFFFFFE:
        return val
    return _BAD


def has_gpu_gres(gres: object) -> bool:
    """Whether a pyslurm GRES dict has any GPU entry at all."""
    return isinstance(gres, Mapping) and any(
        str(k).removeprefix("gres:").removeprefix("gres/").partition(":")[0] == "gpu" for k in gres)


def _gpu_gres(gres: object) -> tuple[str | None, int | None, dict[str, str]]:
    """pyslurm GRES dict → (type, count, {type: indexes}); a dict without GPUs counts 0 (as
    the CLI's empty GRES does), anything but a dict is unknown: (None, None, {}).

    Keys come as ``gpu``, ``gpu:h100``, ``gres:gpu:h100`` or ``gres/gpu:h100``. Where the
    untyped ``gpu`` total is there (TRES-based dicts list it beside the typed entries of the
    same GPUs) it is the count; else the typed entries are summed. An unreadable count makes
    the whole answer unknown rather than too small.
    """
    if not isinstance(gres, Mapping):
        return None, None, {}
    untyped: int | None = None
    typed = 0
    types: list[str] = []
    idx: dict[str, str] = {}
    for key, val in gres.items():
        name, _, gtype = str(key).removeprefix("gres:").removeprefix("gres/").partition(":")
        if name != "gpu":
            continue
        count = _count(val)
        if count == _BAD:
            return None, None, {}
        if isinstance(val, Mapping):
            ind = val.get("indexes")
            if ind not in (None, "", "N/A"):
                idx[gtype or "gpu"] = str(ind)
        if not gtype:
            untyped = count
            continue
        typed += count
        if gtype not in types:
            types.append(gtype)
    total = untyped if untyped is not None else typed
    return (clean_text(",".join(types)) or None), total, {k: clean_text(v) for k, v in idx.items()}


def _call(obj: object, name: str) -> object:
    """``obj.name()``, or None when there is no such method or it fails (one job's layout)."""
    fn = _get(obj, name)
    if not callable(fn):
        return None
    try:
        out: object = fn()
    except Exception:
        return None
    return out


def job_gpu_layout(obj: object) -> dict[str, tuple[int, str | None]]:
    """A running job's GPUs per node: {node: (count, indexes or None)} from pyslurm's
    ``get_resource_layout_per_node()`` (Slurm's per-node gres_detail); {} when it has none."""
    layout = _call(obj, "get_resource_layout_per_node")
    if not isinstance(layout, Mapping):
        return {}
    out: dict[str, tuple[int, str | None]] = {}
    for node, res in layout.items():
        if not isinstance(node, str) or not is_valid_hostname(node) or not isinstance(res, Mapping):
            continue
        _, count, idx = _gpu_gres(res.get("gres"))
        if count:
            out[node] = (count, ",".join(idx.values()) or None)
    return out


def node_from_pyslurm(obj: object, gpus_in_use: Callable[[str], int] | None = None) -> SlurmNodeInfo:
    """A ``pyslurm.Node`` → SlurmNodeInfo (raises SlurmParseError on a bad name/state).

    The GPUs in use come from the node's TRES (``allocated_gres``); a Slurm whose
    AccountingStorageTRES lacks gres/gpu leaves that empty, and then ``gpus_in_use(name)``
    (the sum over the jobs' per-node layouts) is the count, for a node that has GPUs."""
    name = _str(obj, "name")
    if name is None or not is_valid_hostname(name):
        raise SlurmParseError(f"pyslurm node: invalid node name {name!r}")
    state = _get(obj, "state")
    if not isinstance(state, (str, list)):
        raise SlurmParseError(f"pyslurm node {name}: no state")
    base, flags = normalize_node_state(state)
    configured = _get(obj, "configured_gres")
    gpu_type, gpus_total, _ = _gpu_gres(configured)
    _, gpus_alloc, _ = _gpu_gres(_get(obj, "allocated_gres", "alloc_gres"))
    if gpus_total and gpus_in_use is not None and not has_gpu_gres(_get(obj, "allocated_gres", "alloc_gres")):
        gpus_alloc = gpus_in_use(name)
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


def job_gpus_requested(obj: object, num_nodes: int | None) -> int | None:
    """Total GPUs a job asked for, as the CLI counts them: the TRES (``gpus``: allocated while
    running, else requested) first, then ``gres_per_node`` × nodes; None without GPUs."""
    _, total, _ = _gpu_gres(_get(obj, "gpus"))
    if total:
        return total
    _, per_node, _ = _gpu_gres(_get(obj, "gres_per_node"))
    return per_node * (num_nodes or 1) if per_node else None


def _array_task_id(obj: object, waiting: str | None) -> int | None:
    """An array task's index; pyslurm reads task 0 as None (its u32 parser takes 0 for "not
    set"), so a task record (no pending remainder) without one is task 0."""
    task = _int(obj, "array_task_id")
    if task is None and not waiting:
        return 0
    return task


def job_from_pyslurm(obj: object, layout: dict[str, tuple[int, str | None]] | None = None) -> SlurmJob:
    """A ``pyslurm.Job`` → SlurmJob (raises SlurmParseError without an id or state).

    ``layout`` is :func:`job_gpu_layout` of the same job (read once by the caller, which also
    sums it per node); without it, it is read here."""
    job_id = _int(obj, "id", "job_id")
    if job_id is None:
        raise SlurmParseError("pyslurm job: no id")
    state = _get(obj, "state")
    if not isinstance(state, (str, list)):
        raise SlurmParseError(f"pyslurm job {job_id}: no state")
    nodes = _str(obj, "allocated_nodes", "nodes", "nodelist")
    if nodes:
        try:
            expand(nodes)
        except HostlistError as exc:
            raise SlurmParseError(f"pyslurm job {job_id}: {exc}") from exc
    array_job = _int(obj, "array_job_id", "array_id") or None
    waiting = _str(obj, "array_tasks_waiting")
    limit = _int(obj, "array_tasks_parallel")
    if waiting and limit and "%" not in waiting:  # pyslurm cuts squeue's "%N" off: put it back
        waiting = f"{waiting}%{limit}"
    num_nodes = _int(obj, "num_nodes")
    if layout is None:
        layout = job_gpu_layout(obj) if nodes else {}
    requeue = _get(obj, "is_requeueable")
    batch = _get(obj, "is_batch_job")
    code = _int(obj, "exit_code")
    sig = _int(obj, "exit_code_signal", "termination_signal")
    return SlurmJob(
        job_id=job_id,
        array_job_id=array_job,
        array_task_id=_array_task_id(obj, waiting) if array_job else None,
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
        gpus_requested=job_gpus_requested(obj, num_nodes),
        gpus_alloc={node: idx for node, (_, idx) in layout.items() if idx},
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


def _minutes(value: object) -> tuple[int | None, bool]:
    """A pyslurm time limit (int minutes, or "UNLIMITED"/"INFINITE") → (minutes, unlimited)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, False) if 0 <= value < 0xFFFFFFFE else (None, value >= 0xFFFFFFFE)
    if isinstance(value, str) and value.upper() in ("UNLIMITED", "INFINITE"):
        return None, True
    return None, False


def partition_from_pyslurm(obj: object) -> SlurmPartition:
    """A ``pyslurm.Partition`` → SlurmPartition (raises SlurmParseError on a bad name)."""
    name = _str(obj, "name")
    if not name:
        raise SlurmParseError("pyslurm partition: no name")
    state = _str(obj, "state")
    default = _get(obj, "is_default")
    max_min, unlimited = _minutes(_get(obj, "max_time"))
    default_min, _ = _minutes(_get(obj, "default_time"))
    return SlurmPartition(
        name=name, state=state.upper() if state else None,
        default=default if isinstance(default, bool) else None,
        max_time_min=max_min, max_time_unlimited=unlimited, default_time_min=default_min,
        nodes=_hostlist_ok(_str(obj, "nodes")), total_nodes=_int(obj, "total_nodes"), total_cpus=_int(obj, "total_cpus"),
    )


def health_from_pyslurm(stats: object) -> ControllerHealth:
    """``pyslurm.slurmctld.diag()`` → ControllerHealth, as ``sdiag`` reads (backfill cycle in s)."""
    return _health(
        _int(stats, "server_thread_count"), _int(stats, "agent_queue_size"), _int(stats, "dbd_agent_queue_size"),
        _int(stats, "jobs_pending"), _int(stats, "jobs_running"), _int(stats, "backfill_cycle_last"),
        _int(stats, "schedule_cycle_mean"), stats_from_pyslurm(stats),
    )


def _rpcs(table: object, name_attr: str, id_attr: str) -> tuple[RpcStat, ...]:
    """pyslurm's ``RPCTypeStatistics`` / ``RPCUserStatistics`` (dicts of RPCType / RPCUser) → rows by count."""
    values = table.values() if isinstance(table, dict) else ()
    rows = [RpcStat(name=_str(r, name_attr) or "?", id=_int(r, id_attr), count=_int(r, "count") or 0,
                    ave_time_us=_int(r, "average_time"), total_time_us=_int(r, "time")) for r in values]
    return tuple(sorted(rows, key=lambda r: (-r.count, r.name))[:RPC_ROWS])


def stats_from_pyslurm(s: object) -> SchedulerStats:
    """``pyslurm.slurmctld.Statistics`` (attribute names of pyslurm 25.11's stats.pxd) → SchedulerStats."""
    active = _get(s, "backfill_active")
    return SchedulerStats(
        time=_epoch(s, "request_time"), since=_epoch(s, "data_since"),
        server_thread_count=_int(s, "server_thread_count"), agent_queue_size=_int(s, "agent_queue_size"),
        agent_count=_int(s, "agent_count"), agent_thread_count=_int(s, "agent_thread_count"),
        dbd_agent_queue_size=_int(s, "dbd_agent_queue_size"), jobs_submitted=_int(s, "jobs_submitted"),
        jobs_started=_int(s, "jobs_started"), jobs_completed=_int(s, "jobs_completed"),
        jobs_canceled=_int(s, "jobs_canceled"), jobs_failed=_int(s, "jobs_failed"), jobs_pending=_int(s, "jobs_pending"),
        jobs_running=_int(s, "jobs_running"), schedule_cycle_last_us=_int(s, "schedule_cycle_last"),
        schedule_cycle_max_us=_int(s, "schedule_cycle_max"), schedule_cycle_mean_us=_int(s, "schedule_cycle_mean"),
        schedule_cycles=_int(s, "schedule_cycle_counter"), schedule_queue_length=_int(s, "schedule_queue_length"),
        bf_cycles=_int(s, "backfill_cycle_counter"), bf_cycle_last_us=_int(s, "backfill_cycle_last"),
        bf_cycle_max_us=_int(s, "backfill_cycle_max"), bf_cycle_mean_us=_int(s, "backfill_cycle_mean"),
        bf_last_cycle_time=_epoch(s, "backfill_cycle_last_when"), bf_last_depth=_int(s, "backfill_last_depth"),
        bf_queue_length=_int(s, "backfill_queue_length"), bf_backfilled_jobs=_int(s, "backfilled_jobs"),
        bf_active=active if isinstance(active, bool) else None,
        rpc_by_type=_rpcs(_get(s, "rpcs_by_type"), "name", "id"),
        rpc_by_user=_rpcs(_get(s, "rpcs_by_user"), "user_name", "user_id"),
    )
