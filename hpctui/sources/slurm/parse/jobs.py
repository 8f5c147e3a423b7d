"""``squeue --json`` / REST ``GET jobs`` → model, v0.0.36–v0.0.44.

22.05's squeue --json ignores ``-t`` and includes finished jobs (SLURM.md §7); they are
dropped here so that one parse gives the live queue. Job state is a string up to v0.0.38
and a list (base + flags such as COMPLETING, REQUEUED) from v0.0.39; the shown state
follows squeue: a transient flag wins over the base.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable
from functools import lru_cache

import msgspec

from hpctui.model.hostlist import HostlistError, expand
from hpctui.model.jobs import SlurmJob
from hpctui.sanitize import clean_text
from hpctui.sources.slurm.parse.errors import SlurmParseError, from_msgspec, repair_json
from hpctui.sources.slurm.parse.exitcode import ExitCodeObj, decode_exit_obj
from hpctui.sources.slurm.parse.gres import gpu_indices, gpus_from_gres_request, gpus_from_tres_str
from hpctui.sources.slurm.parse.nodes import _raise_on_errors
from hpctui.sources.slurm.parse.rest_versions import Meta, RestError, check_version, version_from_meta
from hpctui.sources.slurm.parse.values import _SENTINELS, IntLike, Num, epoch, minutes, num, text

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
        return clean_text(state.strip().upper()) or "UNKNOWN"
    tokens = [state] if isinstance(state, str) else list(state)
    tokens = [t.strip().upper() for t in tokens if t and t.strip()]
    if not tokens:
        return "UNKNOWN"
    for flag in _FLAG_ORDER:
        if flag in tokens[1:]:
            return flag
    return clean_text(tokens[0])


class _Job(msgspec.Struct, kw_only=True, gc=False):
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
    tres_per_task: str | None = None
    tres_per_socket: str | None = None
    tres_req_str: str | None = None
    tasks: IntLike = None  # v0.0.40+ (num_tasks before: then per-task GPUs count once per node)
    sockets_per_node: IntLike = None
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
_replace = msgspec.structs.replace


def job_reason(reason: str | None, description: str | None) -> str | None:
    """squeue's %r rule: the description when set (``job requeued in held state``,
    ``ReqNodeNotAvail, UnavailableNodes:gpu[01,04]``), else the reason; "None" → None."""
    return text(description) or text(reason)


@lru_cache(maxsize=4096)
def requested_gpus(
    tres_req: str | None, tres_per_job: str | None, tres_per_node: str | None, node_count: int | None,
    tres_per_task: str | None = None, tasks: int | None = None,
    tres_per_socket: str | None = None, sockets_per_node: int | None = None,
) -> int | None:
    """Total GPUs a job asked for: TRES totals first, then per-job, per-node × nodes,
    per-task × tasks (``--gpus-per-task``), per-socket × sockets per node × nodes.

    The per-* forms count where ``tres_req_str`` has no gres/gpu (a site whose
    AccountingStorageTRES lacks it: 24.11 then writes ``cpu=2,mem=2G,node=1,billing=2``).
    Per-socket without a socket count (Slurm requires ``--sockets-per-node``) is unknown: None.
    """
    total = gpus_from_tres_str(tres_req)
    if total is not None:
        return total
    total = gpus_from_gres_request(tres_per_job)
    if total is not None:
        return total
    per_node = gpus_from_gres_request(tres_per_node)
    if per_node is not None:
        return per_node * (node_count or 1)
    per_task = gpus_from_gres_request(tres_per_task)
    if per_task is not None:
        return per_task * (tasks or 1)
    per_socket = gpus_from_gres_request(tres_per_socket)
    if per_socket is not None and sockets_per_node:
        return per_socket * sockets_per_node * (node_count or 1)
    return None


def _requested_gpus_of(j: _Job, node_count: int | None) -> int | None:
    """:func:`requested_gpus` of one decoded job."""
    return requested_gpus(j.tres_req_str, j.tres_per_job, j.tres_per_node, node_count, j.tres_per_task,
                          num(j.tasks), j.tres_per_socket, num(j.sockets_per_node))


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
        gpus_requested=_requested_gpus_of(j, node_count),
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


class _JobsEnvelope(msgspec.Struct, kw_only=True, gc=False):
    """The document with each job left undecoded: jobs are decoded one at a time so
    that only one decoded ``_Job`` is alive at once (the raw slices share ``data``)."""

    meta: Meta | None = None
    errors: list[RestError] | None = None
    jobs: list[msgspec.Raw]


_envelope_decoder = msgspec.json.Decoder(_JobsEnvelope)
_job_decoder = msgspec.json.Decoder(_Job)


class _TextCache(dict[str | None, str | None]):
    """``text()`` memoized by value for one parse: big queues repeat users, accounts,
    partitions, node lists and reasons, and the jobs then share one string object."""

    def __init__(self) -> None:
        super().__init__({None: None})

    def __missing__(self, key: str | None) -> str | None:
        value = self[key] = text(key)
        return value


class _TresCache(dict[str | None, int | None]):
    """``gpus_from_tres_str`` memoized by value for one parse."""

    def __missing__(self, key: str | None) -> int | None:
        value = self[key] = gpus_from_tres_str(key)
        return value


def _num(value: int | Num | None) -> int | None:
    """:func:`num` with a fast path for the plain ints of v0.0.36–38."""
    if type(value) is int:
        return None if value < 0 or value in _SENTINELS else value
    return num(value)


def _convert(
    jobs: Iterable[_Job], include_finished: bool, on_invalid: OnInvalid | None
) -> list[SlurmJob]:
    """The loop body of :func:`to_job`, inlined, with per-parse caches by value."""
    out: list[SlurmJob] = []
    Converter(include_finished, on_invalid).run(jobs, out)
    return out


FINISHED = SlurmJob(job_id=0, state="COMPLETED")
"""What :meth:`Converter.run_marked` gives for a finished job it drops (a marker, never shown)."""


class Converter:
    """``_Job`` → ``SlurmJob`` with caches that live for one parse (one document, which a
    streaming reader hands over in pieces: the caches must outlive each piece).

    Must give exactly what ``to_job`` gives; it only avoids per-job work: strings,
    states, exit codes and gres pairings are computed once per distinct value, the
    ``$.jobs[i]`` location is only formatted for an error, finished jobs are dropped
    before anything else is converted.
    """

    def __init__(self, include_finished: bool, on_invalid: OnInvalid | None) -> None:
        self.include_finished = include_finished
        self.on_invalid = on_invalid
        self.texts = _TextCache()
        self.states: dict[str | tuple[str, ...], str] = {}
        self.exits: dict[int, tuple[int | None, int | None]] = {}
        self.allocs: dict[tuple[str, tuple[str, ...]], dict[str, str]] = {}
        self.valid_nodes: set[str] = set()  # node lists that expand (checked once per parse)
        self.tres = _TresCache()  # tres_req_str → GPUs in it, or None

    def run(self, jobs: Iterable[_Job], out: list[SlurmJob], first: int = 0) -> None:
        """Append the converted live jobs of ``jobs`` (document positions from ``first``) to ``out``."""
        self._run(enumerate(jobs, first), out, False)  # type: ignore[arg-type]

    def run_marked(self, jobs: Iterable[tuple[int, _Job]], out: list[SlurmJob | None]) -> None:
        """``(document position, job)`` pairs → one entry per job in ``out``: the job, or
        :data:`FINISHED` for a finished job that is dropped, or None for an invalid one."""
        self._run(jobs, out, True)

    def _run(self, jobs: Iterable[tuple[int, _Job]], out: list[SlurmJob | None], marks: bool) -> None:
        # Hot loop (~100k jobs): plain ints (v0.0.36-38) take an inlined form of _num/epoch
        # ("int, not negative, not a sentinel"); anything else goes through _num.
        texts, states, exits, allocs, tres = self.texts, self.states, self.exits, self.allocs, self.tres
        include_finished, on_invalid = self.include_finished, self.on_invalid
        live = LIVE_JOB_STATES
        sentinels = _SENTINELS
        append = out.append
        for i, j in jobs:
            raw_state = j.job_state
            key = raw_state if type(raw_state) is str else tuple(raw_state)
            state = states.get(key)
            if state is None:
                state = states[key] = job_display_state(raw_state)
            if not include_finished and state not in live:
                if marks:
                    append(FINISHED)
                continue
            raw = j.nodes
            nodes = texts[raw] if raw in texts else texts.__missing__(raw)
            alloc: dict[str, str] = {}
            if nodes is not None:
                if nodes not in self.valid_nodes:
                    try:
                        expand_cached(nodes)
                    except HostlistError as exc:
                        msg = f"{exc} at $.jobs[{i}].nodes"
                        if on_invalid is None:
                            raise SlurmParseError(f"slurm jobs JSON: {msg}") from exc
                        on_invalid(msg)
                        if marks:
                            append(None)
                        continue
                    self.valid_nodes.add(nodes)
                detail = j.gres_detail
                if detail:
                    akey = (nodes, tuple(detail))
                    cached = allocs.get(akey)
                    if cached is None:
                        cached = allocs[akey] = pair_gres_detail(nodes, detail, f"$.jobs[{i}]")
                    if cached:
                        alloc = dict(cached)
            exit_code = j.exit_code
            if type(exit_code) is int:
                pair = exits.get(exit_code)
                if pair is None:
                    pair = exits[exit_code] = decode_exit_obj(exit_code)
            else:
                pair = decode_exit_obj(exit_code)
            v = j.array_job_id
            array_job = (v if type(v) is int and v >= 0 and v not in sentinels else _num(v)) or None  # 0: no array
            if array_job is None:
                task = task_str = None
            else:
                v = j.array_task_id
                task = v if type(v) is int and v >= 0 and v not in sentinels else _num(v)
                raw = j.array_task_string
                task_str = texts[raw] if raw in texts else texts.__missing__(raw)
            v = j.node_count
            node_count = v if type(v) is int and v >= 0 and v not in sentinels else _num(v)
            raw = j.tres_req_str
            gpus = tres[raw] if raw in tres else tres.__missing__(raw)  # the TRES total, when there is one
            if gpus is None:
                gpus = _requested_gpus_of(j, node_count)
            raw = j.name
            name = texts[raw] if raw in texts else texts.__missing__(raw)
            raw = j.user_name
            user = texts[raw] if raw in texts else texts.__missing__(raw)
            raw = j.account
            account = texts[raw] if raw in texts else texts.__missing__(raw)
            raw = j.partition
            partition = texts[raw] if raw in texts else texts.__missing__(raw)
            raw = j.qos
            qos = texts[raw] if raw in texts else texts.__missing__(raw)
            raw = j.state_description
            reason = texts[raw] if raw in texts else texts.__missing__(raw)
            if not reason:
                raw = j.state_reason
                reason = texts[raw] if raw in texts else texts.__missing__(raw)
            # Two calls, not one: a call site with more than 15 keyword arguments compiles
            # to CALL_FUNCTION_EX (a kwargs dict), which costs more than both of these.
            job = SlurmJob(
                job_id=j.job_id,
                array_job_id=array_job,
                array_task_id=task,
                array_task_str=task_str,
                name=name,
                user=user,
                account=account,
                partition=partition,
                qos=qos,
                state=state,
                reason=reason,
                nodes=nodes,
                num_nodes=node_count,
                gpus_requested=gpus,
                gpus_alloc=alloc,
            )
            v = j.submit_time
            submit = (float(v) if v else None) if type(v) is int and v >= 0 and v not in sentinels else epoch(v)
            v = j.start_time
            start = (float(v) if v else None) if type(v) is int and v >= 0 and v not in sentinels else epoch(v)
            v = j.end_time
            end = (float(v) if v else None) if type(v) is int and v >= 0 and v not in sentinels else epoch(v)
            v = j.time_limit
            limit = (v or None) if type(v) is int and v >= 0 and v not in sentinels else minutes(v)
            v = j.restart_cnt
            restarts = v if type(v) is int and v >= 0 and v not in sentinels else _num(v)
            v = j.priority
            append(
                _replace(
                    job,
                    submit_time=submit,
                    start_time=start,
                    end_time=end,
                    time_limit_min=limit,
                    exit_code=pair[0],
                    exit_signal=pair[1],
                    restart_count=restarts,
                    batch=j.batch_flag,
                    requeueable=j.requeue,
                    priority=v if type(v) is int and v >= 0 and v not in sentinels else _num(v),
                )
            )


def _decode_error(data: bytes | str, exc: Exception) -> SlurmParseError:
    """The error the one-shot typed decode gives for ``data`` (same message and JSON path
    whichever way the fault was first met)."""
    try:
        _jobs_decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as full:
        exc = full
    return from_msgspec("slurm jobs JSON", exc)


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

    Big queues (100k jobs, ~300 MB): the envelope is decoded with each job left raw,
    then jobs are decoded and converted one by one, so decoded jobs never pile up; the
    cyclic GC is paused meanwhile (nothing here makes cycles, and 100k fresh tracked
    objects would otherwise trigger repeated full collections).
    """
    check_version(version)
    try:
        return _parse_jobs_json(data, version, include_finished, on_invalid)
    except SlurmParseError:
        repaired = repair_json(data)  # invalid UTF-8 in one job name: one odd char, not the document
        if repaired is None:
            raise
        return _parse_jobs_json(repaired, version, include_finished, on_invalid)


def _parse_jobs_json(
    data: bytes | str, version: str | None, include_finished: bool, on_invalid: OnInvalid | None
) -> tuple[SlurmJob, ...]:
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            env = _envelope_decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise _decode_error(data, exc) from exc
        try:
            check_version(version or version_from_meta(env.meta))
            _raise_on_errors("slurm jobs JSON", env.errors)
        except SlurmParseError:
            _validate_jobs(data, env.jobs)  # a malformed job was reported first before
            raise
        try:
            out = _convert(map(_job_decoder.decode, env.jobs), include_finished, on_invalid)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise _decode_error(data, exc) from exc
        return tuple(out)
    finally:
        if gc_was_enabled:
            gc.enable()


def _validate_jobs(data: bytes | str, jobs: list[msgspec.Raw]) -> None:
    for raw in jobs:
        try:
            _job_decoder.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise _decode_error(data, exc) from exc


__all__ = ["LIVE_JOB_STATES", "Num", "job_display_state", "parse_jobs_json"]
