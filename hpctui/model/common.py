"""Shared vocabulary of the model: severities and the not-available convention.

A value that a source could not read is ``None`` in the model ("not available",
rendered as ``N/A``), never 0: a GPU at 0 % and a GPU we cannot read are different
facts for an on-call admin.
"""

from __future__ import annotations

import enum
from typing import Final, TypeVar

T = TypeVar("T")

NA: Final = None
"""Spelled-out "not available" for readers of the code: fields typed ``X | None``."""


class Severity(enum.IntEnum):
    """Ordered so that ``max()`` over findings gives the worst."""

    OK = 0
    INFO = 1
    WARNING = 2
    ERROR = 3
    CRITICAL = 4


def fmt_na(value: object, fmt: str = "{}", na: str = "N/A") -> str:
    """Format a possibly-unavailable value for display."""
    return na if value is None else fmt.format(value)


def age_text(seconds: float, *, words: bool = False) -> str:
    """How long: ``42s 5m 3h 2d``, or with ``words`` ``42 s, 30 min, 2 h, 3 d`` (for a sentence).
    Seconds under 2 min, minutes under 2 h, hours under 2 d, then days; negative counts as 0."""
    s = max(0, int(seconds))
    for limit, unit, short, spoken in ((120, 1, "s", " s"), (7200, 60, "m", " min"), (172800, 3600, "h", " h")):
        if s < limit:
            return f"{s // unit}{spoken if words else short}"
    return f"{s // 86400}{' d' if words else 'd'}"


def worst(*levels: Severity) -> Severity:
    return max(levels, default=Severity.OK)
