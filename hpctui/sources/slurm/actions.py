"""Pure target validation for Slurm actions: what a plan may touch and what it hits.

Kept separate from the backends so the rules (hostnames only, job ids only, everything must
exist in the snapshot) are the same whichever way the action is carried out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hpctui.actions.base import JOB_ACTIONS, NODE_ACTIONS, ActionKind
from hpctui.model import ClusterSnapshot, SlurmJob
from hpctui.model.hostlist import HostlistError, expand

SLURM_NODE_KINDS = frozenset({
    ActionKind.DRAIN_NODES, ActionKind.RESUME_NODES, ActionKind.REBOOT_NODES, ActionKind.CANCEL_REBOOT,
})
SLURM_JOB_KINDS = frozenset({
    ActionKind.REQUEUE_JOBS, ActionKind.REQUEUE_HOLD_JOBS, ActionKind.HOLD_JOBS,
    ActionKind.RELEASE_JOBS, ActionKind.CANCEL_JOBS,
})
SLURM_KINDS = SLURM_NODE_KINDS | SLURM_JOB_KINDS
assert SLURM_NODE_KINDS <= NODE_ACTIONS and SLURM_JOB_KINDS <= JOB_ACTIONS

JOB_ID = re.compile(r"^[0-9]{1,10}(_[0-9]{1,10})?$")  # 1234 or array task 1234_5
SIGNAL = re.compile(r"^(SIG)?[A-Z0-9]{1,10}$")
ACTIVE_STATES = frozenset({"RUNNING", "COMPLETING", "SUSPENDED", "CONFIGURING", "STOPPED", "SIGNALING"})


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


def _job_nodes(job: SlurmJob) -> list[str]:
    try:
        return expand(job.nodes or "")
    except HostlistError:
        return []


def jobs_on_nodes(snapshot: ClusterSnapshot, nodes: set[str]) -> list[SlurmJob]:
    """Running (or finishing) jobs with at least one node in ``nodes``."""
    return [j for j in snapshot.jobs if j.state in ACTIVE_STATES and nodes.intersection(_job_nodes(j))]


def _clean_text(value: str, what: str, errors: list[str]) -> None:
    if any(ord(c) < 32 for c in value):
        errors.append(f"{what} must be a single line of printable text")


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
        if kind is ActionKind.DRAIN_NODES and "DRAIN" in info.flags:
            out.warnings.append(f"{name} is already {state}")
        if kind is ActionKind.RESUME_NODES and "DRAIN" not in info.flags and info.base_state.upper() != "DOWN":
            out.warnings.append(f"{name} is {state}: Slurm will answer 'Invalid node state specified'")
    if kind in (ActionKind.DRAIN_NODES, ActionKind.REBOOT_NODES):
        hit = jobs_on_nodes(snapshot, set(names))
        out.affected = [job_label(j) for j in hit]


def _check_jobs(kind: ActionKind, targets: tuple[str, ...], params: dict[str, str],
                snapshot: ClusterSnapshot, out: Checked) -> None:
    index: dict[str, SlurmJob] = {}
    for job in snapshot.jobs:
        index.setdefault(job.display_id, job)
        index.setdefault(str(job.job_id), job)
        if job.array_job_id is not None and job.array_task_id is None:
            index.setdefault(str(job.array_job_id), job)
    wanted: list[str] = list(targets)
    on_nodes = params.get("on_nodes", "").strip()
    if on_nodes:
        try:
            nodes = set(expand(on_nodes))
        except HostlistError as exc:
            out.errors.append(f"on_nodes: {exc}")
            nodes = set()
        unknown = sorted(n for n in nodes if n not in snapshot.nodes)
        if unknown:
            out.errors.append(f"on_nodes: unknown node(s) {', '.join(unknown)}")
        found = jobs_on_nodes(snapshot, nodes)
        if nodes and not found:
            out.warnings.append(f"no running jobs on {on_nodes}")
        wanted.extend(j.display_id for j in found)
    if "signal" in params and not SIGNAL.match(params["signal"]):
        out.errors.append(f"bad signal {params['signal']!r}")
    for token in dict.fromkeys(wanted):
        if not JOB_ID.match(token):
            out.rejected.append(token)
            out.errors.append(f"not a job id: {token!r}")
            continue
        found_job = index.get(token)
        if found_job is None:
            out.rejected.append(token)
            out.errors.append(f"unknown job {token} (not in the last Slurm read)")
            continue
        job = found_job
        out.targets.append(token)
        out.affected.append(job_label(job))
        if kind in (ActionKind.REQUEUE_JOBS, ActionKind.REQUEUE_HOLD_JOBS):
            if job.state == "PENDING":
                out.warnings.append(f"job {token} is pending: Slurm refuses to requeue it")
            if job.batch is False:
                out.warnings.append(f"job {token} is not a batch job: Slurm only requeues batch jobs")
            if job.requeueable is False:
                out.warnings.append(f"job {token} is not requeueable (--no-requeue)")
