"""``[keymap]`` in the config: binding id → key(s), applied with Textual's ``App.set_keymap``
(Posting's model). Checked before the app starts: an unknown id or a key Textual cannot
name is one config error line (exit 2), not a silently dead key.

    [keymap]
    "node.drain" = "ctrl+d"
    "move.down" = "j,ctrl+n"
"""

from __future__ import annotations

import string

from textual.keys import Keys, _character_to_key

from hpctui.core.config import ConfigError
from hpctui.ui.keys import ALL_KEYS

MODIFIERS = frozenset({"ctrl", "shift", "alt", "meta", "super", "hyper"})
_NAMED = frozenset(k.value for k in Keys) | frozenset(
    _character_to_key(c) for c in string.printable if c not in "\t\n\r\x0b\x0c") | {"space", "tab", "enter"}


def known_ids() -> list[str]:
    return [spec.id for spec in ALL_KEYS]


def unknown_id_hint(binding_id: str) -> str:
    """What to say about an id no key has: the closest ids (a typo), then every valid id."""
    import difflib

    ids = sorted(set(known_ids()))
    close = difflib.get_close_matches(binding_id, ids, n=3, cutoff=0.6)
    guess = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    return f"unknown binding id ({guess}valid ids: {', '.join(ids)})"


def key_ok(key: str) -> bool:
    """One key as Textual names it: ``d``, ``D``, ``ctrl+d``, ``f5``, ``question_mark``, ``?``."""
    key = key.strip()
    *mods, name = ["+"] if key == "+" else key.split("+")
    if not name or any(m.lower() not in MODIFIERS for m in mods):
        return False
    return (len(name) == 1 and name.isprintable()) or name.lower() in _NAMED


def check_keymap(keymap: dict[str, str], origin: str = "<config>") -> dict[str, str]:
    """The keymap as Textual wants it; ConfigError naming the first bad entry."""
    ids = set(known_ids())
    for binding_id, keys in keymap.items():
        if binding_id not in ids:
            raise ConfigError(f"{origin}: keymap.{binding_id}: {unknown_id_hint(binding_id)}")
        parts = keys.split(",")
        if not keys.strip() or not all(key_ok(k) for k in parts):
            raise ConfigError(f"{origin}: keymap.{binding_id}: not a key: {keys!r} (e.g. \"d\", \"ctrl+d\", \"f5\")")
    return expand(keymap)


def expand(keymap: dict[str, str]) -> dict[str, str]:
    """Also remap the copies of a binding: the app-level keys re-bound on modal screens
    (``modal.<id>``) and the fallbacks of node/job keys acting on the subject (``subject.<id>``)."""
    out = {k: ",".join(p.strip() for p in v.split(",")) for k, v in keymap.items()}
    for binding_id, keys in list(out.items()):
        out.setdefault(f"modal.{binding_id}", keys)
        out.setdefault(f"subject.{binding_id}", keys)
    return out
