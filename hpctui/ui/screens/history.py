"""What the cluster remembers, as full-screen tables: repeat offenders, one node's history, sacct, GPU-hours.

* ``:history`` (:class:`OffendersScreen`) — nodes by drains, downs and cordons over the last 30
  days, most first; ``enter`` opens the node's history;
* ``H`` on the heatmap, or ``enter`` above (:class:`NodeHistoryScreen`) — the node's merged
  history (slurmdbd events, the audit log, the timeline) and the jobs that died there;
* ``:sacct`` (:class:`AcctJobsScreen`) — the jobs that ended in the last 24 h (sacct, at most
  :data:`SACCT_LIMIT` rows), exit codes decoded; ``/`` filters by user, account, node, state;
* ``:gpuhours`` (:class:`GpuHoursScreen`) — GPU-hours per account and user over 7 days (sreport).

Every answer is read off the UI thread (a worker awaiting the port), once when the view opens and
again on ``r``; the frames the app pushes meanwhile do not re-query slurmdbd.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual import work
from textual.binding import Binding

from hpctui.findings.nodehistory import Offender, exit_text, summary
from hpctui.model.nodehistory import DEAD_JOB_STATES, AcctJob, AcctQuery, GpuUsage, NodeEvent
from hpctui.ui.fmt import NA_TEXT, utc
from hpctui.ui.screens.tableview import TableViewScreen
from hpctui.ui.widgets.vtable import Column, VirtualTable

if TYPE_CHECKING:
    from hpctui.core.frame import Frame
    from hpctui.core.ports import UiPort

HISTORY_WINDOW_S = 30 * 86400.0
SACCT_WINDOW_S = 86400.0
SACCT_LIMIT = 500
GPU_HOURS_WINDOW_S = 7 * 86400.0


class AsyncTableScreen(TableViewScreen):
    """A table whose rows come from one async port call (:meth:`load`), not from the frames."""

    BINDINGS = [Binding("r", "reload", "Reload")]
    loading_text = "reading…"

    def on_mount(self) -> None:
        self.table.focus()
        self.set_info(self.loading_text)
        self.action_reload()

    def show_frame(self, frame: Frame) -> None:
        """Frames do not change what slurmdbd remembers: nothing to redraw."""
        self.snapshot = frame.snapshot

    def action_reload(self) -> None:
        self._load()

    @work(exclusive=True, group="history-load", description="history")
    async def _load(self) -> None:
        try:
            rows, info = await self.load()
        except Exception as exc:  # a failed read is shown, never raised into the UI
            self.set_info(f"{type(exc).__name__}: {exc}")
            return
        if self.is_attached:
            self.table.set_rows(rows)
            self.set_info(info)

    async def load(self) -> tuple[list[Any], str]:  # pragma: no cover - views override it
        raise NotImplementedError


def _problems(lines: list[str]) -> str:
    return ("  ·  " + "; ".join(lines)) if lines else ""


# -- :history: the repeat offenders --------------------------------------------------------------------------
OFFENDER_COLUMNS: list[Column[Offender]] = [
    Column("node", "NODE", 14, lambda o: o.node, lambda o: o.node),
    Column("faults", "FAULTS", 7, lambda o: str(o.faults), lambda o: -o.faults, align="right",
           style=lambda o: "error" if o.faults >= 3 else "warning"),
    Column("kinds", "BY KIND", 20, lambda o: o.kinds_text, lambda o: o.kinds_text),
    Column("causes", "CAUSES", 34, lambda o: o.causes_text or NA_TEXT, lambda o: o.causes_text),
    Column("died", "JOBS DIED", 9, lambda o: str(o.dead_jobs), lambda o: -o.dead_jobs, align="right"),
    Column("released", "RESUMED", 8, lambda o: str(o.releases), lambda o: -o.releases, align="right"),
    Column("last", "LAST FAULT", 18, lambda o: utc(o.last), lambda o: -o.last),
]


class OffenderTable(VirtualTable[Offender]):
    def __init__(self) -> None:
        super().__init__(OFFENDER_COLUMNS, row_key=lambda o: o.node,
                         search_text=lambda o: f"{o.node} {o.kinds_text} {o.causes_text}",
                         row_nodes=lambda o: (o.node,), id="offenders")


class OffendersScreen(AsyncTableScreen):
    """``:history``: nodes by fault events over 30 days. ``enter``: that node's history."""

    BINDINGS = [*AsyncTableScreen.BINDINGS, Binding("enter", "open_node", "Node history")]
    title_text = "Repeat offenders  (drains, downs, cordons in the last 30 days; most first)"

    def __init__(self, port: UiPort) -> None:
        super().__init__(port, OffenderTable())

    async def load(self) -> tuple[list[Any], str]:
        offenders, problems, _commands = await self.port.offenders(HISTORY_WINDOW_S)
        info = (f"{len(offenders)} node(s) with faults · enter: the node's history · r: reload"
                if offenders else "no node was drained, down or cordoned in the last 30 days")
        return list(offenders), info + _problems(problems)

    def action_open_node(self) -> None:
        row = self.table.cursor_row
        if row is not None:
            self.app.push_screen(NodeHistoryScreen(self.port, row.node))


# -- one node's history ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class HistoryRow:
    """One line of a node's history: a node event or a job that died there."""

    time: float | None
    what: str
    user: str | None
    detail: str
    origin: str
    error: bool

    @property
    def key(self) -> str:
        return f"{self.time}|{self.what}|{self.detail}|{self.origin}"


def history_rows(events: list[NodeEvent], jobs: list[AcctJob]) -> list[HistoryRow]:
    """Events and dead jobs in one list, newest first."""
    rows = [HistoryRow(time=e.time, what=e.kind, user=e.user, origin=e.origin, error=e.kind in ("down", "drain"),
                       detail=(e.reason or NA_TEXT) + ("" if e.end is None else f"  (until {utc(e.end)})"))
            for e in events]
    rows += [HistoryRow(time=j.end, what=f"job {j.state}", user=j.user, origin="sacct", error=True,
                        detail=f"job {j.job_id} {exit_text(j)} {j.name or ''}".rstrip()
                        + (f"  {j.gpus} GPU" if j.gpus else "")) for j in jobs]
    rows.sort(key=lambda r: -(r.time or 0.0))
    return rows


HISTORY_COLUMNS: list[Column[HistoryRow]] = [
    Column("time", "WHEN", 18, lambda r: utc(r.time), lambda r: -(r.time or 0.0)),
    Column("what", "WHAT", 16, lambda r: r.what, lambda r: r.what,
           style=lambda r: "error" if r.error else None),
    Column("user", "WHO", 10, lambda r: r.user or NA_TEXT, lambda r: r.user or ""),
    Column("detail", "REASON / JOB", 48, lambda r: r.detail, lambda r: r.detail),
    Column("origin", "FROM", 14, lambda r: r.origin, lambda r: r.origin),
]


class HistoryTable(VirtualTable[HistoryRow]):
    def __init__(self) -> None:
        super().__init__(HISTORY_COLUMNS, row_key=lambda r: r.key,
                         search_text=lambda r: f"{r.what} {r.user} {r.detail} {r.origin}", id="node-history")


class NodeHistoryScreen(AsyncTableScreen):
    """One node's history over 30 days: the summary line above, events and dead jobs below."""

    def __init__(self, port: UiPort, node: str) -> None:
        super().__init__(port, HistoryTable())
        self.node = node
        self.title_text = f"History of {node}  (slurmdbd events, the audit log, the timeline; sacct; 30 days)"

    async def load(self) -> tuple[list[Any], str]:
        record = await self.port.node_record(self.node, HISTORY_WINDOW_S)
        return history_rows(record.events, record.dead_jobs), summary(record) + _problems(record.problems)


# -- :sacct -------------------------------------------------------------------------------------------------
JOB_COLUMNS: list[Column[AcctJob]] = [
    Column("end", "ENDED", 18, lambda j: utc(j.end), lambda j: -(j.end or 0.0)),
    Column("job", "JOBID", 9, lambda j: j.job_id, lambda j: j.job_id),
    Column("state", "STATE", 13, lambda j: j.state, lambda j: j.state,
           style=lambda j: "error" if j.state in DEAD_JOB_STATES else None),
    Column("exit", "EXIT", 9, exit_text, exit_text),
    Column("user", "USER", 10, lambda j: j.user or NA_TEXT, lambda j: j.user or ""),
    Column("account", "ACCOUNT", 12, lambda j: j.account or NA_TEXT, lambda j: j.account or ""),
    Column("nodes", "NODES", 16, lambda j: j.nodes or NA_TEXT, lambda j: j.nodes or ""),
    Column("gpus", "GPUS", 5, lambda j: str(j.gpus or 0), lambda j: -(j.gpus or 0), align="right"),
    Column("name", "NAME", 20, lambda j: j.name or "", lambda j: j.name or ""),
]


class AcctJobTable(VirtualTable[AcctJob]):
    def __init__(self) -> None:
        super().__init__(JOB_COLUMNS, row_key=lambda j: j.job_id,
                         search_text=lambda j: f"{j.job_id} {j.state} {j.user} {j.account} {j.nodes} {j.name}",
                         id="sacct")


SACCT_KEYS = ("since", "user", "account", "nodes", "state")


def parse_sacct_filters(text: str, now: float) -> AcctQuery:
    """``since=2d user=alice account=ml nodes=gpu[01-04] state=FAILED,NODE_FAIL`` → a bounded query
    (default: the last 24 h, every job); ``ValueError`` for an unknown key or a bad duration. The
    names are checked where the query runs (the source), like ``hpctui sacct``'s."""
    from hpctui.report.incident import ReportError, parse_since

    fields: dict[str, str] = {}
    for item in text.split():
        key, sep, value = item.partition("=")
        if not sep or key not in SACCT_KEYS or not value:
            raise ValueError(f"{item!r}: filters are {', '.join(k + '=' for k in SACCT_KEYS)}")
        fields[key] = value
    try:
        since = parse_since(fields["since"]) if "since" in fields else SACCT_WINDOW_S
    except ReportError as exc:
        raise ValueError(str(exc)) from None
    return AcctQuery(start=now - since, end=now, user=fields.get("user"), account=fields.get("account"),
                     nodes=fields.get("nodes"), states=tuple(s for s in fields.get("state", "").split(",") if s),
                     limit=SACCT_LIMIT)


class AcctJobsScreen(AsyncTableScreen):
    """``:sacct [since=1d] [user=U] [account=A] [nodes=H] [state=S,...]``: the jobs of the window
    (default the last 24 h); ``/`` filters what came back."""

    title_text = f"Accounting: jobs  (sacct, at most {SACCT_LIMIT} rows)"

    def __init__(self, port: UiPort, query: str = "") -> None:
        super().__init__(port, AcctJobTable())
        self.query_text = query.strip()
        self.title_text = f"Accounting: jobs, {self.query_text or 'since=1d'}  (sacct, at most {SACCT_LIMIT} rows)"

    async def load(self) -> tuple[list[Any], str]:
        end = self.port.clock()
        res = await self.port.acct_jobs(parse_sacct_filters(self.query_text, end))
        if res is None:
            return [], "no source provides accounting (a slurm source with slurmdbd)"
        jobs = sorted(res.jobs, key=lambda j: -(j.end or 0.0))
        dead = sum(1 for j in jobs if j.state in DEAD_JOB_STATES)
        info = f"{len(jobs)} job(s), {dead} failed/node_fail/oom/timeout · / filters · r: reload"
        return jobs, info + _problems([res.detail] if res.detail else [])


# -- :gpuhours ------------------------------------------------------------------------------------------------
USAGE_COLUMNS: list[Column[GpuUsage]] = [
    Column("account", "ACCOUNT", 16, lambda u: u.account, lambda u: u.account),
    Column("user", "USER", 12, lambda u: u.user or "(account)", lambda u: u.user or ""),
    Column("hours", "GPU-HOURS", 11, lambda u: f"{u.gpu_hours:,.1f}", lambda u: -u.gpu_hours, align="right"),
]


class UsageTable(VirtualTable[GpuUsage]):
    def __init__(self) -> None:
        super().__init__(USAGE_COLUMNS, row_key=lambda u: f"{u.account}|{u.user}",
                         search_text=lambda u: f"{u.account} {u.user}", id="gpu-hours")


class GpuHoursScreen(AsyncTableScreen):
    """``:gpuhours``: GPU-hours per account and user over 7 days (sreport, gres/gpu)."""

    title_text = "GPU-hours per account and user, last 7 days  (sreport -T gres/gpu)"

    def __init__(self, port: UiPort) -> None:
        super().__init__(port, UsageTable())

    async def load(self) -> tuple[list[Any], str]:
        end = self.port.clock()
        res = await self.port.gpu_usage(end - GPU_HOURS_WINDOW_S, end)
        if res is None:
            return [], "no source provides accounting (a slurm source with slurmdbd)"
        total = sum(u.gpu_hours for u in res.usage if u.user is not None)  # account rows nest: not summed
        info = f"{total:,.1f} GPU-hours in all · o sorts · r: reload"
        return list(res.usage), info + _problems([res.detail] if res.detail else [])
