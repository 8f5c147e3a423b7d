"""Parallel file system targets and quotas across nodes: one finding per Lustre OST/MDT or BeeGFS target that
is full, inactive, unreachable or degraded, naming the nodes that see it so (never one finding per node), and
one per user at or over quota while they have running jobs. Pure functions of the snapshot (FACTS §13)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from itertools import chain
from operator import itemgetter

from hpctui.findings.health import Finding, Thresholds
from hpctui.model import ClusterSnapshot, Mount, Severity
from hpctui.model.hostlist import collect
from hpctui.model.mount import FsTarget, QuotaUsage, TargetState

_BAD = {TargetState.INACTIVE: ("fs_target_inactive", "inactive"),
        TargetState.ERROR: ("fs_target_unreachable", "unreachable"),
        TargetState.OFFLINE: ("fs_target_unreachable", "offline"),
        TargetState.DEGRADED: ("fs_target_degraded", "degraded")}
RUNNING_STATES = frozenset({"RUNNING", "COMPLETING", "SUSPENDED", "CONFIGURING"})  # a job whose writes may fail
_RUNNING = RUNNING_STATES


class _Seen:
    """What the nodes say about one target that is full or not active somewhere: the fullest usage, and who
    sees it in which bad state."""

    __slots__ = ("bad", "detail", "mount", "target", "used_pct")

    def __init__(self, target: FsTarget, mount: str) -> None:
        self.target, self.mount = target, mount
        self.used_pct: float | None = None
        self.bad: dict[TargetState, set[str]] = {}
        self.detail: dict[TargetState, str] = {}

    def add(self, node: str, t: FsTarget) -> None:
        if t.used_pct is not None and (self.used_pct is None or t.used_pct > self.used_pct):
            self.used_pct = t.used_pct
        if t.state is not TargetState.ACTIVE:
            self.bad.setdefault(t.state, set()).add(node)
            if t.detail:
                self.detail.setdefault(t.state, t.detail)


# One node's targets tuple reduced to what the findings read: its file systems, and the targets that are full
# (>= the warning threshold) or not active. Kept by the tuple's id (the tuple itself is held, so the id
# stays its own): the probe keeps a node's tuple while its targets are unchanged, the demo shares one.
Summary = tuple[tuple[FsTarget, ...], frozenset[str], tuple[FsTarget, ...]]


def _summary(tg: tuple[FsTarget, ...], warn_pct: float) -> Summary:
    notable = tuple(t for t in tg if t.state is not TargetState.ACTIVE
                    or (t.used_pct is not None and t.used_pct >= warn_pct))
    return tg, frozenset(t.fs for t in tg), notable


# One node's part of the targets' picture: (its mounts tuple, the file system of every target listed,
# mount by mount, and its notable targets with the mount point they were read under). Kept per node
# while the node's mounts tuple is the same object: at 16k nodes about one in ten changes a poll.
_NodeFs = tuple[tuple[Mount, ...], tuple[str, ...], tuple[tuple[str, FsTarget], ...]]


class FsCache:
    """What :func:`target_findings` keeps between snapshots (one per thresholds): each node's part,
    and the targets tuples already reduced (:data:`Summary`, by id; the tuple is held, so the id is its own)."""

    def __init__(self) -> None:
        self.nodes: dict[str, _NodeFs] = {}
        self.summaries: dict[int, Summary] = {}


def _node_fs(ms: tuple[Mount, ...], warn_pct: float, old: dict[int, Summary], now: dict[int, Summary]) -> _NodeFs:
    fss: list[str] = []
    notable: list[tuple[str, FsTarget]] = []
    for m in ms:
        tg = m.targets
        if not tg:
            continue
        key = id(tg)
        summ = now.get(key) or old.get(key)
        if summ is None or summ[0] is not tg:
            summ = _summary(tg, warn_pct)
        now[key] = summ
        fss.extend(summ[1])
        notable.extend((m.target, t) for t in summ[2])
    return ms, tuple(fss), tuple(notable)


def _collect(mounts: Mapping[str, tuple[Mount, ...]], warn_pct: float, cache: FsCache | None
             ) -> tuple[dict[tuple[str, str], _Seen], dict[str, int]]:
    """The notable targets with who sees what, and how many nodes list each file system (a node
    counts once per mount listing it). A node whose mounts tuple is unchanged costs one identity
    test; the counting is done in C (at 16k nodes: ~5 ms a poll instead of ~20)."""
    cache = cache if cache is not None else FsCache()
    old: dict[int, Summary] = cache.summaries
    now: dict[int, Summary] = {}
    get = cache.nodes.get
    nodes = {node: part if (part := get(node)) is not None and part[0] is ms else _node_fs(ms, warn_pct, old, now)
             for node, ms in mounts.items()}
    cache.nodes = nodes
    cache.summaries = {**old, **now} if len(old) < 4 * len(now) + 1024 else now  # bounded: a few per node
    per_fs: dict[str, int] = Counter(chain.from_iterable(map(itemgetter(1), nodes.values())))
    seen: dict[tuple[str, str], _Seen] = {}
    for node, part in nodes.items():
        if not part[2]:
            continue
        for target, t in part[2]:
            s = seen.get((t.fs, t.name))
            if s is None:
                s = seen[(t.fs, t.name)] = _Seen(t, target)
            s.add(node, t)
    return seen, per_fs


def _nodes_text(nodes: set[str], of: int) -> str:
    names = collect(sorted(nodes))
    return f"{len(nodes)} of {of} nodes: {names}" if len(names) <= 120 else f"{len(nodes)} of {of} nodes"


def target_findings(snapshot: ClusterSnapshot, t: Thresholds,
                    cache: FsCache | None = None) -> dict[str, tuple[Finding, ...]]:
    """Findings per file system (the key: Lustre fsname or "beegfs"); objects ``fs/<fs>/<target>``.

    A target at least ``fs_target_warn_pct`` full is a warning, ``fs_target_crit_pct`` an error (the fullest
    view wins: usage is the server's, every node reads the same). Inactive / unreachable / offline from some
    nodes is an error naming those nodes (of the nodes that list the file system); degraded is a warning.
    ``cache`` (kept by the caller between snapshots with the same thresholds) spares re-reading unchanged tuples."""
    out: dict[str, list[Finding]] = {}
    seen, per_fs = _collect(snapshot.mounts, t.fs_target_warn_pct, cache)
    for (fs, name), s in sorted(seen.items()):
        obj = f"fs/{fs}/{name}"
        where = f"{s.target.kind} {name} ({s.mount})" if s.mount else f"{s.target.kind} {name}"
        if s.used_pct is not None and s.used_pct >= t.fs_target_warn_pct:
            sev = Severity.ERROR if s.used_pct >= t.fs_target_crit_pct else Severity.WARNING
            out.setdefault(fs, []).append(Finding(severity=sev, object=obj, code="fs_target_full",
                                                  message=f"{where} {s.used_pct:.0f}% full"))
        for state, nodes in sorted(s.bad.items()):
            code, word = _BAD[state]
            sev = Severity.WARNING if state is TargetState.DEGRADED else Severity.ERROR
            detail = s.detail.get(state)
            why = f" ({detail})" if detail and detail.lower() != word and not detail.lower().startswith(word) else ""
            out.setdefault(fs, []).append(Finding(
                severity=sev, object=obj, code=code,
                message=f"{where} {word}{why} from {_nodes_text(nodes, per_fs.get(fs, len(nodes)))}"))
    return {fs: tuple(sorted(fs_, key=lambda f: f.severity, reverse=True)) for fs, fs_ in out.items()}


def quota_findings(quotas: Iterable[QuotaUsage], jobs_by_user: Mapping[str, int]) -> dict[str, tuple[Finding, ...]]:
    """A user at or over quota (``over``: lfs's ``*``, or usage at the hard limit) who has running jobs:
    an error (their checkpoints will fail); keyed ``user/<name>``, object ``quota/<user>/<filesystem>``."""
    out: dict[str, list[Finding]] = {}
    for q in quotas:
        running = jobs_by_user.get(q.user, 0)
        if not q.over or not running:
            continue
        pct = q.used_pct
        usage = f" at {pct:.0f}% of its limit" if pct is not None else ""
        out.setdefault(f"user/{q.user}", []).append(Finding(
            severity=Severity.ERROR, object=f"quota/{q.user}/{q.filesystem}", code="quota_over",
            message=f"user {q.user} over quota on {q.filesystem}{usage} with {running} running job(s)"))
    return {k: tuple(v) for k, v in out.items()}


def running_jobs_by_user(snapshot: ClusterSnapshot) -> dict[str, int]:
    """How many running jobs each user has (Slurm jobs of the snapshot)."""
    out: dict[str, int] = {}
    for j in snapshot.jobs:
        if j.user and j.state in _RUNNING:
            out[j.user] = out.get(j.user, 0) + 1
    return out
