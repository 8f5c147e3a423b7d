"""``:users``: who holds the GPUs and who waits, per user and account (``a``: per account).

GPUs and jobs running and pending come from the snapshot's queue (the same jobs the queue pane
shows); pending jobs are counted by the family of their reason (QoS limit, association limit,
priority — behind jobs of higher priority, fair-share being one factor —, resources, held, other:
:func:`hpctui.model.pending_reasons.reason_class`). The fair-share factor is sshare's (``sshare -a``,
through the port's accounting request, loaded when the view opens and with ``f``). ``m`` marks the
nodes the marked (or cursor) rows' running jobs are on, on the dashboard heatmap, for the node
actions and fan-out commands (like ``clush @user``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from textual import work

from hpctui.model import ClusterSnapshot
from hpctui.model.accounting import AccountingInfo
from hpctui.model.hostlist import collect_cached
from hpctui.model.pending_reasons import reason_class
from hpctui.ui.fmt import NA_TEXT, num
from hpctui.ui.registry import USERS_KEYS, bindings
from hpctui.ui.screens.marking import mark_nodes_on_dashboard
from hpctui.ui.screens.tableview import TableViewScreen
from hpctui.ui.widgets.vtable import Column, VirtualTable, hostlist_set, na_last

if TYPE_CHECKING:
    from hpctui.core.ports import UiPort

NO_ACCOUNT = "-"


@dataclass(slots=True)
class UserRow:
    """One user in one account (``user`` None: the whole account)."""

    user: str | None
    account: str
    gpus_running: int = 0
    gpus_pending: int = 0
    jobs_running: int = 0
    jobs_pending: int = 0
    pending_by: dict[str, int] = field(default_factory=dict)  # reason class -> pending jobs
    nodes: set[str] = field(default_factory=set)  # nodes of the running jobs
    fairshare: float | None = None
    effective_usage: float | None = None

    @property
    def key(self) -> str:
        return f"{self.user or ''}@{self.account}"

    @property
    def nodelist(self) -> str:
        return collect_cached(sorted(self.nodes)) if self.nodes else ""


FairShareMap = dict[tuple[str, str | None], tuple[float | None, float | None]]  # (account, user) -> (fs, usage)


def fairshare_map(info: AccountingInfo | None) -> FairShareMap:
    """sshare rows by (account, user): (fair-share factor, effective usage); account rows have user None."""
    if info is None or not info.available:
        return {}
    return {(r.account, r.user): (r.fairshare, r.effective_usage) for r in info.fairshare}


def user_rows(snapshot: ClusterSnapshot, fairshare: FairShareMap, by_account: bool = False) -> list[UserRow]:
    """One row per (user, account) with jobs in the queue (per account with ``by_account``)."""
    rows: dict[tuple[str | None, str], UserRow] = {}
    for job in snapshot.jobs:
        if job.state not in ("RUNNING", "PENDING"):
            continue
        account = job.account or NO_ACCOUNT
        user = None if by_account else (job.user or NA_TEXT)
        row = rows.get((user, account))
        if row is None:
            row = rows[(user, account)] = UserRow(user=user, account=account)
        gpus = job.gpus_requested or 0
        if job.state == "RUNNING":
            row.jobs_running += 1
            row.gpus_running += gpus
            if job.nodes:
                row.nodes.update(hostlist_set(job.nodes))  # cached; an unreadable list is empty
        else:
            row.jobs_pending += 1
            row.gpus_pending += gpus
            family = reason_class(job.reason)
            row.pending_by[family] = row.pending_by.get(family, 0) + 1
    for (user, account), row in rows.items():
        row.fairshare, row.effective_usage = fairshare.get((account, user), (None, None))
    return sorted(rows.values(), key=lambda r: (-r.gpus_running, -r.gpus_pending, r.account, r.user or ""))


def _pending(family: str) -> Column[UserRow]:
    titles = {"qos": "QOS-LIM", "assoc": "ASSOC-LIM", "priority": "PRIO", "resources": "RESRC", "held": "HELD",
              "other": "OTHER"}
    return Column(f"pend_{family}", titles[family], 7, lambda r: str(r.pending_by.get(family, 0) or ""),
                  lambda r: r.pending_by.get(family, 0), align="right",
                  style=(lambda r: "warning" if r.pending_by.get(family) else None) if family in ("qos", "assoc")
                  else None)


USER_COLUMNS: list[Column[UserRow]] = [
    Column("user", "USER", 12, lambda r: r.user or "(all)", lambda r: r.user or ""),
    Column("account", "ACCOUNT", 12, lambda r: r.account, lambda r: r.account),
    Column("gpus_run", "GPU RUN", 8, lambda r: str(r.gpus_running), lambda r: r.gpus_running, align="right"),
    Column("gpus_pend", "GPU PEND", 9, lambda r: str(r.gpus_pending), lambda r: r.gpus_pending, align="right"),
    Column("jobs_run", "RUN", 5, lambda r: str(r.jobs_running), lambda r: r.jobs_running, align="right"),
    Column("jobs_pend", "PEND", 5, lambda r: str(r.jobs_pending), lambda r: r.jobs_pending, align="right"),
    *(_pending(f) for f in ("qos", "assoc", "priority", "resources", "held", "other")),
    Column("fairshare", "FAIRSHARE", 9, lambda r: num(r.fairshare, "{:.3f}"), lambda r: na_last(r.fairshare),
           align="right", style=lambda r: "warning" if r.fairshare is not None and r.fairshare < 0.1 else None),
    Column("usage", "EFF.USAGE", 9, lambda r: num(r.effective_usage, "{:.3f}"), lambda r: na_last(r.effective_usage),
           align="right"),
    Column("nodes", "NODES", 24, lambda r: r.nodelist, lambda r: len(r.nodes), elide="list"),
]


class UserTable(VirtualTable[UserRow]):
    def __init__(self) -> None:
        super().__init__(USER_COLUMNS, row_key=lambda r: r.key, markable=True, row_nodes=lambda r: r.nodes,
                         id="users")


class UsersScreen(TableViewScreen):
    """``:users``. ``m`` marks the rows' nodes on the heatmap; ``a`` groups by account; ``f`` reloads sshare."""

    BINDINGS = bindings(USERS_KEYS)
    title_text = "Users and accounts  (GPUs from the queue; pending by reason; fair-share from sshare)"

    def __init__(self, port: UiPort) -> None:
        super().__init__(port, UserTable())
        self.rows: list[UserRow] = []
        self.by_account = False
        self.fairshare: FairShareMap = {}
        self.fairshare_note = "fair-share: loading…"

    def on_mount(self) -> None:
        super().on_mount()
        self.action_load_fairshare()

    def build_rows(self, snapshot: ClusterSnapshot) -> list[UserRow]:
        return user_rows(snapshot, self.fairshare, self.by_account)

    def show_rows(self, rows: list[UserRow]) -> None:
        self.rows = rows
        self.table.set_rows(rows)
        gpus = sum(r.gpus_running for r in rows)
        waiting = sum(r.gpus_pending for r in rows)
        self.set_info(f"{len(rows)} {'accounts' if self.by_account else 'users'} · {gpus} GPUs running, "
                      f"{waiting} pending · {self.fairshare_note} · m: mark their nodes · a: by account")

    @work(exclusive=True, group="fairshare", description="fair-share")
    async def action_load_fairshare(self) -> None:
        """sshare -a through the port (off the UI thread); the rows are rebuilt with it."""
        self.fairshare_note = "fair-share: loading…"
        try:
            info = await self.port.accounting(None, None)
        except Exception as exc:  # shown, never raised into the UI
            self.fairshare_note = f"fair-share: {type(exc).__name__}: {exc}"
        else:
            self.fairshare = fairshare_map(info)
            self.fairshare_note = ("fair-share: no source provides accounting" if info is None else
                                   f"fair-share: N/A ({info.detail})" if not info.available else
                                   f"fair-share: {len(info.fairshare)} sshare rows")
        self.refresh_rows()

    def action_toggle_row(self) -> None:
        self.table.action_toggle_mark()

    def action_toggle_accounts(self) -> None:
        self.by_account = not self.by_account
        self.table.marked.clear()
        self.refresh_rows()

    def action_mark_nodes(self) -> None:
        keys = set(self.table.targets())
        chosen = [r for r in self.rows if r.key in keys]
        nodes = {n for r in chosen for n in r.nodes}
        who = ", ".join(r.user or r.account for r in chosen) or "nobody"
        mark_nodes_on_dashboard(self, nodes, f"nodes of {who}")
