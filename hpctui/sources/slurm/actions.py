"""Pure target validation for Slurm actions: what a plan may touch and what it hits.

Kept separate from the backends so the rules (hostnames only, job ids only, everything must
exist in the snapshot) are the same whichever way the action is carried out.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from hpctui.findings.correlate import workload_index
from hpctui.model import ClusterSnapshot, Part, SlurmJob
from hpctui.model.action import JOB_ACTIONS, NODE_ACTIONS, ActionKind, TargetResult, reason_problem
from hpctui.model.hostlist import HostlistError, collect, expand
from hpctui.model.scheduler import Reservation

SLURM_NODE_KINDS = frozenset({
    ActionKind.DRAIN_NODES, ActionKind.RESUME_NODES, ActionKind.REBOOT_NODES, ActionKind.CANCEL_REBOOT,
})
SLURM_JOB_KINDS = frozenset({
    ActionKind.REQUEUE_JOBS, ActionKind.REQUEUE_HOLD_JOBS, ActionKind.HOLD_JOBS,
    ActionKind.RELEASE_JOBS, ActionKind.CANCEL_JOBS,
})
# Admin work (maintenance reservations, partition state): one scontrol call, validated here.
SLURM_ADMIN_KINDS = frozenset({ActionKind.RESERVE_MAINT, ActionKind.DELETE_RESERVATION, ActionKind.PARTITION_STATE})
SLURM_KINDS = SLURM_NODE_KINDS | SLURM_JOB_KINDS | SLURM_ADMIN_KINDS
assert SLURM_NODE_KINDS <= NODE_ACTIONS and SLURM_JOB_KINDS <= JOB_ACTIONS

JOB_ID = re.compile(r"^[0-9]{1,10}(_[0-9]{1,10})?$")  # 1234 or array task 1234_5
# A pending array remainder as squeue shows it: 1234_[4-9], 1234_[1,3,5-7], maybe with a %N throttle.
ARRAY_RANGE = re.compile(r"^([0-9]{1,10})_\[([0-9]{1,10}(?:-[0-9]{1,10})?(?:,[0-9]{1,10}(?:-[0-9]{1,10})?)*)"
                         r"(?:%[0-9]{1,10})?\]$")
SIGNAL = re.compile(r"^(SIG)?[A-Z0-9]{1,10}$")


@dataclass
class Checked:
    targets: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    affected: list[str] = field(default_factory=list)


def job_label(job: SlurmJob) -> str:
    where = f" on {job.nodes}" if job.nodes else ""
    return f"job {job.display_id} ({job.user or '?'}, {job.name or '?'}) {job.state}{where}"


def jobs_on_nodes(snapshot: ClusterSnapshot, nodes: set[str]) -> list[SlurmJob]:
    """Running (or finishing) jobs with at least one node in ``nodes``, by job id.

    Same index (and the same notion of "active") as the executor's ``on_nodes`` expansion
    and the node panel: built once per snapshot, then a dict lookup per node.
    """
    return sorted(workload_index(snapshot).jobs_on_any(nodes), key=lambda j: j.job_id)


def _clean_text(value: str, what: str, errors: list[str]) -> None:
    problem = reason_problem(value)  # the one rule of hpctui.model.action, for every backend
    if problem:
        errors.append(problem.replace("reason", what, 1))


def parse_array_target(token: str) -> tuple[int, list[tuple[int, int]]] | None:
    """``1234_[4-9%2]`` -> (1234, [(4, 9)]); None if ``token`` is not an array-range target."""
    m = ARRAY_RANGE.match(token)
    if m is None:
        return None
    ranges: list[tuple[int, int]] = []
    for part in m.group(2).split(","):
        lo, _, hi = part.partition("-")
        a, b = int(lo), int(hi or lo)
        if a > b:
            return None
        ranges.append((a, b))
    return int(m.group(1)), ranges


def format_array_target(job_id: int, ranges: list[tuple[int, int]]) -> str:
    """The form scontrol/scancel accept: ``1234_[4-9]`` (no throttle suffix: Slurm rejects it)."""
    body = ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)
    return f"{job_id}_[{body}]"


def _ranges_of(task_str: str) -> list[tuple[int, int]]:
    parsed = parse_array_target(f"0_[{task_str}]")
    return parsed[1] if parsed else []


def _covered(want: list[tuple[int, int]], have: list[tuple[int, int]]) -> bool:
    """Every task of ``want`` is in the union of ``have``."""
    merged: list[list[int]] = []
    for a, b in sorted(have):
        if merged and a <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return all(any(m[0] <= a and b <= m[1] for m in merged) for a, b in want)


class _JobIndex:
    """Lookups for job targets over one snapshot's jobs (built once per snapshot)."""

    def __init__(self, jobs: tuple[SlurmJob, ...]) -> None:
        self.by_id: dict[str, SlurmJob] = {}
        self.arrays: dict[int, list[SlurmJob]] = {}  # array job id -> its task/remainder records
        for job in jobs:
            self.by_id.setdefault(job.display_id, job)
            self.by_id.setdefault(str(job.job_id), job)
            if job.array_job_id is not None:
                self.arrays.setdefault(job.array_job_id, []).append(job)
                if job.array_task_id is None:
                    self.by_id.setdefault(str(job.array_job_id), job)
                    parsed = parse_array_target(job.display_id)
                    if parsed is not None:  # the throttle-free form the plan uses
                        self.by_id.setdefault(format_array_target(*parsed), job)

    def tasks_in(self, array_id: int, ranges: list[tuple[int, int]]) -> list[SlurmJob] | None:
        """Records of ``array_id`` holding a task in ``ranges``; None if some task is unknown."""
        members = self.arrays.get(array_id, [])
        have: list[tuple[int, int]] = []
        hit: list[SlurmJob] = []
        for job in members:
            spans = [(job.array_task_id, job.array_task_id)] if job.array_task_id is not None \
                else _ranges_of(job.array_task_str or "")
            have.extend(spans)
            if any(a <= y and x <= b for a, b in ranges for x, y in spans):
                hit.append(job)
        return hit if _covered(ranges, have) else None


_index_cache: tuple[tuple[SlurmJob, ...], _JobIndex] | None = None


def _job_index(snapshot: ClusterSnapshot) -> _JobIndex:
    """Cached on the identity of ``snapshot.jobs``: re-planning (each keystroke) costs nothing."""
    global _index_cache
    if _index_cache is not None and _index_cache[0] is snapshot.jobs:
        return _index_cache[1]
    index = _JobIndex(snapshot.jobs)
    _index_cache = (snapshot.jobs, index)
    return index


def check(kind: ActionKind, targets: tuple[str, ...], params: dict[str, str], snapshot: ClusterSnapshot) -> Checked:
    """Validate ``targets`` against the snapshot. Invalid ones are rejected with a reason."""
    out = Checked()
    for key in ("reason",):
        if key in params:
            _clean_text(params[key], key, out.errors)
    if kind in (ActionKind.DRAIN_NODES, ActionKind.REBOOT_NODES) and not params.get("reason", "").strip():
        out.errors.append(f"{kind.value} needs a reason")
    if kind in SLURM_NODE_KINDS:
        _check_nodes(kind, targets, snapshot, out)
    elif kind in SLURM_ADMIN_KINDS:
        _check_admin(kind, targets, params, snapshot, out)
    elif kind in SLURM_JOB_KINDS:
        _check_jobs(kind, targets, params, snapshot, out)
    else:
        out.errors.append(f"Slurm cannot {kind.value}")
    return out


def _check_nodes(kind: ActionKind, targets: tuple[str, ...], snapshot: ClusterSnapshot, out: Checked) -> None:
    names: list[str] = []
    for token in targets:
        try:
            expanded = expand(token)
        except HostlistError as exc:
            out.rejected.append(token)
            out.errors.append(str(exc))
            continue
        for name in expanded:
            node = snapshot.nodes.get(name)
            if node is None or node.slurm is None:
                out.rejected.append(name)
                out.errors.append(f"unknown node {name!r} (not in the last Slurm read)")
            elif name not in names:
                names.append(name)
    out.targets = names
    for name in names:
        info = snapshot.nodes[name].slurm
        assert info is not None
        state = info.display_state
        # (an already-drained node: the executor says by whom, when and why, and asks for reason_mode)
        if kind is ActionKind.RESUME_NODES and "DRAIN" not in info.flags and info.base_state.upper() != "DOWN":
            out.warnings.append(f"{name} is {state}: Slurm will answer 'Invalid node state specified'")
    if kind in (ActionKind.DRAIN_NODES, ActionKind.REBOOT_NODES):
        hit = jobs_on_nodes(snapshot, set(names))
        how = "keeps running until it ends" if kind is ActionKind.DRAIN_NODES else \
            "runs to its end, then the node reboots"
        out.affected = [f"{job_label(j)}: {how}" for j in hit]


def _check_jobs(kind: ActionKind, targets: tuple[str, ...], params: dict[str, str],
                snapshot: ClusterSnapshot, out: Checked) -> None:
    index = _job_index(snapshot)
    if "signal" in params and not SIGNAL.match(params["signal"]):
        out.errors.append(f"bad signal {params['signal']!r}")
    for raw in dict.fromkeys(targets):
        array = parse_array_target(raw)
        if array is None and not JOB_ID.match(raw):
            out.rejected.append(raw)
            out.errors.append(f"not a job id: {raw!r}")
            continue
        token = format_array_target(*array) if array is not None else raw
        if token in out.targets:
            continue
        hit: list[SlurmJob]
        if array is not None:
            found = index.tasks_in(*array)
            if not found:
                out.rejected.append(raw)
                out.errors.append(f"unknown array tasks {token} (not in the last Slurm read)")
                continue
            hit = found
        else:
            found_job = index.by_id.get(token)
            if found_job is None:
                out.rejected.append(raw)
                out.errors.append(f"unknown job {token} (not in the last Slurm read)")
                continue
            members = index.arrays.get(int(token), []) if token.isdigit() else []
            if members:
                out.affected.append(f"job array {token}: every task of the array "
                                    f"({len(members)} record(s) in the last read)")
                hit = members
            else:
                hit = [found_job]
        out.targets.append(token)
        out.affected.extend(job_label(j) for j in hit)
        if kind in (ActionKind.REQUEUE_JOBS, ActionKind.REQUEUE_HOLD_JOBS):
            job = hit[0]
            if all(j.state == "PENDING" for j in hit):
                out.warnings.append(f"job {token} is pending: Slurm refuses to requeue it")
            if job.batch is False:
                out.warnings.append(f"job {token} is not a batch job: Slurm only requeues batch jobs")
            if job.requeueable is False:
                out.warnings.append(f"job {token} is not requeueable (--no-requeue)")


# -- maintenance reservations and partition state ---------------------------------------------

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
USERS = re.compile(r"^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$")
# scontrol time forms: now, now+N[minutes|hours|days], YYYY-MM-DD[THH:MM[:SS]]
START = re.compile(r"^(now(\+[0-9]{1,6}(minutes|hours|days)?)?|[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}(:[0-9]{2})?)?)$")
END = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}(:[0-9]{2})?)?$")
# minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, UNLIMITED
DURATION = re.compile(r"^([0-9]{1,7}|[0-9]{1,4}:[0-9]{2}(:[0-9]{2})?|[0-9]{1,4}-[0-9]{1,2}(:[0-9]{2}){0,2}|UNLIMITED)$")
PARTITION_STATES = ("UP", "DOWN", "DRAIN", "INACTIVE")
PARTITION_STATE_MEANING = {
    "UP": "jobs may be queued and started",
    "DOWN": "jobs may be queued but none start; running jobs continue",
    "DRAIN": "no new jobs are queued; queued jobs may still start; running jobs continue",
    "INACTIVE": "no new jobs are queued and queued jobs do not start; running jobs continue",
}


def admin_params(kind: ActionKind, targets: tuple[str, ...], params: dict[str, str]) -> dict[str, str]:
    """``params`` with the defaults the preview shows and the executor then runs (name, start, users)."""
    out = {k: v.strip() for k, v in params.items()}
    if kind is ActionKind.RESERVE_MAINT:
        out.setdefault("start", "now")
        out.setdefault("users", "root")
        if not out.get("name"):
            first = next((t for t in targets if NAME.match(t.replace("[", "").replace("]", ""))), "nodes")
            out["name"] = "maint_" + re.sub(r"[^A-Za-z0-9_.-]", "", first)[:40]
    if kind is ActionKind.PARTITION_STATE and "state" in out:
        out["state"] = out["state"].upper()
    return out


def admin_argvs(kind: ActionKind, targets: tuple[str, ...], params: dict[str, str]) -> list[list[str]]:
    """The exact scontrol calls: one per reservation/partition; one for a reservation's node set."""
    if kind is ActionKind.RESERVE_MAINT:
        when = [f"StartTime={params.get('start', 'now')}"]
        when.append(f"EndTime={params['end']}" if params.get("end") else f"Duration={params.get('duration', '')}")
        return [["scontrol", "create", "reservation", f"ReservationName={params.get('name', '')}",
                 f"Nodes={collect(list(targets))}", *when, f"Users={params.get('users', 'root')}",
                 "Flags=MAINT,IGNORE_JOBS"]]
    if kind is ActionKind.DELETE_RESERVATION:
        return [["scontrol", "delete", f"ReservationName={t}"] for t in targets]
    if kind is ActionKind.PARTITION_STATE:
        return [["scontrol", "update", f"PartitionName={t}", f"State={params.get('state', '')}"] for t in targets]
    raise ValueError(f"not a Slurm admin action: {kind.value}")


def partitions_of(snapshot: ClusterSnapshot) -> dict[str, list[str]]:
    """Partition -> its nodes, from the last Slurm node read."""
    out: dict[str, list[str]] = {}
    for name, node in snapshot.nodes.items():
        if node.slurm is not None:
            for p in node.slurm.partitions:
                out.setdefault(p, []).append(name)
    return out


def _check_admin(kind: ActionKind, targets: tuple[str, ...], params: dict[str, str], snapshot: ClusterSnapshot,
                 out: Checked) -> None:
    if kind is ActionKind.RESERVE_MAINT:
        _check_nodes(kind, targets, snapshot, out)
        name, start, users = params.get("name", ""), params.get("start", "now"), params.get("users", "root")
        duration, end = params.get("duration", ""), params.get("end", "")
        if not NAME.match(name):
            out.errors.append(f"bad reservation name {name!r} (letters, digits, _ . -)")
        if not START.match(start):
            out.errors.append(f"bad start {start!r} (now, now+2hours, YYYY-MM-DDTHH:MM)")
        if end and not END.match(end):
            out.errors.append(f"bad end {end!r} (YYYY-MM-DDTHH:MM)")
        if not end and not duration:
            out.errors.append("reserve_maint needs a duration or an end")
        elif not end and not DURATION.match(duration):
            out.errors.append(f"bad duration {duration!r} (minutes, HH:MM:SS, D-HH:MM or UNLIMITED)")
        if not USERS.match(users):
            out.errors.append(f"bad users {users!r} (comma-separated user names)")
        hit = jobs_on_nodes(snapshot, set(out.targets))
        out.affected = [job_label(j) for j in hit]
        if hit:
            out.warnings.append(f"{len(hit)} running job(s) keep running (IGNORE_JOBS); "
                                "no new job starts on these nodes during the window")
        for name_ in out.targets:
            info = snapshot.nodes[name_].slurm
            if info is not None and ("MAINTENANCE" in info.flags or "MAINT" in info.flags):
                out.warnings.append(f"{name_} is already in a maintenance reservation")
        for resv in snapshot.reservations:
            if resv.name == name:
                out.errors.append(f"a reservation named {name} exists already (Slurm: Duplicate reservation name)")
            shared = sorted(set(out.targets) & _resv_nodes(resv))
            if shared and resv.name != name:
                out.warnings.append(f"{collect(shared)} also in reservation {resv.name} (Slurm lets a MAINT "
                                    "reservation overlap others; both apply)")
        return
    for raw in dict.fromkeys(targets):
        if not NAME.match(raw):
            out.rejected.append(raw)
            out.errors.append(f"bad {'reservation' if kind is ActionKind.DELETE_RESERVATION else 'partition'} "
                              f"name {raw!r}")
        else:
            out.targets.append(raw)
    if kind is ActionKind.DELETE_RESERVATION:
        _check_reservation_names(snapshot, out)
        return
    state = params.get("state", "")
    if state not in PARTITION_STATES:
        out.errors.append(f"partition state must be one of {', '.join(PARTITION_STATES)}, got {state!r}")
    known = partitions_of(snapshot)
    for name_ in list(out.targets):
        if name_ not in known:
            out.targets.remove(name_)
            out.rejected.append(name_)
            out.errors.append(f"unknown partition {name_!r} (not in the last Slurm read)")
    if state in PARTITION_STATE_MEANING:
        out.warnings.append(f"{state}: {PARTITION_STATE_MEANING[state]}")
    if state in ("DOWN", "INACTIVE", "DRAIN"):
        nodes = {n for p in out.targets for n in known.get(p, [])}
        running = [j for j in jobs_on_nodes(snapshot, nodes) if j.partition in out.targets]
        pending = [j for j in snapshot.jobs if j.state == "PENDING" and j.partition in out.targets]
        out.affected = [job_label(j) for j in running]
        if pending and state != "DRAIN":
            out.affected.append(f"{len(pending)} pending job(s) in {', '.join(out.targets)} will not start")


def _resv_nodes(resv: Reservation) -> set[str]:
    try:
        return set(expand(resv.nodes)) if resv.nodes else set()
    except HostlistError:
        return set()


def _check_reservation_names(snapshot: ClusterSnapshot, out: Checked) -> None:
    """Reservation targets against the last read: unknown names are rejected once the part was read."""
    if Part.RESERVATIONS.value not in snapshot.collected_at:
        out.warnings.append("reservations not read yet: Slurm checks that the name exists")
        return
    known = {r.name: r for r in snapshot.reservations}
    for name in list(out.targets):
        resv = known.get(name)
        if resv is None:
            out.targets.remove(name)
            out.rejected.append(name)
            out.errors.append(f"unknown reservation {name!r} (not in the last Slurm read)")
        elif resv.nodes:
            out.affected.append(f"reservation {name} on {resv.nodes}: its nodes are released"
                                + (" (maintenance ends)" if resv.maintenance else ""))


def reservation_results(resv: Reservation, targets: tuple[str, ...], created: str) -> list[TargetResult]:
    """One result per target of a maintenance reservation as read back: in its nodes, and flagged MAINT."""
    held = _resv_nodes(resv)
    when = " → ".join(time.strftime("%Y-%m-%d %H:%MZ", time.gmtime(t)) if t is not None else "?"
                      for t in (resv.start_time, resv.end_time))
    seen = f"read back: {resv.name} on {resv.nodes or 'no nodes'}, {when}, flags {','.join(resv.flags) or '-'}"
    out = []
    for t in targets:
        if t not in held:
            out.append(TargetResult(target=t, ok=False, message=f"{created}; {seen}: {t} is not in it"))
        elif not resv.maintenance:
            out.append(TargetResult(target=t, ok=False, message=f"{created}; {seen}: no MAINT flag"))
        else:
            out.append(TargetResult(target=t, ok=True, message=f"{created}; {seen}"))
    return out
