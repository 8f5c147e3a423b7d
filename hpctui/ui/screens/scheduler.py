"""``:scheduler``: slurmctld as ``sdiag`` (or REST ``diag``) sees itself, with trends over the session.

The top lines: server threads, agent queue, DBD agent queue, jobs, the main scheduler's and the
backfill's cycle statistics (last / mean / max, when the last backfill cycle ran), each with a
sparkline of what this session recorded (the port's ``ctld:`` history keys). The table: RPCs by
message type or (``v``) by user — count, mean rate since the statistics began, the rate over the
last refresh (by user), mean and total time, share of all RPCs — who is hammering slurmctld.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.content import Content

from hpctui.model import ClusterSnapshot
from hpctui.model.scheduler import CTLD_TRENDS, CTLD_USER_RPCS, RpcStat, SchedulerStats
from hpctui.ui.fmt import NA_TEXT, age, num, utc
from hpctui.ui.registry import SCHEDULER_KEYS, bindings
from hpctui.ui.screens.tableview import TableViewScreen
from hpctui.ui.widgets.spark import spark_content
from hpctui.ui.widgets.vtable import Column, VirtualTable, na_last

if TYPE_CHECKING:
    from hpctui.core.ports import UiPort

SPARK_WIDTH = 30


@dataclass(frozen=True, slots=True)
class RpcRow:
    stat: RpcStat
    rate: float | None  # mean RPCs/s since the statistics began
    recent: float | None  # RPCs/s over the last two recorded samples (users only)
    share: float | None  # of all RPCs in this table


def _span(stats: SchedulerStats) -> float | None:
    if stats.time is None or stats.since is None or stats.time <= stats.since:
        return None
    return stats.time - stats.since


def recent_rate(points: list[tuple[float, float]]) -> float | None:
    """RPCs/s between the last two samples of a cumulative count (None: fewer than two, or a reset)."""
    if len(points) < 2:
        return None
    (t0, v0), (t1, v1) = points[-2], points[-1]
    return (v1 - v0) / (t1 - t0) if t1 > t0 and v1 >= v0 else None


def rpc_rows(stats: SchedulerStats, by_user: bool, history: dict[str, list[tuple[float, float]]]) -> list[RpcRow]:
    """The RPC table's rows; ``history`` holds the ``ctld:rpc_user:<name>`` series for the recent rates."""
    table = stats.rpc_by_user if by_user else stats.rpc_by_type
    total = sum(r.count for r in table)
    span = _span(stats)
    return [RpcRow(stat=r, rate=None if span is None else r.count / span,
                   recent=recent_rate(history.get(CTLD_USER_RPCS + r.name, [])) if by_user else None,
                   share=r.count / total if total else None) for r in table]


RPC_COLUMNS: list[Column[RpcRow]] = [
    Column("name", "NAME", 34, lambda r: r.stat.name, lambda r: r.stat.name),
    Column("id", "ID", 6, lambda r: num(r.stat.id), lambda r: na_last(r.stat.id), align="right"),
    Column("count", "COUNT", 9, lambda r: str(r.stat.count), lambda r: r.stat.count, align="right"),
    Column("rate", "MEAN/s", 8, lambda r: num(r.rate, "{:.2f}"), lambda r: na_last(r.rate), align="right"),
    Column("recent", "NOW/s", 8, lambda r: num(r.recent, "{:.2f}"), lambda r: na_last(r.recent), align="right"),
    Column("ave", "AVE µs", 9, lambda r: num(r.stat.ave_time_us), lambda r: na_last(r.stat.ave_time_us),
           align="right", style=lambda r: "warning" if (r.stat.ave_time_us or 0) >= 100_000 else None),
    Column("total", "TOTAL s", 9, lambda r: num(None if r.stat.total_time_us is None else r.stat.total_time_us / 1e6,
                                                "{:.1f}"),
           lambda r: na_last(r.stat.total_time_us), align="right"),
    Column("share", "SHARE", 7, lambda r: num(None if r.share is None else 100 * r.share, "{:.0f}%"),
           lambda r: na_last(r.share), align="right",
           style=lambda r: "warning" if (r.share or 0) >= 0.5 else None),
]


class RpcTable(VirtualTable[RpcRow]):
    def __init__(self) -> None:
        super().__init__(RPC_COLUMNS, row_key=lambda r: r.stat.name, sort="count", reverse=True, id="rpcs")


def _us(value: int | None) -> str:
    if value is None:
        return NA_TEXT
    return f"{value / 1e6:.2f}s" if value >= 100_000 else f"{value / 1000:.1f}ms"


def summary_lines(stats: SchedulerStats | None, detail: str | None, now: float,
                  trend: dict[str, list[tuple[float, float]]]) -> Content:
    """The controller's numbers, one topic a line, each with its session sparkline."""
    if stats is None:
        return Content(f"no sdiag statistics ({detail or 'no Slurm source, or sdiag not allowed for this user'})")

    def spark(key: str) -> Content:
        values = [v for _, v in trend.get(CTLD_TRENDS[key], [])]
        return spark_content(values, SPARK_WIDTH, low=0.0) if len(values) > 1 else Content("")

    since = f"since {utc(stats.since)} ({age(now - stats.since)})" if stats.since is not None else ""
    bf_when = f", last at {utc(stats.bf_last_cycle_time, '%H:%M:%S')}" if stats.bf_last_cycle_time else ""
    rows: list[tuple[str, str, str]] = [
        ("threads", f"server threads {num(stats.server_thread_count)}", "threads"),
        ("agent queue", f"{num(stats.agent_queue_size)} (agents {num(stats.agent_count)}, agent threads "
                        f"{num(stats.agent_thread_count)}) · DBD agent queue {num(stats.dbd_agent_queue_size)}",
         "agent_queue"),
        ("jobs", f"pending {num(stats.jobs_pending)} · running {num(stats.jobs_running)} · submitted "
                 f"{num(stats.jobs_submitted)} · started {num(stats.jobs_started)} · failed {num(stats.jobs_failed)}"
                 f" {since}", "pending"),
        ("main cycle", f"last {_us(stats.schedule_cycle_last_us)} · mean {_us(stats.schedule_cycle_mean_us)} · "
                       f"max {_us(stats.schedule_cycle_max_us)} · {num(stats.schedule_cycles)} cycles · queue "
                       f"{num(stats.schedule_queue_length)}", "sched_cycle_ms"),
        ("backfill", f"last {_us(stats.bf_cycle_last_us)} · mean {_us(stats.bf_cycle_mean_us)} · max "
                     f"{_us(stats.bf_cycle_max_us)} · {num(stats.bf_cycles)} cycles{bf_when} · depth "
                     f"{num(stats.bf_last_depth)} · backfilled {num(stats.bf_backfilled_jobs)}"
                     + (" · running now" if stats.bf_active else ""), "bf_cycle_s"),
        ("RPCs", f"{sum(r.count for r in stats.rpc_by_type)} by {len(stats.rpc_by_type)} message types, "
                 f"{len(stats.rpc_by_user)} users", "rpc_total"),
    ]
    width = max(len(k) for k, _, _ in rows) + 2
    lines = [Content.assemble((k.ljust(width), "bold $primary"), v, "  ", spark(key)) for k, v, key in rows]
    return Content("\n").join(lines)


class SchedulerScreen(TableViewScreen):
    """``:scheduler``. ``v`` switches the RPC table between message types and users."""

    BINDINGS = bindings(SCHEDULER_KEYS)
    title_text = "Scheduler  (sdiag: slurmctld's own statistics; sparklines: this session)"

    def __init__(self, port: UiPort) -> None:
        super().__init__(port, RpcTable())
        self.by_user = True
        self.rows: list[RpcRow] = []

    def _trend(self, stats: SchedulerStats | None) -> dict[str, list[tuple[float, float]]]:
        keys = list(CTLD_TRENDS.values())
        if stats is not None and self.by_user:
            keys += [CTLD_USER_RPCS + r.name for r in stats.rpc_by_user[:20]]
        return {k: self.port.node_history(k) for k in keys}

    def build_rows(self, snapshot: ClusterSnapshot) -> list[RpcRow]:
        stats = snapshot.controller.stats if snapshot.controller is not None else None
        if stats is None:
            return []
        return rpc_rows(stats, self.by_user, self._trend(stats))

    def show_rows(self, rows: list[RpcRow]) -> None:
        self.rows = rows
        self.table.set_rows(rows)
        ctl = self.snapshot.controller if self.snapshot is not None else None
        stats = ctl.stats if ctl is not None else None
        head = summary_lines(stats, ctl.detail if ctl is not None else None, self.port.clock(), self._trend(stats))
        table = "RPCs by user (who is hammering slurmctld)" if self.by_user else "RPCs by message type"
        self.set_info_content(Content("\n").join([head, Content.assemble(("\n" + table + "  · v: switch", "bold"))]))

    def set_info_content(self, content: Content) -> None:
        from textual.widgets import Static

        for box in self.query("#view-info").results(Static):
            box.update(content)

    def action_cycle_table(self) -> None:
        self.by_user = not self.by_user
        self.refresh_rows()
