"""The one exception every Slurm parser raises.

A ValueError subclass so that callers that already catch ValueError keep working;
the message is one line because it ends up in the status bar and the source health.
"""

from __future__ import annotations

import re

import msgspec


class SlurmParseError(ValueError):
    """Truncated, malformed or unsupported Slurm output (CLI text or REST/JSON)."""


# C0 controls that JSON never allows raw, inside strings or out (TAB, LF, CR are whitespace).
_RAW_CONTROLS = dict.fromkeys([*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20)], "\ufffd")


def repair_json(data: bytes | str) -> str | None:
    """A Slurm JSON document msgspec refused, made decodable if the fault is in bytes, not structure.

    Slurm copies job names byte for byte: ``sbatch -J $'x\\xff'`` puts invalid UTF-8 into
    ``squeue --json``. Such bytes become ``�`` (and raw control characters, which JSON never
    allows, too), so one bad byte costs one odd character, never the document. None when
    nothing was there to repair (the document is broken for another reason).

    The repair works on the whole text (~0.5 s per MB, holding the GIL), so a document whose
    structure is broken (garbage, not a job name's odd bytes) is refused first by
    :func:`hpctui.sources.bounded.json_fault`, which only skims it (~1 GB/s).
    """
    from hpctui.sources.bounded import json_fault

    if json_fault(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data) is not None:
        return None
    changed = False
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("utf-8", errors="replace")
            changed = True
    else:
        text = data
    fixed = _SURROGATE_ESCAPE.sub(_keep_pairs, text.translate(_RAW_CONTROLS))
    return fixed if changed or fixed != text else None


# "\udcff" alone is a lone surrogate, which msgspec refuses; a high+low pair is a real character.
_SURROGATE_ESCAPE = re.compile(r"(\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})|\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _keep_pairs(m: re.Match[str]) -> str:
    return m.group(1) or "\\ufffd"


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
