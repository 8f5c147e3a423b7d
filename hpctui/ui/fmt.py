"""Display formatting shared by the panes: N/A for missing values, ages, UTC times."""

from __future__ import annotations

import time

from hpctui.model import Severity

NA_TEXT = "N/A"
# Text styles for severities (the sev-* variables are tuned as cell backgrounds).
SEVERITY_STYLE = {
    Severity.OK: "$success", Severity.INFO: "$primary", Severity.WARNING: "$warning",
    Severity.ERROR: "$error", Severity.CRITICAL: "$sev-critical",
}
SEVERITY_LABEL = {
    Severity.OK: "ok", Severity.INFO: "info", Severity.WARNING: "warn",
    Severity.ERROR: "ERROR", Severity.CRITICAL: "CRIT",
}


def num(value: float | int | None, fmt: str = "{:.0f}") -> str:
    return NA_TEXT if value is None else fmt.format(value)


def pair(a: float | int | None, b: float | int | None, fmt: str = "{:.0f}") -> str:
    """``a/b`` with N/A for either side; "N/A" alone when both are missing."""
    if a is None and b is None:
        return NA_TEXT
    return f"{num(a, fmt)}/{num(b, fmt)}"


def yes_no(value: bool | None) -> str:
    return NA_TEXT if value is None else ("yes" if value else "no")


def age(seconds: float | None) -> str:
    """Compact age: 42s, 5m, 3h, 2d."""
    if seconds is None:
        return NA_TEXT
    s = max(0, int(seconds))
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172800:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


def utc(t: float | None, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """UTC wall time: the same on every operator's screen and in every screenshot."""
    return NA_TEXT if t is None else time.strftime(fmt, time.gmtime(t)) + "Z"
