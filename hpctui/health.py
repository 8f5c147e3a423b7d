"""Turns a snapshot into findings: what is wrong, where, and how badly.

UI-free, so the dashboard colours, the headless ``snapshot`` table and (later)
incident reports all agree on what "sick" means.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from hpctui.model import ClusterSnapshot, Gpu, IbPort, Mount, MountState, Node, Severity
from hpctui.model.gpu import XID_MEANING, xid_severity


class Thresholds(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """Alert thresholds; the ``[thresholds]`` table of the config file."""

    gpu_temp_warn_c: Annotated[float, Meta(ge=0, le=200)] = 83.0  # bounds also reject NaN/inf
    gpu_temp_crit_c: Annotated[float, Meta(ge=0, le=200)] = 88.0
    hbm_temp_warn_c: Annotated[float, Meta(ge=0, le=200)] = 90.0
    gpu_power_warn_pct: Annotated[float, Meta(gt=0, le=1000)] = 98.0  # of the power limit
    ecc_corrected_warn: Annotated[int, Meta(ge=1, le=2**62)] = 1000  # volatile corrected errors
    mount_slow_ms: Annotated[float, Meta(gt=0, le=3_600_000)] = 500.0
    stale_factor: Annotated[float, Meta(ge=1, le=1000)] = 3.0  # a source is stale after this many missed intervals

    def __post_init__(self) -> None:
        if self.gpu_temp_warn_c >= self.gpu_temp_crit_c:
            raise ValueError(f"gpu_temp_warn_c ({self.gpu_temp_warn_c:g}) must be below "
                             f"gpu_temp_crit_c ({self.gpu_temp_crit_c:g})")


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    severity: Severity
    object: str  # "node/gpu01", "gpu/gpu01/3", "ib/gpu01/mlx5_0:1", "mount/gpu01:/lustre"
    code: str  # short machine-friendly code: "xid79", "ecc_dbe", "ib_rate", ...
    message: str


def gpu_findings(gpu: Gpu, t: Thresholds) -> list[Finding]:
    obj = f"gpu/{gpu.node}/{gpu.index}"
    out: list[Finding] = []
    if gpu.lost:
        out.append(Finding(severity=Severity.CRITICAL, object=obj, code="gpu_lost", message="GPU not answering (fallen off the bus?)"))
    if gpu.last_xid is not None:
        meaning = XID_MEANING.get(gpu.last_xid, "see NVIDIA Xid catalog")
        out.append(Finding(severity=xid_severity(gpu.last_xid), object=obj, code=f"xid{gpu.last_xid}", message=f"Xid {gpu.last_xid}: {meaning}"))
    if gpu.ecc_uncorrected_volatile:
        out.append(Finding(severity=Severity.CRITICAL, object=obj, code="ecc_uncorrected", message=f"{gpu.ecc_uncorrected_volatile} uncorrectable ECC errors since driver load"))
    elif gpu.ecc_corrected_volatile is not None and gpu.ecc_corrected_volatile >= t.ecc_corrected_warn:
        out.append(Finding(severity=Severity.WARNING, object=obj, code="ecc_corrected", message=f"{gpu.ecc_corrected_volatile} corrected ECC errors"))
    if gpu.remap_failure:
        out.append(Finding(severity=Severity.CRITICAL, object=obj, code="remap_failure", message="row remapping failed (RMA candidate)"))
    elif gpu.remap_pending:
        out.append(Finding(severity=Severity.ERROR, object=obj, code="remap_pending", message="row remap pending: GPU reset needed"))
    if gpu.temp_c is not None and gpu.temp_c >= t.gpu_temp_crit_c:
        out.append(Finding(severity=Severity.ERROR, object=obj, code="temp", message=f"GPU at {gpu.temp_c:.0f} °C"))
    elif gpu.temp_c is not None and gpu.temp_c >= t.gpu_temp_warn_c:
        out.append(Finding(severity=Severity.WARNING, object=obj, code="temp", message=f"GPU at {gpu.temp_c:.0f} °C"))
    if gpu.hbm_temp_c is not None and gpu.hbm_temp_c >= t.hbm_temp_warn_c:
        out.append(Finding(severity=Severity.WARNING, object=obj, code="hbm_temp", message=f"HBM at {gpu.hbm_temp_c:.0f} °C"))
    if gpu.thermal_throttled:
        out.append(Finding(severity=Severity.WARNING, object=obj, code="thermal_throttle", message="thermal throttling: " + ", ".join(gpu.throttle_names())))
    if (gpu.pcie_width_current is not None and gpu.pcie_width_max and gpu.util_pct
            and gpu.pcie_width_current < gpu.pcie_width_max):
        out.append(Finding(severity=Severity.INFO, object=obj, code="pcie_width", message=f"PCIe x{gpu.pcie_width_current} of x{gpu.pcie_width_max} under load"))
    return out


def ib_findings(port: IbPort) -> list[Finding]:
    obj = f"ib/{port.node}/{port.device}:{port.port}"
    out: list[Finding] = []
    if port.state is not None and port.state != "ACTIVE":
        out.append(Finding(severity=Severity.ERROR, object=obj, code="ib_down", message=f"port {port.state} / {port.phys_state}"))
    if port.degraded_rate:
        out.append(Finding(severity=Severity.WARNING, object=obj, code="ib_rate", message=f"running at {port.rate_text or port.rate_gbps} (expected {port.max_rate_gbps:.0f} Gb/s)"))
    if port.deltas.get("link_downed", 0) > 0:
        out.append(Finding(severity=Severity.ERROR, object=obj, code="ib_flap", message=f"link went down {port.deltas['link_downed']}× since last read"))
    elif port.link_errors_rising:
        rising = ", ".join(f"{k}+{v}" for k, v in sorted(port.deltas.items()) if v > 0 and k != "port_xmit_wait")
        out.append(Finding(severity=Severity.WARNING, object=obj, code="ib_errors", message=f"link errors rising: {rising}"))
    return out


_MOUNT_SEVERITY = {
    MountState.HUNG: Severity.CRITICAL,
    MountState.MISSING: Severity.ERROR,
    MountState.READ_ONLY: Severity.ERROR,
    MountState.DEGRADED: Severity.WARNING,
    MountState.SLOW: Severity.WARNING,
}


def mount_findings(mount: Mount) -> list[Finding]:
    severity = _MOUNT_SEVERITY.get(mount.state)
    if severity is None:
        return []
    latency = f" ({mount.latency_ms:.0f} ms)" if mount.latency_ms is not None else ""
    detail = f": {mount.detail}" if mount.detail else ""
    return [Finding(severity=severity, object=f"mount/{mount.node}:{mount.target}", code=f"mount_{mount.state.value}",
                    message=f"{mount.fstype} {mount.target} {mount.state.value}{latency}{detail}")]


def node_state_findings(node: Node) -> list[Finding]:
    obj = f"node/{node.name}"
    out: list[Finding] = []
    if node.slurm is not None:
        s = node.slurm
        state = s.display_state
        if s.base_state in ("DOWN", "ERROR", "INVAL") or "NOT_RESPONDING" in s.flags or "FAIL" in s.flags:
            out.append(Finding(severity=Severity.ERROR, object=obj, code="slurm_down", message=f"Slurm {state}: {s.reason or 'no reason'}"))
        elif "DRAIN" in s.flags:
            who = f" by {s.reason_user}" if s.reason_user else ""
            out.append(Finding(severity=Severity.WARNING, object=obj, code="slurm_drain", message=f"Slurm {state}{who}: {s.reason or 'no reason'}"))
    if node.k8s is not None:
        ready = node.k8s.ready
        if ready != "True":
            msg = node.k8s.condition_messages.get("Ready", "")
            out.append(Finding(severity=Severity.ERROR, object=obj, code="k8s_notready", message=f"K8s Ready={ready} {msg}".strip()))
        elif node.k8s.unschedulable:
            out.append(Finding(severity=Severity.INFO, object=obj, code="k8s_cordoned", message="K8s cordoned"))
        for cond in ("MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"):
            if node.k8s.conditions.get(cond) == "True":
                out.append(Finding(severity=Severity.WARNING, object=obj, code=cond, message=f"K8s {cond}"))
    return out


def node_findings(snapshot: ClusterSnapshot, name: str, t: Thresholds) -> list[Finding]:
    """Everything wrong with one node, worst first."""
    out: list[Finding] = []
    node = snapshot.nodes.get(name)
    if node is not None:
        out.extend(node_state_findings(node))
    for gpu in snapshot.gpus.get(name, ()):
        out.extend(gpu_findings(gpu, t))
    for port in snapshot.ib.get(name, ()):
        out.extend(ib_findings(port))
    for mount in snapshot.mounts.get(name, ()):
        out.extend(mount_findings(mount))
    out.sort(key=lambda f: f.severity, reverse=True)
    return out


def node_severity(snapshot: ClusterSnapshot, name: str, t: Thresholds) -> Severity:
    return max((f.severity for f in node_findings(snapshot, name, t)), default=Severity.OK)


def all_findings(snapshot: ClusterSnapshot, t: Thresholds) -> list[Finding]:
    """Every finding in the cluster, worst first (for the alert list and reports)."""
    names = list(snapshot.nodes)
    names.extend(n for n in snapshot.gpus if n not in snapshot.nodes)
    out = [f for n in names for f in node_findings(snapshot, n, t)]
    out.sort(key=lambda f: f.severity, reverse=True)
    return out
