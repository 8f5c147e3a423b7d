"""Findings about the scheduler itself: reservations over nodes that cannot serve them, maintenance
that is about to start, and a slurmctld that is not keeping up (sdiag).

Reservation findings belong to nodes (they join the node's other findings: the heatmap colours them);
controller findings belong to no node: ``FindingsIndex.cluster``, listed in the problem list as
:data:`CONTROLLER_KEY`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from hpctui.findings.health import Finding, Thresholds
from hpctui.model import ClusterSnapshot, Node, Severity
from hpctui.model.hostlist import HostlistError, expand
from hpctui.model.scheduler import Reservation

CONTROLLER_KEY = "slurmctld"  # the problem list's group (and the object prefix) of controller findings


def _left(seconds: float) -> str:
    seconds = max(0, int(seconds))
    h, rest = divmod(seconds, 3600)
    return f"{h}h{rest // 60:02d}m" if h else f"{rest // 60}m"


_cache_lock = threading.Lock()
_cache: tuple[tuple[Reservation, ...], dict[str, tuple[Reservation, ...]]] | None = None


def reservations_by_node(reservations: tuple[Reservation, ...]) -> dict[str, tuple[Reservation, ...]]:
    """Node name → the reservations holding it (built once per reservations tuple; unreadable lists skipped)."""
    global _cache
    with _cache_lock:
        if _cache is not None and _cache[0] is reservations:
            return _cache[1]
    out: dict[str, list[Reservation]] = {}
    for resv in reservations:
        if not resv.nodes:
            continue
        try:
            names = expand(resv.nodes)
        except HostlistError:
            continue
        for name in names:
            out.setdefault(name, []).append(resv)
    frozen = {k: tuple(v) for k, v in out.items()}
    with _cache_lock:
        _cache = (reservations, frozen)
    return frozen


def unusable(node: Node) -> str | None:
    """"drained" / "down" when Slurm will not run jobs on the node, else None."""
    info = node.slurm
    if info is None:
        return None
    if info.base_state.upper() in ("DOWN", "FAIL") or {"NOT_RESPONDING", "FAIL"} & set(info.flags):
        return "down"
    if "DRAIN" in info.flags:
        return "drained"
    return None


def reservation_findings(snapshot: ClusterSnapshot, name: str, t: Thresholds) -> list[Finding]:
    """The reservations holding node ``name``: over a drained/down node, and maintenance starting soon."""
    held = reservations_by_node(snapshot.reservations).get(name) if snapshot.reservations else None
    if not held:
        return []
    out = []
    now = snapshot.time
    node = snapshot.nodes.get(name)
    state = unusable(node) if node is not None else None
    obj = f"node/{name}"
    for resv in held:
        if resv.end_time is not None and resv.end_time <= now:
            continue
        when = "active" if resv.active(now) else \
            f"starts in {_left(resv.start_time - now)}" if resv.start_time is not None else "not active"
        if state is not None:
            if resv.maintenance:
                message = f"{state} node in maintenance reservation {resv.name} ({when}): still {state} when it ends?"
            else:
                who = ",".join((*resv.users, *resv.accounts)) or "its users"
                message = (f"{state} node in reservation {resv.name} ({when}): {who} get one node less "
                           "than reserved")
            out.append(Finding(severity=Severity.WARNING, object=obj, code="resv_unusable", message=message))
        if (resv.maintenance and resv.start_time is not None and now < resv.start_time
                and resv.start_time - now <= t.maint_window_s):
            out.append(Finding(severity=Severity.WARNING, object=obj, code="resv_maint_soon",
                               message=f"maintenance reservation {resv.name} starts in {_left(resv.start_time - now)}"
                                       f" (nodes {resv.nodes}): jobs that would run past its start do not start"))
    return out


def controller_findings(snapshot: ClusterSnapshot, t: Thresholds) -> list[Finding]:
    """slurmctld not keeping up, from the last sdiag: agent queue, threads, backfill, a user's RPC rate."""
    ctl = snapshot.controller
    if ctl is None or not ctl.reachable:
        return []
    out: list[Finding] = []

    def add(code: str, what: str, message: str) -> None:
        out.append(Finding(severity=Severity.WARNING, object=f"{CONTROLLER_KEY}/{what}", code=code, message=message))

    if ctl.agent_queue_size is not None and ctl.agent_queue_size >= t.agent_queue_warn:
        add("ctld_agent_queue", "agent_queue", f"slurmctld agent queue {ctl.agent_queue_size} "
            f"(≥ {t.agent_queue_warn}): messages to slurmds are backing up (nodes unreachable, or a flood)")
    if ctl.server_thread_count is not None and ctl.server_thread_count >= t.server_threads_warn:
        add("ctld_threads", "threads", f"slurmctld has {ctl.server_thread_count} server threads "
            f"(≥ {t.server_threads_warn}): RPCs are queueing; see the RPC tables (:scheduler)")
    if ctl.last_backfill_cycle_s is not None and ctl.last_backfill_cycle_s > t.backfill_interval_s:
        add("ctld_backfill_slow", "backfill", f"last backfill cycle took {ctl.last_backfill_cycle_s:.1f}s, "
            f"longer than the backfill interval ({t.backfill_interval_s:g}s): backfill cannot keep up")
    stats = ctl.stats
    if stats is not None and stats.time is not None and stats.since is not None and stats.time > stats.since:
        span = stats.time - stats.since
        for row in stats.rpc_by_user[:5]:
            rate = row.count / span
            if rate >= t.rpc_user_rate_warn:
                add("ctld_rpc_user", f"user/{row.name}", f"user {row.name} sends {rate:.0f} RPCs/s to slurmctld "
                    f"({row.count} since {_left(span)} ago; ≥ {t.rpc_user_rate_warn:g}/s): a polling loop?")
    return out


def controller_entry(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    """The controller findings, worst first (``FindingsIndex.cluster``)."""
    return tuple(sorted(findings, key=lambda f: f.severity, reverse=True))
