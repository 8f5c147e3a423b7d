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

from hpctui.base.sanitize import clean_text
from hpctui.model.hostlist import HostlistError, expand
from hpctui.model.jobs import SlurmJob
from hpctui.model.validate import (
    COUNT,
    DCGM_INT32_BLANK,
    EPOCH_S,
    SLURM_JOB_BOUNDS,
    SMALL_ENUM,
    UINT32,
    Bounds,
    Drops,
    checked,
    show_value,
)
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


def to_job(j: _Job, where: str, drops: Drops | None = None) -> SlurmJob:
    """The reference conversion of one job (the :class:`Converter` must give the same): values
    outside :data:`~hpctui.model.validate.SLURM_JOB_BOUNDS` are None, recorded in ``drops``."""
    if not 0 <= j.job_id <= UINT32.hi:
        raise SlurmParseError(f"job id {show_value(j.job_id)} out of range at {where}.job_id")
    node_count = num(j.node_count)
    if node_count is not None and not COUNT.ok(node_count):
        node_count = None  # as the converter: GPUs per node × an absurd node count is no total
    code, sig = decode_exit_obj(j.exit_code)
    array_job, task, task_str = _array_ids(j)
    nodes = text(j.nodes)
    if nodes is not None:
        try:
            expand_cached(nodes)
        except HostlistError as exc:
            raise SlurmParseError(f"{exc} at {where}.nodes") from exc
    return checked(SlurmJob(
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
    ), SLURM_JOB_BOUNDS, drops if drops is not None else Drops(), f"job {j.job_id}")


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


def _convert(
    jobs: Iterable[_Job], include_finished: bool, on_invalid: OnInvalid | None, drops: Drops | None = None
) -> list[SlurmJob]:
    """The loop body of :func:`to_job`, inlined, with per-parse caches by value."""
    out: list[SlurmJob] = []
    Converter(include_finished, on_invalid, drops).run(jobs, out)
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

    Numbers are checked against :data:`~hpctui.model.validate.SLURM_JOB_BOUNDS` at no cost for a
    plausible job: the inlined fast path for a plain int is one range comparison that leaves out
    Slurm's sentinels (NO_VAL16 0xfffe and up); anything else goes to :meth:`_slow`, which gives
    None for a sentinel and None, recorded in ``drops``, for a value outside its field's bounds
    (a negative count, 10**300 nodes). ``flagged``: the decoded jobs that had one (a streaming
    reader decodes them again next time, so that the warning stays while the value is bad).
    """

    def __init__(self, include_finished: bool, on_invalid: OnInvalid | None, drops: Drops | None = None) -> None:
        self.include_finished = include_finished
        self.on_invalid = on_invalid
        self.drops = drops if drops is not None else Drops()
        self.flagged: list[_Job] = []
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

    def _slow(self, value: int | Num | None, bounds: Bounds, field: str, j: _Job) -> int | None:
        """A number the fast path did not take: unset, infinite or a sentinel → None; outside
        ``bounds`` → None, recorded (field and job) in ``drops``; else the plain int. A wrapper
        of v0.0.39+ holding a small count is taken here at the cost of the inline check."""
        if type(value) is Num:
            if not value.set or value.infinite or value.number is None:
                return None
            value = value.number  # type: ignore[assignment]
            if type(value) is int and 0 <= value < 0xFFFE:
                return value
        elif value is None:
            return None
        return self._check(value, bounds, field, j)  # type: ignore[arg-type]

    def _slow_epoch(self, value: int | Num | None, field: str, j: _Job) -> float | None:
        """:func:`epoch` for a value the fast path did not take (see :meth:`_slow`)."""
        if type(value) is Num:
            if not value.set or value.infinite or value.number is None:
                return None
            value = value.number  # type: ignore[assignment]
            if type(value) is int and (0xFFFF < value < 0xFFFFFFFE or value == 0):
                return float(value) if value else None
        elif value is None:
            return None
        iv = self._check(value, EPOCH_S, field, j)  # type: ignore[arg-type]
        return float(iv) if iv else None

    def _check(self, value: float, bounds: Bounds, field: str, j: _Job) -> int | None:
        """A plain number: a sentinel → None; outside ``bounds`` → None, recorded; else the int."""
        iv = int(value)
        if iv in _SENTINELS:
            return None
        if bounds.ok(iv):
            return iv
        self.drops.value(field, value, f"job {j.job_id}")
        self.flagged.append(j)
        return None

    def _slow_exit(self, pair: tuple[int | None, int | None], j: _Job) -> tuple[int | None, int | None]:
        """An exit code/signal pair from a v0.0.39+ object, each checked (see :meth:`_slow`)."""
        return (self._slow(pair[0], SMALL_ENUM, "exit_code", j), self._slow(pair[1], SMALL_ENUM, "exit_signal", j))

    def _run(self, jobs: Iterable[tuple[int, _Job]], out: list[SlurmJob | None], marks: bool) -> None:
        # Hot loop (~100k jobs): a plain int (v0.0.36-38) takes an inlined check, one range
        # comparison per field that leaves out every sentinel: 0 <= v < 0xfffe (NO_VAL16) for
        # counts, also 0xffff < v < 0xfffffffe (NO_VAL) for 32-bit fields; anything else (Num
        # wrappers of v0.0.39+, sentinels, implausible values) goes through _slow.
        texts, states, exits, allocs, tres = self.texts, self.states, self.exits, self.allocs, self.tres
        include_finished, on_invalid = self.include_finished, self.on_invalid
        live = LIVE_JOB_STATES
        slow, slow_epoch = self._slow, self._slow_epoch
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
            if not 0 <= j.job_id <= 0xFFFFFFFF:  # no job id (uint32): the record is unreadable
                msg = f"job id {show_value(j.job_id)} out of range at $.jobs[{i}].job_id"
                if on_invalid is None:
                    raise SlurmParseError(f"slurm jobs JSON: {msg}")
                on_invalid(msg)
                if marks:
                    append(None)
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
                if (pair[0] or 0) > 255 or (pair[1] or 0) > 255:
                    pair = self._slow_exit(pair, j)
            v = j.array_job_id
            array_job = (v if type(v) is int and (0 <= v < 0xFFFE or 0xFFFF < v < 0xFFFFFFFE)
                         else slow(v, UINT32, "array_job_id", j)) or None  # 0: no array
            if array_job is None:
                task = task_str = None
            else:
                v = j.array_task_id
                task = (v if type(v) is int and (0 <= v < 0xFFFE or 0xFFFF < v < 0xFFFFFFFE)
                        else slow(v, UINT32, "array_task_id", j))
                raw = j.array_task_string
                task_str = texts[raw] if raw in texts else texts.__missing__(raw)
            v = j.node_count
            node_count = v if type(v) is int and 0 <= v < 0xFFFE else slow(v, COUNT, "num_nodes", j)
            raw = j.tres_req_str
            gpus = tres[raw] if raw in tres else tres.__missing__(raw)  # the TRES total, when there is one
            if gpus is None:
                gpus = _requested_gpus_of(j, node_count)
            if gpus is not None and gpus >= DCGM_INT32_BLANK:  # digits only, never negative; COUNT refuses from here
                gpus = slow(gpus, COUNT, "gpus_requested", j)
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
            # epochs: 0 (not known) or past 0xffff and below NO_VAL; the rest (sentinels, 2**32 and up) slow
            v = j.submit_time
            submit = ((float(v) if v else None) if type(v) is int and (0xFFFF < v < 0xFFFFFFFE or v == 0)
                      else slow_epoch(v, "submit_time", j))
            v = j.start_time
            start = ((float(v) if v else None) if type(v) is int and (0xFFFF < v < 0xFFFFFFFE or v == 0)
                     else slow_epoch(v, "start_time", j))
            v = j.end_time
            end = ((float(v) if v else None) if type(v) is int and (0xFFFF < v < 0xFFFFFFFE or v == 0)
                   else slow_epoch(v, "end_time", j))
            v = j.time_limit
            limit = ((v if type(v) is int and (0 <= v < 0xFFFE or 0xFFFF < v < 0xFFFFFFFE)
                      else slow(v, UINT32, "time_limit_min", j)) or None)
            v = j.restart_cnt
            restarts = v if type(v) is int and 0 <= v < 0xFFFE else slow(v, COUNT, "restart_count", j)
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
                    priority=(v if type(v) is int and (0 <= v < 0xFFFE or 0xFFFF < v < 0xFFFFFFFE)
                              else slow(v, UINT32, "priority", j)),
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
    drops: Drops | None = None,
) -> tuple[SlurmJob, ...]:
    """``squeue --json`` or REST ``GET /slurm/vX/jobs`` → live jobs (see LIVE_JOB_STATES).

    A job whose node list is not a valid hostlist raises SlurmParseError, or — with
    ``on_invalid`` — is dropped and reported through the callback. A number outside its
    field's plausible range (hpctui.model.validate.SLURM_JOB_BOUNDS) is None, recorded in ``drops``.

    Big queues (100k jobs, ~300 MB): the envelope is decoded with each job left raw,
    then jobs are decoded and converted one by one, so decoded jobs never pile up; the
    cyclic GC is paused meanwhile (nothing here makes cycles, and 100k fresh tracked
    objects would otherwise trigger repeated full collections).
    """
    check_version(version)
    try:
        return _parse_jobs_json(data, version, include_finished, on_invalid, drops)
    except SlurmParseError:
        repaired = repair_json(data)  # invalid UTF-8 in one job name: one odd char, not the document
        if repaired is None:
            raise
        return _parse_jobs_json(repaired, version, include_finished, on_invalid, drops)


def _parse_jobs_json(
    data: bytes | str, version: str | None, include_finished: bool, on_invalid: OnInvalid | None,
    drops: Drops | None = None,
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
            out = _convert(map(_job_decoder.decode, env.jobs), include_finished, on_invalid, drops)
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
