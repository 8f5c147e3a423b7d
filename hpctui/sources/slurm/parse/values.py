"""Small value normalizers shared by the JSON, text and pyslurm mappers.

Slurm spells "not available" in many ways (0 epochs, NO_VAL/INFINITE sentinels,
``{"set": false}`` wrappers, "(null)", "N/A", "Unknown", empty strings); the model
spells it ``None``. Everything funnels through these helpers so that rule lives once.
"""

from __future__ import annotations

import datetime as _dt
import re

import msgspec

from hpctui.base.sanitize import clean_text

# Slurm's 32-bit sentinels: NO_VAL (0xfffffffe) and INFINITE (0xffffffff); 16/64-bit too.
_SENTINELS = frozenset({0xFFFE, 0xFFFF, 0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFE, 0xFFFFFFFFFFFFFFFF})
_NULL_TEXT = frozenset({"", "(null)", "N/A", "n/a", "None", "none", "Unknown", "UNKNOWN", "NONE"})


class Num(msgspec.Struct, kw_only=True):
    """The ``{"set": bool, "infinite": bool, "number": n}`` wrapper of REST v0.0.39+."""

    set: bool = True
    infinite: bool = False
    number: int | float | None = None


IntLike = int | Num | None
"""A JSON number that is a plain int in v0.0.36–38 and a :class:`Num` wrapper later."""


def num(value: int | float | Num | None) -> int | None:
    """Plain int from an int or a number wrapper; unset, infinite and sentinels → None."""
    if value is None:
        return None
    if isinstance(value, Num):
        if not value.set or value.infinite or value.number is None:
            return None
        value = value.number
    iv = int(value)
    return None if iv in _SENTINELS or iv < 0 else iv


def epoch(value: int | float | Num | None) -> float | None:
    """Epoch seconds; 0 and sentinels mean "not known" in every Slurm version."""
    iv = num(value)
    return None if not iv else float(iv)


def minutes(value: int | float | Num | None) -> int | None:
    """A time limit in minutes; 0, NO_VAL and INFINITE → None (no finite limit known)."""
    iv = num(value)
    return iv if iv else None


def text(value: str | None) -> str | None:
    """A free-text field; Slurm's placeholders for "nothing" → None.

    The field boundary of every parser: control/format characters and escape sequences
    are replaced here (hpctui.base.sanitize), so no cluster string reaches the model raw.
    """
    if value is None:
        return None
    value = value.strip()
    return None if value in _NULL_TEXT else clean_text(value)


def to_int(value: str | None) -> int | None:
    """An integer from CLI text; placeholders and garbage → None (never 0)."""
    t = text(value)
    if t is None:
        return None
    try:
        iv = int(t)
    except ValueError:
        return None
    return None if iv in _SENTINELS else iv


def to_float(value: str | None) -> float | None:
    t = text(value)
    if t is None:
        return None
    try:
        return float(t)
    except ValueError:
        return None


def split_list(value: str | list[str] | None) -> tuple[str, ...]:
    """Comma-separated string (≤ v0.0.38) or JSON list (v0.0.39+) → tuple of names."""
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else value
    return tuple(clean_text(s.strip()) for s in items if s and s.strip() and s.strip() not in _NULL_TEXT)


def parse_cli_time(value: str | None) -> float | None:
    """``2026-11-29T17:12:33`` as printed by scontrol/squeue/sinfo (local time) → epoch."""
    t = text(value)
    if t is None:
        return None
    try:
        return _dt.datetime.fromisoformat(t).timestamp()
    except ValueError:
        return None


_DURATION = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+)(?::(\d+))?$")


def parse_duration_min(value: str | None) -> int | None:
    """Slurm durations (``1-00:00:00``, ``12:00:00``, ``10:00``, ``30``) → minutes.

    Slurm's rule: ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``.
    UNLIMITED/INFINITE/Partition_Limit/N/A → None.
    """
    t = text(value)
    if t is None or t.upper() in ("UNLIMITED", "INFINITE", "PARTITION_LIMIT", "NOT_SET"):
        return None
    days = 0
    if "-" in t:
        d, _, t = t.partition("-")
        if not d.isdigit():
            return None
        days = int(d)
        parts = t.split(":")
        if not all(p.isdigit() for p in parts) or len(parts) > 3:
            return None
        h, m = ([*parts, "0", "0"])[:2]
        total = days * 1440 + int(h) * 60 + int(m)
        return total or None
    parts = t.split(":")
    if not all(p.isdigit() for p in parts):
        return None
    if len(parts) == 1:
        total = int(parts[0])
    elif len(parts) == 2:
        total = int(parts[0])  # MM:SS — seconds are dropped
    elif len(parts) == 3:
        total = int(parts[0]) * 60 + int(parts[1])
    else:
        return None
    return total or None
