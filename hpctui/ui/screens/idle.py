"""``:idle``: allocations that hold GPUs doing nothing, by job/pod, by user or by account.

The rows come from the frame's idle report (:mod:`hpctui.findings.idle`, computed once per store
change in the data layer): per job or pod, which GPUs, since when, GPU-hours idle so far; per user
and per account, GPUs held idle now and GPU-hours idle today. Sortable and filterable like every
table view. On job rows, ``R``/``x`` requeue or cancel through the one action dialog (preview,
confirmation, audit; the reason is prefilled and audited), ``m`` runs ``[idle] notify_command`` as
a custom action (preview, confirmation, audit); ``enter`` selects the row's nodes on the dashboard.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.widgets import Label

from hpctui.findings.idle import (
    NOTIFY_JOB_ACTION,
    NOTIFY_POD_ACTION,
    IdleAllocation,
    IdleReport,
    duration_text,
)
from hpctui.model.action import ActionKind
from hpctui.model.hostlist import collect_cached
from hpctui.ui.fmt import NA_TEXT, utc
from hpctui.ui.messages import ActionRequested
from hpctui.ui.registry import IDLE_KEYS, bindings
from hpctui.ui.screens.tableview import TableViewScreen
from hpctui.ui.widgets.vtable import Column, VirtualTable

if TYPE_CHECKING:
    from hpctui.core.frame import Frame
    from hpctui.core.ports import UiPort
    from hpctui.model import ClusterSnapshot

MODES = ("allocations", "users", "accounts")
MODE_TITLES = {"allocations": "by job / pod", "users": "by user", "accounts": "by account"}


@dataclass(frozen=True, slots=True)
class IdleRow:
    """One row: an allocation (``kind`` "job"/"pod"), or a user's or account's sums (``kind`` "user"/"account")."""

    kind: str
    key: str  # the job's display id, "namespace/name", the user or the account
    user: str
    account: str
    gpus_now: int  # GPUs held idle now
    held: int  # GPUs the allocation holds (sums: of the idle allocations)
    gpu_hours: float  # idle GPU-hours so far (of the spells going on now)
    today: float  # idle GPU-hours today (ended spells included)
    since: float | None
    idle_s: float | None  # how long idle, at the report's time
    where: str  # "gpu01:0-7" or a folded hostlist for sums
    reason: str
    nodes: tuple[str, ...]
    jobs: tuple[str, ...] = ()  # job ids the row stands for (its actions' targets)
    pods: tuple[str, ...] = ()


def allocation_rows(report: IdleReport) -> list[IdleRow]:
    """One row per idle job or pod, most idle GPUs first."""
    rows = []
    for a in report.allocations:
        user, account = a.user or "", a.account or ""
        rows.append(IdleRow(
            kind=a.kind, key=a.id, user=user, account=account, gpus_now=a.count, held=a.held,
            gpu_hours=a.gpu_hours, today=report.today.get(f"{user}\t{account}", 0.0), since=a.since,
            idle_s=report.time - a.since,
            where=a.gpu_text, reason=a.reason, nodes=a.nodes,
            jobs=(a.id,) if a.kind == "job" else (), pods=(a.id,) if a.kind == "pod" else ()))
    return rows


def owner_rows(report: IdleReport, by: str) -> list[IdleRow]:
    """Per user (``by="users"``) or account: GPUs held idle now, GPU-hours idle so far and today.
    Owners idle earlier today and not now are listed too (0 GPUs now). A pod's owner is its namespace."""
    groups: dict[str, list[IdleAllocation]] = {}
    for a in report.allocations:
        groups.setdefault(_owner(a.user, a.account, by), []).append(a)
    today: dict[str, float] = {}
    for key, hours in report.today.items():
        user, _, account = key.partition("\t")
        owner = _owner(user or None, account or None, by)
        today[owner] = today.get(owner, 0.0) + hours
    rows = []
    for owner in groups.keys() | today.keys():
        allocs = groups.get(owner, [])
        nodes = tuple(dict.fromkeys(n for a in allocs for n in a.nodes))
        rows.append(IdleRow(
            kind="user" if by == "users" else "account", key=owner,
            user=owner if by == "users" else ",".join(sorted({a.user or "" for a in allocs} - {""})),
            account=owner if by == "accounts" else ",".join(sorted({a.account or "" for a in allocs} - {""})),
            gpus_now=sum(a.count for a in allocs), held=sum(a.held for a in allocs),
            gpu_hours=sum(a.gpu_hours for a in allocs), today=today.get(owner, 0.0),
            since=min((a.since for a in allocs), default=None), where=collect_cached(nodes) if nodes else "",
            idle_s=report.time - min(a.since for a in allocs) if allocs else None,
            reason=f"{len(allocs)} idle allocation{'s' if len(allocs) != 1 else ''}", nodes=nodes,
            jobs=tuple(a.id for a in allocs if a.kind == "job"), pods=tuple(a.id for a in allocs if a.kind == "pod")))
    rows.sort(key=lambda r: (-r.gpus_now, -r.today, r.key))
    return rows


def _owner(user: str | None, account: str | None, by: str) -> str:
    return (user if by == "users" else account) or "?"


def idle_rows(report: IdleReport, mode: str) -> list[IdleRow]:
    return allocation_rows(report) if mode == "allocations" else owner_rows(report, mode)


def _first(r: IdleRow) -> str:
    """The job or pod of an allocation row; what a user's or account's row sums up."""
    return r.key if r.kind in ("job", "pod") else r.reason


IDLE_COLUMNS: list[Column[IdleRow]] = [
    Column("key", "JOB/POD", 18, _first, _first),
    Column("user", "USER", 10, lambda r: r.user or NA_TEXT, lambda r: r.user),
    Column("account", "ACCOUNT", 12, lambda r: r.account or NA_TEXT, lambda r: r.account),
    Column("gpus", "IDLE GPUs", 9, lambda r: f"{r.gpus_now}/{r.held}", lambda r: -r.gpus_now, align="right",
           style=lambda r: "warning" if r.gpus_now else None),
    Column("for", "IDLE FOR", 9, lambda r: NA_TEXT if r.idle_s is None else duration_text(r.idle_s),
           lambda r: -(r.idle_s or 0.0), align="right"),
    Column("gpu_hours", "GPU-h NOW", 9, lambda r: f"{r.gpu_hours:.1f}", lambda r: -r.gpu_hours, align="right"),
    Column("today", "GPU-h TODAY", 11, lambda r: f"{r.today:.1f}", lambda r: -r.today, align="right"),
    Column("since", "SINCE", 18, lambda r: utc(r.since), lambda r: r.since or 0.0),
    Column("where", "GPUs", 22, lambda r: r.where, lambda r: r.where, elide="list"),
    Column("reason", "WHY", 28, lambda r: r.reason if r.kind in ("job", "pod") else "", lambda r: r.reason),
]


def idle_search(row: IdleRow) -> str:
    return f"{row.kind} {row.key} {row.user} {row.account} {row.where} {row.reason}"


class IdleTable(VirtualTable[IdleRow]):
    def __init__(self) -> None:
        super().__init__(IDLE_COLUMNS, row_key=lambda r: f"{r.kind}:{r.key}", search_text=idle_search,
                         markable=True, row_nodes=lambda r: r.nodes, id="idle")


class IdleScreen(TableViewScreen):
    """``:idle``: idle allocated GPUs. ``a`` switches job/pod, user and account rows."""

    BINDINGS = bindings(IDLE_KEYS)
    title_text = "Idle GPUs  (allocated, under the [idle] threshold for its duration)"

    def __init__(self, port: UiPort) -> None:
        super().__init__(port, IdleTable())
        self.mode = "allocations"
        self.report: IdleReport | None = None
        self.rows: list[IdleRow] = []

    def show_frame(self, frame: Frame) -> None:
        self.snapshot = frame.snapshot
        self.report = frame.idle
        self.refresh_rows()

    def refresh_rows(self) -> None:
        if self.report is not None:
            self.show_rows(idle_rows(self.report, self.mode))

    def build_rows(self, snapshot: ClusterSnapshot) -> list[IdleRow]:
        return idle_rows(self.report, self.mode) if self.report is not None else []

    def show_rows(self, rows: list[IdleRow]) -> None:
        self.rows = rows
        report = self.report
        self.table.set_rows(rows)
        self.query_one("#view-title", Label).update(f"Idle GPUs {MODE_TITLES[self.mode]}  (a: job/pod · user · account)")
        if report is None or (not report.allocations and not report.today):
            watching = f" · {report.watching} GPUs idle, not for long enough yet" if report and report.watching else ""
            self.set_info("no allocated GPU is idle" + watching)
            return
        self.set_info(f"{report.gpus_now} GPUs held idle now in {len(report.allocations)} allocations · "
                      f"{sum(report.today.values()):.1f} GPU-h idle today · {report.watching} more GPUs idle "
                      "(not long enough yet) · R requeue · x cancel · m notify owner · enter: nodes")

    # -- keys ---------------------------------------------------------------------------
    def action_cycle_mode(self) -> None:
        self.mode = MODES[(MODES.index(self.mode) + 1) % len(MODES)]
        self.table.marked.clear()
        self.refresh_rows()

    def action_mark(self) -> None:
        self.table.action_toggle_mark()

    def _chosen(self) -> list[IdleRow]:
        keys = set(self.table.targets())
        return [r for r in self.table.view if f"{r.kind}:{r.key}" in keys]

    def _jobs(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(j for r in self._chosen() for j in r.jobs))

    def _pods(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p for r in self._chosen() for p in r.pods))

    def reason(self) -> str:
        """The reason a requeue/cancel from here records (the audit keeps the action's parameters)."""
        rows = self._chosen()
        gpus = sum(r.gpus_now for r in rows)
        hours = sum(r.gpu_hours for r in rows)
        return f"idle GPUs: {gpus} GPUs idle, {hours:.1f} GPU-h (hpctui :idle)"

    def action_job_action(self, kind: str) -> None:
        """Requeue or cancel the chosen rows' jobs through the one action dialog, reason prefilled."""
        jobs = self._jobs()
        if not jobs:
            self.app.notify("no Slurm job in the chosen rows (pods: m notifies their owner)", severity="warning",
                            timeout=3)
            return
        self.app.post_message(ActionRequested(ActionKind(kind), jobs, {"reason": self.reason()}))

    def action_notify_owner(self) -> None:
        """``[idle] notify_command`` on the chosen jobs (and ``notify_pod_command`` on pods), as custom actions."""
        run = getattr(self.app, "run_custom_action", None)
        jobs, pods = self._jobs(), self._pods()
        names = {a.name for a in self.port.workflow.custom_actions}
        wanted = [(NOTIFY_JOB_ACTION, jobs), (NOTIFY_POD_ACTION, pods)]
        todo = [(name, targets) for name, targets in wanted if targets and name in names]
        if run is None or not todo:
            missing = "notify_command" if jobs else "notify_pod_command"
            self.app.notify(f"notify: set [idle] {missing} in the config (an argv with {{user}}/{{job}} "
                            "or {namespace}/{pod})", severity="warning", timeout=4)
            return
        name, targets = todo[0]
        run(name, targets)

    def action_select_nodes(self) -> None:
        row = self.table.cursor_row
        dashboard = getattr(self.app, "dashboard", None)
        if row is None or not row.nodes:
            return
        self.app.pop_screen()
        if dashboard is not None:
            self.app.call_later(dashboard.go_to, collect_cached(row.nodes))
