"""Idle and wasted GPUs: allocations that hold GPUs doing nothing, and GPUs busy that nobody holds.

UI-free. One :class:`IdleTracker` per runtime remembers, across refreshes, since when each
allocated GPU has been idle: that is all the memory it needs (one float per idle GPU), so a
4,096-node cluster costs one pass over the allocated GPUs per frame and a few hundred bytes per
idle GPU, never a history of every reading.

What "idle" means (``[idle]`` of the config, :class:`IdleSettings`): a GPU that a running Slurm job
(``gpus_alloc``) or a running GPU-requesting pod holds, whose utilisation is under ``util_pct``
and, where DCGM reports it (``DCGM_FI_PROF_SM_ACTIVE``), whose SM activity is under
``sm_active``, continuously for ``after_s`` seconds, counted from ``grace_s`` after the job or
pod started. A GPU without a process and with (almost) no memory in use is idle "no process".
Idle time counts from when hpctui first saw the GPU idle (it keeps no history of its own from
before it started).

And the opposite (``gpu_busy_unowned``): a GPU with utilisation or memory in use that no running
job's allocation and no pod covers, on a node a scheduler knows. A GPU that lists processes is
judged by the stray-process rule of :mod:`hpctui.findings.health` instead (one problem, one finding);
a GPU in MIG mode is not judged (jobs hold its slices, and their indices are not the GPU's).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from hpctui.findings.correlate import WorkloadIndex
from hpctui.findings.health import Finding
from hpctui.model import ClusterSnapshot, Gpu, Pod, Severity, SlurmJob
from hpctui.model.hostlist import HostlistError, expand

NOTIFY_JOB_ACTION = "idle-notify"  # the custom action the idle view's notify key runs on jobs
NOTIFY_POD_ACTION = "idle-notify-pod"  # ... and on pods
UNKNOWN_INDEX = -1  # a pod's GPUs whose indices no source attributes: counted, not named


class IdleSettings(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """``[idle]`` in the config: when allocated GPUs count as idle, and who is told."""

    enabled: bool = True
    """Look for idle allocated GPUs (and busy GPUs that nobody holds) at all."""
    util_pct: Annotated[float, Meta(ge=0, le=100)] = 5.0
    """A GPU under this utilisation (%) is idle."""
    sm_active: Annotated[float, Meta(ge=0, le=1)] = 0.05
    """Where DCGM reports SM activity (``DCGM_FI_PROF_SM_ACTIVE``, 0..1), it must also be under this."""
    after_s: Annotated[float, Meta(ge=0, le=30 * 86_400)] = 1800.0
    """Idle this long (seconds, continuously) before it is a finding."""
    grace_s: Annotated[float, Meta(ge=0, le=30 * 86_400)] = 600.0
    """Idle time counts only from this long after the job or pod started (loading data, compiling)."""
    no_process_mem_mib: Annotated[float, Meta(ge=0, le=1 << 24)] = 256.0
    """An idle GPU with no process listed and at most this much memory (MiB) in use is "no process"."""
    busy_util_pct: Annotated[float, Meta(gt=0, le=100)] = 10.0
    """A GPU at or above this utilisation (%) that no job or pod holds is busy with no owner."""
    busy_mem_mib: Annotated[float, Meta(gt=0, le=1 << 24)] = 1024.0
    """... or with at least this much memory (MiB) in use."""
    severity: Literal["info", "warning"] = "warning"
    """The severity of an idle-GPUs finding ("info" keeps idle nodes off the heatmap's warning colour)."""
    notify_command: list[str] = msgspec.field(default_factory=list)
    """Argv template the idle view's notify key runs per job (``{job}``, ``{user}``), e.g.
    ``["mail", "-s", "your job {job} holds idle GPUs", "{user}"]``; no shell, each placeholder one
    argument (a custom action, hpctui.actions.custom: previewed, confirmed, audited). Empty: no notify."""
    notify_pod_command: list[str] = msgspec.field(default_factory=list)
    """The same per pod (``{pod}``, ``{namespace}``, ``{node}``)."""


class IdleAllocation(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One job or pod with GPUs idle past ``after_s``: which, since when, and how many GPU-hours."""

    kind: Literal["job", "pod"]
    id: str  # the job's display id, or "namespace/name"
    user: str | None  # the job's user; a pod: None
    account: str | None  # the job's account; a pod: its namespace
    gpus: tuple[tuple[str, int], ...]  # (node, index) of the idle GPUs; index -1: not attributed
    count: int  # idle GPUs
    held: int  # GPUs the allocation holds in all
    since: float  # the earliest idle start of its GPUs
    gpu_hours: float  # idle GPU-hours so far (since each GPU went idle)
    reason: str  # "no process", "util 0 %, 15.6 GiB held", ...

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(n for n, _ in self.gpus))

    @property
    def gpu_text(self) -> str:
        """``gpu01:0-7 gpu02:0-3``, or ``gpu01:4 GPUs`` where indices are not known."""
        per: dict[str, list[int]] = {}
        for node, idx in self.gpus:
            per.setdefault(node, []).append(idx)
        parts = []
        for node, indices in per.items():
            if UNKNOWN_INDEX in indices:
                parts.append(f"{node}:{self.count} GPUs")
            else:
                parts.append(f"{node}:{index_text(indices)}")
        return " ".join(parts)


class IdleReport(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The idle GPUs of one frame. ``findings`` are by node (merged into the frame's findings)."""

    time: float = 0.0
    allocations: tuple[IdleAllocation, ...] = ()
    gpus_now: int = 0  # GPUs idle past ``after_s`` now
    watching: int = 0  # GPUs idle, not for long enough yet
    today: dict[str, float] = msgspec.field(default_factory=dict)  # "user\taccount" -> idle GPU-hours today
    findings: dict[str, tuple[Finding, ...]] = msgspec.field(default_factory=dict)


EMPTY_REPORT = IdleReport()


def index_text(indices: Iterable[int]) -> str:
    """[0, 1, 2, 5] → ``0-2,5``."""
    out: list[str] = []
    run: list[int] = []
    for i in sorted(set(indices)):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [i]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


_INDEX_CACHE: dict[str, tuple[int, ...]] = {}


def parse_indices(text: str) -> tuple[int, ...]:
    """``"0-3,6"`` → (0, 1, 2, 3, 6); () when unreadable (cached: a cluster has few distinct strings)."""
    got = _INDEX_CACHE.get(text)
    if got is not None:
        return got
    out: list[int] = []
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            out.extend(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        out = []
    result = tuple(out) if len(out) <= 1024 else ()
    if len(_INDEX_CACHE) < 4096:
        _INDEX_CACHE[text] = result
    return result


def today_key(user: str | None, account: str | None) -> str:
    return f"{user or ''}\t{account or ''}"


class _Owner:
    """A running job or pod and the GPUs it holds, for one frame."""

    __slots__ = ("account", "held", "id", "kind", "start", "user")

    def __init__(self, kind: Literal["job", "pod"], id_: str, user: str | None, account: str | None,
                 start: float | None, held: int) -> None:
        self.kind, self.id, self.user, self.account, self.start, self.held = kind, id_, user, account, start, held


HOLDING_STATES = frozenset({"COMPLETING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT"})  # GPUs held, not in use
_HOLDING = HOLDING_STATES


class _Allocations:
    """Every running job's GPU allocation by node, built once per jobs tuple (the queue changes
    less often than the GPU readings): (owner, indices) per node, the GPUs held per node, and the
    nodes where a running job holds GPUs whose indices are not known (nothing there is "unowned").
    A node whose jobs are the very same objects as in ``previous`` keeps its entries list (so the
    per-node memo of :class:`IdleTracker` stays valid across a queue refresh)."""

    __slots__ = ("by_node", "jobs", "node_jobs", "owned", "unknown")

    def __init__(self, jobs: tuple[SlurmJob, ...], previous: _Allocations | None = None) -> None:
        self.jobs = jobs
        node_jobs: dict[str, list[SlurmJob]] = {}
        unknown: set[str] = set()
        holding: dict[str, set[int]] = {}
        for job in jobs:
            if job.state != "RUNNING":
                if job.state in _HOLDING and job.gpus_alloc:  # ending or suspended: holds, not judged idle
                    for node, text in job.gpus_alloc.items():
                        holding.setdefault(node, set()).update(parse_indices(text))
                continue
            if not job.gpus_alloc:
                if job.gpus_requested and job.nodes:
                    unknown.add(job.nodes)  # a hostlist: expanded below
                continue
            for node in job.gpus_alloc:
                node_jobs.setdefault(node, []).append(job)
        self.node_jobs = node_jobs
        self.by_node: dict[str, list[tuple[_Owner, tuple[int, ...]]]] = {}
        self.owned: dict[str, frozenset[int]] = {}
        owners: dict[int, _Owner] = {}
        old_jobs = previous.node_jobs if previous is not None else {}
        for node, held in node_jobs.items():
            before = old_jobs.get(node)
            if before is not None and len(before) == len(held) and all(x is y for x, y in zip(before, held, strict=True)):
                assert previous is not None
                entries = self.by_node[node] = previous.by_node[node]
                self.owned[node] = frozenset(i for _, indices in entries for i in indices)
                continue
            entries = []
            for job in held:
                owner = owners.get(id(job))
                if owner is None:
                    owner = owners[id(job)] = _Owner(
                        "job", job.display_id, job.user, job.account, job.start_time,
                        sum(len(parse_indices(t)) for t in job.gpus_alloc.values()))
                entries.append((owner, parse_indices(job.gpus_alloc[node])))
            self.by_node[node] = entries
            self.owned[node] = frozenset(i for _, indices in entries for i in indices)
        for node, indices in holding.items():
            self.owned[node] = self.owned.get(node, frozenset()) | indices
        self.unknown = frozenset(_expand_all(unknown))


def _gpu_at(gpus: tuple[Gpu, ...], index: int) -> Gpu | None:
    if 0 <= index < len(gpus) and gpus[index].index == index:
        return gpus[index]
    return next((g for g in gpus if g.index == index), None)


def is_idle(gpu: Gpu, s: IdleSettings) -> bool:
    """Under the utilisation threshold (and the SM-activity one where DCGM gives it); a GPU with
    no utilisation reading is never idle (not known), nor one that fell off the bus."""
    if gpu.lost or gpu.util_pct is None or gpu.util_pct >= s.util_pct:
        return False
    sm = gpu.profiling.get("sm_active") if gpu.profiling else None
    return sm is None or sm < s.sm_active


def idle_reason(gpus: Iterable[Gpu], s: IdleSettings) -> str:
    """Why these GPUs count as idle, in a few words."""
    listed = list(gpus)
    if not listed:
        return "idle"
    if all(not g.processes and (g.memory_used_mib or 0.0) <= s.no_process_mem_mib for g in listed):
        return "no process"
    util = max(g.util_pct or 0.0 for g in listed)
    held = sum(g.memory_used_mib or 0.0 for g in listed)
    sm = [g.profiling["sm_active"] for g in listed if g.profiling and "sm_active" in g.profiling]
    parts = [f"util {util:.0f} %"]
    if sm:
        parts.append(f"SM active {100 * max(sm):.0f} %")
    if held:
        parts.append(f"{held / 1024:.1f} GiB held")
    return ", ".join(parts)


def _pod_key(pod: Pod) -> str:
    return f"{pod.namespace}/{pod.name}"


_NO_ENTRIES: list[tuple[_Owner, tuple[int, ...]]] = []  # shared empties: identity is the memo's key
_NO_PODS: list[Pod] = []


class _NodeIdle:
    """The idle GPUs of one node's allocations (jobs and pods) for one reading of its GPUs: kept
    while the node's GPU tuple, its job entries and its pods are the very same objects."""

    __slots__ = ("entries", "gpus", "idle", "owned", "pods", "unattributed", "weights")

    def __init__(self, node: str, gpus: tuple[Gpu, ...], entries: list[tuple[_Owner, tuple[int, ...]]],
                 pods: list[Pod], owned: frozenset[int], s: IdleSettings) -> None:
        self.gpus, self.entries, self.pods = gpus, entries, pods
        self.idle: dict[tuple[str, str, int], tuple[_Owner, Gpu | None]] = {}
        self.weights: dict[tuple[str, str, int], int] = {}
        self.unattributed = False
        threshold, n = s.util_pct, len(gpus)
        for owner, indices in entries:
            for idx in indices:
                g = gpus[idx] if idx < n else None
                if g is None or g.index != idx:
                    g = _gpu_at(gpus, idx)
                    if g is None:
                        continue
                u = g.util_pct  # the common case first: a busy GPU, rejected without a call
                if u is None or u >= threshold or not is_idle(g, s):
                    continue
                self.idle[("job:" + owner.id, node, idx)] = (owner, g)
        self.owned = owned if not pods else self._pods(node, owned, s)

    def _pods(self, node: str, owned: frozenset[int], s: IdleSettings) -> frozenset[int]:
        """The idle GPUs of the node's running GPU pods; the GPUs held once pods are counted."""
        by_pod: dict[str, list[Gpu]] = {}
        for g in self.gpus:
            for proc in g.processes:
                if proc.pod is not None:
                    by_pod.setdefault(proc.pod, []).append(g)
        own = set(owned)
        free = [g for g in self.gpus if g.index not in own and not any(p.pod for p in g.processes)]
        for pod in self.pods:
            key = _pod_key(pod)
            owner = _Owner("pod", key, None, pod.namespace, pod.start_time, pod.gpus_requested)
            held = by_pod.get(key)
            if held:
                own.update(g.index for g in held)
                for g in held:
                    if is_idle(g, s):
                        self.idle[("pod:" + key, node, g.index)] = (owner, g)
                continue
            self.unattributed = True
            # no GPU names the pod: idle only when every GPU nobody else holds is idle
            if free and all(is_idle(g, s) for g in free):
                self.idle[("pod:" + key, node, UNKNOWN_INDEX)] = (owner, None)
                self.weights[("pod:" + key, node, UNKNOWN_INDEX)] = min(pod.gpus_requested, len(free))
        return frozenset(own)


class IdleTracker:
    """Remembers since when each allocated GPU has been idle; one :meth:`update` per frame.

    Promises: a GPU's idle time restarts when it does work, changes owner or disappears;
    GPU-hours of idle spells that ended today stay in ``today`` until local midnight; memory is
    one entry per GPU idle now (nothing grows with time)."""

    def __init__(self, settings: IdleSettings | None = None, *,
                 midnight: Callable[[float], float] | None = None) -> None:
        self.settings = settings or IdleSettings()
        self._midnight = midnight or local_midnight
        self._since: dict[tuple[str, str, int], float] = {}  # (owner key, node, index) -> idle since
        self._weight: dict[tuple[str, str, int], int] = {}  # GPUs an entry stands for (pods: unattributed)
        self._who: dict[str, tuple[str | None, str | None]] = {}  # owner key -> (user, account)
        self._day = 0.0  # the midnight "today" started at
        self._closed: dict[str, float] = {}  # today_key -> idle GPU-seconds of spells that ended today
        self._alloc: _Allocations | None = None
        self._gpu_pods: tuple[dict[str, list[Pod]], dict[str, list[Pod]]] | None = None  # pods by node -> GPU pods
        self._memo: dict[str, _NodeIdle] = {}  # per node, reused while its GPUs, jobs and pods are the same objects

    def update(self, snapshot: ClusterSnapshot, workload: WorkloadIndex, now: float | None = None) -> IdleReport:
        """The idle GPUs of ``snapshot`` at ``now`` (default: the snapshot's time)."""
        s = self.settings
        if not s.enabled:
            return EMPTY_REPORT
        now = snapshot.time if now is None else now
        midnight = self._midnight(now)
        if midnight != self._day:
            self._day, self._closed = midnight, {}
        alloc = self._alloc
        if alloc is None or alloc.jobs is not snapshot.jobs:
            alloc = self._alloc = _Allocations(snapshot.jobs, alloc)
        pods_by_node = self._gpu_pods_by_node(snapshot, workload)
        gpus = snapshot.gpus
        idle_now: dict[tuple[str, str, int], tuple[_Owner, Gpu | None]] = {}
        owned = dict(alloc.owned)
        unattributed: set[str] = set()
        memo, new_memo = self._memo, {}
        by_node, memo_get, gpus_get, pods_get = alloc.by_node, memo.get, gpus.get, pods_by_node.get
        for node in (by_node.keys() | pods_by_node.keys()) if pods_by_node else by_node:
            node_gpus = gpus_get(node)
            if not node_gpus:
                continue
            entries = by_node.get(node, _NO_ENTRIES)
            gpu_pods = pods_get(node, _NO_PODS)
            got = memo_get(node)
            if got is None or got.gpus is not node_gpus or got.entries is not entries or got.pods is not gpu_pods:
                got = _NodeIdle(node, node_gpus, entries, gpu_pods, alloc.owned.get(node, frozenset()), self.settings)
            new_memo[node] = got
            if got.idle:
                idle_now.update(got.idle)
                self._weight.update(got.weights)
            if gpu_pods:
                owned[node] = got.owned
                if got.unattributed:
                    unattributed.add(node)
        self._memo = new_memo  # only the nodes of this frame: nothing grows
        findings: dict[str, list[Finding]] = {}
        self._unowned(snapshot, owned, unattributed | alloc.unknown, findings)
        return self._settle(idle_now, now, midnight, findings)

    def _gpu_pods_by_node(self, snapshot: ClusterSnapshot, workload: WorkloadIndex) -> dict[str, list[Pod]]:
        """Running GPU-requesting pods by node, rebuilt only when the pods change."""
        if not snapshot.pods:
            return {}
        pods_by_node = workload.pods_by_node
        if self._gpu_pods is None or self._gpu_pods[0] is not pods_by_node:
            before = self._gpu_pods[1] if self._gpu_pods is not None else {}
            now: dict[str, list[Pod]] = {}
            for node, pods in pods_by_node.items():
                gpu_pods = [p for p in pods if p.gpus_requested > 0 and p.phase == "Running"]
                if not gpu_pods:
                    continue
                old = before.get(node)  # the same pods: the same list (the per-node memo stays valid)
                same = old is not None and len(old) == len(gpu_pods) and all(
                    x is y for x, y in zip(old, gpu_pods, strict=True))
                now[node] = old if same and old is not None else gpu_pods
            self._gpu_pods = (pods_by_node, now)
        return self._gpu_pods[1]

    def _unowned(self, snapshot: ClusterSnapshot, owned: Mapping[str, frozenset[int]], skip: AbstractSet[str],
                 findings: dict[str, list[Finding]]) -> None:
        """``gpu_busy_unowned`` findings: busy GPUs, without listed processes, that nobody holds."""
        s = self.settings
        nodes = snapshot.nodes
        empty: frozenset[int] = frozenset()
        for name, node_gpus in snapshot.gpus.items():
            own = owned.get(name, empty)
            if len(own) >= len(node_gpus) or name in skip:  # every GPU held (a busy cluster): nothing to look at
                continue
            for g in node_gpus:
                if g.index in own or g.processes or g.mig_mode_current:
                    continue  # MIG: jobs hold slices, whose indices are not the GPU's (not judged here)
                util, mem = g.util_pct, g.memory_used_mib
                if not ((util is not None and util >= s.busy_util_pct) or (mem is not None and mem >= s.busy_mem_mib)):
                    continue
                node = nodes.get(name)
                if node is None or (node.slurm is None and node.k8s is None):
                    break  # no scheduler knows the node: nobody could hold its GPUs
                what = [f"util {util:.0f} %"] if util is not None else []
                if mem:
                    what.append(f"{mem / 1024:.1f} GiB in use")
                findings.setdefault(name, []).append(Finding(
                    severity=Severity.WARNING, object=f"gpu/{name}/{g.index}", code="gpu_busy_unowned",
                    message=f"GPU {g.index} busy ({', '.join(what)}) but no running job or pod holds it"))

    def _settle(self, idle_now: dict[tuple[str, str, int], tuple[_Owner, Gpu | None]], now: float, midnight: float,
                findings: dict[str, list[Finding]]) -> IdleReport:
        """Start, keep or end each GPU's idle spell; build the report."""
        s = self.settings
        since_map, weight = self._since, self._weight
        for key in [k for k in since_map if k not in idle_now]:  # spells that ended
            start = since_map.pop(key)
            w = weight.pop(key, 1)
            if now - start >= s.after_s:
                user, account = self._who.get(key[0], (None, None))
                tk = today_key(user, account)
                self._closed[tk] = self._closed.get(tk, 0.0) + w * max(0.0, now - max(start, midnight))
        for key in [k for k in weight if k not in idle_now]:
            del weight[key]
        groups: dict[str, list[tuple[tuple[str, str, int], float, Gpu | None]]] = {}
        owners: dict[str, _Owner] = {}
        watching = 0
        who: dict[str, tuple[str | None, str | None]] = {}
        for key, (owner, g) in idle_now.items():
            known = since_map.get(key)
            if known is None:
                # in the grace period after the start, the spell starts when the grace ends
                known = since_map[key] = max(now, (owner.start if owner.start is not None else now) + s.grace_s)
            start = known
            who[key[0]] = (owner.user, owner.account)
            if now - start < s.after_s:
                watching += weight.get(key, 1)
                continue
            groups.setdefault(key[0], []).append((key, start, g))
            owners[key[0]] = owner
        self._who = who
        allocations = []
        today = dict(self._closed)
        gpus_now = 0
        severity = Severity.INFO if s.severity == "info" else Severity.WARNING
        for okey, members in groups.items():
            owner = owners[okey]
            count = sum(weight.get(k, 1) for k, _, _ in members)
            gpus_now += count
            hours = sum(weight.get(k, 1) * (now - start) for k, start, _ in members) / 3600.0
            tk = today_key(owner.user, owner.account)
            today[tk] = today.get(tk, 0.0) + sum(weight.get(k, 1) * (now - max(start, midnight))
                                                 for k, start, _ in members)
            alloc = IdleAllocation(
                kind=owner.kind, id=owner.id, user=owner.user, account=owner.account,
                gpus=tuple(sorted((k[1], k[2]) for k, _, _ in members)), count=count, held=owner.held,
                since=min(start for _, start, _ in members), gpu_hours=hours,
                reason=idle_reason((g for _, _, g in members if g is not None), self.settings))
            allocations.append(alloc)
            _idle_findings(alloc, severity, now, findings)
        allocations.sort(key=lambda a: (-a.count, a.since, a.id))
        return IdleReport(time=now, allocations=tuple(allocations), gpus_now=gpus_now, watching=watching,
                          today={k: v / 3600.0 for k, v in today.items() if v > 0},
                          findings={n: tuple(fs) for n, fs in findings.items()})


def _idle_findings(alloc: IdleAllocation, severity: Severity, now: float, into: dict[str, list[Finding]]) -> None:
    """One finding per node of an idle allocation (``gpu_idle``)."""
    who = alloc.user or alloc.account or "?"
    what = f"job {alloc.id}" if alloc.kind == "job" else f"pod {alloc.id}"
    per: dict[str, list[int]] = {}
    for node, idx in alloc.gpus:
        per.setdefault(node, []).append(idx)
    for node, indices in per.items():
        named = (f"{alloc.count} GPUs" if UNKNOWN_INDEX in indices
                 else f"GPU{'s' if len(indices) > 1 else ''} {index_text(indices)}")
        into.setdefault(node, []).append(Finding(
            severity=severity, object=f"node/{node}", code="gpu_idle",
            message=f"{what} ({who}): {named} idle {duration_text(now - alloc.since)} ({alloc.reason}); "
                    f"{alloc.gpu_hours:.1f} GPU-h so far"))


def duration_text(seconds: float) -> str:
    """``45 min``, ``2.5 h``, ``3.0 d``."""
    if seconds < 3600:
        return f"{max(0, int(seconds // 60))} min"
    if seconds < 86_400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86_400:.1f} d"


def local_midnight(t: float) -> float:
    """The local midnight that started the day of ``t`` ("today" of GPU-hours idle today)."""
    lt = time.localtime(t)
    return time.mktime((lt.tm_year, lt.tm_mon, lt.tm_mday, 0, 0, 0, 0, 0, -1))


def _expand_all(hostlists: set[str]) -> set[str]:
    out: set[str] = set()
    for text in hostlists:
        try:
            out.update(expand(text))
        except HostlistError:
            continue
    return out

