"""The one table of source kinds: ``kind`` → settings struct → builder.

Config validation, the runtime and the CLI all read this table, so a new source
(SSH, Kubernetes, Prometheus, NVML) adds one :class:`SourceKind` entry here and
its own package, and touches nothing else. Builders import their source lazily:
validating a config must not import asyncssh, kubernetes or pynvml.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from hpctui.sources.demo.settings import DemoSettings, build_demo_source
from hpctui.sources.k8s.settings import K8sSettings, build_k8s_source
from hpctui.sources.nvml.settings import NvmlSettings, build_nvml_source
from hpctui.sources.prometheus.settings import PrometheusSettings, build_prometheus_source
from hpctui.sources.slurm.settings import SlurmSettings, build_slurm_source
from hpctui.sources.ssh.settings import SshSettings, build_ssh_source

if TYPE_CHECKING:
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


@dataclass(frozen=True)
class SourceKind:
    kind: str
    settings_type: type[msgspec.Struct]
    build: Callable[[Any, SourceContext], Source]
    summary: str


def _entry(kind: str, settings_type: type[msgspec.Struct], build: Callable[[Any, SourceContext], Source],
           summary: str) -> tuple[str, SourceKind]:
    return kind, SourceKind(kind, settings_type, build, summary)


SOURCE_KINDS: dict[str, SourceKind] = dict([
    _entry("demo", DemoSettings, lambda s, _ctx: build_demo_source(s), "the built-in simulated cluster"),
    _entry("nvml", NvmlSettings, lambda s, _ctx: build_nvml_source(s), "this host's GPUs through NVML (pynvml)"),
    _entry("slurm", SlurmSettings, lambda s, _ctx: build_slurm_source(s), "Slurm CLI, slurmrestd or pyslurm"),
    _entry("k8s", K8sSettings, build_k8s_source, "Kubernetes API: nodes, pods, Warning events; cordon/drain/MIG"),
    _entry("ssh", SshSettings, build_ssh_source, "node probes (GPUs, IB, mounts, services) streamed over SSH"),
    _entry("prometheus", PrometheusSettings, build_prometheus_source,
           "dcgm-exporter and node_exporter metrics from a Prometheus server"),
])

# Kinds that are known to be coming: a config naming one gets "not implemented in this
# version" instead of "unknown kind". Each source that lands moves its name to SOURCE_KINDS.
PLANNED_SOURCE_KINDS: tuple[str, ...] = tuple(
    k for k in ("k8s", "ssh", "prometheus", "nvml") if k not in SOURCE_KINDS
)


def lookup(kind: str) -> SourceKind | None:
    return SOURCE_KINDS.get(kind)


def build_source(settings: msgspec.Struct, context: SourceContext | None = None) -> Source:
    """Build the source for one validated settings struct."""
    ctx = context or SourceContext()
    for entry in SOURCE_KINDS.values():
        if type(settings) is entry.settings_type:
            return entry.build(settings, ctx)
    raise TypeError(f"no source kind for {type(settings).__name__}")
