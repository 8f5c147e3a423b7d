"""GPU model: what NVML / nvidia-smi / dcgm-exporter tell about one GPU."""

from __future__ import annotations

import enum

import msgspec

from hpctui.model.common import Severity
from hpctui.model.probe import GpuProcess, NvLink


class ThrottleReason(enum.IntFlag):
    """NVML clocks-event (throttle) reason bits, FACTS §1."""

    GPU_IDLE = 0x1
    APPLICATIONS_CLOCKS_SETTING = 0x2
    SW_POWER_CAP = 0x4
    HW_SLOWDOWN = 0x8
    SYNC_BOOST = 0x10
    SW_THERMAL_SLOWDOWN = 0x20
    HW_THERMAL_SLOWDOWN = 0x40
    HW_POWER_BRAKE_SLOWDOWN = 0x80
    DISPLAY_CLOCK_SETTING = 0x100


THERMAL_THROTTLE = ThrottleReason.SW_THERMAL_SLOWDOWN | ThrottleReason.HW_THERMAL_SLOWDOWN
_THERMAL_BITS = int(THERMAL_THROTTLE)
HARMFUL_THROTTLE = THERMAL_THROTTLE | ThrottleReason.HW_SLOWDOWN | ThrottleReason.HW_POWER_BRAKE_SLOWDOWN


class XidEvent(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One ``NVRM: Xid`` kernel log line, parsed."""

    time: float
    xid: int
    pci_bus_id: str
    message: str  # without the ``pid=…, name=…,`` prefix the driver puts before it
    gpu_instance: int | None = None
    pid: int | None = None  # the process the driver names (None: ``'<unknown>'``)
    process: str | None = None

    @property
    def severity(self) -> Severity:
        return xid_severity(self.xid)


# FACTS §1 Xid catalogue: which codes need a reset/reboot vs. are app-level.
_XID_CRITICAL = frozenset({48, 64, 74, 79, 95, 109, 119, 120, 140, 143, 158})
_XID_APP = frozenset({13, 31, 43, 45, 63, 94})


def xid_severity(xid: int) -> Severity:
    if xid in _XID_CRITICAL:
        return Severity.CRITICAL
    if xid in _XID_APP:
        return Severity.WARNING
    return Severity.ERROR


XID_MEANING: dict[int, str] = {
    13: "graphics engine exception (restart app)",
    31: "GPU memory page fault (restart app)",
    43: "GPU stopped processing (ignore)",
    45: "preemptive cleanup",
    48: "double-bit ECC error (reset GPU)",
    63: "row remap recorded (reset to apply)",
    64: "row remap failure (RMA candidate)",
    74: "NVLink error",
    79: "GPU has fallen off the bus (reboot node)",
    92: "excessive single-bit ECC interrupts",
    94: "contained ECC error (restart app)",
    95: "uncontained ECC error (reset GPU)",
    109: "context switch timeout (reset GPU)",
    119: "GSP RPC timeout (reset GPU)",
    120: "GSP error (reset GPU)",
    140: "unrecoverable ECC error escape",
    143: "GPU init error",
    154: "GPU recovery action changed",
    158: "GPU fatal timeout",
}


# FACTS §1 Xid catalogue: the immediate action NVIDIA recommends.
XID_ACTION: dict[int, str] = {
    13: "restart the application", 31: "restart the application", 43: "none (GPU stays healthy)",
    45: "follow the other Xids", 48: "reset the GPU (drain, stop its processes, nvidia-smi -r)",
    63: "none; reset the GPU to apply the pending remap", 64: "reset the GPU; RMA candidate",
    74: "check NVLink (peer GPU may be the cause); reset the GPU", 79: "reboot the node",
    92: "none (watch the trend)", 94: "restart the application; reset the GPU when convenient",
    95: "reset the GPU", 109: "reset the GPU", 119: "reset the GPU", 120: "reset the GPU",
    140: "reset the GPU", 143: "reset the GPU", 154: "follow the recovery action it names",
    158: "reset the GPU",
}


class MigInstance(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One MIG GPU instance (with its compute instance) on a MIG-enabled GPU."""

    gi_id: int
    profile: str  # e.g. "3g.40gb"
    ci_id: int | None = None
    uuid: str | None = None
    memory_used_mib: float | None = None
    memory_total_mib: float | None = None
    engine_active: float | None = None  # DCGM_FI_PROF_GR_ENGINE_ACTIVE, 0..1


class GpuSummary(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One node's GPUs summed up by a metrics engine, for a node whose per-GPU readings were not
    fetched (Prometheus ``detail = "aggregate"``: a healthy node nobody is looking at). The values
    are the ones the heatmap draws, computed engine-side over the same per-GPU readings it would
    otherwise compute them from. A node with per-GPU readings in ``gpus`` is drawn from those.
    ``None``: not available (no GPU with a reading), never zero."""

    node: str
    gpus: int | None = None  # GPUs reporting
    util_pct: float | None = None  # mean over the GPUs with a reading (MIG GPUs have none)
    temp_c: float | None = None  # the hottest GPU
    memory_pct: float | None = None  # mean over the GPUs of used / total
    power_pct: float | None = None  # 100 × total draw / total limit, over GPUs with both


class Gpu(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One physical GPU. ``None`` means not available, never zero."""

    node: str
    index: int
    uuid: str | None = None
    model: str | None = None
    pci_bus_id: str | None = None
    util_pct: float | None = None
    mem_util_pct: float | None = None
    memory_used_mib: float | None = None
    memory_total_mib: float | None = None
    temp_c: float | None = None
    hbm_temp_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    sm_clock_mhz: float | None = None
    ecc_corrected_volatile: int | None = None
    ecc_uncorrected_volatile: int | None = None
    ecc_corrected_aggregate: int | None = None
    ecc_uncorrected_aggregate: int | None = None
    remapped_correctable: int | None = None
    remapped_uncorrectable: int | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    xid_events: tuple[XidEvent, ...] = ()
    last_xid: int | None = None
    mig_mode_current: bool | None = None
    mig_mode_pending: bool | None = None
    mig_instances: tuple[MigInstance, ...] = ()
    throttle_reasons: int | None = None  # ThrottleReason bitmask
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    persistence_mode: bool | None = None
    nvlinks: tuple[NvLink, ...] = ()
    processes: tuple[GpuProcess, ...] = ()
    lost: bool = False  # fell off the bus / not answering NVML
    reset_required: bool = False  # nvidia-smi prints "[GPU requires reset]" in its cells
    # NVLink fabric registration with Fabric Manager (FACTS §8): "Completed" / "In Progress" / "Not Started" /
    # "Not Supported"; the status is "Success" or an NVML error string once Completed. None: not read.
    fabric_state: str | None = None
    fabric_status: str | None = None
    # What `nvidia-smi nvlink -s` said instead of links: "none" (the device has no NVLink), "inactive"
    # ("all links are inActive"). None: links were listed, or not read.
    nvlink_state: str | None = None
    # dcgm-exporter extras (None/empty when the source cannot tell)
    pcie_replay_count: int | None = None  # DCGM_FI_DEV_PCIE_REPLAY_COUNTER
    nvlink_bandwidth_rate: float | None = None  # rate() of DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, per second
    nvlink_errors: dict[str, int] = msgspec.field(default_factory=dict)  # crc_flit/crc_data/replay/recovery totals
    retired_pages: dict[str, int] = msgspec.field(default_factory=dict)  # sbe/dbe/pending (pre-Ampere)
    profiling: dict[str, float] = msgspec.field(default_factory=dict)  # DCGM_FI_PROF_* short name -> 0..1

    @property
    def fabric_failed(self) -> bool:
        """Fabric registration stuck or failed: CUDA jobs hang although the GPU looks healthy."""
        if self.fabric_state is None or self.fabric_state == "Not Supported":
            return False
        if self.fabric_state != "Completed":
            return True  # Not Started (FM not running) or In Progress (registration stuck)
        return self.fabric_status is not None and self.fabric_status != "Success"

    @property
    def memory_pct(self) -> float | None:
        if self.memory_used_mib is None or not self.memory_total_mib:
            return None
        return 100.0 * self.memory_used_mib / self.memory_total_mib

    @property
    def thermal_throttled(self) -> bool:
        return bool(self.throttle_reasons and self.throttle_reasons & _THERMAL_BITS)  # int &: no Flag arithmetic

    def throttle_names(self) -> list[str]:
        if not self.throttle_reasons:
            return []
        return [r.name or "" for r in ThrottleReason if self.throttle_reasons & r and r.name]
