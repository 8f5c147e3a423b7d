"""Node state normalization: every spelling Slurm uses → (BASE, frozenset(FLAGS)).

Spellings seen: v0.0.36–38 ``state: "mixed"`` + ``state_flags: ["DRAIN"]`` (v0.0.36 has
no flags at all), v0.0.39+ ``state: ["MIXED", "DRAIN"]``, scontrol ``MIXED+DRAIN`` /
``DOWN*``, sinfo ``%T`` ``draining``/``drained``/``idle~`` and ``%t`` ``drng``/``mix*``.
DRAINING/DRAINED are *derived* (model.slurm_display_state), so they are split back into
base + DRAIN here.
"""

from __future__ import annotations

from hpctui.base.sanitize import clean_text

# States that are a node's base state; the rest are flags (FACTS §3, slurm_protocol_defs.c).
_TRUE_BASE = ("ALLOCATED", "MIXED", "IDLE", "DOWN", "ERROR", "FUTURE", "UNKNOWN", "INVAL")
_WEAK_BASE = ("COMPLETING", "PLANNED", "RESERVED")  # base only when nothing else is

# Names that are a shorthand for base + flag(s).
_ALIASES: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "DRAINED": ("IDLE", ("DRAIN",)),
    "DRAINING": ("ALLOCATED", ("DRAIN",)),
    "DRAIN": (None, ("DRAIN",)),
    "DRNG": ("ALLOCATED", ("DRAIN",)),
    "FAILING": ("ALLOCATED", ("FAIL",)),
    "FAILG": ("ALLOCATED", ("FAIL",)),
    "FAIL": (None, ("FAIL",)),
    "ALLOC": ("ALLOCATED", ()),
    "MIX": ("MIXED", ()),
    "COMP": ("COMPLETING", ()),
    "FUTR": ("FUTURE", ()),
    "UNK": ("UNKNOWN", ()),
    "PLND": ("PLANNED", ()),
    "RESV": ("RESERVED", ()),
    "MAINT": (None, ("MAINTENANCE",)),
    "NO_RESPOND": (None, ("NOT_RESPONDING",)),
    "NOT_RESPONDING": (None, ("NOT_RESPONDING",)),
    "BOOT": (None, ("REBOOT_ISSUED",)),
    "NPC": (None, ("PERFCTRS",)),
    "POW_DN": (None, ("POWERED_DOWN",)),
    "POW_UP": (None, ("POWERING_UP",)),
    "POWER_DOWN": (None, ("POWER_DOWN",)),
}

# sinfo/scontrol state suffixes (sinfo(1)): '*' not responding, '~' powered off, ...
_SUFFIXES = {
    "*": "NOT_RESPONDING",
    "~": "POWERED_DOWN",
    "#": "POWERING_UP",
    "!": "POWER_DOWN",
    "%": "POWERING_DOWN",
    "$": "MAINTENANCE",
    "@": "REBOOT_REQUESTED",
    "^": "REBOOT_ISSUED",
    "-": "PLANNED",
}


def normalize_node_state(
    state: str | list[str] | None, state_flags: list[str] | None = None
) -> tuple[str, frozenset[str]]:
    """Any Slurm node-state spelling → (upper-case base state, upper-case flags)."""
    tokens: list[str] = []
    if isinstance(state, str):
        tokens.extend(t for t in state.replace("+", " ").split())
    elif state:
        tokens.extend(state)
    if state_flags:
        tokens.extend(state_flags)
    base: str | None = None
    weak: str | None = None
    flags: set[str] = set()
    for raw in tokens:
        tok = clean_text(raw.strip().upper())
        while tok and tok[-1] in _SUFFIXES:
            flags.add(_SUFFIXES[tok[-1]])
            tok = tok[:-1]
        if not tok:
            continue
        if tok in _ALIASES:
            alias_base, alias_flags = _ALIASES[tok]
            flags.update(alias_flags)
            if alias_base in _TRUE_BASE:
                base = base or alias_base
            elif alias_base:
                weak = weak or alias_base
            continue
        if tok in _TRUE_BASE:
            if base is None:
                base = tok
            continue
        if tok in _WEAK_BASE:
            if weak is None:
                weak = tok
            else:
                flags.add(tok)
            continue
        flags.add(tok)
    if base is None:
        if weak:
            base, weak = weak, None
        elif flags & {"DRAIN", "FAIL"}:
            base = "IDLE"  # sinfo %t "drain"/"fail" name an idle node with that flag
        else:
            base = "UNKNOWN"
    if weak:
        flags.add(weak)
    return base, frozenset(flags)
