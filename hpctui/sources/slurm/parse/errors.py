"""The one exception every Slurm parser raises.

A ValueError subclass so that callers that already catch ValueError keep working;
the message is one line because it ends up in the status bar and the source health.
"""

from __future__ import annotations

import msgspec


class SlurmParseError(ValueError):
    """Truncated, malformed or unsupported Slurm output (CLI text or REST/JSON)."""


def from_msgspec(what: str, exc: Exception) -> SlurmParseError:
    """Turn a msgspec error into a one-line SlurmParseError that keeps msgspec's JSON path.

    msgspec says e.g. "Object missing required field `state` - at `$.nodes[3]`"; we
    reword it to "missing field `state` at $.nodes[3]" so the admin sees where.
    """
    msg = str(exc).replace("\n", " ")
    if isinstance(exc, msgspec.ValidationError):
        msg = msg.replace("Object missing required field", "missing field").replace(" - at `", " at ")
        if msg.endswith("`") and " at $" in msg:
            msg = msg[:-1]
    elif isinstance(exc, msgspec.DecodeError):
        msg = f"invalid JSON ({msg})"
    return SlurmParseError(f"{what}: {msg}")
