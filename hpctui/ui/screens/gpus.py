"""Every GPU of the cluster as one sortable, filterable table (``:gpus``); enter opens the
chart screen of the row's node.

Rows stay small objects around the model's ``Gpu`` and are rebuilt per node only when that
node's GPU tuple, findings or workload changed; the table formats only visible rows, so
16k nodes × 8 GPUs (131k rows) cost one list per snapshot, not 131k formatted lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen

from hpctui.core.runtime import Runtime
from hpctui.findings.correlate import workload_index
from hpctui.findings.health import Finding, Thresholds
from hpctui.findings.index import findings_for
from hpctui.model import ClusterSnapshot, Gpu, Severity
from hpctui.ui.widgets.footer import KeyBar
from hpctui.ui.widgets.panes import TablePane
from hpctui.ui.widgets.tables import SEVERITY_VAR
from hpctui.ui.widgets.vtable import Column, VirtualTable, na_last

THREAD_ABOVE = 2048  # nodes: above this, rows are built in a worker thread


@dataclass(frozen=True, slots=True)
class GpuRow:
    gpu: Gpu
    severity: Severity
    problem: str
    work: str  # Slurm jobs on this GPU (by GRES index), GPU pods of its node


def _n(value: float | None, fmt: str = "{:.0f}") -> str:
    return "N/A" if value is None else fmt.format(value)


def _mem(g: Gpu) -> str:
    if g.memory_used_mib is None and g.memory_total_mib is None:
        return "N/A"
    used = _n(None if g.memory_used_mib is None else g.memory_used_mib / 1024, "{:.1f}")
    total = _n(None if g.memory_total_mib is None else g.memory_total_mib / 1024, "{:.0f}")
    return f"{used}/{total}"


def _ecc(g: Gpu) -> str:
    if g.ecc_corrected_volatile is None and g.ecc_uncorrected_volatile is None:
        return "N/A"
    return f"{_n(g.ecc_corrected_volatile, '{}')}/{_n(g.ecc_uncorrected_volatile, '{}')}"


def _mig(g: Gpu) -> str:
    if g.mig_instances:
        return f"on:{len(g.mig_instances)}"
    return {True: "on", False: "off", None: "N/A"}[g.mig_mode_current]


GPU_COLUMNS: list[Column[GpuRow]] = [
    Column("severity", "!", 1, lambda r: "!" if r.severity >= Severity.WARNING else " ",
           lambda r: (-r.severity, r.gpu.node, r.gpu.index), style=lambda r: SEVERITY_VAR[r.severity]),
    Column("node", "NODE", 10, lambda r: r.gpu.node, lambda r: (r.gpu.node, r.gpu.index)),
    Column("index", "GPU", 3, lambda r: str(r.gpu.index), lambda r: (r.gpu.index, r.gpu.node), align="right"),
    Column("model", "MODEL", 12, lambda r: (r.gpu.model or "N/A").removeprefix("NVIDIA "), lambda r: r.gpu.model or ""),
    Column("util", "UTIL%", 5, lambda r: _n(r.gpu.util_pct), lambda r: na_last(r.gpu.util_pct), align="right"),
    Column("mem", "MEM GiB", 10, lambda r: _mem(r.gpu), lambda r: na_last(r.gpu.memory_used_mib), align="right"),
    Column("temp", "°C", 4, lambda r: _n(r.gpu.temp_c), lambda r: na_last(r.gpu.temp_c), align="right"),
    Column("power", "POWER W", 10, lambda r: f"{_n(r.gpu.power_w)}/{_n(r.gpu.power_limit_w)}",
           lambda r: na_last(r.gpu.power_w), align="right"),
    Column("ecc", "ECC c/u", 8, lambda r: _ecc(r.gpu),
           lambda r: na_last(None if r.gpu.ecc_corrected_volatile is None and r.gpu.ecc_uncorrected_volatile is None
                             else (r.gpu.ecc_uncorrected_volatile or 0, r.gpu.ecc_corrected_volatile or 0)),
           align="right"),
    Column("xid", "XID", 4, lambda r: _n(r.gpu.last_xid, "{}") if r.gpu.last_xid is not None else "",
           lambda r: na_last(r.gpu.last_xid), align="right", style=lambda r: "error" if r.gpu.last_xid else None),
    Column("mig", "MIG", 5, lambda r: _mig(r.gpu), lambda r: _mig(r.gpu)),
    Column("work", "JOBS/PODS", 24, lambda r: r.work, lambda r: r.work),
    Column("problem", "PROBLEM", 44, lambda r: r.problem, lambda r: r.problem),
]


def _search(r: GpuRow) -> str:
    g = r.gpu
    return f"{g.node} gpu{g.index} {g.model} {r.work} {r.problem} xid{g.last_xid} {g.uuid}"


def gpu_indexes(text: str | None) -> frozenset[int] | None:
    """``"0-1,4"`` → {0, 1, 4}; None when unknown or unreadable."""
    if not text:
        return None
    out: set[int] = set()
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            out.update(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        return None
    return frozenset(out) if len(out) <= 1024 else None


class GpuRows:
    """Rows for a snapshot, reusing each node's rows while its inputs are the same objects."""

    def __init__(self, thresholds: Thresholds | None = None) -> None:
        self.thresholds = thresholds or Thresholds()
        self._cache: dict[str, tuple[object, object, object, list[GpuRow]]] = {}

    def __call__(self, snapshot: ClusterSnapshot) -> list[GpuRow]:
        index = findings_for(snapshot, self.thresholds)
        work = workload_index(snapshot)
        empty: tuple[Finding, ...] = ()
        new: dict[str, tuple[object, object, object, list[GpuRow]]] = {}
        rows: list[GpuRow] = []
        for node, gpus in snapshot.gpus.items():
            findings = index.by_node.get(node, empty)
            hit = self._cache.get(node)
            if hit is None or hit[0] is not gpus or hit[1] is not findings or hit[2] is not work:
                hit = (gpus, findings, work, self._build(index, work, node, gpus, findings))
            new[node] = hit
            rows.extend(hit[3])
        self._cache = new
        return rows

    @staticmethod
    def _build(index: object, work: object, node: str, gpus: Sequence[Gpu],
               findings: tuple[Finding, ...]) -> list[GpuRow]:
        jobs = work.jobs_on(node)  # type: ignore[attr-defined]
        pods = [f"{p.namespace}/{p.name}" for p in work.pods_on(node) if p.gpus_requested]  # type: ignore[attr-defined]
        # A job's GPU indexes on this node (Slurm's GRES IDX, "0-1,4"): the job sits on those GPUs
        # only; a job without them, and pods (K8s does not say which GPU), show on every GPU.
        placed = [(j.display_id, gpu_indexes(j.gpus_alloc.get(node))) for j in jobs]
        out = []
        for g in gpus:
            mine = index.by_object(f"gpu/{node}/{g.index}") if findings else ()  # type: ignore[attr-defined]
            severity = max((f.severity for f in mine), default=Severity.OK)
            on = [job for job, idx in placed if idx is None or g.index in idx] + pods
            out.append(GpuRow(g, severity, "; ".join(f.message for f in mine), " ".join(on)))
        return out


class GpuTable(VirtualTable[GpuRow]):
    BINDINGS = [Binding("enter", "open_charts", "Charts")]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(GPU_COLUMNS, row_key=lambda r: f"{r.gpu.node}/{r.gpu.index}", search_text=_search,
                         row_style=lambda r: SEVERITY_VAR[r.severity], sort="severity",
                         row_nodes=lambda r: (r.gpu.node,), id=id)

    def action_open_charts(self) -> None:
        row = self.cursor_row
        if row is not None:
            from hpctui.ui.screens.charts import ChartsScreen

            self.app.push_screen(ChartsScreen(self.screen.runtime, node=row.gpu.node))  # type: ignore[attr-defined]


class GpusScreen(Screen[None]):
    """``:gpus``: every GPU; ``o`` sorts (problems first to start with), ``/`` filters."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]
    DEFAULT_CSS = """
    GpusScreen TablePane { height: 1fr; }
    """

    def __init__(self, runtime: Runtime) -> None:
        super().__init__(id="gpus")
        self.runtime = runtime
        self.table = GpuTable(id="gpu-table")
        self.pane = TablePane("GPUs", self.table, id="gpus-pane")
        self.rows_for = GpuRows(runtime.thresholds)
        self._request = 0

    def compose(self) -> ComposeResult:
        yield self.pane
        yield KeyBar()

    def on_mount(self) -> None:
        self.update_snapshot(self.runtime.store.snapshot())
        self.table.focus()

    def update_snapshot(self, snapshot: ClusterSnapshot) -> None:
        self._request += 1
        if len(snapshot.gpus) < THREAD_ABOVE:
            self.pane.set_rows(self.rows_for(snapshot))
            return
        job = partial(self._rows_thread, snapshot, self._request)
        self.run_worker(job, name="gpu-rows", group="gpu-rows", description="GPU rows", thread=True, exclusive=True)

    def _rows_thread(self, snapshot: ClusterSnapshot, request: int) -> None:
        rows = self.rows_for(snapshot)
        self.app.call_from_thread(self._apply, rows, request)

    def _apply(self, rows: list[GpuRow], request: int) -> None:
        if request == self._request:
            self.pane.set_rows(rows)
