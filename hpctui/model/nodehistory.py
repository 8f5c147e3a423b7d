"""What a cluster remembers about its nodes and jobs: node events, jobs that died, accounting rows.

Each struct is one record, already sanitised by whoever built it (a parser, the audit reader,
the simulator). The merging, counting and ranking live in :mod:`hpctui.findings.nodehistory`.
"""

from __future__ import annotations

import msgspec

# Event kinds, as the history and the ranking count them.
DRAIN, DOWN, RESUME, CORDON, UNCORDON, REBOOT, JOB_FAILED, HEALTH = (
    "drain", "down", "resume", "cordon", "uncordon", "reboot", "job_failed", "health")
CHECKED = "check"  # a health check that passed (a failed one is HEALTH: a fault)
# Where an event was read from (``NodeEvent.origin``).
# ("slurm": slurmctld's current state of a node; "events": the store's timeline)
ORIGIN_SLURMDBD, ORIGIN_AUDIT, ORIGIN_EVENTS, ORIGIN_K8S, ORIGIN_SACCT, ORIGIN_DEMO, ORIGIN_SLURM = (
    "slurmdbd", "audit", "events", "k8s", "sacct", "demo", "slurm")
ORIGIN_CHECKS = "checks"  # the health-check records (hpctui.actions.checks.ledger)
# Job states that count as "died on the node".
DEAD_JOB_STATES = ("FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "TIMEOUT")


class NodeEvent(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One thing that happened to a node: drained, downed, resumed, cordoned, uncordoned, rebooted.

    ``time`` is when it began (epoch seconds), ``end`` when it ended (a drain resumed) or None
    while it lasts. ``user`` is who did it when the record says (Slurm: who set the reason;
    the audit log: who ran the action). ``origin`` is where it was read.
    """

    node: str
    kind: str
    time: float
    origin: str
    end: float | None = None
    reason: str | None = None
    user: str | None = None
    state: str | None = None  # Slurm's state as slurmdbd recorded it ("DRAIN", "DOWN*", ...)


class AcctJob(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One ``sacct`` job row (``-X``: allocations only), exit codes decoded like the live queue's."""

    job_id: str
    state: str  # FAILED, NODE_FAIL, TIMEOUT, OUT_OF_MEMORY, COMPLETED, CANCELLED (``by N`` dropped)
    name: str | None = None
    user: str | None = None
    account: str | None = None
    partition: str | None = None
    nodes: str | None = None  # the NodeList, a hostlist
    start: float | None = None
    end: float | None = None
    elapsed_s: int | None = None
    exit_code: int | None = None  # None when it was killed by a signal
    signal: int | None = None
    gpus: int | None = None  # from AllocTRES gres/gpu=N
    reason: str | None = None


class GpuUsage(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """GPU-hours of one account (``user`` None) or one user in an account, from ``sreport``."""

    account: str
    gpu_hours: float
    user: str | None = None
    cluster: str | None = None


class AcctQuery(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """What one ``sacct`` query asks: a window (epoch seconds), filters and a row cap."""

    start: float
    end: float
    nodes: str | None = None  # a hostlist
    user: str | None = None
    account: str | None = None
    states: tuple[str, ...] = ()
    limit: int = 500


class AcctResult(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """A ``sacct``, ``sacctmgr show event`` or ``sreport`` answer: its rows, whether they were cut at
    the cap, what ran, and why it is not (all) there."""

    available: bool
    jobs: list[AcctJob] = msgspec.field(default_factory=list)
    events: list[NodeEvent] = msgspec.field(default_factory=list)
    usage: list[GpuUsage] = msgspec.field(default_factory=list)
    truncated: bool = False  # more rows than the cap: the rest are left out
    detail: str | None = None  # why unavailable, or what part failed
    commands: list[str] = msgspec.field(default_factory=list)
    start: float | None = None
    end: float | None = None


class NodeRecord(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """Everything remembered of one node over a window: its events, newest first, the jobs that
    died there, and what could not be read (one line per source)."""

    node: str
    start: float
    end: float
    events: list[NodeEvent] = msgspec.field(default_factory=list)
    dead_jobs: list[AcctJob] = msgspec.field(default_factory=list)
    problems: list[str] = msgspec.field(default_factory=list)
    commands: list[str] = msgspec.field(default_factory=list)
