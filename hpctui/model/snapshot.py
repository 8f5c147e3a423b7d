"""ClusterSnapshot: everything known about one cluster at one moment, with ages.

Sources deliver :class:`SourceResult` objects holding only the parts they know;
the store merges them into one immutable :class:`ClusterSnapshot` that the UI draws.
"""

from __future__ import annotations

import enum

import msgspec

from hpctui.model.alerts import Alert, Silence
from hpctui.model.event import Event
from hpctui.model.fabric import Fabric
from hpctui.model.gpu import Gpu, GpuSummary
from hpctui.model.ib import IbPort
from hpctui.model.jobs import K8sQueueItem, Pod, SlurmJob
from hpctui.model.mount import Mount, QuotaUsage
from hpctui.model.node import K8sNodeInfo, Node, SlurmNodeInfo
from hpctui.model.nvswitch import NvSwitch
from hpctui.model.partition import SlurmPartition
from hpctui.model.probe import NodeResources, ProbeStatus, ServiceState
from hpctui.model.scheduler import Reservation, SchedulerStats
from hpctui.model.storage import CephHealth, S3Probe
from hpctui.model.volumes import Volumes


class Part(enum.StrEnum):
    """The separately-collected parts of a snapshot; each has its own age."""

    SLURM_NODES = "slurm_nodes"
    SLURM_JOBS = "slurm_jobs"
    K8S_NODES = "k8s_nodes"
    PODS = "pods"
    GPUS = "gpus"
    IB = "ib"
    MOUNTS = "mounts"
    EVENTS = "events"
    CONTROLLER = "controller"
    SERVICES = "services"
    RESOURCES = "resources"
    PROBES = "probes"
    K8S_QUEUES = "k8s_queues"
    PARTITIONS = "partitions"
    NVSWITCHES = "nvswitches"
    ALERTS = "alerts"
    SILENCES = "silences"
    RESERVATIONS = "reservations"
    FABRIC = "fabric"
    QUOTAS = "quotas"
    VOLUMES = "volumes"
    CEPH = "ceph"
    OBJECT_STORES = "object_stores"


class ControllerHealth(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Scheduler controller health (Slurm sdiag / ping)."""

    reachable: bool
    server_thread_count: int | None = None
    agent_queue_size: int | None = None
    jobs_pending: int | None = None
    jobs_running: int | None = None
    last_backfill_cycle_s: float | None = None
    mean_schedule_cycle_us: float | None = None
    detail: str | None = None
    stats: SchedulerStats | None = None  # the whole of sdiag / REST diag (the :scheduler view)


class SourceHealth(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What the status line shows per source: is it fresh, and if not, why."""

    name: str
    kind: str
    last_success: float | None = None
    last_attempt: float | None = None
    last_error: str | None = None
    consecutive_errors: int = 0
    last_duration_s: float | None = None
    warnings: tuple[str, ...] = ()  # non-fatal problems of the last success (a fallback used, records dropped)
    part_errors: dict[str, str] = msgspec.field(default_factory=dict)  # Part -> why this one part failed (403, ...)
    stale_after_s: float | None = None  # the source's own staleness limit (Prometheus: scrape interval × 3)

    def age(self, now: float) -> float | None:
        return None if self.last_success is None else max(0.0, now - self.last_success)

    @property
    def ok(self) -> bool:
        return self.last_error is None and self.last_success is not None


class SourceResult(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One collection from one source. ``None`` parts are "not provided by me",
    an empty tuple/dict means "provided, and there are none"."""

    source: str
    time: float
    slurm_nodes: dict[str, SlurmNodeInfo] | None = None
    slurm_jobs: tuple[SlurmJob, ...] | None = None
    k8s_nodes: dict[str, K8sNodeInfo] | None = None
    pods: tuple[Pod, ...] | None = None
    gpus: dict[str, tuple[Gpu, ...]] | None = None
    # nodes whose per-GPU readings were not fetched, summed up by the engine (the heatmap draws them)
    gpu_summaries: dict[str, GpuSummary] | None = None
    ib: dict[str, tuple[IbPort, ...]] | None = None
    mounts: dict[str, tuple[Mount, ...]] | None = None
    events: tuple[Event, ...] | None = None
    controller: ControllerHealth | None = None
    services: dict[str, tuple[ServiceState, ...]] | None = None
    resources: dict[str, NodeResources] | None = None
    probes: dict[str, ProbeStatus] | None = None  # per-node reachability of a node-probing source
    k8s_queues: tuple[K8sQueueItem, ...] | None = None  # Kueue / Volcano objects, when their CRDs exist
    partitions: tuple[SlurmPartition, ...] | None = None  # Slurm partitions (state, limits, default flag)
    nvswitches: dict[str, tuple[NvSwitch, ...]] | None = None  # NVSwitches that logged SXids, per node
    alerts: dict[str, tuple[Alert, ...]] | None = None  # Alertmanager's alerts per node ("" for cluster-wide ones)
    silences: tuple[Silence, ...] | None = None  # Alertmanager's silences (active and pending; expired dropped)
    reservations: tuple[Reservation, ...] | None = None  # Slurm reservations (scontrol show reservation / REST)
    fabric: Fabric | None = None  # the IB topology this source knows (Slurm topology/tree, ibnetdiscover)
    quotas: tuple[QuotaUsage, ...] | None = None  # file system quotas of the users with running jobs (lfs quota)
    volumes: Volumes | None = None  # Kubernetes PersistentVolumeClaims and StorageClasses
    ceph: dict[str, CephHealth] | None = None  # Ceph cluster health, keyed by the source's name
    object_stores: dict[str, S3Probe] | None = None  # S3 endpoint probes, keyed by the source's name
    warnings: tuple[str, ...] = ()  # what the source had to work around, shown next to its health
    # Part -> error for a part this source could not read this time while the others worked (an RBAC 403 on
    # pods only): that part is left out (its data keeps its age) and its pane shows the error.
    part_errors: dict[str, str] = msgspec.field(default_factory=dict)
    node_times: dict[str, float] | None = None  # node -> time of its newest sample (metrics sources)
    stale_after_s: float | None = None  # data older than this is stale (Prometheus: scrape interval × 3)

    def parts(self) -> list[Part]:
        return [p for p in Part if getattr(self, p.value) is not None]


class ClusterSnapshot(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Immutable, fully joined view of one cluster. Node keys are Slurm names
    (or K8s names mapped to them); GPU/IB/mount maps are keyed by node name."""

    cluster: str
    time: float
    nodes: dict[str, Node] = msgspec.field(default_factory=dict)
    gpus: dict[str, tuple[Gpu, ...]] = msgspec.field(default_factory=dict)
    gpu_summaries: dict[str, GpuSummary] = msgspec.field(default_factory=dict)  # nodes without per-GPU readings
    ib: dict[str, tuple[IbPort, ...]] = msgspec.field(default_factory=dict)
    mounts: dict[str, tuple[Mount, ...]] = msgspec.field(default_factory=dict)
    jobs: tuple[SlurmJob, ...] = ()
    pods: tuple[Pod, ...] = ()
    events: tuple[Event, ...] = ()
    controller: ControllerHealth | None = None
    services: dict[str, tuple[ServiceState, ...]] = msgspec.field(default_factory=dict)
    resources: dict[str, NodeResources] = msgspec.field(default_factory=dict)
    probes: dict[str, ProbeStatus] = msgspec.field(default_factory=dict)
    k8s_queues: tuple[K8sQueueItem, ...] = ()
    partitions: tuple[SlurmPartition, ...] = ()
    nvswitches: dict[str, tuple[NvSwitch, ...]] = msgspec.field(default_factory=dict)
    alerts: dict[str, tuple[Alert, ...]] = msgspec.field(default_factory=dict)  # node ("" cluster-wide) -> alerts
    silences: tuple[Silence, ...] = ()
    reservations: tuple[Reservation, ...] = ()
    fabric: Fabric | None = None  # leaf switches and cabling, merged over the sources that know it
    quotas: tuple[QuotaUsage, ...] = ()  # usage and limits of the users with running jobs, per file system
    volumes: Volumes = Volumes()  # PVCs and StorageClasses (the CSI drivers behind pods' volumes)
    ceph: dict[str, CephHealth] = msgspec.field(default_factory=dict)  # source name -> its cluster's health
    object_stores: dict[str, S3Probe] = msgspec.field(default_factory=dict)  # source name -> its last probe
    collected_at: dict[str, float] = msgspec.field(default_factory=dict)  # Part -> time
    sources: dict[str, SourceHealth] = msgspec.field(default_factory=dict)
    part_sources: dict[str, tuple[str, ...]] = msgspec.field(default_factory=dict)  # Part -> source names
    # Provenance when several sources deliver one part: Part -> node -> the source whose value is shown
    # (by the configured precedence). Parts with one source are not listed: part_sources says it.
    part_origins: dict[str, dict[str, str]] = msgspec.field(default_factory=dict)
    source_part_times: dict[str, dict[str, float]] = msgspec.field(default_factory=dict)  # source -> Part -> time
    node_times: dict[str, dict[str, float]] = msgspec.field(default_factory=dict)  # source -> node -> sample time

    def origin(self, part: Part, node: str) -> str | None:
        """The source whose ``part`` value for ``node`` is shown, or None when no source has one."""
        origins = self.part_origins.get(part.value)
        if origins is not None:
            return origins.get(node)
        names = self.part_sources.get(part.value, ())
        view = getattr(self, part.value, None)
        if len(names) != 1 or (isinstance(view, dict) and node not in view):
            return None
        return names[0]

    def value_age(self, part: Part, node: str, now: float) -> tuple[str, float | None] | None:
        """(source, age in s) of the shown ``part`` value of ``node``: the node's own sample time when
        the source reports one, else when the source last delivered the part. None: no source has it."""
        source = self.origin(part, node)
        if source is None:
            return None
        t = self.node_times.get(source, {}).get(node)
        if t is None:
            t = self.source_part_times.get(source, {}).get(part.value)
        return source, (None if t is None else max(0.0, now - t))

    def part_errors(self, part: Part) -> list[str]:
        """Last errors of the sources that deliver ``part`` (empty when all are healthy)."""
        out = []
        for name in self.part_sources.get(part.value, ()):
            health = self.sources.get(name)
            if health is not None and health.last_error:
                out.append(f"{name}: {health.last_error}")
            elif health is not None and part.value in health.part_errors:
                out.append(f"{name}: {health.part_errors[part.value]}")
        return out

    def part_age(self, part: Part, now: float | None = None) -> float | None:
        t = self.collected_at.get(part.value)
        return None if t is None else max(0.0, (self.time if now is None else now) - t)
