"""Pending reasons in plain words, for the admin at 3 a.m. (FACTS §3, SLURM.md §5–6).

Known reasons have hand-written texts; the QOS*/Assoc* limit family (dozens of names
such as ``QOSMaxJobsPerUserLimit``, ``AssocGrpGRES``) is decoded generically from the
parts of the name, so new limits still read sensibly.
"""

from __future__ import annotations

import re

from hpctui.model.jobs import SlurmJob

_KNOWN: dict[str, str] = {
    "Resources": "waiting for resources: not enough free nodes/CPUs/GPUs/memory right now",
    "Priority": "waiting behind higher-priority jobs",
    "Dependency": "waiting for a job it depends on to finish",
    "DependencyNeverSatisfied": "its dependency can never be satisfied (the job it depends on failed) — cancel it",
    "JobHeldUser": "held by the user (release with scontrol release)",
    "JobHeldAdmin": "held by an administrator (release with scontrol release)",
    "BeginTime": "eligible later (begin time not reached) — e.g. after a requeue, Slurm holds the job back",
    "ReqNodeNotAvail": "a node it needs is not available (down, drained or reserved)",
    "PartitionTimeLimit": "its time limit exceeds the partition's maximum — it will never start as is",
    "PartitionNodeLimit": "its node count is outside the partition's limits",
    "PartitionDown": "the partition is down",
    "PartitionInactive": "the partition is inactive",
    "PartitionConfig": "it requests resources the partition cannot offer",
    "JobArrayTaskLimit": "the array's limit on simultaneously running tasks (the %N in --array=…%N) is reached",
    "launch failed requeued held": "the launch failed on a node; Slurm requeued and held it — check the node, then release",
    "job requeued in held state": "requeued and held (scontrol requeuehold) — release with scontrol release",
    "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions":
        "the nodes it needs are down, drained or reserved for higher-priority partitions",
    "BadConstraints": "its constraints cannot be satisfied by any node",
    "InvalidAccount": "its account is invalid",
    "InvalidQOS": "its QOS is invalid",
    "Reservation": "waiting for its reservation to start",
    "NodeDown": "a node it needs is down",
    "FrontEndDown": "no front-end node is available",
    "Licenses": "waiting for licenses",
    "BurstBufferResources": "waiting for burst-buffer resources",
    "Cleaning": "being cleaned up after a requeue",
    "Prolog": "its prolog is running",
    "SystemFailure": "a Slurm, filesystem or network failure",
    "TimeLimit": "it reached its time limit",
    "NonZeroExitCode": "it exited with a non-zero exit code",
    "OutOfMemory": "it ran out of memory",
    "None": "no reason given (just submitted or being scheduled)",
}

_WORDS = {
    "Grp": "group", "Max": "max", "Min": "min", "Per": "per", "Jobs": "jobs", "Job": "job",
    "Submit": "submitted jobs", "Wall": "wall time", "Cpu": "CPUs", "CPU": "CPUs", "Mem": "memory",
    "Node": "nodes", "Nodes": "nodes", "GRES": "GRES (e.g. GPUs)", "TRES": "TRES", "Billing": "billing",
    "Energy": "energy", "License": "licenses", "BB": "burst buffer", "Run": "running", "Minutes": "minutes",
    "Mins": "minutes", "User": "user", "Account": "account", "Accrue": "accruing jobs", "Time": "time",
    "Unknown": "resources", "Limit": "", "Pre": "pre", "Protected": "protected",
}
_LIMIT = re.compile(r"^(QOS|Assoc)(.+?)(Limit)?$")
_TOKENS = re.compile(r"GRES|TRES|CPU|BB|[A-Z][a-z]*|[a-z]+")


def _decode_limit(reason: str, job: SlurmJob | None) -> str | None:
    m = _LIMIT.match(reason)
    if not m or reason in ("QOSNotAllowed",):
        return None
    owner = m.group(1)
    words = [_WORDS.get(t, t.lower()) for t in _TOKENS.findall(m.group(2))]
    what = " ".join(w for w in words if w)
    if owner == "QOS":
        who = f"QOS '{job.qos}'" if job and job.qos else "the QOS"
    else:
        parts = [p for p in (f"account '{job.account}'" if job and job.account else None,
                             f"user '{job.user}'" if job and job.user else None) if p]
        who = f"the association ({', '.join(parts)})" if parts else "the association (account/user)"
    return f"{who} limit reached: {what} — waits until usage drops or the limit is raised"


def explain_pending_reason(reason: str | None, job: SlurmJob | None = None) -> str:
    """A Slurm pending reason (or squeue's description) → one plain-English sentence."""
    if reason is None or not reason.strip():
        return "no reason given"
    r = reason.strip().replace("_", " ") if "_" in reason and " " not in reason else reason.strip()
    head, _, tail = r.partition(",")
    head = head.strip()
    if head == "ReqNodeNotAvail":
        nodes = tail.strip().removeprefix("UnavailableNodes:").strip() if tail else ""
        base = _KNOWN["ReqNodeNotAvail"]
        return f"{base}: {nodes}" if nodes else base
    if r in _KNOWN:
        text = _KNOWN[r]
    elif head in _KNOWN:
        text = _KNOWN[head]
    else:
        decoded = _decode_limit(head.replace(" ", ""), job)
        text = decoded if decoded else f"Slurm reason: {r}"
    if head == "BeginTime" and job is not None and job.restart_count:
        text += f" (requeued {job.restart_count}×)"
    return text


REASON_CLASSES = ("qos", "assoc", "priority", "resources", "held", "other")  # the :users view's columns


def reason_class(reason: str | None) -> str:
    """Which family a pending reason belongs to: ``qos`` (a QOS* limit), ``assoc`` (an Assoc* limit),
    ``priority`` (behind higher-priority jobs: fair-share, age, QoS priority), ``resources``,
    ``held`` (user/admin hold, dependency) or ``other``."""
    head = (reason or "").strip().partition(",")[0].strip()
    if head.startswith("QOS") and head not in ("QOSNotAllowed",):
        return "qos"
    if head.startswith("Assoc"):
        return "assoc"
    if head == "Priority":
        return "priority"
    if head in ("Resources", "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority "
                "partitions") or head.startswith("ReqNodeNotAvail"):
        return "resources"
    if head in ("JobHeldUser", "JobHeldAdmin", "Dependency", "DependencyNeverSatisfied", "BeginTime"):
        return "held"
    return "other"
