"""The one table of source kinds: ``kind`` → settings struct → builder → abilities.

Config validation, the runtime and the CLI all read this table, so a new source
(SSH, Kubernetes, Prometheus, NVML) adds one :class:`SourceKind` entry here and
its own package, and touches nothing else. Builders import their source lazily:
validating a config must not import asyncssh, kubernetes or pynvml.

Each entry names the capability Protocols (:mod:`hpctui.sources.capabilities`, and
:class:`~hpctui.sources.base.ActionBackend`) its sources provide; a test builds every
kind from its default settings and checks ``isinstance`` against exactly that list.
Callers still ask the built source (``isinstance``), never the kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from hpctui.sources.alertmanager.settings import AlertmanagerSettings, build_alertmanager_source
from hpctui.sources.base import ActionBackend
from hpctui.sources.capabilities import (
    AccountingProvider,
    DetailFocus,
    HistoryProvider,
    JobAccounting,
    JobOutlookProvider,
    JobOutputResolver,
    JobShell,
    LogQuerier,
    MigReader,
    NodeLogReader,
    NodeShell,
    PodInspector,
    PodLogFollower,
    PodShell,
)
from hpctui.sources.ceph.settings import CephSettings, build_ceph_source
from hpctui.sources.demo.settings import DemoSettings, build_demo_source
from hpctui.sources.k8s.settings import K8sSettings, build_k8s_source
from hpctui.sources.loki.settings import LokiSettings, build_loki_source
from hpctui.sources.nvml.settings import NvmlSettings, build_nvml_source
from hpctui.sources.prometheus.settings import PrometheusSettings, build_prometheus_source
from hpctui.sources.s3.settings import S3Settings, build_s3_source
from hpctui.sources.slurm.settings import SlurmSettings, build_slurm_source
from hpctui.sources.ssh.settings import SshSettings, build_ssh_source

if TYPE_CHECKING:
    from hpctui.findings.health import Thresholds
    from hpctui.findings.idle import IdleSettings
    from hpctui.model import ClusterSnapshot
    from hpctui.model.names import NodeNameMap
    from hpctui.sources.base import Source


@dataclass
class SourceContext:
    """What a source may know of the runtime it is built into.

    ``snapshot`` is late-bound: the store exists only after the sources are built, and a
    source such as SSH needs the node names the *other* sources know (read it at collect
    time, never at build time).
    """

    cluster: str = "default"
    name_map: NodeNameMap | None = None
    snapshot: Callable[[], ClusterSnapshot | None] = field(default=lambda: None)
    thresholds: Thresholds | None = None  # the health rules' (a source that filters by them: Prometheus aggregate)
    idle: IdleSettings | None = None  # [idle]: the idle rules' (the same)


# Every ability a source may declare in ``provides``: the capability Protocols and ActionBackend.
CAPABILITIES: tuple[type, ...] = (ActionBackend, HistoryProvider, PodInspector, AccountingProvider, MigReader,
                                  JobAccounting, NodeShell, PodShell, JobShell, JobOutputResolver, NodeLogReader,
                                  PodLogFollower, LogQuerier, JobOutlookProvider, DetailFocus)


@dataclass(frozen=True)
class SourceKind:
    """One source kind: its config ``kind`` string, settings struct, builder and abilities.

    ``build`` never connects (it only constructs; the first ``collect`` does I/O).
    ``provides`` lists the :data:`CAPABILITIES` every source of this kind satisfies
    with ``isinstance``, and no others.
    """

    kind: str
    settings_type: type[msgspec.Struct]
    build: Callable[[Any, SourceContext], Source]
    summary: str
    provides: tuple[type, ...] = ()


def _entry(kind: str, settings_type: type[msgspec.Struct], build: Callable[[Any, SourceContext], Source],
           summary: str, provides: tuple[type, ...] = ()) -> tuple[str, SourceKind]:
    return kind, SourceKind(kind, settings_type, build, summary, provides)


SOURCE_KINDS: dict[str, SourceKind] = dict([
    _entry("demo", DemoSettings, lambda s, _ctx: build_demo_source(s), "the built-in simulated cluster",
           (ActionBackend, AccountingProvider, JobAccounting, JobOutlookProvider)),
    _entry("nvml", NvmlSettings, lambda s, _ctx: build_nvml_source(s), "this host's GPUs through NVML (pynvml)"),
    _entry("slurm", SlurmSettings, lambda s, _ctx: build_slurm_source(s), "Slurm CLI, slurmrestd or pyslurm",
           (ActionBackend, AccountingProvider, JobAccounting, JobShell, JobOutputResolver,
            JobOutlookProvider)),
    _entry("k8s", K8sSettings, build_k8s_source, "Kubernetes API: nodes, pods, Warning events; cordon/drain/MIG",
           (ActionBackend, PodInspector, PodShell, PodLogFollower)),
    _entry("ssh", SshSettings, build_ssh_source, "node probes (GPUs, IB, mounts, services) streamed over SSH",
           (NodeShell, NodeLogReader)),
    _entry("prometheus", PrometheusSettings, build_prometheus_source,
           "dcgm-exporter and node_exporter metrics from a Prometheus server", (HistoryProvider, DetailFocus)),
    _entry("alertmanager", AlertmanagerSettings, build_alertmanager_source,
           "the site's Alertmanager: firing alerts as findings, silences listed, set and expired as actions",
           (ActionBackend,)),
    _entry("loki", LokiSettings, build_loki_source, "the site's Loki: LogQL queries for node logs (no polling)",
           (LogQuerier,)),
    _entry("ceph", CephSettings, build_ceph_source,
           "a Ceph cluster's health through the ceph CLI (status, health detail, osd tree, df)"),
    _entry("s3", S3Settings, build_s3_source,
           "an S3 endpoint (MinIO, Ceph RGW, any S3 API): a canary list/put/get/delete with its latency"),
])


def lookup(kind: str) -> SourceKind | None:
    """The registry entry of a config ``kind`` string; None for an unknown kind."""
    return SOURCE_KINDS.get(kind)


def build_source(settings: msgspec.Struct, context: SourceContext | None = None) -> Source:
    """Build the source for one validated settings struct."""
    ctx = context or SourceContext()
    for entry in SOURCE_KINDS.values():
        if type(settings) is entry.settings_type:
            return entry.build(settings, ctx)
    raise TypeError(f"no source kind for {type(settings).__name__}")
