"""Node model: one machine as Slurm and Kubernetes see it."""

from __future__ import annotations

import msgspec

# Slurm base states (FACTS §3). DRAINING/DRAINED are *derived*, never reported as base.
SLURM_BASE_STATES = frozenset(
    {
        "ALLOCATED", "MIXED", "IDLE", "DOWN", "COMPLETING", "FUTURE", "INVAL",
        "UNKNOWN", "ERROR", "PLANNED", "RESERVED",
    }
)


class SlurmNodeInfo(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Slurm's view of a node. ``flags`` are upper-case names such as DRAIN,
    NOT_RESPONDING, COMPLETING, FAIL, MAINTENANCE, REBOOT_REQUESTED, POWERED_DOWN."""

    base_state: str
    flags: frozenset[str] = frozenset()
    reason: str | None = None
    reason_user: str | None = None
    reason_time: float | None = None
    partitions: tuple[str, ...] = ()
    features: tuple[str, ...] = ()
    cpus_total: int | None = None
    cpus_alloc: int | None = None
    memory_total_mb: int | None = None
    memory_alloc_mb: int | None = None
    gpus_total: int | None = None
    gpus_alloc: int | None = None
    gpu_type: str | None = None
    gres: str | None = None
    gres_used: str | None = None

    @property
    def display_state(self) -> str:
        """State as an admin reads it: DRAIN + busy base = DRAINING, + idle = DRAINED."""
        return slurm_display_state(self.base_state, self.flags)


def slurm_display_state(base_state: str, flags: frozenset[str]) -> str:
    base = base_state.upper()
    if "DRAIN" in flags:
        busy = base in ("ALLOCATED", "MIXED", "COMPLETING") or "COMPLETING" in flags
        main = "DRAINING" if busy else "DRAINED"
    elif "FAIL" in flags:
        main = "FAILING" if base in ("ALLOCATED", "MIXED") else "FAIL"
    else:
        main = base
    extra = sorted(f for f in flags if f not in ("DRAIN", "FAIL"))
    return "+".join([main, *extra])


class Taint(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    key: str
    effect: str
    value: str | None = None
    time_added: float | None = None  # spec.taints[].timeAdded (Kubernetes sets it for NoExecute taints)


class K8sNodeInfo(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Kubernetes' view of a node."""

    name: str
    conditions: dict[str, str] = msgspec.field(default_factory=dict)  # Ready -> "True"
    condition_messages: dict[str, str] = msgspec.field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    labels: dict[str, str] = msgspec.field(default_factory=dict)
    unschedulable: bool = False
    gpu_capacity: int | None = None
    gpu_allocatable: int | None = None
    mig_capacity: dict[str, int] = msgspec.field(default_factory=dict)  # "1g.10gb" -> n (nvidia.com/mig-*)
    mig_allocatable: dict[str, int] = msgspec.field(default_factory=dict)

    @property
    def mig_config(self) -> str | None:
        """GPU Operator MIG manager: requested layout and its state (pending/rebooting/success/failed)."""
        return self.labels.get("nvidia.com/mig.config")

    @property
    def mig_state(self) -> str | None:
        return self.labels.get("nvidia.com/mig.config.state")

    @property
    def ready(self) -> str:
        """"True", "False" or "Unknown" (no heartbeat within the grace period)."""
        return self.conditions.get("Ready", "Unknown")


class Node(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A machine, joined across sources by its (Slurm) name."""

    name: str
    slurm: SlurmNodeInfo | None = None
    k8s: K8sNodeInfo | None = None

    @property
    def partitions(self) -> tuple[str, ...]:
        return self.slurm.partitions if self.slurm else ()
