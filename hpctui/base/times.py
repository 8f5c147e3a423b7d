"""Time stamps as cluster APIs write them."""

from __future__ import annotations

import datetime as dt
from typing import Any


def parse_time(text: Any) -> float | None:
    """RFC 3339 as Kubernetes and Alertmanager write it ("2024-01-01T00:00:00Z", fractions, offsets) → epoch
    seconds; None for anything else (never raises)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
