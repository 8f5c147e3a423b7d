"""``:reservations``: Slurm's reservations like ``scontrol show reservation``: name, state, start and
end (with how long until / how long left), nodes, flags, users and accounts — and which of its nodes
are drained or down now (the ``resv_unusable`` finding). ``m`` marks a reservation's nodes on the
heatmap; ``x`` deletes the marked (or cursor) reservations through the usual preview and confirmation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hpctui.findings.scheduler import reservations_by_node, unusable
from hpctui.model import ClusterSnapshot
from hpctui.model.action import ActionKind
from hpctui.model.hostlist import collect_cached
from hpctui.model.scheduler import Reservation
from hpctui.model.snapshot import Part
from hpctui.ui.fmt import NA_TEXT, age, utc
from hpctui.ui.messages import ActionRequested
from hpctui.ui.registry import RESERVATION_KEYS, bindings
from hpctui.ui.screens.marking import mark_nodes_on_dashboard
from hpctui.ui.screens.tableview import TableViewScreen
from hpctui.ui.widgets.vtable import Column, VirtualTable, hostlist_set, na_last

if TYPE_CHECKING:
    from hpctui.core.ports import UiPort


@dataclass(frozen=True, slots=True)
class ReservationRow:
    resv: Reservation
    state: str  # ACTIVE, PLANNED (starts later), ENDED
    when: str  # "in 2h", "3h left", "ended"
    bad_nodes: str  # drained/down nodes of the reservation, folded

    @property
    def name(self) -> str:
        return self.resv.name


def _state(resv: Reservation, now: float) -> tuple[str, str]:
    if resv.end_time is not None and resv.end_time <= now:
        return "ENDED", "ended"
    if resv.active(now):
        return "ACTIVE", f"{age(resv.end_time - now)} left" if resv.end_time is not None else "no end"
    if resv.start_time is not None:
        return "PLANNED", f"in {age(resv.start_time - now)}"
    return (resv.state or "INACTIVE"), NA_TEXT


def reservation_rows(snapshot: ClusterSnapshot, now: float) -> list[ReservationRow]:
    """One row per reservation, soonest start first; with its drained/down nodes."""
    by_node = reservations_by_node(snapshot.reservations)
    bad: dict[str, list[str]] = {}
    for name, held in by_node.items():
        node = snapshot.nodes.get(name)
        if node is not None and unusable(node) is not None:
            for resv in held:
                bad.setdefault(resv.name, []).append(name)
    rows = []
    for resv in snapshot.reservations:
        state, when = _state(resv, now)
        rows.append(ReservationRow(resv=resv, state=state, when=when,
                                   bad_nodes=collect_cached(sorted(bad.get(resv.name, ())))))
    return sorted(rows, key=lambda r: (r.state == "ENDED", r.resv.start_time or 0.0, r.name))


STATE_STYLE = {"ACTIVE": "success", "PLANNED": "warning", "ENDED": "text-muted"}

RESERVATION_COLUMNS: list[Column[ReservationRow]] = [
    Column("name", "NAME", 16, lambda r: r.name, lambda r: r.name),
    Column("state", "STATE", 8, lambda r: r.state, lambda r: r.state, style=lambda r: STATE_STYLE.get(r.state)),
    Column("start", "START", 17, lambda r: utc(r.resv.start_time), lambda r: na_last(r.resv.start_time)),
    Column("end", "END", 17, lambda r: utc(r.resv.end_time), lambda r: na_last(r.resv.end_time)),
    Column("when", "WHEN", 10, lambda r: r.when, lambda r: na_last(r.resv.start_time), align="right"),
    Column("nodes", "NODES", 20, lambda r: r.resv.nodes or NA_TEXT, lambda r: r.resv.node_count or 0, elide="list"),
    Column("count", "N", 4, lambda r: str(r.resv.node_count) if r.resv.node_count is not None else NA_TEXT,
           lambda r: na_last(r.resv.node_count), align="right"),
    Column("bad", "DRAINED/DOWN", 14, lambda r: r.bad_nodes, lambda r: r.bad_nodes,
           style=lambda r: "error" if r.bad_nodes else None),
    Column("flags", "FLAGS", 22, lambda r: ",".join(r.resv.flags), lambda r: ",".join(r.resv.flags),
           style=lambda r: "warning" if r.resv.maintenance else None, elide="list"),
    Column("users", "USERS", 14, lambda r: ",".join(r.resv.users), lambda r: ",".join(r.resv.users), elide="list"),
    Column("accounts", "ACCOUNTS", 12, lambda r: ",".join(r.resv.accounts), lambda r: ",".join(r.resv.accounts),
           elide="list"),
    Column("partition", "PARTITION", 10, lambda r: r.resv.partition or "", lambda r: r.resv.partition or ""),
]


class ReservationTable(VirtualTable[ReservationRow]):
    def __init__(self) -> None:
        super().__init__(RESERVATION_COLUMNS, row_key=lambda r: r.name, markable=True,
                         row_nodes=lambda r: hostlist_set(r.resv.nodes or ""), id="reservations")


class ReservationsScreen(TableViewScreen):
    """``:reservations``. ``m`` marks the nodes; ``x`` deletes (preview, confirmation, audit)."""

    BINDINGS = bindings(RESERVATION_KEYS)
    title_text = "Reservations  (scontrol show reservation; times in UTC)"

    def __init__(self, port: UiPort) -> None:
        super().__init__(port, ReservationTable())
        self.rows: list[ReservationRow] = []

    def build_rows(self, snapshot: ClusterSnapshot) -> list[ReservationRow]:
        return reservation_rows(snapshot, self.port.clock())

    def show_rows(self, rows: list[ReservationRow]) -> None:
        self.rows = rows
        self.table.set_rows(rows)
        snap = self.snapshot
        if snap is not None and Part.RESERVATIONS.value not in snap.collected_at:
            errors = snap.part_errors(Part.RESERVATIONS)
            self.set_info("reservations: not read (yet)" + (f": {'; '.join(errors)}" if errors else
                          " — no source reports them"))
            return
        bad = sum(1 for r in rows if r.bad_nodes)
        self.set_info(f"{len(rows)} reservations" + (f" · {bad} hold drained/down nodes" if bad else "")
                      + " · m: mark its nodes · x: delete")

    def action_toggle_row(self) -> None:
        self.table.action_toggle_mark()

    def action_mark_nodes(self) -> None:
        row = self.table.cursor_row
        if row is None:
            return
        mark_nodes_on_dashboard(self, hostlist_set(row.resv.nodes or ""), f"reservation {row.name}")

    def action_request_action(self, kind: str) -> None:
        if bool(getattr(self.app, "read_only", self.port.read_only)):
            self.notify("delete reservation: read-only mode, actions are disabled", severity="warning", timeout=2)
            return
        targets = self.table.targets()
        if targets:
            self.post_message(ActionRequested(ActionKind(kind), targets))
