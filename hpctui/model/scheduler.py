"""The scheduler as Slurm reports it: reservations, slurmctld's own statistics (sdiag), and one
pending job's priority factors and expected start (sprio, squeue --start).

Times are epoch seconds, cycle and RPC times microseconds (as sdiag prints them). ``None`` means
"Slurm did not say": never 0.
"""

from __future__ import annotations

import msgspec

from hpctui.model.jobs import SlurmJob

MAINT_FLAGS = frozenset({"MAINT", "MAINTENANCE"})

# The controller's trends over the session: keys of the store's controller history (UiPort.node_history).
CTLD_PREFIX = "ctld:"
CTLD_TRENDS = {
    "agent_queue": "ctld:agent_queue", "threads": "ctld:threads", "bf_cycle_s": "ctld:bf_cycle_s",
    "sched_cycle_ms": "ctld:sched_cycle_ms", "rpc_total": "ctld:rpc_total", "pending": "ctld:pending",
}
CTLD_USER_RPCS = "ctld:rpc_user:"  # + user name: that user's cumulative RPC count


class Reservation(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One reservation (``scontrol show reservation`` / REST ``reservations``)."""

    name: str
    start_time: float | None = None
    end_time: float | None = None
    nodes: str | None = None  # Slurm's hostlist expression ("gpu[03-04]"); None: no nodes (licenses only)
    node_count: int | None = None
    users: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    partition: str | None = None
    state: str | None = None  # ACTIVE/INACTIVE where Slurm says it (text, REST <= v0.0.38); else from the times
    tres: str | None = None

    @property
    def maintenance(self) -> bool:
        """A maintenance reservation (Flags=MAINT): the nodes are in MAINT state while it is active."""
        return bool(MAINT_FLAGS.intersection(f.upper() for f in self.flags))

    def active(self, now: float) -> bool:
        """Whether the reservation holds its nodes at ``now`` (Slurm's State when its times are unknown)."""
        if self.start_time is not None:
            return self.start_time <= now and (self.end_time is None or now < self.end_time)
        return (self.state or "").upper() == "ACTIVE"


class RpcStat(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One row of sdiag's RPC tables: a message type (``REQUEST_JOB_INFO``) or a user."""

    name: str
    id: int | None = None  # message type id, or uid
    count: int = 0
    ave_time_us: int | None = None
    total_time_us: int | None = None


class SchedulerStats(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """slurmctld's statistics (``sdiag``, ``sdiag --json``, REST ``diag``); counters since ``since``."""

    time: float | None = None  # when slurmctld answered (req_time)
    since: float | None = None  # start of the statistics (last restart or ``sdiag -r``)
    server_thread_count: int | None = None
    agent_queue_size: int | None = None
    agent_count: int | None = None
    agent_thread_count: int | None = None
    dbd_agent_queue_size: int | None = None
    jobs_submitted: int | None = None
    jobs_started: int | None = None
    jobs_completed: int | None = None
    jobs_canceled: int | None = None
    jobs_failed: int | None = None
    jobs_pending: int | None = None
    jobs_running: int | None = None
    schedule_cycle_last_us: int | None = None
    schedule_cycle_max_us: int | None = None
    schedule_cycle_mean_us: int | None = None
    schedule_cycles: int | None = None
    schedule_queue_length: int | None = None
    bf_cycles: int | None = None
    bf_cycle_last_us: int | None = None
    bf_cycle_max_us: int | None = None
    bf_cycle_mean_us: int | None = None
    bf_last_cycle_time: float | None = None  # when the last backfill cycle ran
    bf_last_depth: int | None = None
    bf_queue_length: int | None = None
    bf_backfilled_jobs: int | None = None
    bf_active: bool | None = None
    rpc_by_type: tuple[RpcStat, ...] = ()  # by count, highest first
    rpc_by_user: tuple[RpcStat, ...] = ()  # by count, highest first


class PriorityFactors(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One pending job's priority and its weighted factors (``sprio -j``)."""

    job_id: str
    user: str | None = None
    priority: int | None = None
    site: int | None = None
    age: int | None = None
    assoc: int | None = None
    fairshare: int | None = None
    jobsize: int | None = None
    partition: int | None = None
    qos: int | None = None
    nice: int | None = None
    tres: str | None = None  # per-TRES factors ("cpu=10,gres/gpu=100"), None when unweighted


class ExpectedStart(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """When the scheduler expects a pending job to start (``squeue --start``), and where."""

    job_id: str
    user: str | None = None
    start_time: float | None = None  # None: Slurm does not know yet (N/A)
    sched_nodes: str | None = None
    reason: str | None = None


class JobOutlook(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """The on-demand answer for one job: its priority breakdown and expected start."""

    job_id: str
    factors: PriorityFactors | None = None
    start: ExpectedStart | None = None
    detail: str | None = None  # why a part is missing ("sprio: job not pending", a failure)
    commands: tuple[str, ...] = ()  # what ran, shell-quoted
    job: SlurmJob | None = None  # the job read whole (``scontrol -o show job``) when the queue read lacked fields
