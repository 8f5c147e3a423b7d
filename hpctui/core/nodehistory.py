"""The node-history service: asks every source what it remembers and merges it (off the UI thread).

Event sources, merged in this order by :func:`hpctui.findings.nodehistory.merge_events` (the first
one's times win for one happening seen twice):

1. slurmdbd (``sacctmgr show event`` through a :class:`~hpctui.sources.capabilities.JobAccounting`
   source; the demo's simulated record);
2. the audit log (hpctui's own drains, resumes, cordons, with who ran them);
3. the current state (a node drained or down now, with its reason time; a Kubernetes node cordoned
   now, with its taint's ``timeAdded``) and the store's timeline (Slurm drains seen live, the
   kubelet's ``NodeNotSchedulable``/``NodeSchedulable`` where a source keeps Normal events);
4. every function in :attr:`NodeHistoryService.extra_sources` — the merge point for more kinds of
   record (tracked health-check results): ``fn(nodes, start, end) -> Iterable[NodeEvent]``.

Jobs that died on a node come from ``sacct`` (FAILED, NODE_FAIL, OUT_OF_MEMORY, TIMEOUT). A cache of
the last week's events of every node (:meth:`prefetch`, refreshed in the background while the app
runs) lets a resume/uncordon preview warn synchronously (:meth:`advice`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from hpctui.findings.nodehistory import (
    WEEK,
    Offender,
    current_node_events,
    merge_events,
    rank_offenders,
    release_advice,
    stored_node_events,
)
from hpctui.model.nodehistory import DEAD_JOB_STATES, AcctJob, AcctQuery, AcctResult, NodeEvent, NodeRecord
from hpctui.sources.capabilities import JobAccounting

if TYPE_CHECKING:
    from hpctui.model import ClusterSnapshot
    from hpctui.sources.base import Source

ExtraSource = Callable[[str | None, float, float], Iterable[NodeEvent]]
PREFETCH_EVERY_S = 600.0  # the background refresh of the advice cache
PREFETCH_AFTER_S = 20.0  # the first one waits for the app's first frames (a big demo builds its sim meanwhile)
ADVICE_WINDOW_S = WEEK
DEAD_JOBS_LIMIT = 200
OFFENDER_JOBS_LIMIT = 5000  # the ranking's one sacct over every node: at most this many dead jobs counted


class NodeHistoryService:
    """Merged node histories and the repeat-offender ranking for one cluster."""

    def __init__(self, sources: Sequence[Source], *, cluster: str, audit_records: Callable[[], list[dict[str, object]]],
                 snapshot: Callable[[], ClusterSnapshot], clock: Callable[[], float] = time.time) -> None:
        self.sources = sources
        self.cluster = cluster
        self.audit_records = audit_records  # blocking file I/O: called in a worker thread
        self.snapshot = snapshot
        self.clock = clock
        self.extra_sources: list[ExtraSource] = []
        self._recent: list[NodeEvent] = []  # every node's events of the last ADVICE_WINDOW_S, for advice()
        self._recent_at: float | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def provider(self) -> JobAccounting | None:
        """The source that answers accounting questions (a real Slurm source before the demo)."""
        found = [s for s in self.sources if isinstance(s, JobAccounting)]
        return min(found, key=lambda s: getattr(s, "kind", "") != "slurm") if found else None

    async def events(self, nodes: str | None, start: float, end: float) -> tuple[list[NodeEvent], list[str], list[str]]:
        """(merged events of ``nodes`` — every node: None — in [start, end], problems, commands run)."""
        problems: list[str] = []
        commands: list[str] = []
        slurmdbd: list[NodeEvent] = []
        provider = self.provider
        if provider is not None:
            res = await provider.node_events(nodes, start, end)
            slurmdbd, commands = res.events, res.commands
            if res.detail:
                problems.append(f"slurmdbd: {res.detail}")
        from hpctui.actions.events import audit_node_events

        audit = await asyncio.to_thread(lambda: audit_node_events(self.audit_records(), self.cluster))
        wanted = _wanted(nodes)
        snap = self.snapshot()
        lists: list[Iterable[NodeEvent]] = [slurmdbd, audit, current_node_events(snap), stored_node_events(snap.events)]
        for extra in self.extra_sources:
            try:
                lists.append(list(extra(nodes, start, end)))
            except Exception as exc:  # one broken source costs its records, not the history
                problems.append(f"{getattr(extra, '__name__', 'event source')}: {exc}")
        merged = [e for e in merge_events(lists) if (wanted is None or e.node in wanted) and e.time <= end
                  and (e.time >= start or (e.end if e.end is not None else end) >= start)]  # began or lasted in it
        return merged, problems, commands

    async def dead_jobs(self, nodes: str | None, start: float, end: float,
                        limit: int = DEAD_JOBS_LIMIT) -> AcctResult | None:
        """Jobs that died on ``nodes`` (every node: None) in [start, end] (``sacct -s FAILED,NODE_FAIL,...``);
        None: no source can."""
        provider = self.provider
        if provider is None:
            return None
        return await provider.acct_jobs(AcctQuery(start=start, end=end, nodes=nodes, states=DEAD_JOB_STATES,
                                                  limit=limit))

    async def record(self, node: str, window_s: float) -> NodeRecord:
        """Everything remembered of ``node`` over the last ``window_s``; problems listed, never raised
        (but ``ValueError`` for a bad node name)."""
        end = self.clock()
        start = end - window_s
        (events, problems, commands), jobs = await asyncio.gather(self.events(node, start, end),
                                                                  self.dead_jobs(node, start, end))
        dead: list[AcctJob] = []
        if jobs is not None:
            dead = sorted(jobs.jobs, key=lambda j: -(j.end or 0.0))
            commands = [*commands, *jobs.commands]
            if jobs.detail:
                problems.append(f"sacct: {jobs.detail}")
        self._remember(events, node, end)
        return NodeRecord(node=node, start=start, end=end, events=sorted(events, key=lambda e: -e.time),
                          dead_jobs=dead, problems=problems, commands=commands)

    async def offenders(self, window_s: float, kind: str | None = None,
                        limit: int = 50) -> tuple[list[Offender], list[str], list[str]]:
        """(the repeat offenders of the last ``window_s``, problems, commands run)."""
        end = self.clock()
        start = end - window_s
        (events, problems, commands), jobs = await asyncio.gather(
            self.events(None, start, end), self.dead_jobs(None, start, end, limit=OFFENDER_JOBS_LIMIT))
        self._remember(events, None, end)
        died: dict[str, int] = {}
        if jobs is not None:
            commands = [*commands, *jobs.commands]
            if jobs.detail:
                problems = [*problems, f"sacct: {jobs.detail}"]
            for job in jobs.jobs:
                for name in _job_nodes(job):
                    died[name] = died.get(name, 0) + 1
        return rank_offenders(events, start, end, kind=kind, dead_jobs=died, limit=limit), problems, commands

    # -- the preview's advice ------------------------------------------------------------------
    async def prefetch(self) -> None:
        """Read every node's events of the last week into the advice cache (problems are ignored:
        a preview without the advice is what a cluster without accounting gets)."""
        end = self.clock()
        events, _problems, _cmds = await self.events(None, end - ADVICE_WINDOW_S, end)
        self._recent, self._recent_at = events, end

    def _remember(self, events: list[NodeEvent], node: str | None, now: float) -> None:
        """Fresher events of ``node`` (every node: None) replace the cache's."""
        keep = [e for e in self._recent if node is not None and e.node != node]
        self._recent = keep + [e for e in events if e.time >= now - ADVICE_WINDOW_S]
        self._recent_at = now if node is None else self._recent_at

    def advice(self, node: str) -> str | None:
        """A resume/uncordon preview's warning about ``node`` from the cached history, or None."""
        return release_advice(node, self._recent, self.clock(), window_s=ADVICE_WINDOW_S)

    def start(self) -> None:
        """Keep the advice cache fresh in the background (after :data:`PREFETCH_AFTER_S`, then every
        :data:`PREFETCH_EVERY_S`); needs a running event loop."""
        if self._task is None and self.provider is not None:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="node-history-prefetch")

    async def _loop(self) -> None:
        await asyncio.sleep(PREFETCH_AFTER_S)
        while True:
            try:
                await self.prefetch()
            except Exception:  # a failed refresh keeps the old cache; the next one tries again
                pass
            await asyncio.sleep(PREFETCH_EVERY_S)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None


def _job_nodes(job: AcctJob) -> list[str]:
    """The nodes a job ran on (its NodeList expanded; an unreadable one counts as itself)."""
    from hpctui.model.hostlist import HostlistError, expand

    if not job.nodes:
        return []
    try:
        return expand(job.nodes)
    except HostlistError:
        return [job.nodes]


def _wanted(nodes: str | None) -> set[str] | None:
    if nodes is None:
        return None
    from hpctui.model.hostlist import expand

    return set(expand(nodes))
