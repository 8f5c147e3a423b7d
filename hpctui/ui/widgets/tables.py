"""The concrete tables: Slurm queue, K8s pods, IB links, mounts (columns + row rules).

Rows stay model objects; the column functions below run only for visible rows.
Problem rows are coloured by the severity that :mod:`hpctui.findings.health` assigns.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import msgspec

from hpctui.findings.health import Finding, ib_findings, mount_findings
from hpctui.model import IbPort, Mount, Pod, Severity, SlurmJob
from hpctui.model.action import ActionKind
from hpctui.model.fabric import Fabric
from hpctui.model.ib import LINK_ERROR_COUNTERS
from hpctui.ui.fmt import ib_rate, job_elapsed, job_time_left, job_time_left_text, job_time_text
from hpctui.ui.keys import JOB_ACTION_KEYS, JOB_LOG_KEYS, JOB_SHELL_KEYS, POD_KEYS, POD_SHELL_KEYS, QUEUE_KEYS, bindings
from hpctui.ui.messages import (
    ActionRequested,
    JobDetailRequested,
    LogsRequested,
    NodeRequested,
    PodDetailRequested,
    ShellRequested,
)
from hpctui.ui.widgets.vtable import Column, VirtualTable, hostlist_set, na_last

T = TypeVar("T")

# Text colours (readable on the table background): Textual's own status colours, plus
# sev-critical-text (sev-critical is tuned as a cell background). Every shipped theme keeps them
# at 4.5:1 on its backgrounds (tests/ui/test_contrast.py); the table re-checks for any theme.
SEVERITY_VAR = {
    Severity.OK: None, Severity.INFO: "primary", Severity.WARNING: "warning",
    Severity.ERROR: "error", Severity.CRITICAL: "sev-critical-text",
}
JOB_STATE_VAR = {
    "RUNNING": "success", "PENDING": "warning", "FAILED": "error", "NODE_FAIL": "error",
    "TIMEOUT": "error", "OUT_OF_MEMORY": "error", "BOOT_FAIL": "error", "PREEMPTED": "warning",
    "REQUEUED": "warning", "REQUEUE_HOLD": "warning", "SUSPENDED": "warning",
}
POD_PHASE_VAR = {"Running": "success", "Pending": "warning", "Failed": "error", "Unknown": "error"}


def _s(value: object) -> str:
    return "N/A" if value is None else str(value)


def _pod_gpus(pod: Pod) -> str:
    """The GPU cell: "2" for whole GPUs, "1×1g.10gb" for a MIG slice (the profile kept), "1+2×1g.10gb"."""
    if not pod.gpu_resources:
        return str(pod.gpus_requested)
    return "+".join(str(n) if r == "nvidia.com/gpu" else f"{n}×{r.removeprefix('nvidia.com/mig-')}"
                    for r, n in sorted(pod.gpu_resources.items(), key=lambda kv: kv[0] != "nvidia.com/gpu"))


def job_sort_id(job: SlurmJob) -> tuple[int, int]:
    if job.array_job_id is not None:
        return (job.array_job_id, job.array_task_id if job.array_task_id is not None else 1 << 30)
    return (job.job_id, -1)


JOB_COLUMNS: list[Column[SlurmJob]] = [
    Column("id", "JOBID", 13, lambda j: j.display_id, job_sort_id),
    Column("user", "USER", 9, lambda j: j.user or "", lambda j: j.user or ""),
    Column("partition", "PART", 8, lambda j: j.partition or "", lambda j: j.partition or ""),
    Column("name", "NAME", 14, lambda j: j.name or "", lambda j: j.name or ""),
    Column("state", "STATE", 9, lambda j: j.state, lambda j: j.state, style=lambda j: JOB_STATE_VAR.get(j.state)),
    Column("gpus", "GPU", 4, lambda j: _s(j.gpus_requested), lambda j: na_last(j.gpus_requested), align="right"),
    Column("nodes", "NODES", 16, lambda j: j.nodes or "", lambda j: j.nodes or "", elide="list"),
    Column("reason", "REASON", 20, lambda j: j.reason or "", lambda j: j.reason or ""),
]


def job_time_columns(now: Callable[[], float]) -> list[Column[SlurmJob]]:
    """squeue's TIME (elapsed), TIME_LEFT (limit − elapsed) and PRIORITY; ``now`` is the app's clock."""
    return [
        Column("time", "TIME", 10, lambda j: job_time_text(j.start_time, j.state, now(), j.end_time),
               lambda j: job_elapsed(j.start_time, j.state, now(), j.end_time) or 0.0, align="right"),  # 0:00 as shown
        Column("time_left", "TIME_LEFT", 10, lambda j: job_time_left_text(j.start_time, j.state, j.time_limit_min, now()),
               lambda j: na_last(job_time_left(j.start_time, j.state, j.time_limit_min, now())), align="right",
               style=lambda j: time_left_style(j, now())),
        Column("priority", "PRIORITY", 8, lambda j: _s(j.priority), lambda j: na_last(j.priority), align="right"),
    ]


TIME_LEFT_WARN_S = 600.0  # a running job this close to its time limit is shown as a warning


def time_left_style(job: SlurmJob, now: float) -> str | None:
    """TIME_LEFT's colour: error for a running job at or over its time limit (Slurm should have
    ended it: a stuck epilog, a clock skew, or the node stopped answering), warning in its last
    ten minutes, none otherwise."""
    if job.state != "RUNNING":
        return None
    left = job_time_left(job.start_time, job.state, job.time_limit_min, now)
    if left is None:
        return None
    return "error" if left <= 0 else "warning" if left <= TIME_LEFT_WARN_S else None


def with_time_columns(columns: Sequence[Column[SlurmJob]], now: Callable[[], float]) -> list[Column[SlurmJob]]:
    """The queue's columns with TIME/TIME_LEFT/PRIORITY after STATE (at the end without a STATE)."""
    out = list(columns)
    at = next((i + 1 for i, c in enumerate(out) if c.key == "state"), len(out))
    out[at:at] = job_time_columns(now)
    return out


def job_search(job: SlurmJob) -> str:
    return f"{job.display_id} {job.user} {job.account} {job.partition} {job.name} {job.state} {job.reason} {job.nodes}"


POD_COLUMNS: list[Column[Pod]] = [
    Column("name", "NAMESPACE/NAME", 30, lambda p: f"{p.namespace}/{p.name}", lambda p: (p.namespace, p.name),
           elide="middle"),  # a pod's unique part is its tail (…-7f9c6d-x2kq9)
    Column("node", "NODE", 10, lambda p: p.node or "", lambda p: p.node or ""),
    Column("phase", "PHASE", 9, lambda p: p.phase, lambda p: p.phase, style=lambda p: POD_PHASE_VAR.get(p.phase)),
    Column("reason", "REASON", 18, lambda p: p.reason or "", lambda p: p.reason or ""),
    Column("gpus", "GPU", 9, lambda p: _pod_gpus(p), lambda p: p.gpus_requested, align="right"),
    Column("restarts", "RST", 3, lambda p: str(p.restarts), lambda p: p.restarts, align="right"),
    Column("queue", "QUEUE", 10, lambda p: p.queue or "", lambda p: p.queue or ""),
]


def pod_search(pod: Pod) -> str:
    return f"{pod.namespace}/{pod.name} {pod.node} {pod.phase} {pod.reason} {pod.queue} {pod.owner_name}"


# Rows are kept for every port and mount (tens of thousands at scale): msgspec structs
# untracked by the cyclic GC (gc=False; they hold only immutable data), so a GC pass
# does not walk them.
class LinkRow(msgspec.Struct, frozen=True, gc=False):
    port: IbPort
    severity: Severity
    problem: str
    remote: str = ""  # the switch and port it is cabled to ("ibleaf03:17"), when the fabric is known


class MountRow(msgspec.Struct, frozen=True, gc=False):
    mount: Mount
    severity: Severity
    problem: str


def _worst(findings: Sequence[Finding]) -> tuple[Severity, str]:
    if not findings:  # the common case, 131k times per poll at 16k nodes: no generator, no join
        return Severity.OK, ""
    return max((f.severity for f in findings), default=Severity.OK), "; ".join(f.message for f in findings)


def link_row(port: IbPort, findings: Sequence[Finding] | None = None, fabric: Fabric | None = None) -> LinkRow:
    """One IB row; ``findings`` (the port's, from the shared FindingsIndex) or the rules run here; the far
    end of its cable from ``fabric`` (ibnetdiscover / iblinkinfo links, else the node's leaf switch)."""
    severity, problem = _worst(ib_findings(port) if findings is None else findings)
    return LinkRow(port, severity, problem, remote_text(port, fabric))


def link_row_maker() -> Callable[[IbPort, Sequence[Finding], Fabric | None], LinkRow]:
    """:func:`link_row` for the IB pane's every-node rows, rebuilt for every port whose counters moved
    (~4k ports a poll at 4k nodes): the far end's text is looked up once per port of one fabric, not on
    every rebuild. Safe from several threads (a cancelled worker may still run): each call reads the
    memo of its own fabric."""
    state: list[tuple[Fabric | None, dict[tuple[str, str, int], str]]] = [(None, {})]

    def make(port: IbPort, findings: Sequence[Finding], fabric: Fabric | None) -> LinkRow:
        current = state[0]
        if current[0] is not fabric:
            current = state[0] = (fabric, {})
        memo = current[1]
        key = (port.node, port.device, port.port)
        remote = memo.get(key)
        if remote is None:
            remote = memo[key] = remote_text(port, fabric)
        severity, problem = _worst(findings)
        return LinkRow(port, severity, problem, remote)

    return make


def remote_text(port: IbPort, fabric: Fabric | None) -> str:
    """``ibleaf03:17`` where the port is cabled; ``ibleaf03`` (its leaf, port unknown) from Slurm's topology."""
    if fabric is None:
        return ""
    far = fabric.remote(port.node, port.device, port.port)
    if far is not None:
        return far.switch if far.port is None else f"{far.switch}:{far.port}"
    return fabric.leaf_of.get(port.node, "")


def mount_row(mount: Mount, findings: Sequence[Finding] | None = None) -> MountRow:
    severity, problem = _worst(mount_findings(mount) if findings is None else findings)
    return MountRow(mount, severity, problem)


def _error_deltas(port: IbPort) -> str:
    parts = [f"{k}+{v}" for k in LINK_ERROR_COUNTERS if (v := port.deltas.get(k, 0)) > 0]
    if not parts:
        return "0" if port.deltas or port.counters else "N/A"
    return " ".join(parts)


def _rate(port: IbPort) -> str:
    """``400G NDR``: the compact rate every pane uses (``ibstat``'s "400 Gb/sec (4X NDR)" is 19 cells)."""
    return ib_rate(port.rate_gbps, port.rate_text)


LINK_COLUMNS: list[Column[LinkRow]] = [
    Column("severity", "!", 1, lambda r: "!" if r.severity >= Severity.WARNING else " ", lambda r: -r.severity,
           style=lambda r: SEVERITY_VAR[r.severity]),
    Column("node", "NODE", 10, lambda r: r.port.node, lambda r: r.port.node),
    Column("port", "PORT", 9, lambda r: f"{r.port.device}:{r.port.port}", lambda r: (r.port.device, r.port.port)),
    Column("state", "STATE", 6, lambda r: _s(r.port.state), lambda r: _s(r.port.state)),
    Column("phys", "PHYS", 9, lambda r: _s(r.port.phys_state), lambda r: _s(r.port.phys_state)),
    Column("rate", "RATE", 8, lambda r: _rate(r.port), lambda r: na_last(r.port.rate_gbps),
           style=lambda r: "warning" if r.port.degraded_rate else None),
    Column("remote", "SWITCH", 12, lambda r: r.remote, lambda r: r.remote, elide="middle"),
    Column("errors", "ERR Δ", 22, lambda r: _error_deltas(r.port), lambda r: -sum(r.port.deltas.values())),
    Column("problem", "PROBLEM", 40, lambda r: r.problem, lambda r: r.problem),
]
MOUNT_COLUMNS: list[Column[MountRow]] = [
    Column("severity", "!", 1, lambda r: "!" if r.severity >= Severity.WARNING else " ", lambda r: -r.severity,
           style=lambda r: SEVERITY_VAR[r.severity]),
    Column("node", "NODE", 10, lambda r: r.mount.node, lambda r: r.mount.node),
    Column("target", "TARGET", 16, lambda r: r.mount.target, lambda r: r.mount.target, elide="middle"),
    Column("fstype", "FS", 7, lambda r: r.mount.fstype, lambda r: r.mount.fstype),
    Column("state", "STATE", 9, lambda r: r.mount.state.value, lambda r: r.mount.state.value,
           style=lambda r: SEVERITY_VAR[r.severity]),
    Column("latency", "LAT ms", 7, lambda r: "N/A" if r.mount.latency_ms is None else f"{r.mount.latency_ms:.0f}",
           lambda r: na_last(r.mount.latency_ms), align="right"),
    Column("detail", "DETAIL", 40, lambda r: r.mount.detail or "", lambda r: r.mount.detail or ""),
]


def severity_first(rows: list[Any]) -> list[Any]:
    """Problems first (worst on top), healthy rows after; a stable sort keeps each group's order."""
    return sorted(rows, key=lambda r: -r.severity)


class ActingTable(VirtualTable[T]):
    """A table whose action keys become ActionRequested for its targets (disabled when read-only)."""

    actions_enabled = True

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "request_action":
            return self.actions_enabled
        return True

    def action_request_action(self, kind: str) -> None:
        targets = self.targets()
        if targets:
            self.post_message(ActionRequested(ActionKind(kind), targets))


class QueueTable(ActingTable[SlurmJob]):
    """The Slurm queue: marks jobs and turns action keys into ActionRequested."""

    BINDINGS = bindings(QUEUE_KEYS, JOB_ACTION_KEYS, JOB_SHELL_KEYS, JOB_LOG_KEYS)

    def __init__(self, *, actions_enabled: bool = True, clock: Callable[[], float] = time.time,
                 id: str | None = None) -> None:
        super().__init__(with_time_columns(JOB_COLUMNS, self._now), row_key=lambda j: j.display_id,
                         search_text=job_search, markable=True, row_nodes=lambda j: hostlist_set(j.nodes or ""), id=id)
        self.actions_enabled = actions_enabled
        self.clock = clock  # the port's (a frozen one in tests and screenshots)

    def _now(self) -> float:
        """TIME/TIME_LEFT are measured on ``clock``."""
        return self.clock()

    def action_open_shell(self) -> None:
        """``s``: a shell in the cursor job's allocation."""
        job = self.cursor_row
        if job is not None:
            self.post_message(ShellRequested(ActionKind.SHELL_JOB, job.display_id))

    def action_show_detail(self) -> None:
        job = self.cursor_row
        if job is not None:
            self.post_message(JobDetailRequested(job))

    def action_job_logs(self) -> None:
        """The cursor job's output files in the log viewer."""
        job = self.cursor_row
        if job is not None:
            self.post_message(LogsRequested("job", job=job))


def pod_trouble_first(pods: Sequence[Pod]) -> list[Pod]:
    """Pods with a problem (a waiting/terminated reason, Pending, Failed, Unknown) on top."""
    def rank(p: Pod) -> int:
        if p.reason or p.phase in ("Failed", "Unknown"):
            return 0
        return 1 if p.phase == "Pending" else 2
    return sorted(pods, key=rank)


class PodTable(ActingTable[Pod]):
    """K8s pods: enter describes, L shows logs (l moves, as in every pane), ctrl+d deletes."""

    BINDINGS = bindings(POD_KEYS, POD_SHELL_KEYS)

    def __init__(self, *, actions_enabled: bool = True, id: str | None = None) -> None:
        super().__init__(POD_COLUMNS, row_key=lambda p: f"{p.namespace}/{p.name}", search_text=pod_search,
                         row_nodes=lambda p: (p.node,) if p.node else (), id=id)
        self.actions_enabled = actions_enabled

    def action_open_shell(self) -> None:
        """``s``: a shell in the cursor pod (a picker asks which container when it has several)."""
        pod = self.cursor_row
        if pod is not None:
            self.post_message(ShellRequested(ActionKind.SHELL_POD, f"{pod.namespace}/{pod.name}", pod.containers))

    def action_pod_detail(self, what: str) -> None:
        pod = self.cursor_row
        if pod is not None:
            if pod.node:  # the pod's node follows it everywhere, as enter on IB/mount rows does
                self.post_message(NodeRequested(pod.node))
            self.post_message(PodDetailRequested(pod, what))

    def action_pod_logs(self) -> None:
        """The cursor pod's log in the log viewer (follow, container, previous)."""
        pod = self.cursor_row
        if pod is not None:
            self.post_message(LogsRequested("pod", pod=pod))


def pod_table(id: str | None = None, *, actions_enabled: bool = True) -> PodTable:
    return PodTable(actions_enabled=actions_enabled, id=id)


def link_table(id: str | None = None) -> VirtualTable[LinkRow]:
    return VirtualTable(LINK_COLUMNS, row_key=lambda r: f"{r.port.node}/{r.port.device}:{r.port.port}",
                        row_style=lambda r: SEVERITY_VAR[r.severity], row_nodes=lambda r: (r.port.node,), id=id)


def mount_table(id: str | None = None) -> VirtualTable[MountRow]:
    return VirtualTable(MOUNT_COLUMNS, row_key=lambda r: f"{r.mount.node}:{r.mount.target}",
                        row_style=lambda r: SEVERITY_VAR[r.severity], row_nodes=lambda r: (r.mount.node,), id=id)
