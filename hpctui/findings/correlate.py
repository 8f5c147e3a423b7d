"""Which jobs and pods run on which node — the join that on-call triage needs.

UI-free and cached per snapshot: building the index expands each running job's
hostlist once, so selecting nodes afterwards is a dict lookup even at 100k jobs.
"""

from __future__ import annotations

from collections import defaultdict

from hpctui.model import ClusterSnapshot, Pod, SlurmJob
from hpctui.model.hostlist import HostlistError, expand

_ACTIVE = frozenset({"RUNNING", "COMPLETING", "SUSPENDED", "CONFIGURING", "STAGE_OUT", "SIGNALING", "RESIZING"})


# Hostlist expansion is the costly part (python-hostlist, ~70 µs a list): the lists of the
# last build are reused by value, so a queue that changes a little re-expands a little.
_expanded: dict[str, list[str]] = {}


class WorkloadIndex:
    """Jobs and pods per node name for one snapshot."""

    def __init__(self, snapshot: ClusterSnapshot, previous: WorkloadIndex | None = None) -> None:
        self.jobs_of = snapshot.jobs
        self.pods_of = snapshot.pods
        self._jobs: dict[str, list[SlurmJob]]
        self._pods: dict[str, list[Pod]]
        if previous is not None and previous.jobs_of is snapshot.jobs:  # only the pods changed
            self._jobs = previous._jobs
        else:
            self._jobs = self._index_jobs(snapshot.jobs)
        if previous is not None and previous.pods_of is snapshot.pods:  # only the jobs changed
            self._pods = previous._pods
        else:
            pods: dict[str, list[Pod]] = defaultdict(list)
            for pod in snapshot.pods:
                if pod.node:
                    pods[pod.node].append(pod)
            self._pods = dict(pods)

    @property
    def pods_by_node(self) -> dict[str, list[Pod]]:
        """Node → its pods; the same dict object while the snapshot's pods are the same."""
        return self._pods

    @staticmethod
    def _index_jobs(all_jobs: tuple[SlurmJob, ...]) -> dict[str, list[SlurmJob]]:
        global _expanded
        jobs: dict[str, list[SlurmJob]] = defaultdict(list)
        previous = _expanded  # node lists of the previous index: most running jobs are still there
        expanded: dict[str, list[str]] = {}
        for job in all_jobs:
            if job.state not in _ACTIVE or not job.nodes:
                continue
            names = expanded.get(job.nodes)
            if names is None:
                names = previous.get(job.nodes)
                if names is None:
                    try:
                        names = expand(job.nodes)
                    except HostlistError:
                        names = []
                expanded[job.nodes] = names
            for name in names:
                jobs[name].append(job)
        _expanded = expanded  # only the lists in use are kept: no unbounded growth
        return dict(jobs)

    def jobs_on(self, node: str) -> list[SlurmJob]:
        return self._jobs.get(node, [])

    def pods_on(self, node: str) -> list[Pod]:
        return self._pods.get(node, [])

    def jobs_on_any(self, nodes: set[str]) -> list[SlurmJob]:
        seen: dict[int, SlurmJob] = {}
        for node in nodes:
            for job in self._jobs.get(node, ()):
                seen.setdefault(job.job_id, job)
        return list(seen.values())


# The last few indexes by the identity of their jobs and pods: the runtime prepares the next
# snapshot in a worker thread while the UI still draws the previous one, and one entry would
# make them evict each other (a 100k-job index rebuilt on every arrow key).
_recent: list[tuple[tuple[SlurmJob, ...], tuple[Pod, ...], WorkloadIndex]] = []
_KEEP = 3


def workload_index(snapshot: ClusterSnapshot) -> WorkloadIndex:
    """The index for the snapshot's jobs and pods, rebuilt only when those change (a new
    snapshot that only carries new source health or GPU readings reuses it)."""
    for jobs, pods, index in _recent:
        if jobs is snapshot.jobs and pods is snapshot.pods:
            return index
    index = WorkloadIndex(snapshot, _recent[0][2] if _recent else None)
    _recent[:] = [(snapshot.jobs, snapshot.pods, index), *_recent[: _KEEP - 1]]  # one list swap: thread-safe
    return index
