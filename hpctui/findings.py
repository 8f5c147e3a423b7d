"""Findings of one snapshot, computed once and shared by every reader.

The heatmap, the problem list, the IB and mount panes, ``snapshot`` and reports all
read the same :class:`FindingsIndex` instead of re-running the health rules per pane.
This is the contract; how it is computed (today: all nodes, once per snapshot) may
become incremental without changing its readers.
"""

from __future__ import annotations

from collections.abc import Iterator

from hpctui.health import Finding, Thresholds, node_findings
from hpctui.model import ClusterSnapshot, Severity


class FindingsIndex:
    """Every finding of one snapshot, by node, worst first."""

    def __init__(self, by_node: dict[str, tuple[Finding, ...]]) -> None:
        self.by_node = by_node
        self._worst = {n: (fs[0].severity if fs else Severity.OK) for n, fs in by_node.items()}

    def node(self, name: str) -> tuple[Finding, ...]:
        return self.by_node.get(name, ())

    def severity(self, name: str) -> Severity:
        return self._worst.get(name, Severity.OK)

    def by_object(self, obj: str) -> tuple[Finding, ...]:
        """Findings of one object ("ib/gpu01/mlx5_0:1", "mount/gpu01:/lustre", ...)."""
        node = obj.split("/", 2)[1].split(":", 1)[0] if "/" in obj else obj
        return tuple(f for f in self.node(node) if f.object == obj)

    def __iter__(self) -> Iterator[Finding]:
        """All findings, worst first (stable: node order within one severity)."""
        everything = [f for fs in self.by_node.values() for f in fs]
        everything.sort(key=lambda f: f.severity, reverse=True)
        return iter(everything)


# The last few (snapshot, thresholds) → index, by identity: readers of one snapshot share one
# computation; older snapshots fall out so nothing keeps history alive.
_CACHE_SIZE = 4
_cache: list[tuple[ClusterSnapshot, Thresholds, FindingsIndex]] = []


def findings_for(snapshot: ClusterSnapshot, thresholds: Thresholds) -> FindingsIndex:
    """The findings of ``snapshot``; computed on first use, then shared."""
    for snap, t, cached in _cache:
        if snap is snapshot and t == thresholds:
            return cached
    names = list(snapshot.nodes)
    names.extend(n for n in snapshot.gpus if n not in snapshot.nodes)
    index = FindingsIndex({n: tuple(node_findings(snapshot, n, thresholds)) for n in names})
    _cache.append((snapshot, thresholds, index))
    del _cache[:-_CACHE_SIZE]
    return index
