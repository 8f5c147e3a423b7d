"""Golden files: the whole parse of a real recorded output, reviewed once and compared field by field.

``HPCTUI_UPDATE_GOLDEN=1 pytest tests/probes/...`` rewrites them (then read the diff before committing).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import msgspec

GOLDEN = Path(__file__).resolve().parent.parent / "fixtures" / "probes" / "golden"


def builtins(obj: object) -> object:
    """``obj`` as JSON would hold it (tuples as lists, enums as values, dict keys as strings)."""
    return json.loads(json.dumps(msgspec.to_builtins(obj, str_keys=True), sort_keys=True))


def check_golden(name: str, obj: object) -> None:
    """``obj`` equals the golden file ``name`` (written when HPCTUI_UPDATE_GOLDEN is set)."""
    path = GOLDEN / f"{name}.json"
    got = builtins(obj)
    if os.environ.get("HPCTUI_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(got, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    assert path.exists(), f"no golden file {path.name}: run with HPCTUI_UPDATE_GOLDEN=1 and review it"
    want = json.loads(path.read_text())
    assert got == want, f"{name}: the parse differs from {path.name}"
