"""The demo cluster's scheduler: its reservations and slurmctld's statistics, shaped like real
``scontrol show reservation`` / ``sdiag`` answers (tests/fixtures/slurm), with incidents to find:

* ``maint_<xid node>``: a maintenance reservation over the node drained for Xid 79 (and its
  neighbour), starting two hours after the demo starts — a reservation over a drained node, and
  maintenance within the warning window;
* ``k8s``: the nodes Kubernetes runs on (the ``RESERVED`` flag of the heatmap);
* user ``judy`` hammering slurmctld (a ``watch -n1 squeue`` loop, ~40 RPCs a second), the rest of
  the users at a few a minute; RPC counts grow with time, as sdiag's do.
"""

from __future__ import annotations

from collections.abc import Sequence

from hpctui.model.hostlist import collect
from hpctui.model.scheduler import Reservation, RpcStat, SchedulerStats
from hpctui.sim.workload import USERS

HAMMER_USER, HAMMER_UID, HAMMER_RATE = "judy", 1010, 40.0  # RPCs a second
MAINT_AFTER_S, MAINT_HOURS = 7200.0, 4  # the maintenance starts 2 h after the demo starts
# message type, id, share of all RPCs, mean time (µs): a queue-watching loop is mostly job/partition info
_TYPES = (("REQUEST_JOB_INFO", 2003, 0.46, 2900), ("REQUEST_PARTITION_INFO", 2009, 0.22, 240),
          ("REQUEST_NODE_INFO", 2007, 0.12, 1800), ("REQUEST_FED_INFO", 2049, 0.08, 190),
          ("MESSAGE_NODE_REGISTRATION_STATUS", 1002, 0.05, 870), ("REQUEST_SUBMIT_BATCH_JOB", 4003, 0.03, 1165),
          ("REQUEST_COMPLETE_BATCH_SCRIPT", 5018, 0.02, 531), ("REQUEST_STATS_INFO", 2035, 0.01, 214),
          ("REQUEST_PING", 1008, 0.01, 171))


def demo_reservations(t0: float, maint_nodes: Sequence[str], k8s_nodes: Sequence[str]) -> tuple[Reservation, ...]:
    """The scripted reservations (times relative to the demo's start ``t0``)."""
    out = []
    if maint_nodes:
        start = t0 + MAINT_AFTER_S
        out.append(Reservation(
            name=f"maint_{maint_nodes[0]}", start_time=start, end_time=start + MAINT_HOURS * 3600,
            nodes=collect(list(maint_nodes)), node_count=len(maint_nodes), users=("root",),
            flags=("MAINT", "IGNORE_JOBS", "SPEC_NODES"), tres=f"cpu={128 * len(maint_nodes)}"))
    if k8s_nodes:
        out.append(Reservation(
            name="k8s", start_time=t0 - 30 * 86_400, end_time=t0 + 335 * 86_400, nodes=collect(list(k8s_nodes)),
            node_count=len(k8s_nodes), users=("root",), flags=("SPEC_NODES",)))
    return tuple(out)


def demo_stats(t: float, t0: float, threads: int, pending: int, running: int, bf_cycle_s: float,
               sched_mean_us: float) -> SchedulerStats:
    """sdiag at ``t``, counting since ``t0`` (the demo's slurmctld started with it)."""
    up = max(1.0, t - t0 + 600.0)  # the statistics started ten minutes before the demo
    users = [RpcStat(name=HAMMER_USER, id=HAMMER_UID, count=int(up * HAMMER_RATE), ave_time_us=2900,
                     total_time_us=int(up * HAMMER_RATE) * 2900),
             RpcStat(name="root", id=0, count=int(up * 1.5), ave_time_us=410, total_time_us=int(up * 1.5) * 410),
             RpcStat(name="slurm", id=64030, count=int(up * 0.8), ave_time_us=300, total_time_us=int(up * 0.8) * 300)]
    for i, (user, _account) in enumerate(USERS):
        if user == HAMMER_USER:
            continue
        n = int(up * (0.02 + 0.01 * (i % 4)))
        users.append(RpcStat(name=user, id=1001 + i, count=n, ave_time_us=600 + 40 * i, total_time_us=n * (600 + 40 * i)))
    total = sum(u.count for u in users)
    types = [RpcStat(name=name, id=tid, count=int(total * share), ave_time_us=ave,
                     total_time_us=int(total * share) * ave) for name, tid, share, ave in _TYPES]
    bf_us = int(bf_cycle_s * 1e6)
    return SchedulerStats(
        time=t, since=t - up, server_thread_count=threads, agent_queue_size=0, agent_count=0, agent_thread_count=0,
        dbd_agent_queue_size=0, jobs_submitted=int(up / 20), jobs_started=int(up / 25), jobs_completed=int(up / 30),
        jobs_canceled=int(up / 400), jobs_failed=int(up / 900), jobs_pending=pending, jobs_running=running,
        schedule_cycle_last_us=int(sched_mean_us * 0.9), schedule_cycle_max_us=int(sched_mean_us * 6),
        schedule_cycle_mean_us=int(sched_mean_us), schedule_cycles=int(up / 60) + 1, schedule_queue_length=pending,
        bf_cycles=int(up / 30) + 1, bf_cycle_last_us=bf_us, bf_cycle_max_us=int(bf_us * 3),
        bf_cycle_mean_us=int(bf_us * 0.9), bf_last_cycle_time=t - (t % 30), bf_last_depth=pending,
        bf_queue_length=pending, bf_backfilled_jobs=int(up / 120), bf_active=False,
        rpc_by_type=tuple(sorted(types, key=lambda r: -r.count)), rpc_by_user=tuple(sorted(users, key=lambda r: -r.count)),
    )
