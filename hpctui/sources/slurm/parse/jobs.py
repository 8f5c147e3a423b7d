"""``squeue --json`` / REST ``GET jobs`` → model, v0.0.36–v0.0.44.

22.05's squeue --json ignores ``-t`` and includes finished jobs (SLURM.md §7); they are
dropped here so that one parse gives the live queue. Job state is a string up to v0.0.38
and a list (base + flags such as COMPLETING, REQUEUED) from v0.0.39; the shown state
follows squeue: a transient flag wins over the base.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import msgspec

from hpctui.model.hostlist import HostlistError, expand
from hpctui.model.jobs import SlurmJob
from hpctui.sources.slurm.parse.errors import SlurmParseError, from_msgspec
from hpctui.sources.slurm.parse.exitcode import ExitCodeObj, decode_exit_obj
from hpctui.sources.slurm.parse.gres import gpu_indices, gpus_from_gres_request, gpus_from_tres_str
from hpctui.sources.slurm.parse.nodes import _raise_on_errors
from hpctui.sources.slurm.parse.rest_versions import Meta, RestError, check_version, version_from_meta
from hpctui.sources.slurm.parse.values import IntLike, Num, epoch, minutes, num, text

OnInvalid = Callable[[str], None]

LIVE_JOB_STATES = frozenset(
    {
        "PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD",
        "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED",
    }
)
"""States kept by parse_jobs_json; COMPLETED, CANCELLED, FAILED, TIMEOUT, ... are dropped."""

# squeue's job_state_string(): these flags are shown instead of the base state.
_FLAG_ORDER = (
    "COMPLETING", "STAGE_OUT", "CONFIGURING", "RESIZING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD",
    "SPECIAL_EXIT", "STOPPED", "REVOKED", "RESV_DEL_HOLD", "SIGNALING",
)


def job_display_state(state: str | list[str] | None) -> str:
    """``"RUNNING"`` or ``["COMPLETED", "COMPLETING"]`` → the state squeue would print."""
    if state is None:
        return "UNKNOWN"
    if isinstance(state, str):  # ≤ v0.0.38: already the shown state
        return state.strip().upper() or "UNKNOWN"
    tokens = [state] if isinstance(state, str) else list(state)
    tokens = [t.strip().upper() for t in tokens if t and t.strip()]
    if not tokens:
        return "UNKNOWN"
    for flag in _FLAG_ORDER:
        if flag in tokens[1:]:
            return flag
    return tokens[0]


class _Job(msgspec.Struct, kw_only=True):
    job_id: int
    job_state: str | list[str]
    array_job_id: IntLike = None
    array_task_id: IntLike = None
    array_task_string: str | None = None
    name: str | None = None
    user_name: str | None = None
    account: str | None = None
    partition: str | None = None
    qos: str | None = None
    state_reason: str | None = None
    state_description: str | None = None
    nodes: str | None = None
    node_count: IntLike = None
    tres_per_node: str | None = None
    tres_per_job: str | None = None
    tres_req_str: str | None = None
    tres_alloc_str: str | None = None
    gres_detail: list[str] | None = None
    submit_time: IntLike = None
    start_time: IntLike = None
    end_time: IntLike = None
    time_limit: IntLike = None
    exit_code: int | ExitCodeObj | None = None
    restart_cnt: IntLike = None
    batch_flag: bool | None = None
    requeue: bool | None = None
    priority: IntLike = None


class _JobsDoc(msgspec.Struct, kw_only=True):
    meta: Meta | None = None
    errors: list[RestError] | None = None
    jobs: list[_Job]


_jobs_decoder = msgspec.json.Decoder(_JobsDoc)


def job_reason(reason: str | None, description: str | None) -> str | None:
    """squeue's %r rule: the description when set (``job requeued in held state``,
    ``ReqNodeNotAvail, UnavailableNodes:gpu[01,04]``), else the reason; "None" → None."""
    return text(description) or text(reason)


@lru_cache(maxsize=4096)
def requested_gpus(
    tres_req: str | None, tres_per_job: str | None, tres_per_node: str | None, node_count: int | None
) -> int | None:
    """Total GPUs a job asked for: TRES totals first, then per-job, then per-node × nodes."""
    total = gpus_from_tres_str(tres_req)
    if total is not None:
        return total
    total = gpus_from_gres_request(tres_per_job)
    if total is not None:
        return total
    per_node = gpus_from_gres_request(tres_per_node)
    if per_node is None:
        return None
    return per_node * (node_count or 1)


def pair_gres_detail(nodes: str | None, detail: list[str] | None, where: str) -> dict[str, str]:
    """``nodes="gpu[01-02]"``, ``gres_detail=["gpu:h100:2(IDX:0-1)", "gpu:h100:1(IDX:3)"]`` →
    {"gpu01": "0-1", "gpu02": "3"}; Slurm orders gres_detail like the expanded node list."""
    if not detail or not nodes:
        return {}
    try:
        names = expand_cached(nodes)
    except HostlistError as exc:
        raise SlurmParseError(f"{exc} at {where}.nodes") from exc
    out: dict[str, str] = {}
    for name, item in zip(names, detail, strict=False):
        idx = _gpu_indices_cached(item)
        if idx:
            out[name] = idx
    return out


@lru_cache(maxsize=65536)
def expand_cached(nodes: str) -> tuple[str, ...]:
    """Hostlist expansion is the costliest step per job (python-hostlist); big queues
    repeat the same node lists and gres strings, so both are memoized."""
    return tuple(expand(nodes))


_gpu_indices_cached = lru_cache(maxsize=4096)(gpu_indices)


def _array_ids(j: _Job) -> tuple[int | None, int | None, str | None]:
    array_job = num(j.array_job_id) or None  # 0 = not an array job (22.05)
    if array_job is None:
        return None, None, None
    task = num(j.array_task_id)
    task_str = text(j.array_task_string)
    return array_job, task, task_str


def to_job(j: _Job, where: str) -> SlurmJob:
    node_count = num(j.node_count)
    code, sig = decode_exit_obj(j.exit_code)
    array_job, task, task_str = _array_ids(j)
    nodes = text(j.nodes)
    if nodes is not None:
        try:
            expand_cached(nodes)
        except HostlistError as exc:
            raise SlurmParseError(f"{exc} at {where}.nodes") from exc
    return SlurmJob(
        job_id=j.job_id,
        array_job_id=array_job,
        array_task_id=task,
        array_task_str=task_str,
        name=text(j.name),
        user=text(j.user_name),
        account=text(j.account),
        partition=text(j.partition),
        qos=text(j.qos),
        state=job_display_state(j.job_state),
        reason=job_reason(j.state_reason, j.state_description),
        nodes=nodes,
        num_nodes=node_count,
        gpus_requested=requested_gpus(j.tres_req_str, j.tres_per_job, j.tres_per_node, node_count),
        gpus_alloc=pair_gres_detail(nodes, j.gres_detail, where),
        submit_time=epoch(j.submit_time),
        start_time=epoch(j.start_time),
        end_time=epoch(j.end_time),
        time_limit_min=minutes(j.time_limit),
        exit_code=code,
        exit_signal=sig,
        restart_count=num(j.restart_cnt),
        batch=j.batch_flag,
        requeueable=j.requeue,
        priority=num(j.priority),
    )


def parse_jobs_json(
    data: bytes | str,
    version: str | None = None,
    *,
    include_finished: bool = False,
    on_invalid: OnInvalid | None = None,
) -> tuple[SlurmJob, ...]:
    """``squeue --json`` or REST ``GET /slurm/vX/jobs`` → live jobs (see LIVE_JOB_STATES).

    A job whose node list is not a valid hostlist raises SlurmParseError, or — with
    ``on_invalid`` — is dropped and reported through the callback.
    """
    check_version(version)
    try:
        doc = _jobs_decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise from_msgspec("slurm jobs JSON", exc) from exc
    check_version(version or version_from_meta(doc.meta))
    _raise_on_errors("slurm jobs JSON", doc.errors)
    out: list[SlurmJob] = []
    for i, j in enumerate(doc.jobs):
        if not include_finished and job_display_state(j.job_state) not in LIVE_JOB_STATES:
            continue
        try:
            out.append(to_job(j, f"$.jobs[{i}]"))
        except SlurmParseError as exc:
            if on_invalid is None:
                raise SlurmParseError(f"slurm jobs JSON: {exc}") from exc
            on_invalid(str(exc))
    return tuple(out)


__all__ = ["LIVE_JOB_STATES", "Num", "job_display_state", "parse_jobs_json"]
