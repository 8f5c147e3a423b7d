"""Node history: merge what each source remembers, say it in a line, rank the repeat offenders.

:func:`merge_events` is the one merge point: it takes a list of event sources (each an iterable
of :class:`NodeEvent` — slurmdbd's ``sacctmgr show event``, the audit log, the store's events,
Kubernetes cordons; health-check results are one more list) and returns one timeline, newest
first, with the same happening seen by two sources (hpctui drained a node: an audit record and a
slurmdbd event) kept once. Everything here is pure: no I/O, no clock (``now`` is passed).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from hpctui.model import ClusterSnapshot, Event
from hpctui.model.nodehistory import (
    CORDON,
    DOWN,
    DRAIN,
    HEALTH,
    ORIGIN_EVENTS,
    ORIGIN_K8S,
    ORIGIN_SLURM,
    REBOOT,
    RESUME,
    UNCORDON,
    AcctJob,
    NodeEvent,
    NodeRecord,
)

SAME_EVENT_S = 120.0  # two sources' records of one kind on one node this close together are one event
FAULT_KINDS = frozenset({DRAIN, DOWN, CORDON, HEALTH})  # what makes a node a repeat offender
RELEASE_KINDS = frozenset({RESUME, UNCORDON})
DAY = 86400.0
WEEK = 7 * DAY
_XID = re.compile(r"\bxid\s*[:#]?\s*(\d{1,3})\b", re.IGNORECASE)
_WORDS = {1: "once", 2: "twice"}


def cause(reason: str | None) -> str | None:
    """What a reason blames, to count alike drains together: ``Xid 79`` for any reason naming an
    Xid ("GPU fell off the bus (Xid 79)", "xid:79"), else the reason itself (at most 40 chars)."""
    if not reason:
        return None
    m = _XID.search(reason)
    if m:
        return f"Xid {int(m.group(1))}"
    text = reason.strip()
    return text[:40] if text else None


def merge_events(sources: Sequence[Iterable[NodeEvent]]) -> list[NodeEvent]:
    """One timeline from several sources, newest first. A record of the same node and kind within
    :data:`SAME_EVENT_S` of one from an earlier source is folded into the nearest such (each takes at
    most one record of each source): the earlier source's times win (list slurmdbd first), a
    missing user, reason or end is taken from the later one. Two records that both carry a reason
    fold only when the reasons agree (one may be a cut-off copy of the other): a drain slurmdbd never
    recorded must not lend its reason to the next one."""
    kept: list[NodeEvent] = []
    index: dict[tuple[str, str], list[int]] = {}
    for source in sources:
        added: list[tuple[tuple[str, str], int]] = []
        for ev in source:
            key = (ev.node, ev.kind)
            near = [i for i in index.get(key, ()) if abs(kept[i].time - ev.time) <= SAME_EVENT_S
                    and ev.origin not in kept[i].origin.split("+")  # a record takes one twin per source
                    and _same_reason(kept[i].reason, ev.reason)]
            twin = min(near, key=lambda i: abs(kept[i].time - ev.time)) if near else None
            if twin is None:
                kept.append(ev)
                added.append((key, len(kept) - 1))
                continue
            old = kept[twin]
            kept[twin] = NodeEvent(node=old.node, kind=old.kind, time=old.time, end=old.end if old.end is not None
                                   else ev.end, reason=old.reason or ev.reason, user=old.user or ev.user,
                                   state=old.state or ev.state,
                                   origin=f"{old.origin}+{ev.origin}")
        for key, i in added:  # a source's own records never fold into each other
            index.setdefault(key, []).append(i)
    kept.sort(key=lambda e: (-e.time, e.node, e.kind))
    return kept


def _same_reason(a: str | None, b: str | None) -> bool:
    """Both records may be of one happening: a reason is missing, or one reason begins the other
    (slurmctld and slurmdbd keep reasons whole; a display may have cut one), compared without case
    and surrounding blanks."""
    if not a or not b:
        return True
    x, y = a.strip().casefold(), b.strip().casefold()
    return x.startswith(y) or y.startswith(x)


def in_window(events: Iterable[NodeEvent], start: float, end: float, node: str | None = None) -> list[NodeEvent]:
    """The events of ``node`` (all nodes: None) that began in [start, end]."""
    return [e for e in events if start <= e.time <= end and (node is None or e.node == node)]


def _times(n: int) -> str:
    return _WORDS.get(n, f"{n}×")


def _span(seconds: float) -> str:
    days = seconds / DAY
    if abs(days - 7) < 0.01:
        return "this week"
    if days >= 1:
        return f"in {days:g} day{'' if days == 1 else 's'}"
    return f"in {seconds / 3600:g} h"


def summary(record: NodeRecord) -> str:
    """The node's history in one line: ``drained 5× in 30 days, 3× Xid 79; resumed by alice twice;
    2 jobs died there`` (empty pieces left out; "nothing recorded" when all are)."""
    span = _span(record.end - record.start)
    parts: list[str] = []
    faults = [e for e in record.events if e.kind in FAULT_KINDS]
    if faults:
        kinds = Counter(e.kind for e in faults)
        what = " + ".join(f"{_verb(k)} {_times(n)}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
        causes = Counter(c for c in (cause(e.reason) for e in faults) if c)
        top = [f"{n}× {c}" for c, n in causes.most_common(2) if n > 1]
        parts.append(f"{what} {span}" + (", " + ", ".join(top) if top else ""))
    releases = [e for e in record.events if e.kind in RELEASE_KINDS]
    if releases:
        by_user = Counter(e.user or "?" for e in releases)
        who = ", ".join(f"by {u} {_times(n)}" for u, n in by_user.most_common(3))
        verb = "resumed" if all(e.kind == RESUME for e in releases) else "resumed/uncordoned"
        parts.append(f"{verb} {who}")
    if record.dead_jobs:
        n = len(record.dead_jobs)
        parts.append(f"{n} job{'s' if n != 1 else ''} died there")
    return "; ".join(parts) if parts else f"nothing recorded {span}"


def _verb(kind: str) -> str:
    return {DRAIN: "drained", DOWN: "down", CORDON: "cordoned", HEALTH: "failed a health check"}.get(kind, kind)


@dataclass(frozen=True, slots=True)
class Offender:
    """One node of the repeat-offender ranking: its fault events in the window by kind and by cause."""

    node: str
    faults: int  # drains + downs + cordons + failed health checks
    by_kind: Mapping[str, int]
    causes: Mapping[str, int]
    releases: int  # resumes + uncordons
    dead_jobs: int
    last: float  # the newest fault

    @property
    def kinds_text(self) -> str:
        return ", ".join(f"{k} {n}" for k, n in sorted(self.by_kind.items(), key=lambda kv: (-kv[1], kv[0])))

    @property
    def causes_text(self) -> str:
        return ", ".join(f"{n}× {c}" for c, n in sorted(self.causes.items(), key=lambda kv: (-kv[1], kv[0]))[:3])


def rank_offenders(events: Iterable[NodeEvent], start: float, end: float, *, kind: str | None = None,
                   dead_jobs: Mapping[str, int] | None = None, limit: int = 50) -> list[Offender]:
    """Nodes by fault events in [start, end] (of one ``kind`` only, if given), most first, then the
    most recent first; nodes with no fault are left out. ``dead_jobs``: jobs that died per node."""
    per: dict[str, list[NodeEvent]] = {}
    for e in in_window(events, start, end):
        per.setdefault(e.node, []).append(e)
    out: list[Offender] = []
    for node, evs in per.items():
        faults = [e for e in evs if e.kind in FAULT_KINDS and (kind is None or e.kind == kind)]
        if not faults:
            continue
        out.append(Offender(
            node=node, faults=len(faults), by_kind=dict(Counter(e.kind for e in faults)),
            causes=dict(Counter(c for c in (cause(e.reason) for e in faults) if c)),
            releases=sum(1 for e in evs if e.kind in RELEASE_KINDS), dead_jobs=(dead_jobs or {}).get(node, 0),
            last=max(e.time for e in faults)))
    out.sort(key=lambda o: (-o.faults, -o.last, o.node))
    return out[:limit]


def release_advice(node: str, events: Iterable[NodeEvent], now: float, *, window_s: float = WEEK,
                   min_repeats: int = 2) -> str | None:
    """What a resume/uncordon preview warns about ``node`` from its history, or None:
    ``gpu01: resumed twice this week after Xid 79 — consider RMA`` when it was released at least
    ``min_repeats`` times after faults of one cause in the window; ``gpu01: drained 3× this week
    (2× Xid 79) — it keeps failing`` when it faulted that often without such releases."""
    recent = sorted(in_window(events, now - window_s, now, node), key=lambda e: e.time)
    span = _span(window_s)
    faults = [e for e in recent if e.kind in FAULT_KINDS]
    if len(faults) < min_repeats and not any(e.kind in RELEASE_KINDS for e in recent):
        return None
    after: Counter[str] = Counter()  # releases by the cause of the fault before them
    last_cause: str | None = None
    for e in recent:
        if e.kind in FAULT_KINDS:
            last_cause = cause(e.reason) or _verb(e.kind)
        elif e.kind in RELEASE_KINDS and last_cause is not None:
            after[last_cause] += 1
    if after:
        top, n = after.most_common(1)[0]
        if n >= min_repeats:
            return f"{node}: resumed {_times(n)} {span} after {top} — consider RMA"
    if len(faults) >= min_repeats:
        causes = Counter(c for c in (cause(e.reason) for e in faults) if c)
        why = ", ".join(f"{k}× {c}" for c, k in causes.most_common(2))
        return f"{node}: drained/down {_times(len(faults))} {span}" + (f" ({why})" if why else "") + " — it keeps failing"
    return None


# -- the store's events as node events -----------------------------------------------------------
_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
_K8S_KINDS = (("NodeNotSchedulable", CORDON), ("NodeSchedulable", UNCORDON), ("Rebooted", REBOOT))
_SLURM_KINDS = (("drained", DRAIN), ("drain", DRAIN), ("down", DOWN), ("resumed", RESUME), ("resume", RESUME))


def stored_node_events(events: Iterable[Event]) -> list[NodeEvent]:
    """The store's timeline events that are node events: Kubernetes ``NodeNotSchedulable`` /
    ``NodeSchedulable`` (the kubelet's record of a cordon/uncordon), ``Rebooted``, and Slurm
    events saying a node was drained, down or resumed ("drained by root: Xid 79")."""
    out: list[NodeEvent] = []
    for ev in events:
        if not ev.object.startswith("node/"):
            continue
        node = ev.object.removeprefix("node/")
        kind: str | None = None
        if ev.source == "k8s":
            kind = next((k for word, k in _K8S_KINDS if ev.message.startswith(word)), None)
        elif ev.source == "slurm":
            low = ev.message.lower()
            kind = next((k for word, k in _SLURM_KINDS if low.startswith(word)), None)
        if kind is None:
            continue
        user, reason = _who_why(ev.message)
        out.append(NodeEvent(node=node, kind=kind, time=ev.time, reason=reason, user=user,
                             origin=ORIGIN_EVENTS))
    return out


def current_node_events(snapshot: ClusterSnapshot) -> list[NodeEvent]:
    """What the current state says happened: a Slurm node drained or down now (its reason, who set
    it and when: ``reason_time``) and a Kubernetes node cordoned now (the unschedulable taint's
    ``timeAdded``, where the API server recorded one). Without slurmdbd this is the only Slurm record;
    with it, it folds into slurmdbd's event of the same start."""
    out: list[NodeEvent] = []
    for node in snapshot.nodes.values():
        info = node.slurm
        if info is not None and info.reason_time is not None and (
                "DRAIN" in info.flags or info.base_state.upper() in ("DOWN", "FAIL")):
            kind = DOWN if info.base_state.upper() == "DOWN" else DRAIN
            out.append(NodeEvent(node=node.name, kind=kind, time=info.reason_time, reason=info.reason,
                                 user=info.reason_user, state=info.display_state, origin=ORIGIN_SLURM))
        k8s = node.k8s
        if k8s is not None and k8s.unschedulable:
            when = next((t.time_added for t in k8s.taints if t.key == _UNSCHEDULABLE and t.time_added), None)
            if when is not None:
                out.append(NodeEvent(node=node.name, kind=CORDON, time=when, origin=ORIGIN_K8S,
                                     reason="cordoned (unschedulable)"))
    return out


def _who_why(message: str) -> tuple[str | None, str | None]:
    """``drained by root: Xid 79`` → ("root", "Xid 79"); ``NodeSchedulable: ...`` → (None, "...")."""
    head, sep, tail = message.partition(": ")
    if not sep:
        return None, None
    m = re.search(r"\bby (\S+)$", head)
    return (m.group(1) if m else None), tail.strip() or None


def dead_job_counts(records: Iterable[NodeRecord]) -> dict[str, int]:
    """Jobs that died per node (for the ranking)."""
    return {r.node: len(r.dead_jobs) for r in records}


# -- one text for every front end (the TUI, ``hpctui history``, the incident report) --------------
def _utc(t: float | None) -> str:
    import time

    return "-" if t is None else time.strftime("%Y-%m-%d %H:%M", time.gmtime(t)) + "Z"


def exit_text(job: AcctJob) -> str:
    """``exit 3`` / ``signal 9`` / ``-``: the decoded ExitCode, as the job detail says it."""
    if job.signal:
        return f"signal {job.signal}"
    return "-" if job.exit_code is None else f"exit {job.exit_code}"


def event_line(e: NodeEvent) -> str:
    """``2026-12-02 02:59Z  drain   root     Xid 79 GPU fell off the bus  (until 03:00Z; slurmdbd)``."""
    until = "" if e.end is None else f"until {_utc(e.end)}; "
    return f"{_utc(e.time)}  {e.kind:<8} {(e.user or '-'):<10} {e.reason or '-'}  ({until}{e.origin})"


def job_line(j: AcctJob) -> str:
    """``2026-12-02 03:00Z  job 2 TIMEOUT exit 0  root/ml  gpu01  2 GPU  timeout``."""
    gpus = f"  {j.gpus} GPU" if j.gpus else ""
    who = "/".join(x for x in (j.user, j.account) if x) or "-"
    return (f"{_utc(j.end)}  job {j.job_id} {j.state} {exit_text(j)}  {who}  {j.nodes or '-'}{gpus}"
            f"  {j.name or ''}").rstrip()


def record_lines(record: NodeRecord) -> list[str]:
    """A node's history as plain lines: the summary, the events (newest first), the jobs that died."""
    out = [f"{record.node}: {summary(record)}", f"window {_utc(record.start)} .. {_utc(record.end)}"]
    out += [f"  {event_line(e)}" for e in record.events] or ["  no drain, down, resume or cordon recorded"]
    if record.dead_jobs:
        out.append(f"jobs that died on {record.node} ({len(record.dead_jobs)}):")
        out += [f"  {job_line(j)}" for j in record.dead_jobs]
    out += [f"! {p}" for p in record.problems]
    return out


def offender_lines(offenders: Sequence[Offender]) -> list[str]:
    """The ranking as plain lines: node, faults, by kind, by cause, jobs that died, releases, the newest fault."""
    if not offenders:
        return ["no node was drained, down or cordoned in the window"]
    out = [f"{'NODE':<14} {'FAULTS':>6}  {'BY KIND':<22} {'CAUSES':<36} {'DIED':>4} {'RELEASED':>8}  LAST"]
    out += [f"{o.node:<14} {o.faults:>6}  {o.kinds_text:<22} {o.causes_text:<36} {o.dead_jobs:>4} {o.releases:>8}"
            f"  {_utc(o.last)}" for o in offenders]
    return out
