"""``sinfo``/``squeue`` fixed-format text fallbacks (fast: ~0.1 s for 100k jobs, DESIGN.md).

The backend runs ``sinfo -N -h -o SINFO_FORMAT`` and ``squeue -h -t all -o SQUEUE_FORMAT``.
Fields are joined by SEP (ASCII unit separator, 0x1F): it cannot occur in names,
reasons or comments typed by people, unlike ``|`` or ``,``.
"""

from __future__ import annotations

from collections.abc import Callable

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


def _rows(text_in: str, sep: str, width: int, what: str, on_invalid: OnInvalid | None = None) -> list[list[str]]:
    """Lines split on ``sep``. A name holding the separator or a newline (any user can submit
    ``-J $'a\x1fb'`` or ``-J $'a\nb'``) gives lines of the wrong width: strict mode raises,
    with ``on_invalid`` those lines are dropped and reported, the rest is kept."""
    rows = []
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
        rows.append(cols)
    return rows


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


def parse_squeue_text(text_in: str, sep: str = SEP, *, include_finished: bool = False,
                      on_invalid: OnInvalid | None = None, drops: Drops | None = None) -> tuple[SlurmJob, ...]:
    """``squeue -h -t all -o SQUEUE_FORMAT`` → live jobs. No exit codes, no GPU indices.

    With ``on_invalid``, a record that cannot be read (wrong width, bad id or node list)
    is dropped and reported; without it, SlurmParseError. A number outside its field's
    plausible range (hpctui.model.validate.SLURM_JOB_BOUNDS) is None, recorded in ``drops``."""
    drops = drops if drops is not None else Drops()
    out: list[SlurmJob] = []
    for cols in _rows(text_in, sep, len(SQUEUE_FIELDS), "squeue text", on_invalid):
        try:
            job = _squeue_job(cols, include_finished)
        except SlurmParseError as exc:
            if on_invalid is None:
                raise
            on_invalid(str(exc))
            continue
        if job is not None:
            out.append(checked(job, SLURM_JOB_BOUNDS, drops, f"job {job.job_id}"))
    return tuple(out)


def _squeue_job(cols: list[str], include_finished: bool) -> SlurmJob | None:
    """One squeue text record → SlurmJob, or None for a finished job (dropped)."""
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
