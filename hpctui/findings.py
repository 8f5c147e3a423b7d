"""Findings of one snapshot, computed once and shared by every reader.

The heatmap, the problem list, the IB and mount panes, ``snapshot`` and reports all
read the same :class:`FindingsIndex` instead of re-running the health rules per pane.

Computed incrementally: the store reuses a node's ``Node``/``Gpu``/``IbPort``/``Mount``
tuples while their data is unchanged, so a node whose per-node parts are all the same
objects as last time keeps its findings; only the nodes whose data changed go through
:func:`hpctui.health.node_findings` again (at 16k nodes with a rolling refresh that is a
few hundred nodes per poll instead of all of them).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from hpctui.correlate import workload_index
from hpctui.health import Finding, Thresholds, node_findings
from hpctui.model import ClusterSnapshot, Severity

# The per-node parts of a snapshot the health rules may read. A node whose entries in all of
# them are the very same objects as in the previous snapshot keeps its previous findings.
# A rule that reads anything else of the snapshot must add that part here.
NODE_PARTS = ("nodes", "gpus", "ib", "mounts", "services", "resources", "probes")


class FindingsIndex:
    """Every finding of one snapshot, by node, worst first."""

    def __init__(self, by_node: dict[str, tuple[Finding, ...]]) -> None:
        self.by_node = by_node
        self._worst = {n: (fs[0].severity if fs else Severity.OK) for n, fs in by_node.items()}
        self._all: list[Finding] | None = None
        self._objects: dict[str, dict[str, tuple[Finding, ...]]] = {}

    def node(self, name: str) -> tuple[Finding, ...]:
        return self.by_node.get(name, ())

    def severity(self, name: str) -> Severity:
        return self._worst.get(name, Severity.OK)

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


class _Incremental:
    """Per-thresholds memory of the last computation: node → (its parts, its findings)."""

    def __init__(self) -> None:
        self.entries: dict[str, tuple[Any, ...]] = {}  # node → (its 7 parts..., its pods, its findings)
        self.recomputed = 0  # nodes that went through the rules in the last call (for tests/benchmarks)

    def compute(self, snapshot: ClusterSnapshot, thresholds: Thresholds) -> FindingsIndex:
        nodes, gpus, ib, mounts, services, resources, probes = (getattr(snapshot, p) for p in NODE_PARTS)
        names = list(nodes)
        names.extend(n for n in gpus if n not in nodes)
        # Beyond its own parts, a node's findings read the pods on it (platform DaemonSet pods)
        # and, for GPUs with processes, which jobs are running (a stray process): those nodes
        # are compared by their pods, and nodes with GPU processes are always recomputed.
        pods_on = workload_index(snapshot).pods_on if snapshot.pods else None
        old = self.entries
        new: dict[str, tuple[Any, ...]] = {}
        by_node: dict[str, tuple[Finding, ...]] = {}
        recomputed = 0
        # Written out (no generator per node): at 16k nodes this loop is most of the cost.
        for name in names:
            n, g, i, m = nodes.get(name), gpus.get(name), ib.get(name), mounts.get(name)
            sv, r, p = services.get(name), resources.get(name), probes.get(name)
            here = tuple(pods_on(name)) if pods_on is not None else ()
            e = old.get(name)
            if (e is not None and e[0] is n and e[1] is g and e[2] is i and e[3] is m
                    and e[4] is sv and e[5] is r and e[6] is p and _same_items(e[7], here)
                    and not (g and any(x.processes for x in g))):
                new[name] = e
                by_node[name] = e[8]
                continue
            findings = tuple(node_findings(snapshot, name, thresholds))
            recomputed += 1
            new[name] = (n, g, i, m, sv, r, p, here, findings)
            by_node[name] = findings
        self.entries = new  # nodes that left the cluster are forgotten
        self.recomputed = recomputed
        return FindingsIndex(by_node)


def _same_items(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
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
