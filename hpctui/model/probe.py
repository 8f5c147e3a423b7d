"""What node probes (SSH, NVML, Prometheus) add beyond GPUs, IB and mounts:
NVLink links, the processes on each GPU, system services and node resources.

``None`` is "not available", never zero.
"""

from __future__ import annotations

import enum

import msgspec


class NvLink(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One NVLink of one GPU (``nvidia-smi nvlink -s`` / ``-e``, or DCGM NVLink fields)."""

    link: int
    up: bool | None = None  # None: state unknown (e.g. MIG on: "Nvlink queries are not supported")
    speed_gbps: float | None = None  # GB/s per link as nvidia-smi prints it (26.562)
    crc_errors: int | None = None  # flit + data CRC
    replay_errors: int | None = None
    recovery_errors: int | None = None
    deltas: dict[str, int] = msgspec.field(default_factory=dict)  # counter -> rise since previous read


class GpuProcess(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A compute process on a GPU, with who owns it (nvitop's per-GPU process list)."""

    pid: int | None = None  # None: attributed by labels (dcgm-exporter pod/namespace), no process id known
    gpu_uuid: str | None = None
    gpu_index: int | None = None
    used_memory_mib: float | None = None
    user: str | None = None
    command: str | None = None
    slurm_job_id: str | None = None  # from /proc/PID/cgroup ".../job_1234/..."
    pod: str | None = None  # "namespace/name" or a pod uid, from a container cgroup / dcgm labels
    container: str | None = None  # container name, from dcgm-exporter's `container` label


class ServiceStatus(enum.StrEnum):
    ACTIVE = "active"
    INACTIVE = "inactive"
    FAILED = "failed"
    ACTIVATING = "activating"
    NOT_FOUND = "not-found"
    UNKNOWN = "unknown"


class ServiceState(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One system service on a node (nvidia-fabricmanager, slurmd, kubelet, ...)."""

    node: str
    name: str
    status: ServiceStatus = ServiceStatus.UNKNOWN
    detail: str | None = None  # last journal lines of a failed unit, sanitised


class NodeResources(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Host resources of one node, from /proc and /sys (or node_exporter)."""

    node: str
    load1: float | None = None
    load5: float | None = None
    load15: float | None = None
    cpu_busy_pct: float | None = None
    cpu_count: int | None = None
    mem_total_mib: float | None = None
    mem_available_mib: float | None = None
    swap_total_mib: float | None = None
    swap_free_mib: float | None = None
    disk_busy_pct: dict[str, float] = msgspec.field(default_factory=dict)  # device -> % busy
    nic_rx_bps: dict[str, float] = msgspec.field(default_factory=dict)  # interface -> bytes/s
    nic_tx_bps: dict[str, float] = msgspec.field(default_factory=dict)
    nic_errors: dict[str, int] = msgspec.field(default_factory=dict)  # interface -> rx+tx errors since previous read

    @property
    def mem_used_pct(self) -> float | None:
        if self.mem_total_mib is None or self.mem_available_mib is None or not self.mem_total_mib:
            return None
        return 100.0 * (self.mem_total_mib - self.mem_available_mib) / self.mem_total_mib


class ProbeStatus(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """How reaching one node went: reachable or not, why, and when it will be tried again."""

    node: str
    reachable: bool
    error: str | None = None
    last_ok: float | None = None
    next_retry: float | None = None
    late_probes: tuple[str, ...] = ()  # probes that hit their timeout in the last record
