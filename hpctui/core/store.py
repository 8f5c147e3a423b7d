"""Merges source results into one immutable snapshot; keeps ages, errors, history.

UI-free. One writer at a time: the poller applies small results on the event loop and
big ones (over 1,024 nodes) in a worker thread, never two at once. Readers on the loop may
build a view while a big result lands; such a view is served but not cached (``snapshot``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

import msgspec

from hpctui.base.sanitize import clean_text, is_clean, redact_url
from hpctui.core.series_history import SeriesHistory
from hpctui.model import (
    ClusterSnapshot,
    ControllerHealth,
    Event,
    Gpu,
    GpuSummary,
    IbPort,
    K8sNodeInfo,
    K8sQueueItem,
    Mount,
    Node,
    NodeResources,
    Part,
    Pod,
    ProbeStatus,
    ServiceState,
    SlurmJob,
    SlurmNodeInfo,
    SourceHealth,
    SourceResult,
)
from hpctui.model.alerts import Alert, Silence
from hpctui.model.fabric import Fabric, merge_fabrics
from hpctui.model.mount import QuotaUsage
from hpctui.model.names import NodeNameMap
from hpctui.model.nvswitch import NvSwitch
from hpctui.model.partition import SlurmPartition
from hpctui.model.scheduler import CTLD_TRENDS, CTLD_USER_RPCS, Reservation
from hpctui.model.storage import CephHealth, S3Probe
from hpctui.model.volumes import Volumes, merge_volumes

EVENT_LIMIT = 1000
V = TypeVar("V")


class History:
    """Bounded per-key series of (time, value) for sparklines and charts.

    Stored as fixed-size ``array`` rings (12 bytes a sample), so per-node series for
    16k nodes cost tens of MB, not the gigabytes that deques of tuples would.
    """

    def __init__(self, length: int) -> None:
        self.length = length
        self._times: dict[str, array[float]] = {}
        self._values: dict[str, array[float]] = {}
        self._count: dict[str, int] = {}

    def add(self, key: str, t: float, value: float | None) -> None:
        if value is None:
            return
        times = self._times.get(key)
        if times is None:
            times = self._times[key] = array("d", bytes(8 * self.length))
            self._values[key] = array("f", bytes(4 * self.length))
            self._count[key] = 0
        n = self._count[key]
        times[n % self.length] = t
        self._values[key][n % self.length] = value
        self._count[key] = n + 1

    def get(self, key: str) -> list[tuple[float, float]]:
        n = self._count.get(key, 0)
        if n == 0:
            return []
        times, values, size = self._times[key], self._values[key], self.length
        start = max(0, n - size)
        return [(times[i % size], values[i % size]) for i in range(start, n)]

    def keys(self) -> Iterable[str]:
        return self._times.keys()


CTLD_SAMPLES = 1440  # the controller's trends keep this many samples (2 h at a 5 s refresh)
TREND_USERS = 8  # the users with the most RPCs are recorded, each poll (bounded keys)


def record_controller(history: History, t: float, ctl: ControllerHealth) -> None:
    """Add one sample of the controller's numbers to ``history`` (what is unknown is skipped)."""
    stats = ctl.stats
    history.add(CTLD_TRENDS["agent_queue"], t, ctl.agent_queue_size)
    history.add(CTLD_TRENDS["threads"], t, ctl.server_thread_count)
    history.add(CTLD_TRENDS["bf_cycle_s"], t, ctl.last_backfill_cycle_s)
    history.add(CTLD_TRENDS["pending"], t, ctl.jobs_pending)
    if stats is None:
        return
    if stats.schedule_cycle_last_us is not None:
        history.add(CTLD_TRENDS["sched_cycle_ms"], t, stats.schedule_cycle_last_us / 1000)
    if stats.rpc_by_type:
        history.add(CTLD_TRENDS["rpc_total"], t, sum(r.count for r in stats.rpc_by_type))
    for row in stats.rpc_by_user[:TREND_USERS]:
        history.add(CTLD_USER_RPCS + row.name, t, row.count)


def _mean(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


class Store:
    def __init__(
        self,
        cluster: str,
        name_map: NodeNameMap | None = None,
        history_length: int = 90,
        clock: Callable[[], float] = time.time,
        precedence: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self.cluster = cluster
        # Part -> source names, highest first: who wins when two sources deliver one part for a node.
        # Sources not listed rank below the listed ones, in the order they first delivered.
        self.precedence = {k: tuple(v) for k, v in (precedence or {}).items()}
        self._source_part_times: dict[str, dict[str, float]] = {}
        self._node_times: dict[str, dict[str, float]] = {}
        self.name_map = name_map or NodeNameMap()
        self.clock = clock
        self.history = History(history_length)
        self.ctld_history = History(CTLD_SAMPLES)  # slurmctld's trends over the session (the :scheduler view)
        self.series = SeriesHistory()  # per-GPU / per-IB-port rings for the chart screen
        # Each part is kept per source: a source's result replaces its own previous view
        # (so nodes and jobs that vanished disappear) and views of several sources are unioned.
        self._slurm_nodes: dict[str, dict[str, SlurmNodeInfo]] = {}
        self._k8s_nodes: dict[str, dict[str, K8sNodeInfo]] = {}
        self._gpus: dict[str, dict[str, tuple[Gpu, ...]]] = {}
        self._gpu_summaries: dict[str, dict[str, GpuSummary]] = {}
        self._ib: dict[str, dict[str, tuple[IbPort, ...]]] = {}
        self._mounts: dict[str, dict[str, tuple[Mount, ...]]] = {}
        self._services: dict[str, dict[str, tuple[ServiceState, ...]]] = {}
        self._nvswitches: dict[str, dict[str, tuple[NvSwitch, ...]]] = {}
        self._resources: dict[str, dict[str, NodeResources]] = {}
        self._probes: dict[str, dict[str, ProbeStatus]] = {}
        self._jobs: dict[str, tuple[SlurmJob, ...]] = {}
        self._pods: dict[str, tuple[Pod, ...]] = {}
        self._k8s_queues: dict[str, tuple[K8sQueueItem, ...]] = {}
        self._partitions: dict[str, tuple[SlurmPartition, ...]] = {}
        self._alerts: dict[str, dict[str, tuple[Alert, ...]]] = {}
        self._silences: dict[str, tuple[Silence, ...]] = {}
        self._reservations: dict[str, tuple[Reservation, ...]] = {}
        self._fabrics: dict[str, Fabric] = {}
        self._quotas: dict[str, tuple[QuotaUsage, ...]] = {}
        self._volumes: dict[str, Volumes] = {}
        self._ceph: dict[str, dict[str, CephHealth]] = {}
        self._object_stores: dict[str, dict[str, S3Probe]] = {}
        self._events: deque[Event] = deque(maxlen=EVENT_LIMIT)
        self._controller: ControllerHealth | None = None
        self._collected_at: dict[str, float] = {}
        self._part_sources: dict[str, set[str]] = {}
        self._health: dict[str, SourceHealth] = {}
        self._cached: ClusterSnapshot | None = None
        self._cache_lock = threading.Lock()  # _changed (any thread) vs. keeping a freshly built view
        self._nodes: dict[str, Node] = {}
        self.version = 0  # bumps on every change (data or health); lets the UI skip redundant redraws
        self.data_version = 0  # bumps only when cluster data changed: health-only changes redraw less
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None], bool]] = []

    # -- writes ---------------------------------------------------------------
    def register_source(self, name: str, kind: str) -> None:
        self._health.setdefault(name, SourceHealth(name=name, kind=kind))
        self._changed(data=False)

    def apply(self, result: SourceResult, duration_s: float | None = None) -> None:
        t, src = result.time, result.source
        if result.slurm_nodes is not None:
            self._slurm_nodes[src] = dict(result.slurm_nodes)
        if result.k8s_nodes is not None:
            if self.name_map.explicit or self.name_map.strip_suffix:
                self._k8s_nodes[src] = {self.name_map.to_slurm(k): v for k, v in result.k8s_nodes.items()}
            else:  # names map to themselves: skip 16k calls on the event loop
                self._k8s_nodes[src] = dict(result.k8s_nodes)
        if result.gpus is not None:
            previous = self._gpus.get(src, {})
            self._gpus[src] = dict(result.gpus)
            for node, gpus in result.gpus.items():
                if previous.get(node) is gpus:  # the source reused this node's readings: no new sample
                    continue
                self.history.add(f"node:{node}:util", t, _mean(g.util_pct for g in gpus))
                self.history.add(f"node:{node}:temp", t, _mean(g.temp_c for g in gpus))
                self.history.add(f"node:{node}:power", t, _mean(g.power_w for g in gpus))
        if result.gpu_summaries is not None:
            self._gpu_summaries[src] = dict(result.gpu_summaries)
        if result.ib is not None:
            self._ib[src] = dict(result.ib)
        if result.gpus is not None or result.ib is not None:
            self.series.add_gpus(t, result.gpus or {}, result.ib)
        if result.mounts is not None:
            self._mounts[src] = dict(result.mounts)
        if result.services is not None:
            self._services[src] = dict(result.services)
        if result.resources is not None:
            self._resources[src] = dict(result.resources)
        if result.nvswitches is not None:
            self._nvswitches[src] = dict(result.nvswitches)
        if result.probes is not None:
            self._probes[src] = dict(result.probes)
        if result.slurm_jobs is not None:
            self._jobs[src] = result.slurm_jobs
        if result.pods is not None:
            self._pods[src] = tuple(
                p if p.node is None else _with_node(p, self.name_map.to_slurm(p.node)) for p in result.pods
            )
        if result.k8s_queues is not None:
            self._k8s_queues[src] = result.k8s_queues
        if result.partitions is not None:
            self._partitions[src] = result.partitions
        if result.alerts is not None:
            self._alerts[src] = dict(result.alerts)
        if result.silences is not None:
            self._silences[src] = result.silences
        if result.fabric is not None:
            self._fabrics[src] = result.fabric
        if result.events is not None:
            self._events.extend(map(_clean_event, result.events))
        if result.reservations is not None:
            self._reservations[src] = result.reservations
        if result.quotas is not None:
            self._quotas[src] = result.quotas
        if result.volumes is not None:
            self._volumes[src] = result.volumes
        if result.ceph is not None:
            self._ceph[src] = dict(result.ceph)
        if result.object_stores is not None:
            self._object_stores[src] = dict(result.object_stores)
        if result.controller is not None:
            self._controller = result.controller
            record_controller(self.ctld_history, t, result.controller)
        if result.node_times is not None:
            self._node_times[src] = dict(result.node_times)
        times = self._source_part_times.setdefault(src, {})
        for part in result.parts():
            self._collected_at[part.value] = t
            self._part_sources.setdefault(part.value, set()).add(src)
            times[part.value] = t
        for part_name in result.part_errors:  # a part that failed alone still names its source
            self._part_sources.setdefault(part_name, set()).add(src)
        old = self._health.get(result.source) or SourceHealth(name=result.source, kind="?")
        self._health[result.source] = SourceHealth(
            name=old.name, kind=old.kind, last_success=t, last_attempt=t,
            last_error=None, consecutive_errors=0, last_duration_s=duration_s,
            warnings=tuple(_status_text(w) for w in result.warnings),
            part_errors={k: _status_text(v) for k, v in result.part_errors.items()},
            stale_after_s=result.stale_after_s if result.stale_after_s is not None else old.stale_after_s,
        )
        self._changed()

    def record_error(self, source: str, error: str, at: float | None = None) -> None:
        at = self.clock() if at is None else at
        old = self._health.get(source) or SourceHealth(name=source, kind="?")
        self._health[source] = SourceHealth(
            name=old.name, kind=old.kind, last_success=old.last_success, last_attempt=at,
            last_error=_status_text(error), consecutive_errors=old.consecutive_errors + 1,
            last_duration_s=old.last_duration_s, warnings=old.warnings, part_errors=old.part_errors,
            stale_after_s=old.stale_after_s,
        )
        self._changed(data=False)

    def add_events(self, events: Iterable[Event]) -> None:
        self._events.extend(map(_clean_event, events))
        self._changed()

    def _changed(self, data: bool = True) -> None:
        with self._cache_lock:
            self._cached = None
            self.version += 1
            if data:
                self.data_version += 1
            woken = [w for w in self._waiters if data or not w[2]]
            if woken:
                self._waiters = [w for w in self._waiters if not (data or not w[2])]
        for loop, future, _ in woken:  # a big result is applied in a worker thread: wake each on its own loop
            loop.call_soon_threadsafe(_wake, future)

    async def changed(self, *, data: bool = True, timeout: float | None = None) -> bool:
        """Wait for the next change (``data``: only a change of cluster data, not of source health
        alone); True when one came, False after ``timeout`` seconds without one. Awaiters on any
        event loop are woken, whichever thread applied the change."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        entry = (loop, future, data)
        with self._cache_lock:
            self._waiters.append(entry)
        try:
            await asyncio.wait_for(future, timeout)
        except TimeoutError:
            return False
        finally:
            with self._cache_lock:
                if entry in self._waiters:
                    self._waiters.remove(entry)
        return True

    # -- reads ----------------------------------------------------------------
    def snapshot(self) -> ClusterSnapshot:
        """The current joined view; rebuilt only after a change."""
        if self._cached is not None:
            return self._cached
        version = self.version  # a big result is applied in a worker thread (Poller): see below
        slurm_nodes = _union(self._slurm_nodes)
        k8s_nodes = _union(self._k8s_nodes)
        names = list(slurm_nodes)
        names.extend(n for n in k8s_nodes if n not in slurm_nodes)
        origins: dict[str, dict[str, str]] = {}
        gpus = self._ranked(Part.GPUS, self._gpus, origins)
        ib = self._ranked(Part.IB, self._ib, origins)
        mounts = self._ranked(Part.MOUNTS, self._mounts, origins)
        resources = self._ranked(Part.RESOURCES, self._resources, origins)
        gpu_summaries = _union(self._gpu_summaries) if self._gpu_summaries else {}
        if not names:  # no scheduler source (e.g. Prometheus alone): the metrics name the nodes
            names = sorted(set(gpus) | set(resources) | set(ib) | set(mounts) | set(gpu_summaries))
        probes = _union(self._probes)  # nodes only a node-probing source (SSH) knows are nodes too
        if probes:
            known = set(names)
            names.extend(n for n in probes if n not in known)
        nodes = {n: self._node(n, slurm_nodes.get(n), k8s_nodes.get(n)) for n in names}
        if len(self._nodes) > len(nodes):  # nodes left the cluster: forget them
            self._nodes = dict(nodes)
        snapshot = ClusterSnapshot(
            cluster=self.cluster,
            time=max(self._collected_at.values(), default=self.clock()),
            nodes=nodes,
            gpus=gpus,
            gpu_summaries=gpu_summaries,
            ib=ib,
            mounts=mounts,
            services=self._ranked(Part.SERVICES, self._services, origins),
            nvswitches=self._ranked(Part.NVSWITCHES, self._nvswitches, origins),
            resources=resources,
            probes=probes,
            jobs=_concat(self._jobs),
            pods=_concat(self._pods),
            k8s_queues=_concat(self._k8s_queues) if self._k8s_queues else (),
            partitions=_concat(self._partitions) if self._partitions else (),
            alerts=_merge_alerts(self._alerts),
            silences=_merge_silences(self._silences),
            reservations=_concat(self._reservations) if self._reservations else (),
            fabric=merge_fabrics(list(self._fabrics.values())),
            quotas=_concat(self._quotas) if self._quotas else (),
            volumes=merge_volumes(list(self._volumes.values())) if self._volumes else Volumes(),
            ceph=_union(self._ceph) if self._ceph else {},
            object_stores=_union(self._object_stores) if self._object_stores else {},
            events=tuple(self._events),
            controller=self._controller,
            collected_at=dict(self._collected_at),
            sources=dict(self._health),
            part_sources={k: tuple(sorted(v)) for k, v in self._part_sources.items()},
            part_origins=origins,
            source_part_times={k: dict(v) for k, v in self._source_part_times.items()},
            node_times=dict(self._node_times),
        )
        with self._cache_lock:
            if self.version == version:  # a change landed meanwhile: this view may mix old and new, not kept
                self._cached = snapshot
        return snapshot

    def _ranked(self, part: Part, per_source: dict[str, dict[str, V]], origins: dict[str, dict[str, str]],
                ) -> dict[str, V]:
        """Union of the sources' views of one per-node part; on overlap the configured precedence
        decides (highest last, so it wins). With two or more sources, who won each node goes in
        ``origins`` for the node panel."""
        if len(per_source) <= 1:
            return _union(per_source)
        rank = self.precedence.get(part.value, ())
        order = sorted(per_source, key=lambda s: -rank.index(s) if s in rank else -len(rank) - 1)
        merged: dict[str, V] = {}
        who: dict[str, str] = {}
        for src in order:
            view = per_source[src]
            merged.update(view)
            who.update(dict.fromkeys(view, src))
        origins[part.value] = who
        return merged

    def _node(self, name: str, slurm: SlurmNodeInfo | None, k8s: K8sNodeInfo | None) -> Node:
        """The joined Node, reused while both halves are the same objects (most nodes, most polls)."""
        node = self._nodes.get(name)
        if node is None or node.slurm is not slurm or node.k8s is not k8s:
            node = self._nodes[name] = Node(name=name, slurm=slurm, k8s=k8s)
        return node

    def health(self) -> dict[str, SourceHealth]:
        return dict(self._health)


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():  # its waiter may have timed out or been cancelled meanwhile
        future.set_result(None)


def _status_text(text: str) -> str:
    """A source's warning or error as shown (status line, tables, snapshot JSON): cleaned of
    control characters, and the userinfo (a password) of any URL in it redacted."""
    return redact_url(clean_text(text))


def _clean_event(event: Event) -> Event:
    """Event messages quote cluster output (K8s event text, probe lines): never raw to a terminal."""
    if is_clean(event.message) and is_clean(event.object):
        return event
    return msgspec.structs.replace(event, message=clean_text(event.message), object=clean_text(event.object))


def _with_node(pod: Pod, node: str) -> Pod:
    return pod if pod.node == node else msgspec.structs.replace(pod, node=node)


def _union(per_source: dict[str, dict[str, V]]) -> dict[str, V]:
    if len(per_source) == 1:
        return next(iter(per_source.values()))
    merged: dict[str, V] = {}
    for view in per_source.values():
        merged.update(view)
    return merged


def _merge_alerts(per_source: dict[str, dict[str, tuple[Alert, ...]]]) -> dict[str, tuple[Alert, ...]]:
    """One source: its view as is (a node's unchanged alerts stay the same object, so its findings are kept).
    Several (an HA pair of Alertmanagers): per node, each alert once by fingerprint, the first source's copy."""
    if len(per_source) <= 1:
        return _union(per_source) if per_source else {}
    merged: dict[str, dict[str, Alert]] = {}
    for view in per_source.values():
        for node, alerts in view.items():
            seen = merged.setdefault(node, {})
            for alert in alerts:
                seen.setdefault(alert.fingerprint, alert)
    return {node: tuple(by_fp.values()) for node, by_fp in merged.items()}


def _merge_silences(per_source: dict[str, tuple[Silence, ...]]) -> tuple[Silence, ...]:
    """Each silence once by id (an HA pair shares its silences through gossip)."""
    if len(per_source) <= 1:
        return _concat(per_source) if per_source else ()
    return tuple({s.id: s for view in reversed(per_source.values()) for s in view}.values())


def _concat(per_source: dict[str, tuple[V, ...]]) -> tuple[V, ...]:
    if len(per_source) == 1:
        return next(iter(per_source.values()))
    return tuple(item for view in per_source.values() for item in view)


__all__ = ["History", "NodeNameMap", "Part", "Store"]
