"""The typed, UI-free data model. Nothing here imports Textual."""

from hpctui.model.common import NA, Severity, fmt_na, worst
from hpctui.model.event import Event
from hpctui.model.gpu import Gpu, GpuSummary, MigInstance, ThrottleReason, XidEvent, xid_severity
from hpctui.model.ib import IbPort
from hpctui.model.jobs import K8sQueueItem, Pod, QueueGpus, SlurmJob
from hpctui.model.mount import Mount, MountState
from hpctui.model.node import K8sNodeInfo, Node, SlurmNodeInfo, Taint, slurm_display_state
from hpctui.model.partition import SlurmPartition
from hpctui.model.probe import (
    GpuProcess,
    NodeResources,
    NvLink,
    ProbeStatus,
    ServiceState,
    ServiceStatus,
)
from hpctui.model.snapshot import (
    ClusterSnapshot,
    ControllerHealth,
    Part,
    SourceHealth,
    SourceResult,
)

__all__ = [
    "NA",
    "ClusterSnapshot",
    "ControllerHealth",
    "Event",
    "Gpu",
    "GpuProcess",
    "GpuSummary",
    "IbPort",
    "K8sNodeInfo",
    "K8sQueueItem",
    "MigInstance",
    "Mount",
    "MountState",
    "Node",
    "NodeResources",
    "NvLink",
    "Part",
    "Pod",
    "ProbeStatus",
    "QueueGpus",
    "ServiceState",
    "ServiceStatus",
    "Severity",
    "SlurmJob",
    "SlurmNodeInfo",
    "SlurmPartition",
    "SourceHealth",
    "SourceResult",
    "Taint",
    "ThrottleReason",
    "XidEvent",
    "fmt_na",
    "slurm_display_state",
    "worst",
    "xid_severity",
]
