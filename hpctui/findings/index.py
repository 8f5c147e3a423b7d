"""Findings of one snapshot, computed once and shared by every reader.

The heatmap, the problem list, the IB and mount panes, ``snapshot`` and reports all
read the same :class:`FindingsIndex` instead of re-running the health rules per pane.

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

from hpctui.findings.correlate import workload_index
from hpctui.findings.health import Finding, Thresholds, node_findings
from hpctui.model import ClusterSnapshot, Severity

# The per-node parts of a snapshot the health rules may read. A node whose entries in all of
# them are the very same objects as in the previous snapshot keeps its previous findings.
# A rule that reads anything else of the snapshot must add that part here.
NODE_PARTS = ("nodes", "gpus", "ib", "mounts", "services", "resources", "probes", "nvswitches")


class FindingsIndex:
    """Every finding of one snapshot, by node, worst first."""

    def __init__(self, by_node: dict[str, tuple[Finding, ...]],
                 worst: dict[str, Severity] | None = None) -> None:
        self.by_node = by_node
        self._worst = worst if worst is not None else {n: _worst_of(fs) for n, fs in by_node.items()}
        self._all: list[Finding] | None = None
        self._objects: dict[str, dict[str, tuple[Finding, ...]]] = {}

    def node(self, name: str) -> tuple[Finding, ...]:
        return self.by_node.get(name, ())

    def severity(self, name: str) -> Severity:
        return self._worst.get(name, Severity.OK)

    def severities(self) -> dict[str, Severity]:
        """Every node's worst severity (read-only: shared by every reader of this snapshot)."""
        return self._worst

    def by_object(self, obj: str) -> tuple[Finding, ...]:
        """Findings of one object ("ib/gpu01/mlx5_0:1", "mount/gpu01:/lustre", ...)."""
        node = obj.split("/", 2)[1].split(":", 1)[0] if "/" in obj else obj
        per_node = self._objects.get(node)
        if per_node is None:
            grouped: dict[str, list[Finding]] = {}
            for f in self.node(node):
                grouped.setdefault(f.object, []).append(f)
            per_node = self._objects[node] = {k: tuple(v) for k, v in grouped.items()}
        return per_node.get(obj, ())

    def __iter__(self) -> Iterator[Finding]:
        """All findings, worst first (stable: node order within one severity)."""
        if self._all is None:
            everything = [f for fs in self.by_node.values() for f in fs]
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
        self.recomputed = 0  # nodes that went through the rules in the last call (for tests/benchmarks)

    def compute(self, snapshot: ClusterSnapshot, thresholds: Thresholds) -> FindingsIndex:
        parts = tuple(getattr(snapshot, p) for p in NODE_PARTS)
        nodes, gpus = parts[0], parts[1]
        names = list(nodes)
        names.extend(n for n in gpus if n not in nodes)
        pods_by_node = workload_index(snapshot).pods_by_node if snapshot.pods else {}
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
        self.recomputed = len(dirty)
        return FindingsIndex(by_node, worst)


def _same_items(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


# The last few (snapshot, thresholds) → index, by identity: readers of one snapshot share one
# computation; older snapshots fall out so nothing keeps history alive.
_CACHE_SIZE = 4
_cache: list[tuple[ClusterSnapshot, Thresholds, FindingsIndex]] = []
_incremental: dict[Thresholds, _Incremental] = {}
_lock = threading.Lock()  # readers on the UI thread, the poller's worker thread and pane workers


def findings_for(snapshot: ClusterSnapshot, thresholds: Thresholds) -> FindingsIndex:
    """The findings of ``snapshot``; computed on first use (incrementally), then shared."""
    with _lock:
        for snap, t, cached in _cache:
            if snap is snapshot and t == thresholds:
                return cached
        state = _incremental.get(thresholds)
        if state is None:
            if len(_incremental) >= 2:  # thresholds rarely change: keep the current and one other
                _incremental.pop(next(iter(_incremental)))
            state = _incremental[thresholds] = _Incremental()
        index = state.compute(snapshot, thresholds)
        _cache.append((snapshot, thresholds, index))
        del _cache[:-_CACHE_SIZE]
        return index


def last_recomputed(thresholds: Thresholds) -> int:
    """How many nodes the last :func:`findings_for` with ``thresholds`` sent through the rules."""
    state = _incremental.get(thresholds)
    return 0 if state is None else state.recomputed
