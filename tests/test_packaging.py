"""The built wheel ships the themes and the console script; user theme errors are one line."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_ships_themes_and_entry_point(tmp_path: Path) -> None:
    pytest.importorskip("hatchling")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
                           "-q", "-w", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    wheel = next(tmp_path.glob("hpctui-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for theme in ("dark", "light", "wall"):
            assert f"hpctui/_themes/{theme}.toml" in names
        assert "hpctui/ui/app.tcss" in names
        entry = next(n for n in names if n.endswith("entry_points.txt"))
        assert "hpctui = hpctui.cli.main:main" in zf.read(entry).decode()


def test_invalid_user_theme_is_a_one_line_error(tmp_path: Path) -> None:
    themes = tmp_path / "hpctui" / "themes"
    themes.mkdir(parents=True)
    (themes / "neon.toml").write_text('name = "neon"\ndark = true\nprimary = "not-a-colour"\n')
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "hpctui", "--demo"], capture_output=True, text=True, timeout=60,
                          env=env, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "neon.toml" in lines[0] and "Traceback" not in proc.stderr
    (themes / "neon.toml").write_bytes(b"\xff\xfe not toml [")
    proc = subprocess.run([sys.executable, "-m", "hpctui", "--demo"], capture_output=True, text=True, timeout=60,
                          env=env, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
