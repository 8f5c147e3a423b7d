"""`--demo --config FILE` takes the file's keymap, theme and thresholds (issue #22 §7); an unknown
binding id lists the valid ones; `act --demo` names the demo it planned on (seed, size)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hpctui.cli import main as cli

ENV = {**os.environ, "XDG_CONFIG_HOME": "/nonexistent-hpctui-test", "XDG_STATE_HOME": "/tmp/hpctui-test-state"}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hpctui", *args], capture_output=True, text=True, timeout=120,
                          env=ENV)


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    """Runs ``hpctui ARGS`` in-process up to the app's start; records the app instead of running it."""
    from hpctui.core import gc_tuning
    from hpctui.ui.app import HpcApp

    seen: dict[str, Any] = {}

    def fake_run(self: HpcApp, *args: object, **kwargs: object) -> None:
        seen.update(keymap=self.keymap, runtime=self.runtime, theme=self._initial_theme)

    monkeypatch.setattr(HpcApp, "run", fake_run)
    monkeypatch.setattr(gc_tuning, "tune", lambda: None)
    monkeypatch.setenv("HPCTUI_NO_SPLASH", "1")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return seen


def test_demo_with_a_config_applies_its_keymap_theme_and_thresholds(started: dict[str, Any], tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text('theme = "light"\n[thresholds]\ngpu_temp_warn_c = 40.0\n[keymap]\n"node.drain" = "ctrl+t"\n')
    assert cli.main(["--demo", "--config", str(cfg)]) == 0
    assert started["keymap"]["node.drain"] == "ctrl+t"
    assert started["theme"] == "light"
    assert started["runtime"].thresholds.gpu_temp_warn_c == 40.0
    assert started["runtime"].cluster == "demo", "the demo is the cluster, not the file's clusters"


def test_demo_with_a_config_with_an_unknown_binding_id_lists_the_valid_ids(
        started: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text('[keymap]\n"node.drian" = "ctrl+t"\n')
    assert cli.main(["--demo", "--config", str(cfg)]) == cli.EXIT_USAGE
    assert not started, "the app did not start"
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "keymap.node.drian" in err and "did you mean 'node.drain'" in err
    assert "valid ids:" in err and "job.hold" in err and "move.down" in err and "app.problems" in err


def test_snapshot_of_the_demo_uses_the_config_thresholds(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text("[thresholds]\ngpu_temp_warn_c = 20.0\ngpu_temp_crit_c = 25.0\n")
    plain = json.loads(run("snapshot", "--demo", "--format", "json").stdout)
    tuned = json.loads(run("snapshot", "--demo", "--config", str(cfg), "--format", "json").stdout)
    hot = [f for f in tuned["findings"] if f["code"] == "temp"]
    assert len(hot) > 100 and len(hot) > 10 * len([f for f in plain["findings"] if f["code"] == "temp"])


def test_act_on_the_demo_names_its_seed_the_same_default_as_the_app() -> None:
    assert cli.build_parser().parse_args(["--demo"]).seed == cli.DEMO_SEED
    assert cli.build_snapshot_parser().parse_args(["--demo"]).seed == cli.DEMO_SEED
    default = run("act", "cancel", "--targets", "1013", "--demo", "--dry-run")
    assert default.returncode == 0, default.stderr
    assert f"demo seed {cli.DEMO_SEED}, 64 GPU nodes" in default.stdout
    seeded = run("act", "cancel", "--targets", "1013", "--demo", "--seed", "1", "--dry-run")
    assert "demo seed 1, 64 GPU nodes" in seeded.stdout
