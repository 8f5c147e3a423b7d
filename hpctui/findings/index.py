"""Findings of one snapshot, computed once and shared by every reader.

The heatmap, the problem list, the IB and mount panes, ``snapshot`` and reports all
read the same :class:`FindingsIndex` instead of re-running the health rules per pane: the
runtime's :class:`FindingsCache` computes it once per store change and hands it out in its frame
(:class:`hpctui.core.frame.Frame`).

Computed incrementally: the store reuses a node's ``Node``/``Gpu``/``IbPort``/``Mount``
tuples while their data is unchanged, so a node whose per-node parts are all the same
objects as last time keeps its findings; only the nodes whose data changed go through
:func:`hpctui.findings.health.node_findings` again (at 16k nodes with a rolling refresh that is a
few hundred nodes per poll instead of all of them).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any

from hpctui.findings.cephfs import CEPH_FSTYPES
from hpctui.findings.correlate import workload_index
from hpctui.findings.fabric import switch_findings
from hpctui.findings.health import Finding, Thresholds, node_findings
from hpctui.findings.pfs import FsCache, quota_findings, running_jobs_by_user, target_findings
from hpctui.findings.scheduler import controller_entry, controller_findings, reservations_by_node
from hpctui.findings.storage import STORAGE_PREFIXES, cephfs_mount_findings, storage_findings
from hpctui.findings.volumes import volume_findings
from hpctui.model import ClusterSnapshot, Severity
from hpctui.model.scheduler import Reservation

# The per-node parts of a snapshot the health rules may read. A node whose entries in all of
# them are the very same objects as in the previous snapshot keeps its previous findings.
# A rule that reads anything else of the snapshot must add that part here.
NODE_PARTS = ("nodes", "gpus", "ib", "mounts", "services", "resources", "probes", "nvswitches", "alerts")


class FindingsIndex:
    """Every finding of one snapshot, by node, worst first."""

    def __init__(self, by_node: dict[str, tuple[Finding, ...]],
                 worst: dict[str, Severity] | None = None, cluster: tuple[Finding, ...] = (),
                 leading: tuple[Finding, ...] = ()) -> None:
        self.by_node = by_node
        self.cluster = cluster  # findings of no node (slurmctld's), worst first: in the iteration, not by_node
        self.leading = leading  # findings about no one node (a suspect leaf switch): first among equals
        self._worst = worst if worst is not None else {n: _worst_of(fs) for n, fs in by_node.items()}
        self._all: list[Finding] | None = None
        self._objects: dict[str, dict[str, tuple[Finding, ...]]] = {}

    def with_extra(self, extra: dict[str, tuple[Finding, ...]]) -> FindingsIndex:
        """This index plus findings computed outside the per-node rules (idle GPUs, which need memory
        across frames); itself when there are none. Each node's findings stay worst first."""
        if not extra:
            return self
        by_node, worst = dict(self.by_node), dict(self._worst)
        for name, found in extra.items():
            merged = tuple(sorted((*by_node.get(name, ()), *found), key=lambda f: f.severity, reverse=True))
            by_node[name] = merged
            worst[name] = _worst_of(merged)
        return FindingsIndex(by_node, worst, self.cluster, self.leading)

    def node(self, name: str) -> tuple[Finding, ...]:
        return self.by_node.get(name, ())

    def severity(self, name: str) -> Severity:
        return self._worst.get(name, Severity.OK)

    def severities(self) -> dict[str, Severity]:
        """Every node's worst severity (read-only: shared by every reader of this snapshot)."""
        return self._worst

    def by_object(self, obj: str) -> tuple[Finding, ...]:
        """Findings of one object ("ib/gpu01/mlx5_0:1", "mount/gpu01:/lustre", ...)."""
        if obj.startswith("switch/"):
            return tuple(f for f in self.leading if f.object == obj)
        if obj.startswith(STORAGE_PREFIXES):  # ceph/<source>/<what>: the group ceph/<source>
            node = "/".join(obj.split("/", 2)[:2])
        else:
            node = obj.split("/", 2)[1].split(":", 1)[0] if "/" in obj else obj
        per_node = self._objects.get(node)
        if per_node is None:
            grouped: dict[str, list[Finding]] = {}
            for f in self.node(node):
                grouped.setdefault(f.object, []).append(f)
            per_node = self._objects[node] = {k: tuple(v) for k, v in grouped.items()}
        return per_node.get(obj, ())

    def __iter__(self) -> Iterator[Finding]:
        """All findings, worst first (stable: the leading ones, then node order, within one severity)."""
        if self._all is None:
            everything = [*self.leading, *(f for fs in self.by_node.values() for f in fs)]
            everything.extend(self.cluster)
            everything.sort(key=lambda f: f.severity, reverse=True)
            self._all = everything
        return iter(self._all)


def _worst_of(findings: tuple[Finding, ...]) -> Severity:
    return findings[0].severity if findings else Severity.OK


def _changed(new: dict[str, Any], old: dict[str, Any] | None, into: set[str]) -> None:
    """Add to ``into`` every key whose value in ``new`` is not the very object it was in ``old``."""
    if new is old:
        return
    if old is None:
        into.update(new)
        return
    get = old.get
    into.update(k for k, v in new.items() if get(k) is not v)
    into.update(old.keys() - new.keys())  # entries that went away


class _Incremental:
    """Per-thresholds memory of the last computation: the parts it read, and its results.

    A node is recomputed when one of its entries in the snapshot's per-node parts is not the
    very object it was last time, when the pods on it changed, or when its GPUs run processes
    (the stray-process rule reads which jobs are running). Which nodes that are is found per
    part with one pass of identity tests, so an unchanged node costs nothing else: at 16k
    nodes with a rolling refresh that is ~15 ms a poll instead of ~150 ms."""

    def __init__(self) -> None:
        self.parts: tuple[dict[str, Any], ...] | None = None
        self.pods: dict[str, list[Any]] | None = None  # pods by node of the last computation
        self.names: list[str] = []
        self.by_node: dict[str, tuple[Finding, ...]] = {}
        self.worst: dict[str, Severity] = {}
        self.with_processes: set[str] = set()  # nodes with a GPU process: recomputed every time
        self.reservations: tuple[Reservation, ...] = ()  # the reservations the last computation read
        self.recomputed = 0  # nodes that went through the rules in the last call (for tests/benchmarks)
        self.mounts: dict[str, Any] | None = None  # the mounts the file system findings were computed from
        self.fs_findings: dict[str, tuple[Finding, ...]] = {}
        self.fs_cache = FsCache()  # each node's part of the file system targets' picture (findings/pfs.py)
        self.quota_inputs: tuple[Any, Any] | None = None  # (quotas, jobs) the quota findings were computed from
        self.quota_findings: dict[str, tuple[Finding, ...]] = {}
        self.volume_inputs: tuple[Any, Any, Any] | None = None  # (volumes, pods, events) of the volume findings
        self.volume_findings: dict[str, tuple[Finding, ...]] = {}
        self.ceph_key: tuple[Any, ...] = ()  # what node findings read of the Ceph clusters (CephFS mounts)
        self.cephfs_inputs: tuple[Any, Any] | None = None  # (mounts, ceph key) of the CephFS mount groups
        self.cephfs_findings: dict[str, list[Finding]] = {}

    def compute(self, snapshot: ClusterSnapshot, thresholds: Thresholds) -> FindingsIndex:
        parts = tuple(getattr(snapshot, p) for p in NODE_PARTS)
        nodes, gpus = parts[0], parts[1]
        names = list(nodes)
        names.extend(n for n in gpus if n not in nodes)
        pods_by_node = workload_index(snapshot).pods_by_node if snapshot.pods else {}
        ceph_key = _ceph_key(snapshot)
        if self.parts is None or names != self.names:  # first time, or nodes came or went: all of them
            dirty, by_node, worst = names, {}, {}
            self.with_processes = set()
        else:
            changed = set(self.with_processes)
            for new, old in zip(parts, self.parts, strict=True):
                _changed(new, old, changed)
            old_pods = self.pods or {}
            if pods_by_node is not old_pods:
                for name in pods_by_node.keys() | old_pods.keys():
                    if not _same_items(pods_by_node.get(name, ()), old_pods.get(name, ())):
                        changed.add(name)
            if ceph_key != self.ceph_key:  # a CephFS mount's finding names its cluster's health now
                changed.update(n for n, ms in snapshot.mounts.items() if any(m.fstype in CEPH_FSTYPES for m in ms))
            if snapshot.reservations is not self.reservations:  # reservation rules read them and the time
                for held in (snapshot.reservations, self.reservations):
                    changed.update(reservations_by_node(held))
            # (a part may name a host that is neither a node nor has GPUs: no findings, as before)
            dirty = [n for n in changed if n in nodes or n in gpus]
            by_node, worst = dict(self.by_node), dict(self.worst)  # same names: same order
        with_processes = self.with_processes.difference(dirty)
        for name in dirty:
            findings = tuple(node_findings(snapshot, name, thresholds))
            by_node[name] = findings
            worst[name] = _worst_of(findings)
            g = gpus.get(name)
            if g and any(x.processes for x in g):
                with_processes.add(name)
        self.parts, self.pods, self.names = parts, pods_by_node, names
        self.by_node, self.worst, self.with_processes = by_node, worst, with_processes
        self.reservations = snapshot.reservations
        self.ceph_key = ceph_key
        self.recomputed = len(dirty)
        if snapshot.mounts is not self.mounts:  # cross-node: one finding per file system target, not per node
            self.mounts, self.fs_findings = snapshot.mounts, target_findings(snapshot, thresholds, self.fs_cache)
        quota_inputs = (snapshot.quotas, snapshot.jobs)
        if self.quota_inputs is None or any(a is not b for a, b in zip(quota_inputs, self.quota_inputs, strict=True)):
            self.quota_inputs = quota_inputs  # one group per user over quota with running jobs
            self.quota_findings = (quota_findings(snapshot.quotas, running_jobs_by_user(snapshot))
                                   if snapshot.quotas else {})
        volume_inputs = (snapshot.volumes, snapshot.pods, snapshot.events)
        if self.volume_inputs is None or any(a is not b for a, b in zip(volume_inputs, self.volume_inputs,
                                                                              strict=True)):
            self.volume_inputs = volume_inputs  # one group per storage class (CSI driver)
            self.volume_findings = volume_findings(snapshot, thresholds)
        cephfs_inputs = (snapshot.mounts, ceph_key)
        if (self.cephfs_inputs is None or cephfs_inputs[0] is not self.cephfs_inputs[0]
                or cephfs_inputs[1] != self.cephfs_inputs[1]):
            self.cephfs_inputs = cephfs_inputs  # per Ceph group: the nodes whose CephFS mounts are hung
            self.cephfs_findings = cephfs_mount_findings(snapshot)
        return FindingsIndex(by_node, worst, controller_entry(controller_findings(snapshot, thresholds)),
                             switch_findings(snapshot, thresholds, by_node)).with_extra(
                                 {**self.fs_findings, **self.quota_findings, **self.volume_findings,
                                  **storage_findings(snapshot, self.cephfs_findings)})


def _ceph_key(snapshot: ClusterSnapshot) -> tuple[Any, ...]:
    """What a CephFS mount's finding reads of the Ceph clusters: their identity and health words (compared by
    value: a Ceph source makes new objects every read, mostly saying the same)."""
    if not snapshot.ceph:
        return ()
    return tuple((h.name, h.fsid, h.mon_addrs, h.status, tuple((c.code, c.muted) for c in h.checks))
                 for h in snapshot.ceph.values())


def _same_items(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


class FindingsCache:
    """The findings of the snapshots one owner (a :class:`~hpctui.core.runtime.Runtime`) reads.

    Promises: the same (snapshot, thresholds) gives the very same :class:`FindingsIndex` while it
    is among the last few asked for; a new snapshot is computed incrementally from the previous
    one with the same thresholds (only the nodes whose data changed go through the rules).
    Thread-safe: the poller's worker thread and the UI thread may ask at once. Nothing is
    module-global: two runtimes (``:cluster`` switches) never share or evict each other's state.
    """

    def __init__(self, size: int = 2) -> None:
        # Snapshots kept by identity: the current one and the one before (a reader still on the
        # last frame); older ones fall out, so nothing keeps history alive (at 4k nodes each
        # one kept costs ~2-3 MB).
        self.size = max(1, size)
        self._recent: list[tuple[ClusterSnapshot, Thresholds, FindingsIndex]] = []
        self._incremental: dict[Thresholds, _Incremental] = {}
        self._lock = threading.Lock()

    def index(self, snapshot: ClusterSnapshot, thresholds: Thresholds) -> FindingsIndex:
        """The findings of ``snapshot``; computed on first use (incrementally), then shared."""
        with self._lock:
            for snap, t, cached in self._recent:
                if snap is snapshot and t == thresholds:
                    return cached
            state = self._incremental.get(thresholds)
            if state is None:
                if len(self._incremental) >= 2:  # thresholds rarely change: keep the current and one other
                    self._incremental.pop(next(iter(self._incremental)))
                state = self._incremental[thresholds] = _Incremental()
            index = state.compute(snapshot, thresholds)
            self._recent.append((snapshot, thresholds, index))
            del self._recent[:-self.size]
            return index

    def last_recomputed(self, thresholds: Thresholds) -> int:
        """How many nodes the last :meth:`index` with ``thresholds`` sent through the rules."""
        state = self._incremental.get(thresholds)
        return 0 if state is None else state.recomputed


def findings_for(snapshot: ClusterSnapshot, thresholds: Thresholds) -> FindingsIndex:
    """The findings of ``snapshot``, computed afresh (every node through the rules, nothing kept).

    For one-shot readers (``snapshot``, reports, tests, a widget used on its own). A running
    app reads the findings its runtime computed once per store change (``Frame.findings``)."""
    return _Incremental().compute(snapshot, thresholds)
