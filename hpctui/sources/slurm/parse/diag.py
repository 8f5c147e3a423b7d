"""Controller health from ``sdiag`` text, ``sdiag --json`` (23.02+; not in 22.05) or REST ``GET diag``.

All three carry the same statistics: the summary (:class:`ControllerHealth`) the dashboard shows and
the whole (:class:`SchedulerStats`, the ``:scheduler`` view): RPC counts and times by message type and
by user, main and backfill cycle statistics. Names (message types, users) pass :func:`values.text`.
"""

from __future__ import annotations

import re

import msgspec

from hpctui.model.scheduler import RpcStat, SchedulerStats
from hpctui.model.snapshot import ControllerHealth
from hpctui.sources.slurm.parse.errors import SlurmParseError
from hpctui.sources.slurm.parse.nodes import decode_document
from hpctui.sources.slurm.parse.rest_versions import Meta, RestError
from hpctui.sources.slurm.parse.values import IntLike, epoch, num, text

RPC_ROWS = 200  # rows kept per RPC table (a site has ~100 message types; users: the busiest)


class _RpcType(msgspec.Struct, kw_only=True):
    message_type: str | None = None
    type_id: IntLike = None
    count: IntLike = None
    average_time: IntLike = None
    total_time: IntLike = None


class _RpcUser(msgspec.Struct, kw_only=True):
    user: str | None = None
    user_id: IntLike = None
    count: IntLike = None
    average_time: IntLike = None
    total_time: IntLike = None


class _Stats(msgspec.Struct, kw_only=True):
    req_time: IntLike = None
    req_time_start: IntLike = None
    server_thread_count: IntLike = None
    agent_queue_size: IntLike = None
    agent_count: IntLike = None
    agent_thread_count: IntLike = None
    dbd_agent_queue_size: IntLike = None
    jobs_pending: IntLike = None
    jobs_running: IntLike = None
    jobs_submitted: IntLike = None
    jobs_started: IntLike = None
    jobs_completed: IntLike = None
    jobs_canceled: IntLike = None
    jobs_failed: IntLike = None
    schedule_cycle_mean: IntLike = None
    schedule_cycle_last: IntLike = None
    schedule_cycle_max: IntLike = None
    schedule_cycle_total: IntLike = None
    schedule_queue_length: IntLike = None
    bf_cycle_counter: IntLike = None
    bf_cycle_last: IntLike = None
    bf_cycle_max: IntLike = None
    bf_cycle_mean: IntLike = None
    bf_last_depth: IntLike = None
    bf_queue_len: IntLike = None
    bf_backfilled_jobs: IntLike = None
    bf_when_last_cycle: IntLike = None
    bf_active: bool | None = None
    rpcs_by_message_type: list[_RpcType] | None = None
    rpcs_by_user: list[_RpcUser] | None = None


class _DiagDoc(msgspec.Struct, kw_only=True):
    meta: Meta | None = None
    errors: list[RestError] | None = None
    statistics: _Stats


_diag_decoder = msgspec.json.Decoder(_DiagDoc)


def _health(
    threads: int | None, agent_q: int | None, dbd_q: int | None, pending: int | None, running: int | None,
    bf_last_us: int | None, sched_mean_us: int | None, stats: SchedulerStats | None = None,
) -> ControllerHealth:
    detail = None
    if dbd_q:
        detail = f"{dbd_q} messages queued for slurmdbd"
    return ControllerHealth(
        stats=stats,
        reachable=True,
        server_thread_count=threads,
        agent_queue_size=agent_q,
        jobs_pending=pending,
        jobs_running=running,
        last_backfill_cycle_s=None if bf_last_us is None else bf_last_us / 1e6,
        mean_schedule_cycle_us=None if sched_mean_us is None else float(sched_mean_us),
        detail=detail,
    )


def _by_count(rows: list[RpcStat]) -> tuple[RpcStat, ...]:
    return tuple(sorted(rows, key=lambda r: (-r.count, r.name))[:RPC_ROWS])


def _json_stats(s: _Stats) -> SchedulerStats:
    types = [RpcStat(name=text(r.message_type) or "?", id=num(r.type_id), count=num(r.count) or 0,
                     ave_time_us=num(r.average_time), total_time_us=num(r.total_time))
             for r in s.rpcs_by_message_type or ()]
    users = [RpcStat(name=text(r.user) or "?", id=num(r.user_id), count=num(r.count) or 0,
                     ave_time_us=num(r.average_time), total_time_us=num(r.total_time))
             for r in s.rpcs_by_user or ()]
    return SchedulerStats(
        time=epoch(s.req_time), since=epoch(s.req_time_start), server_thread_count=num(s.server_thread_count),
        agent_queue_size=num(s.agent_queue_size), agent_count=num(s.agent_count),
        agent_thread_count=num(s.agent_thread_count), dbd_agent_queue_size=num(s.dbd_agent_queue_size),
        jobs_submitted=num(s.jobs_submitted), jobs_started=num(s.jobs_started), jobs_completed=num(s.jobs_completed),
        jobs_canceled=num(s.jobs_canceled), jobs_failed=num(s.jobs_failed), jobs_pending=num(s.jobs_pending),
        jobs_running=num(s.jobs_running), schedule_cycle_last_us=num(s.schedule_cycle_last),
        schedule_cycle_max_us=num(s.schedule_cycle_max), schedule_cycle_mean_us=num(s.schedule_cycle_mean),
        schedule_cycles=num(s.schedule_cycle_total), schedule_queue_length=num(s.schedule_queue_length),
        bf_cycles=num(s.bf_cycle_counter), bf_cycle_last_us=num(s.bf_cycle_last), bf_cycle_max_us=num(s.bf_cycle_max),
        bf_cycle_mean_us=num(s.bf_cycle_mean), bf_last_cycle_time=epoch(s.bf_when_last_cycle),
        bf_last_depth=num(s.bf_last_depth), bf_queue_length=num(s.bf_queue_len),
        bf_backfilled_jobs=num(s.bf_backfilled_jobs), bf_active=s.bf_active,
        rpc_by_type=_by_count(types), rpc_by_user=_by_count(users),
    )


def parse_diag_json(data: bytes | str, version: str | None = None) -> ControllerHealth:
    """REST ``GET /slurm/vX/diag`` or ``sdiag --json`` → ControllerHealth (backfill cycle in seconds)."""
    doc = decode_document(_diag_decoder, data, version, "slurm diag JSON")
    s = doc.statistics
    return _health(
        num(s.server_thread_count), num(s.agent_queue_size), num(s.dbd_agent_queue_size), num(s.jobs_pending),
        num(s.jobs_running), num(s.bf_cycle_last), num(s.schedule_cycle_mean), _json_stats(s),
    )


_LINE = re.compile(r"^\s*([^:]+?):\s+(-?\d+)\b")
_EPOCH = re.compile(r"\((\d{9,12})\)\s*$")  # "Last cycle when: Sun Nov 29 17:12:35 2026 (1795972355)"
# "\tREQUEST_JOB_INFO   ( 2003) count:7  ave_time:341  total_time:2388" (25.11: "(10001)" unpadded)
_RPC = re.compile(r"^\s*(\S+)\s*\(\s*(\d+)\)\s+count:(\d+)\s+ave_time:(\d+)\s+total_time:(\d+)")


def parse_sdiag_text(text_in: str) -> ControllerHealth:
    """``sdiag`` text → ControllerHealth. "Last cycle" appears under both the main and
    the backfill section, so values are keyed by (section, label)."""
    section = "top"
    vals: dict[tuple[str, str], int] = {}
    times: dict[tuple[str, str], float] = {}
    rpcs: dict[str, list[RpcStat]] = {"type": [], "user": []}
    for line in text_in.splitlines():
        stripped = line.strip()
        section = _SECTIONS.get(next((h for h in _SECTIONS if stripped.startswith(h)), ""), section)
        if section in rpcs:
            m_rpc = _RPC.match(line)
            if m_rpc:
                rpcs[section].append(RpcStat(name=text(m_rpc.group(1)) or "?", id=int(m_rpc.group(2)),
                                             count=int(m_rpc.group(3)), ave_time_us=int(m_rpc.group(4)),
                                             total_time_us=int(m_rpc.group(5))))
            continue
        label = stripped.partition(":")[0].strip()
        m_epoch = _EPOCH.search(stripped)
        if m_epoch and label:
            times.setdefault((section, label), float(m_epoch.group(1)))
            continue
        m = _LINE.match(line)
        if m:
            vals.setdefault((section, m.group(1).strip()), int(m.group(2)))
    if ("top", "Server thread count") not in vals:
        raise SlurmParseError("sdiag text: no 'Server thread count' line (truncated or not sdiag output)")
    return _health(
        vals.get(("top", "Server thread count")),
        vals.get(("top", "Agent queue size")),
        vals.get(("top", "DBD Agent queue size")),
        vals.get(("top", "Jobs pending")),
        vals.get(("top", "Jobs running")),
        vals.get(("bf", "Last cycle")),
        vals.get(("main", "Mean cycle")),
        _text_stats(vals, times, rpcs),
    )


# section headers of sdiag's text, in the order they appear
_SECTIONS = {
    "Main schedule statistics": "main", "Backfilling stats": "bf", "Backfill exit": "other",
    "Latency for": "other", "Remote Procedure Call statistics by message type": "type",
    "Remote Procedure Call statistics by user": "user", "Pending RPC statistics": "other",
    "sdiag output at": "top", "Data since": "top",
}


def _text_stats(vals: dict[tuple[str, str], int], times: dict[tuple[str, str], float],
                rpcs: dict[str, list[RpcStat]]) -> SchedulerStats:
    def top(label: str) -> int | None:
        return vals.get(("top", label))

    def main(label: str) -> int | None:
        return vals.get(("main", label))

    def bf(label: str) -> int | None:
        return vals.get(("bf", label))

    return SchedulerStats(
        time=_first_time(times, "sdiag output at"),
        since=_first_time(times, "Data since"),
        server_thread_count=top("Server thread count"), agent_queue_size=top("Agent queue size"),
        agent_count=top("Agent count"), agent_thread_count=top("Agent thread count"),
        dbd_agent_queue_size=top("DBD Agent queue size"), jobs_submitted=top("Jobs submitted"),
        jobs_started=top("Jobs started"), jobs_completed=top("Jobs completed"), jobs_canceled=top("Jobs canceled"),
        jobs_failed=top("Jobs failed"), jobs_pending=top("Jobs pending"), jobs_running=top("Jobs running"),
        schedule_cycle_last_us=main("Last cycle"), schedule_cycle_max_us=main("Max cycle"),
        schedule_cycle_mean_us=main("Mean cycle"), schedule_cycles=main("Total cycles"),
        schedule_queue_length=main("Last queue length"),
        bf_cycles=bf("Total cycles"), bf_cycle_last_us=bf("Last cycle"), bf_cycle_max_us=bf("Max cycle"),
        bf_cycle_mean_us=bf("Mean cycle"), bf_last_cycle_time=times.get(("bf", "Last cycle when")),
        bf_last_depth=bf("Last depth cycle"), bf_queue_length=bf("Last queue length"),
        bf_backfilled_jobs=bf("Total backfilled jobs (since last slurm start)"),
        rpc_by_type=_by_count(rpcs["type"]), rpc_by_user=_by_count(rpcs["user"]),
    )


def _first_time(times: dict[tuple[str, str], float], prefix: str) -> float | None:
    """The epoch of the header line starting with ``prefix`` ("sdiag output at Sun Nov 29 …")."""
    return next((t for (sec, label), t in times.items() if sec == "top" and label.startswith(prefix)), None)
