"""One frozen view of the cluster for everything that draws: the :class:`Frame`.

The runtime builds one frame per store change (:meth:`hpctui.core.runtime.Runtime.frame`) —
the joined snapshot, its findings computed once, the jobs-and-pods-per-node index, the sources'
health — and the app pushes that frame down to every screen. Readers share it; nobody
recomputes findings from the snapshot on their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hpctui.findings.correlate import WorkloadIndex, workload_index
from hpctui.findings.health import Thresholds
from hpctui.findings.idle import EMPTY_REPORT, IdleReport
from hpctui.findings.index import FindingsIndex, findings_for
from hpctui.model import ClusterSnapshot, SourceHealth


@dataclass(frozen=True, slots=True, eq=False)
class Frame:
    """What one store version looks like, complete and immutable.

    Promises: ``findings`` and ``workload`` are those of ``snapshot`` (never of another
    version); ``version`` grows with every store change (data or source health) and
    ``data_version`` only when cluster data changed, so a reader that drew ``data_version``
    already needs only the new ``health``. Two frames of one runtime with the same
    ``data_version`` share their findings and workload objects.
    """

    version: int  # the store's version this frame shows (Store.version)
    data_version: int  # the store's data version (Store.data_version): equal means only health moved
    snapshot: ClusterSnapshot
    findings: FindingsIndex  # every finding of ``snapshot``, by node, worst first
    workload: WorkloadIndex  # jobs and pods per node of ``snapshot``
    idle: IdleReport = EMPTY_REPORT  # idle allocated GPUs (their findings are in ``findings`` too)

    @property
    def health(self) -> Mapping[str, SourceHealth]:
        """Each source's health (last success, last error, retries) as of this frame."""
        return self.snapshot.sources

    @property
    def time(self) -> float:
        """When the newest data in this frame was collected."""
        return self.snapshot.time

    @classmethod
    def of(cls, snapshot: ClusterSnapshot, thresholds: Thresholds, version: int = 0,
           idle: IdleReport | None = None) -> Frame:
        """A frame of a snapshot that no runtime built (tests, benchmarks, a widget on its own):
        its findings are computed afresh (with ``idle``'s findings added)."""
        idle = idle or EMPTY_REPORT
        return cls(version=version, data_version=version, snapshot=snapshot,
                   findings=findings_for(snapshot, thresholds).with_extra(idle.findings),
                   workload=workload_index(snapshot), idle=idle)
