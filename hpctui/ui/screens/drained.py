"""Drained and down nodes like ``sinfo -R``: who drained what, when, and why.

One row per distinct (reason, user, time) with its nodes folded into a hostlist, newest first.
Slurm rows come from each node's ``reason``, ``reason_set_by_user`` and ``reason_changed_at``;
Kubernetes nodes that are cordoned (``spec.unschedulable``) get rows of their own, with the
taint's ``timeAdded`` when the API server recorded one. ``enter`` marks the row's nodes on the
dashboard heatmap and selects the first, so the node actions apply to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.binding import Binding

from hpctui.model import ClusterSnapshot, Node
from hpctui.model.hostlist import collect_cached
from hpctui.ui.fmt import NA_TEXT, utc
from hpctui.ui.messages import NodeRequested
from hpctui.ui.screens.tableview import TableViewScreen
from hpctui.ui.widgets.vtable import Column, VirtualTable

if TYPE_CHECKING:
    from hpctui.core.runtime import Runtime

NO_REASON = "(no reason)"
CORDONED = "cordoned (unschedulable)"
_UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


@dataclass(frozen=True, slots=True)
class DrainRow:
    scheduler: str  # "slurm" or "k8s"
    reason: str
    user: str | None
    time: float | None
    states: str  # the nodes' display states, folded ("DRAINED", "DOWN+NOT_RESPONDING", ...)
    nodes: tuple[str, ...]
    nodelist: str

    @property
    def key(self) -> str:
        return f"{self.scheduler}|{self.reason}|{self.user}|{self.time}"


def _slurm_listed(node: Node) -> bool:
    """``sinfo -R`` lists nodes that are drained/draining, down, failed or failing."""
    info = node.slurm
    if info is None:
        return False
    return (info.base_state.upper() in ("DOWN", "FAIL") or "DRAIN" in info.flags or "FAIL" in info.flags
            or bool(info.reason))


def _cordon_time(node: Node) -> float | None:
    assert node.k8s is not None
    return next((t.time_added for t in node.k8s.taints if t.key == _UNSCHEDULABLE_TAINT and t.time_added), None)


def drained_rows(snapshot: ClusterSnapshot) -> list[DrainRow]:
    """The rows, newest first (rows without a time last), then by reason."""
    groups: dict[tuple[str, str, str | None, float | None], list[Node]] = {}
    for node in snapshot.nodes.values():
        if _slurm_listed(node):
            assert node.slurm is not None
            key = ("slurm", node.slurm.reason or NO_REASON, node.slurm.reason_user, node.slurm.reason_time)
            groups.setdefault(key, []).append(node)
        if node.k8s is not None and node.k8s.unschedulable:
            groups.setdefault(("k8s", CORDONED, None, _cordon_time(node)), []).append(node)
    rows = []
    for (scheduler, reason, user, when), nodes in groups.items():
        if scheduler == "slurm":
            states = sorted({n.slurm.display_state for n in nodes if n.slurm is not None})
        else:
            states = sorted({"Ready" if n.k8s and n.k8s.ready == "True" else "NotReady" for n in nodes}
                            | {"SchedulingDisabled"})
        names = tuple(n.name for n in nodes)
        rows.append(DrainRow(scheduler=scheduler, reason=reason, user=user, time=when, states=",".join(states),
                             nodes=names, nodelist=collect_cached(names)))
    rows.sort(key=lambda r: (r.time is None, -(r.time or 0.0), r.reason, r.nodelist))
    return rows


DRAIN_COLUMNS: list[Column[DrainRow]] = [
    Column("reason", "REASON", 34, lambda r: r.reason, lambda r: r.reason),
    Column("user", "USER", 10, lambda r: r.user or NA_TEXT, lambda r: r.user or ""),
    Column("time", "TIMESTAMP", 18, lambda r: utc(r.time), lambda r: -(r.time or 0.0)),
    Column("nodelist", "NODELIST", 28, lambda r: r.nodelist, lambda r: r.nodelist),
    Column("count", "N", 4, lambda r: str(len(r.nodes)), lambda r: len(r.nodes), align="right"),
    Column("scheduler", "SCHED", 6, lambda r: r.scheduler, lambda r: r.scheduler),
    Column("states", "STATE", 30, lambda r: r.states, lambda r: r.states,
           style=lambda r: "error" if "DOWN" in r.states or "FAIL" in r.states else "warning"),
]


def drain_search(row: DrainRow) -> str:
    return f"{row.reason} {row.user} {utc(row.time)} {row.nodelist} {row.scheduler} {row.states}"


class DrainTable(VirtualTable[DrainRow]):
    def __init__(self) -> None:
        super().__init__(DRAIN_COLUMNS, row_key=lambda r: r.key, search_text=drain_search,
                         row_nodes=lambda r: r.nodes, id="drained")


class DrainedScreen(TableViewScreen):
    """``:drained``. ``enter``: mark the row's nodes on the heatmap and go back to the dashboard."""

    BINDINGS = [Binding("enter", "select_nodes", "Mark on heatmap")]
    title_text = "Drained / down / cordoned nodes  (sinfo -R; newest first)"
    rows_in_thread = True

    def __init__(self, runtime: Runtime) -> None:
        super().__init__(runtime, DrainTable())
        self.rows: list[DrainRow] = []

    def build_rows(self, snapshot: ClusterSnapshot) -> list[DrainRow]:
        return drained_rows(snapshot)

    def show_rows(self, rows: list[DrainRow]) -> None:
        self.rows = rows
        self.table.set_rows(self.rows)
        nodes = sum(len(r.nodes) for r in self.rows)
        self.set_info(f"{len(self.rows)} reasons · {nodes} node entries · enter marks them on the heatmap"
                      if self.rows else "no drained, down, failed or cordoned nodes")

    def action_select_nodes(self) -> None:
        row = self.table.cursor_row
        if row is None:
            return
        dashboard = getattr(self.app, "dashboard", None)
        self.app.pop_screen()
        if dashboard is None:
            return
        heatmap = dashboard.heatmap
        known = [n for n in row.nodes if heatmap.knows(n)]
        heatmap.clear_marks()  # marks are action targets: exactly this row's nodes, as ``g`` does
        for node in known:
            heatmap.select(node)
            heatmap.action_toggle_mark()
        if known:
            dashboard.post_message(NodeRequested(known[0]))
        self.app.notify(f"marked {row.nodelist} ({len(known)} node(s))", timeout=3, markup=False)
