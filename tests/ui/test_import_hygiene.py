"""The data layer must import without Textual (DESIGN.md: one-way data flow)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULES = ["hpctui.model", "hpctui.store", "hpctui.health", "hpctui.runtime"]


def _data_modules() -> list[str]:
    names = list(MODULES)
    for package in ("sources", "actions"):
        for path in sorted((ROOT / "hpctui" / package).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            names.append(".".join(parts))
    return names


def test_data_layer_imports_without_textual() -> None:
    modules = _data_modules()
    assert "hpctui.sources.base" in modules and "hpctui.actions.executor" in modules
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}:\n"
        "    importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_check_can_fail() -> None:
    code = "import hpctui.ui.app, sys; sys.exit(0 if 'textual' in sys.modules else 1)"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
