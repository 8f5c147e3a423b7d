"""Partitions like ``sinfo -s`` / s9s: state, nodes by state, GPUs, jobs, time limit, default flag.

State, limits and the default flag come from the partitions the scheduler source read
(``scontrol show partition``, REST ``partitions``, the demo); node, GPU and job counts are
derived from the same snapshot the heatmap and the queue show, so the views agree.
``s`` sets a partition's state (UP/DOWN/DRAIN/INACTIVE) through the usual confirm dialog.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.binding import Binding

from hpctui.model import ClusterSnapshot, SlurmNodeInfo, SlurmPartition
from hpctui.model.action import ActionKind
from hpctui.ui.fmt import NA_TEXT, pair, squeue_duration
from hpctui.ui.messages import ActionRequested
from hpctui.ui.screens.tableview import TableViewScreen
from hpctui.ui.widgets.vtable import Column, VirtualTable, hostlist_set, na_last

if TYPE_CHECKING:
    from hpctui.core.runtime import Runtime

_BUSY = frozenset({"ALLOCATED", "MIXED", "COMPLETING"})
STATE_VAR = {"UP": "success", "DOWN": "error", "INACTIVE": "error", "DRAIN": "warning"}


def node_bucket(info: SlurmNodeInfo) -> str:
    """One of down, drained, alloc, idle, other: how ``sinfo -s`` would count the node
    (a draining node counts as drained: it takes no new work)."""
    base = info.base_state.upper()
    if base in ("DOWN", "FAIL") or "FAIL" in info.flags or "NOT_RESPONDING" in info.flags:
        return "down"
    if "DRAIN" in info.flags:
        return "drained"
    if base in _BUSY:
        return "alloc"
    if base == "IDLE":
        return "idle"
    return "other"


@dataclass(frozen=True, slots=True)
class PartitionRow:
    name: str
    state: str | None
    default: bool | None
    nodes: int
    alloc: int
    idle: int
    drained: int
    down: int
    other: int
    gpus_total: int | None
    gpus_used: int | None
    running: int
    pending: int
    max_time_min: int | None
    unlimited: bool
    nodelist: str


def time_limit_text(minutes: int | None, unlimited: bool) -> str:
    if unlimited:
        return "UNLIMITED"
    return NA_TEXT if minutes is None else squeue_duration(minutes * 60)


def partition_rows(snapshot: ClusterSnapshot) -> list[PartitionRow]:
    """One row per partition the scheduler reports, plus any a node names that it does not."""
    declared: dict[str, SlurmPartition] = {p.name: p for p in snapshot.partitions}
    members: dict[str, list[SlurmNodeInfo]] = {name: [] for name in declared}
    names_in: dict[str, list[str]] = {name: [] for name in declared}
    gpu_counts: dict[str, list[tuple[int | None, int | None]]] = {name: [] for name in declared}
    for node in snapshot.nodes.values():
        if node.slurm is None:
            continue
        counted = physical_gpus(snapshot, node.name, node.slurm)
        for part in node.slurm.partitions:
            members.setdefault(part, []).append(node.slurm)
            names_in.setdefault(part, []).append(node.name)
            gpu_counts.setdefault(part, []).append(counted)
    running: dict[str, int] = {}
    pending: dict[str, int] = {}
    for job in snapshot.jobs:
        counter = running if job.state == "RUNNING" else pending if job.state == "PENDING" else None
        if counter is None or not job.partition:
            continue
        for part in job.partition.split(","):  # a pending job may name several partitions
            counter[part] = counter.get(part, 0) + 1
    rows = []
    for name in members:
        infos = members[name]
        counts = {"down": 0, "drained": 0, "alloc": 0, "idle": 0, "other": 0}
        for info in infos:
            counts[node_bucket(info)] += 1
        totals = [total for total, _ in gpu_counts.get(name, ()) if total is not None]
        used = [busy for _, busy in gpu_counts.get(name, ()) if busy is not None]
        p = declared.get(name)
        nodelist = (p.nodes if p is not None and p.nodes else None) or _fold(names_in[name])
        rows.append(PartitionRow(
            name=name, state=p.state if p else None, default=p.default if p else None,
            nodes=len(infos) if infos or p is None or p.total_nodes is None else p.total_nodes,
            alloc=counts["alloc"], idle=counts["idle"], drained=counts["drained"], down=counts["down"],
            other=counts["other"], gpus_total=sum(totals) if totals else None, gpus_used=sum(used) if used else None,
            running=running.get(name, 0), pending=pending.get(name, 0),
            max_time_min=p.max_time_min if p else None, unlimited=p.max_time_unlimited if p else False,
            nodelist=nodelist,
        ))
    return rows


def physical_gpus(snapshot: ClusterSnapshot, name: str, info: SlurmNodeInfo) -> tuple[int | None, int | None]:
    """(GPUs, GPUs in use) of one node, counting physical GPUs: Slurm counts each MIG slice of a
    MIG node as a GPU of its own (``gpu:3g.40gb:8,gpu:1g.10gb:16``); where the node's GPU readings
    show MIG on, its physical GPUs are the readings, and one is in use while any of its slices is
    busy (a process, or an active engine): Slurm's slice allocation names no physical GPU."""
    readings = snapshot.gpus.get(name, ())
    if info.gpus_total is None or not any(g.mig_mode_current for g in readings):
        return info.gpus_total, info.gpus_alloc
    busy = sum(1 for g in readings if g.processes or any((m.engine_active or 0.0) > 0.0 for m in g.mig_instances))
    return len(readings), busy


def _fold(names: list[str]) -> str:
    from hpctui.model.hostlist import collect_cached

    return collect_cached(names) if names else ""


PARTITION_COLUMNS: list[Column[PartitionRow]] = [
    Column("name", "PARTITION", 12, lambda r: r.name + ("*" if r.default else ""), lambda r: r.name),
    Column("state", "STATE", 8, lambda r: r.state or NA_TEXT, lambda r: r.state or "",
           style=lambda r: STATE_VAR.get(r.state or "")),
    Column("nodes", "NODES", 6, lambda r: str(r.nodes), lambda r: r.nodes, align="right"),
    Column("alloc", "ALLOC", 6, lambda r: str(r.alloc), lambda r: r.alloc, align="right"),
    Column("idle", "IDLE", 6, lambda r: str(r.idle), lambda r: r.idle, align="right"),
    Column("drained", "DRAIN", 6, lambda r: str(r.drained), lambda r: r.drained, align="right",
           style=lambda r: "warning" if r.drained else None),
    Column("down", "DOWN", 6, lambda r: str(r.down), lambda r: r.down, align="right",
           style=lambda r: "error" if r.down else None),
    Column("gpus", "GPUS USED/TOT", 14, lambda r: pair(r.gpus_used, r.gpus_total),
           lambda r: na_last(r.gpus_total), align="right"),
    Column("running", "RUN", 6, lambda r: str(r.running), lambda r: r.running, align="right"),
    Column("pending", "PEND", 6, lambda r: str(r.pending), lambda r: r.pending, align="right"),
    Column("timelimit", "TIMELIMIT", 11, lambda r: time_limit_text(r.max_time_min, r.unlimited),
           lambda r: (r.unlimited, na_last(r.max_time_min)), align="right"),
    Column("default", "DEFAULT", 8, lambda r: NA_TEXT if r.default is None else ("yes" if r.default else "no"),
           lambda r: not r.default),
    Column("nodelist", "NODELIST", 30, lambda r: r.nodelist, lambda r: r.nodelist),
]


class PartitionTable(VirtualTable[PartitionRow]):
    def __init__(self) -> None:
        super().__init__(PARTITION_COLUMNS, row_key=lambda r: r.name, markable=True,
                         row_nodes=lambda r: hostlist_set(r.nodelist), id="partitions")


class PartitionsScreen(TableViewScreen):
    """``:partitions``. ``s`` asks to set the state of the marked (or cursor) partitions."""

    BINDINGS = [
        Binding("space", "mark", "Mark"),
        Binding("s", "set_state", "Set state"),
    ]
    title_text = "Partitions  (sinfo -s; * = default partition)"
    rows_in_thread = True

    def __init__(self, runtime: Runtime) -> None:
        super().__init__(runtime, PartitionTable())
        self.rows: list[PartitionRow] = []

    @property
    def read_only(self) -> bool:
        return bool(getattr(self.app, "read_only", self.runtime.read_only))

    def build_rows(self, snapshot: ClusterSnapshot) -> list[PartitionRow]:
        return partition_rows(snapshot)

    def show_rows(self, rows: list[PartitionRow]) -> None:
        self.rows = rows
        self.table.set_rows(self.rows)
        if self.snapshot is not None and not self.snapshot.partitions:
            self.set_info("state/limits: N/A (no source reported partitions); counts from the nodes and jobs")
        else:
            self.set_info(f"{len(self.rows)} partitions · read-only: state changes disabled" if self.read_only
                          else f"{len(self.rows)} partitions · s: set state (UP/DOWN/DRAIN/INACTIVE)")

    def action_mark(self) -> None:
        self.table.action_toggle_mark()

    def action_set_state(self) -> None:
        if self.read_only:  # the key stays visible, and says why it does nothing
            self.notify("set partition state: read-only mode, actions are disabled", severity="warning", timeout=2)
            return
        targets = self.table.targets()
        if targets:
            self.post_message(ActionRequested(ActionKind.PARTITION_STATE, targets))
