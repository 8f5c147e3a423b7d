"""``sinfo``/``squeue`` fixed-format text fallbacks (fast: ~0.1 s for 100k jobs, DESIGN.md).

The backend runs ``sinfo -N -h -o SINFO_FORMAT`` and ``squeue -h -t all -o SQUEUE_FORMAT``.
Fields are joined by SEP (ASCII unit separator, 0x1F): it cannot occur in names,
reasons or comments typed by people, unlike ``|`` or ``,``.
"""

from __future__ import annotations

import datetime as _dt
import gc
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from hpctui.base.digits import is_uint
from hpctui.base.sanitize import clean_text
from hpctui.model.hostlist import HostlistError, expand, is_valid_hostname
from hpctui.model.jobs import SlurmJob
from hpctui.model.node import SlurmNodeInfo
from hpctui.model.validate import SLURM_JOB_BOUNDS, Drops, checked
from hpctui.sources.slurm.parse.errors import SlurmParseError
from hpctui.sources.slurm.parse.gres import gpus_from_gres_request, parse_gres
from hpctui.sources.slurm.parse.jobs import LIVE_JOB_STATES, job_display_state
from hpctui.sources.slurm.parse.states import normalize_node_state
from hpctui.sources.slurm.parse.values import (
    _NULL_TEXT,
    _SENTINELS,
    parse_cli_time,
    parse_duration_min,
    split_list,
    text,
    to_int,
)

SEP = "\x1f"

SINFO_FIELDS = ("%N", "%P", "%t", "%T", "%c", "%C", "%m", "%e", "%G", "%f", "%E", "%u", "%H")
"""node, partition, compact state, long state, cpus, A/I/O/T cpus, memory MB, free MB,
gres, features, reason, reason user, reason time (same fields as the captured sample)."""
SINFO_FORMAT = SEP.join(SINFO_FIELDS)

SQUEUE_FIELDS = (
    "%i", "%A", "%F", "%K", "%P", "%j", "%u", "%a", "%q", "%T", "%r", "%M", "%l", "%D", "%C", "%N", "%b",
    "%S", "%V", "%Q",
)
"""display id, job id, array job id, array task id/range, partition, name, user, account,
qos, state, reason, used, limit, nodes count, cpus, node list, tres_per_node, start,
submit, priority (same fields as the captured sample)."""
SQUEUE_FORMAT = SEP.join(SQUEUE_FIELDS)


OnInvalid = Callable[[str], None]


def _rows(text_in: str, sep: str, width: int, what: str, on_invalid: OnInvalid | None = None) -> Iterator[list[str]]:
    """Lines split on ``sep``, one at a time (a 100k-job queue is never held as 2M field strings). A
    name holding the separator or a newline (any user can submit ``-J $'a\x1fb'`` or ``-J $'a\nb'``)
    gives lines of the wrong width: strict mode raises, with ``on_invalid`` those lines are dropped
    and reported, the rest is kept."""
    for lineno, line in enumerate(text_in.split("\n"), 1):  # only LF ends a record (not \x1c-\x1e)
        if not line.strip():
            continue
        cols = line.split(sep)
        if len(cols) != width:
            msg = f"{what}: line {lineno} has {len(cols)} fields, expected {width}: {line[:60]!r}"
            if on_invalid is None:
                raise SlurmParseError(msg)
            on_invalid(msg)
            continue
        yield cols


def parse_sinfo_text(text_in: str, sep: str = SEP, *, on_invalid: OnInvalid | None = None) -> dict[str, SlurmNodeInfo]:
    """``sinfo -N -h -o SINFO_FORMAT`` → {node: SlurmNodeInfo}; rows per (node, partition)
    are merged. No GPUs-in-use and no memory-in-use in this format (→ None)."""
    out: dict[str, SlurmNodeInfo] = {}
    parts: dict[str, list[str]] = {}
    for cols in _rows(text_in, sep, len(SINFO_FIELDS), "sinfo text", on_invalid):
        name, part, _compact, long_state, cpus, cpu_aiot, mem, _free, gres, feats, reason, user, when = (
            c.strip() for c in cols
        )
        if not is_valid_hostname(name):
            if on_invalid is None:
                raise SlurmParseError(f"sinfo text: invalid node name {name!r}")
            on_invalid(f"sinfo text: invalid node name {name!r}")
            continue
        parts.setdefault(name, [])
        p = clean_text(part.rstrip("*"))
        if p and p not in parts[name]:
            parts[name].append(p)
        if name in out:
            continue
        base, flags = normalize_node_state(long_state)
        gpu_type, gpus_total = parse_gres(gres)
        aiot = cpu_aiot.split("/")
        reason_t = text(reason)
        out[name] = SlurmNodeInfo(
            base_state=base,
            flags=flags,
            reason=reason_t,
            reason_user=text(user) if reason_t else None,
            reason_time=parse_cli_time(when) if reason_t else None,
            features=split_list(feats),
            cpus_total=to_int(cpus),
            cpus_alloc=to_int(aiot[0]) if len(aiot) == 4 else None,
            memory_total_mb=to_int(mem),
            gpus_total=gpus_total,
            gpu_type=gpu_type,
            gres=text(gres),
        )
    return {name: msgspec.structs.replace(info, partitions=tuple(parts.get(name, ()))) for name, info in out.items()}


class TextReuse:
    """The previous squeue text read's records: line → its SlurmJob, or None for a finished job
    (dropped). A line seen again is not parsed again: pending jobs' lines rarely change between
    refreshes (a running job's line does, by its time used). Unreadable lines and jobs with an
    implausible value are not kept (parsed, and reported, again)."""

    def __init__(self) -> None:
        self.lines: dict[str, SlurmJob | None] = {}
        self.hits = 0


def parse_squeue_text(text_in: str, sep: str = SEP, *, include_finished: bool = False,
                      on_invalid: OnInvalid | None = None, drops: Drops | None = None,
                      reuse: TextReuse | None = None) -> tuple[SlurmJob, ...]:
    """``squeue -h -t all -o SQUEUE_FORMAT`` → live jobs. No exit codes, no GPU indices.

    With ``on_invalid``, a record that cannot be read (wrong width, bad id or node list)
    is dropped and reported; without it, SlurmParseError. A number outside its field's
    plausible range (hpctui.model.validate.SLURM_JOB_BOUNDS) is None, recorded in ``drops``.
    With ``reuse`` (the previous read's records, then this one's), a line seen before gives the
    same SlurmJob object without being parsed.

    Each record is read by :class:`_SqueueText` (per-parse caches by value, bounds checked inline;
    the same result as the reference :func:`_squeue_job` + ``checked``), ~4.5 µs a record."""
    drops = drops if drops is not None else Drops()
    out: list[SlurmJob] = []
    read = _SqueueText(include_finished, drops).job
    append = out.append
    prev = reuse.lines if reuse is not None else {}
    seen: dict[str, SlurmJob | None] = {}
    miss = _MISS
    hits = 0
    width = len(SQUEUE_FIELDS)
    gc_was_enabled = gc.isenabled()
    gc.disable()  # 100k fresh lists and jobs would trigger repeated full collections (no cycles here)
    try:
        for lineno, line in enumerate(text_in.split("\n"), 1):  # only LF ends a record (not \x1c-\x1e)
            job = prev.get(line, miss)
            if job is not miss:
                hits += 1
                seen[line] = job
                if job is not None:
                    append(job)
                continue
            if not line.strip():
                continue
            cols = line.split(sep)
            if len(cols) != width:
                msg = f"squeue text: line {lineno} has {len(cols)} fields, expected {width}: {line[:60]!r}"
                if on_invalid is None:
                    raise SlurmParseError(msg)
                on_invalid(msg)
                continue
            flagged = drops.values
            try:
                job = read(cols)
            except SlurmParseError as exc:
                if on_invalid is None:
                    raise
                on_invalid(str(exc))
                continue
            if drops.values == flagged:
                seen[line] = job
            if job is not None:
                append(job)
    finally:
        if gc_was_enabled:
            gc.enable()
    if reuse is not None:
        reuse.lines = seen
        reuse.hits += hits
    return tuple(out)


_MISS = SlurmJob(job_id=0, state="MISS")  # marker: a line the previous read did not have


def _uint(value: str) -> int | None:
    """:func:`to_int` of a field (same result), without its work for the usual plain digits."""
    t = value.strip()
    if is_uint(t):
        iv = int(t)
        return None if iv in _SENTINELS else iv
    return to_int(t)


def _cli_time(value: str) -> float | None:
    """:func:`parse_cli_time` of a field (same result), without the sanitiser for plain ASCII."""
    t = value.strip()
    if t in _NULL_TEXT:
        return None
    if t.isascii() and t.isprintable():
        try:
            return _dt.datetime.fromisoformat(t).timestamp()
        except ValueError:
            return None
    return parse_cli_time(t)


class _Cache(dict[str, Any]):
    """``fn(key)`` memoized by value for one parse (big queues repeat users, partitions, node lists)."""

    def __init__(self, fn: Callable[[str], Any]) -> None:
        super().__init__()
        self.fn = fn

    def __missing__(self, key: str) -> Any:
        value = self[key] = self.fn(key)
        return value


def _node_list(raw: str) -> str | None:
    """A job's node list: None, or a valid hostlist; SlurmParseError (without the job id) if not."""
    nodes = text(raw)
    if nodes:
        try:
            expand(nodes)
        except HostlistError as exc:
            raise SlurmParseError(str(exc)) from exc
    return nodes


def _task(raw: str) -> tuple[str | None, int | None, str | None]:
    """%K → (task text, task id, task range): ``7`` → ("7", 7, None), ``4-9%2`` → (…, None, "4-9%2")."""
    task = text(raw)
    if task and is_uint(task):
        return task, int(task), None
    return task, None, task


class _SqueueText:
    """One parse's text records → SlurmJob, exactly as :func:`_squeue_job` + ``checked`` give them,
    with the values that repeat across a queue (names, users, states, node lists, limits, GPU
    requests) converted once, and the bounds of SLURM_JOB_BOUNDS checked inline (``checked`` only
    for a job with a value outside the plain range)."""

    def __init__(self, include_finished: bool, drops: Drops) -> None:
        self.include_finished = include_finished
        self.drops = drops
        self.texts = _Cache(text)
        self.states = _Cache(job_display_state)
        self.limits = _Cache(parse_duration_min)
        self.gres = _Cache(lambda raw: gpus_from_gres_request(text(raw)))
        self.ints = _Cache(_uint)
        self.nodes: dict[str, str | None] = {}
        self.tasks = _Cache(_task)

    def job(self, cols: list[str]) -> SlurmJob | None:
        (_disp, job_id_s, array_job_s, task_s, part, name, user, account, qos, state_s, reason, _used, limit,
         nnodes, _cpus, nodes_s, tres_pn, start, submit, prio) = cols
        t = job_id_s.strip()
        job_id = int(t) if t.isdigit() and t.isascii() and len(t) <= 10 else None
        if job_id is None or job_id in _SENTINELS:
            job_id = _uint(t)
        if job_id is None or not 0 <= job_id <= 0xFFFFFFFF:
            raise SlurmParseError(f"squeue text: bad job id {job_id_s.strip()[:40]!r}")
        states = self.states
        state = states[state_s] if state_s in states else states.__missing__(state_s)
        if not self.include_finished and state not in LIVE_JOB_STATES:
            return None
        known = self.nodes
        if nodes_s in known:
            node_list = known[nodes_s]
        else:
            try:
                node_list = known[nodes_s] = _node_list(nodes_s)
            except SlurmParseError as exc:
                raise SlurmParseError(f"squeue text: job {job_id}: {exc}") from None
        texts, ints, tasks = self.texts, self.ints, self.tasks
        task, task_id, task_str = tasks[task_s] if task_s in tasks else tasks.__missing__(task_s)
        if task is None and array_job_s == job_id_s:  # %F is %A: not an array job
            array_job: int | None = job_id
            is_array = False
        else:
            array_job = _uint(array_job_s)
            is_array = array_job is not None and (task is not None or array_job != job_id)
        num_nodes = ints[nnodes] if nnodes in ints else ints.__missing__(nnodes)
        gres = self.gres
        per_node = gres[tres_pn] if tres_pn in gres else gres.__missing__(tres_pn)
        gpus = None if per_node is None else per_node * (num_nodes or 1)
        t = prio.strip()
        priority = int(t) if t.isdigit() and t.isascii() and len(t) <= 10 else None
        if priority is None or priority in _SENTINELS:
            priority = _uint(t)
        start_time = _cli_time(start)
        submit_time = _cli_time(submit)
        limits = self.limits
        limit_min = limits[limit] if limit in limits else limits.__missing__(limit)
        job = SlurmJob(
            job_id=job_id,
            array_job_id=array_job if is_array else None,
            array_task_id=task_id if is_array else None,
            array_task_str=task_str if is_array else None,
            name=texts[name] if name in texts else texts.__missing__(name),
            user=texts[user] if user in texts else texts.__missing__(user),
            account=texts[account] if account in texts else texts.__missing__(account),
            partition=texts[part] if part in texts else texts.__missing__(part),
            qos=texts[qos] if qos in texts else texts.__missing__(qos),
            state=state,
            reason=texts[reason] if reason in texts else texts.__missing__(reason),
            nodes=node_list,
            num_nodes=num_nodes,
            gpus_requested=gpus,
            start_time=start_time,
            submit_time=submit_time,
            time_limit_min=limit_min,
            priority=priority,
        )
        # SLURM_JOB_BOUNDS inline: ints from _uint are never negative; epochs and counts may be too big
        if ((array_job is None or array_job <= 0xFFFFFFFF) and (task_id is None or task_id <= 0xFFFFFFFF)
                and (num_nodes is None or num_nodes <= 0x7FFFFFFF) and (gpus is None or 0 <= gpus <= 0x7FFFFFFF)
                and (start_time is None or 0.0 <= start_time <= 1e11)
                and (submit_time is None or 0.0 <= submit_time <= 1e11)
                and (limit_min is None or 0 <= limit_min <= 0xFFFFFFFF)
                and (priority is None or priority <= 0xFFFFFFFF)):
            return job
        return checked(job, SLURM_JOB_BOUNDS, self.drops, f"job {job.job_id}")


def _squeue_job(cols: list[str], include_finished: bool) -> SlurmJob | None:
    """One squeue text record → SlurmJob, or None for a finished job (dropped): the reference
    :class:`_SqueueText` must agree with (tests/test_slurm_hybrid.py compares them)."""
    (_disp, job_id_s, array_job_s, task_s, part, name, user, account, qos, state_s, reason, _used, limit,
     nnodes, _cpus, nodes, tres_pn, start, submit, prio) = (c.strip() for c in cols)
    job_id = to_int(job_id_s)
    if job_id is None or not 0 <= job_id <= 0xFFFFFFFF:
        raise SlurmParseError(f"squeue text: bad job id {job_id_s[:40]!r}")
    state = job_display_state(state_s)
    if not include_finished and state not in LIVE_JOB_STATES:
        return None
    node_list = text(nodes)
    if node_list:
        try:
            expand(node_list)
        except HostlistError as exc:
            raise SlurmParseError(f"squeue text: job {job_id}: {exc}") from exc
    array_job = to_int(array_job_s)
    task = text(task_s)
    is_array = array_job is not None and (task is not None or array_job != job_id)
    num_nodes = to_int(nnodes)
    per_node = gpus_from_gres_request(text(tres_pn))
    return SlurmJob(
        job_id=job_id,
        array_job_id=array_job if is_array else None,
        array_task_id=int(task) if is_array and task and is_uint(task) else None,
        array_task_str=task if is_array and task and not is_uint(task) else None,
        name=text(name),
        user=text(user),
        account=text(account),
        partition=text(part),
        qos=text(qos),
        state=state,
        reason=text(reason),
        nodes=node_list,
        num_nodes=num_nodes,
        gpus_requested=None if per_node is None else per_node * (num_nodes or 1),
        start_time=parse_cli_time(start),
        submit_time=parse_cli_time(submit),
        time_limit_min=parse_duration_min(limit),
        priority=to_int(prio),
    )
