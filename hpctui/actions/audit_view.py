"""The audit trail read back for people: one entry per action (intent + outcome joined by id),
its result (ok / failed / interrupted / refused), and a small filter language.

``user:alice action:drain target:gpu0012 since:1h result:failed`` plus free words; every token
must match. The audit file is input like any other: every string passes ``clean_text`` here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hpctui.actions import audit
from hpctui.base.sanitize import clean_text
from hpctui.model.hostlist import HostlistError, expand

RESULTS = ("ok", "failed", "interrupted", "refused")
MESSAGE_LIMIT = 400  # characters of one target's output shown in the full record
TAIL_BYTES = audit.TAIL_BYTES  # the view reads at most the newest 4 MB of the audit file
MAX_RECORDS = audit.TAIL_RECORDS  # and at most this many records of them


def _s(value: object) -> str:
    return clean_text(value if isinstance(value, str) else str(value))


@dataclass(frozen=True, slots=True)
class TargetOutcome:
    target: str
    ok: bool
    message: str


@dataclass(frozen=True, slots=True)
class AuditEntry:
    id: str | None
    time: float
    finished: float | None
    cluster: str
    user: str
    action: str
    source: str
    targets: tuple[str, ...]
    params: dict[str, str]
    commands: tuple[str, ...]
    result: str  # one of RESULTS
    refused: str | None = None
    outcomes: tuple[TargetOutcome, ...] = ()
    extra: dict[str, str] = field(default_factory=dict)  # uid, sudo_user, logname, ...: scalars
    # Structured parts of the record (a hybrid action's ``steps``, a previous state, …): lists,
    # dicts, strings, numbers, booleans, every string sanitised; the record view formats them.
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return self.id or f"{self.time}|{self.action}|{','.join(self.targets)}"

    @property
    def reason(self) -> str | None:
        return self.params.get("reason") or None

    @property
    def failed(self) -> tuple[TargetOutcome, ...]:
        return tuple(o for o in self.outcomes if not o.ok)


_KNOWN = {"phase", "id", "time", "finished", "cluster", "user", "action", "source", "targets", "params",
          "commands", "refused", "results"}


def _entry(rec: Mapping[str, Any], intent: Mapping[str, Any] | None) -> AuditEntry | None:
    base = rec if rec else intent
    if base is None:
        return None
    t = base.get("time")
    if not isinstance(t, (int, float)):
        return None
    targets = base.get("targets") or []
    params = base.get("params") or {}
    commands = base.get("commands") or []
    if not isinstance(targets, list) or not isinstance(params, dict) or not isinstance(commands, list):
        return None
    outcome = rec if rec.get("phase") != "intent" else None
    outcomes: list[TargetOutcome] = []
    refused = None
    if outcome is None:
        result = "interrupted"  # an intent with no outcome: the process died (or still runs) mid-action
    else:
        raw = outcome.get("results") or []
        for r in raw if isinstance(raw, list) else ():
            if isinstance(r, dict):
                outcomes.append(TargetOutcome(_s(r.get("target", "?")), bool(r.get("ok")), _s(r.get("message", ""))))
        refused = _s(outcome["refused"]) if outcome.get("refused") else None
        failed = [o for o in outcomes if not o.ok]
        if refused:
            result = "refused"
        elif failed and all(o.message.startswith("interrupted:") for o in failed):
            result = "interrupted"  # the executor was cancelled mid-action: outcome unknown
        else:
            result = "failed" if failed else "ok"
    finished = outcome.get("finished") if outcome is not None else None
    return AuditEntry(
        id=_s(base["id"]) if base.get("id") else None, time=float(t),
        finished=float(finished) if isinstance(finished, (int, float)) else None,
        cluster=_s(base.get("cluster", "")), user=_s(base.get("user", "?")), action=_s(base.get("action", "?")),
        source=_s(base.get("source", "")), targets=tuple(_s(x) for x in targets),
        params={_s(k): _s(v) for k, v in params.items()}, commands=tuple(_s(c) for c in commands),
        result=result, refused=refused, outcomes=tuple(outcomes),
        extra={_s(k): _s(v) for k, v in base.items() if k not in _KNOWN and not isinstance(v, (list, dict))},
        details={_s(k): _clean_tree(v) for k, v in _structured(base, outcome)},
    )


def _structured(base: Mapping[str, Any], outcome: Mapping[str, Any] | None) -> list[tuple[str, Any]]:
    """The record's list and dict fields beyond the known ones (the outcome's win: its steps
    carry results, the intent's only the plan)."""
    merged = {k: v for k, v in base.items() if k not in _KNOWN and isinstance(v, (list, dict))}
    if outcome is not None and outcome is not base:
        merged.update((k, v) for k, v in outcome.items() if k not in _KNOWN and isinstance(v, (list, dict)))
    return sorted(merged.items())


MAX_DETAIL_DEPTH = 6
MAX_DETAIL_ITEMS = 200


def _clean_tree(value: Any, depth: int = 0) -> Any:
    """A record's nested value as plain builtins with every string sanitised (bounded in depth
    and length: a hostile or huge record costs a "…", not the view)."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        return clean_text(value)
    if depth >= MAX_DETAIL_DEPTH:
        return "…"
    if isinstance(value, dict):
        items = list(value.items())[:MAX_DETAIL_ITEMS]
        return {_s(k): _clean_tree(v, depth + 1) for k, v in items}
    if isinstance(value, list):
        return [_clean_tree(v, depth + 1) for v in value[:MAX_DETAIL_ITEMS]]
    return _s(value)


def audit_entries(records: Iterable[Mapping[str, Any]], cluster: str | None = None) -> list[AuditEntry]:
    """Records (``AuditLog.read(intents=True)``, in file order) → entries, newest first.

    An outcome replaces the intent with the same id; an intent left alone is *interrupted*;
    a record without an id (a refusal) stands alone. Unreadable records are skipped."""
    intents: dict[str, Mapping[str, Any]] = {}
    order: list[tuple[str | None, Mapping[str, Any]]] = []
    outcomes: dict[str, Mapping[str, Any]] = {}
    for rec in records:
        if not isinstance(rec, Mapping) or (cluster is not None and rec.get("cluster") != cluster):
            continue
        rid = rec.get("id")
        rid = str(rid) if rid else None
        if rec.get("phase") == "intent" and rid:
            intents[rid] = rec
            order.append((rid, rec))
        elif rid and rid in intents:
            outcomes[rid] = rec
        else:
            order.append((None, rec))
    out = []
    for rid, rec in order:
        try:
            entry = _entry(outcomes.get(rid, rec) if rid else rec, intents.get(rid) if rid else None)
        except (AttributeError, TypeError, ValueError):
            continue
        if entry is not None:
            out.append(entry)
    out.reverse()  # newest first; equal times (a coarse clock) keep the later record on top
    out.sort(key=lambda e: -e.time)
    return out


# -- filter ------------------------------------------------------------------------------------
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhdw]?)$")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
FIELDS = ("user", "action", "target", "since", "result")


def parse_duration_s(text: str) -> float | None:
    m = _DURATION.match(text.strip().lower())
    return None if m is None else float(m.group(1)) * _UNIT_S[m.group(2)]


def _target_names(target: str) -> frozenset[str]:
    try:
        return frozenset(expand(target)) if "[" in target else frozenset({target})
    except HostlistError:
        return frozenset({target})


@dataclass(frozen=True, slots=True)
class AuditFilter:
    user: str | None = None
    action: str | None = None
    targets: frozenset[str] | None = None
    since_s: float | None = None
    result: str | None = None
    words: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> AuditFilter:
        user = action = result = None
        targets: frozenset[str] | None = None
        since: float | None = None
        words: list[str] = []
        errors: list[str] = []
        for token in text.split():
            name, sep, value = token.partition(":")
            name = name.lower()
            if not sep or name not in FIELDS:
                words.append(token.lower())
                continue
            if not value:
                errors.append(f"{name}: needs a value")
            elif name == "user":
                user = value.lower()
            elif name == "action":
                action = value.lower()
            elif name == "result":
                if value.lower() not in RESULTS:
                    errors.append(f"result: one of {', '.join(RESULTS)}")
                else:
                    result = value.lower()
            elif name == "target":
                targets = _target_names(value)
            else:
                since = parse_duration_s(value)
                if since is None:
                    errors.append(f"since:{value}: not a duration (30m, 1h, 2d)")
        return cls(user, action, targets, since, result, tuple(words), tuple(errors))

    def match(self, entry: AuditEntry, now: float) -> bool:
        if self.user is not None and self.user not in entry.user.lower():
            return False
        if self.action is not None and self.action not in entry.action.lower():
            return False
        if self.result is not None and entry.result != self.result:
            return False
        if self.since_s is not None and entry.time < now - self.since_s:
            return False
        if self.targets is not None:
            names: set[str] = set()
            for t in entry.targets:
                names |= _target_names(t)
            if self.targets.isdisjoint(names) and not any(w in t for w in self.targets for t in entry.targets):
                return False
        if self.words:
            hay = " ".join((entry.user, entry.action, *entry.targets, entry.reason or "", entry.result,
                            entry.refused or "")).lower()
            if not all(w in hay for w in self.words):
                return False
        return True


def truncate(text: str, limit: int = MESSAGE_LIMIT) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit} more characters)"


# -- reading the file --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AuditTail:
    """The newest records of an audit file, as entries (what the audit view shows)."""

    stamp: tuple[int, int]  # (size, mtime_ns) of the file when read; (0, 0): no file yet
    entries: list[AuditEntry]
    records: int  # records parsed
    cut: bool  # older records were left out (the file is bigger than the tail read)
    skipped: int = 0  # lines that were not a JSON object (torn by a crash, edited)


def read_tail(path: os.PathLike[str] | str, *, tail_bytes: int = TAIL_BYTES,
              max_records: int = MAX_RECORDS) -> tuple[tuple[int, int], list[dict[str, Any]], bool]:
    """``(stamp, records, cut)``: :func:`hpctui.actions.audit.read_tail` (the newest
    ``tail_bytes``, across rotated files, bad lines skipped) without the count of skipped lines."""
    got = audit.read_tail(path, tail_bytes=tail_bytes, max_records=max_records)
    return got.stamp, got.records, got.cut


def load_tail(path: os.PathLike[str] | str, cluster: str | None, stamp: tuple[int, int] | None = None, *,
              tail_bytes: int = TAIL_BYTES, max_records: int = MAX_RECORDS) -> AuditTail | None:
    """The newest entries of the audit file at ``path``; None when its (size, mtime) is still
    ``stamp`` (nothing new). Blocking file I/O: call it in a thread (the file may be on NFS)."""
    try:
        st = Path(path).stat()
    except FileNotFoundError:
        return None if stamp == (0, 0) else AuditTail((0, 0), [], 0, False)
    if stamp == (st.st_size, st.st_mtime_ns):
        return None
    got = audit.read_tail(path, tail_bytes=tail_bytes, max_records=max_records)
    return AuditTail(got.stamp, audit_entries(got.records, cluster), len(got.records), got.cut, got.skipped)
