"""The installed command's contract: one-line errors with exit 2, headless snapshot without Textual."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ENV = {**os.environ, "XDG_CONFIG_HOME": "/nonexistent-hpctui-test", "XDG_STATE_HOME": "/tmp/hpctui-test-state"}


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hpctui", *args], capture_output=True, text=True, timeout=120,
                          env=env or ENV)


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert proc.returncode == 2, proc
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.mark.parametrize("args", [["--bogus"], ["snapshot", "--bogus"], ["--demo-size", "zero"],
                                  ["--demo-size", "0"], ["snapshot", "--format", "xml"]])
def test_bad_flags(args: list[str]) -> None:
    assert_one_line_error(run(*args), "error")


def test_no_config_points_to_demo() -> None:
    assert_one_line_error(run(), "no config file", "hpctui --demo")
    assert_one_line_error(run("snapshot"), "hpctui --demo")


def test_missing_and_malformed_config(tmp_path: Path) -> None:
    assert_one_line_error(run("--config", str(tmp_path / "nope.toml")), "nope.toml", "not found")
    bad = tmp_path / "bad.toml"
    bad.write_text("[clusters.x]\n[[clusters.x.sources]]\nkind = 'slurm'\ninterval_s = 'soon'\n")
    assert_one_line_error(run("snapshot", "--config", str(bad)), str(bad), "clusters.x.sources[0].interval_s")
    broken = tmp_path / "broken.toml"
    broken.write_text("theme = \n")
    assert_one_line_error(run("--config", str(broken)), "invalid TOML")


def test_unknown_theme_is_a_usage_error() -> None:
    assert_one_line_error(run("--demo", "--theme", "neon-pink"), "unknown theme 'neon-pink'")


def test_snapshot_json_from_demo_without_textual() -> None:
    code = (
        "import sys, runpy; sys.argv=['hpctui','snapshot','--demo','--format','json','--seed','3'];"
        "from hpctui.cli.main import main; rc = main();"
        "assert 'textual' not in sys.modules, 'snapshot imported textual'; sys.exit(rc)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=ENV)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["cluster"] == "demo"
    gpu_nodes = [n for n, gpus in data["gpus"].items() if len(gpus) == 8]
    assert len(gpu_nodes) >= 64
    assert data["jobs"] and data["pods"]
    assert data["sources"]["demo"]["last_error"] is None


def test_snapshot_table_lists_incidents() -> None:
    proc = run("snapshot", "--demo", "--format", "table")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "source demo (demo): ok" in out
    for fragment in ("Xid 79", "uncorrectable ECC", "hung", "Ready=", "DRAIN", "thermal throttling", "200 Gb/sec"):
        assert fragment in out, fragment


def test_snapshot_problems_and_fail_on() -> None:
    """Issue #11: findings only, findings in the JSON, compact when piped, --fail-on exit 3."""
    proc = run("snapshot", "--demo", "--problems")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines and lines[0].startswith("CRITICAL") and all(line.split()[0] in ("CRITICAL", "ERROR", "WARNING")
                                                              for line in lines)
    assert any("GPU 3 Xid 79" in line for line in lines), "findings name their GPU"
    proc = run("snapshot", "--demo", "--problems", "--format", "json", "--fail-on", "critical")
    assert proc.returncode == 3, proc.stderr
    findings = json.loads(proc.stdout)
    assert findings and {"severity", "object", "code", "message"} <= set(findings[0])
    proc = run("snapshot", "--demo", "--format", "json", "--fail-on", "warning")
    assert proc.returncode == 3
    assert "\n" not in proc.stdout.rstrip("\n"), "compact JSON when stdout is not a terminal"
    data = json.loads(proc.stdout)
    assert data["cluster"] == "demo" and len(data["findings"]) == len(findings)
    pretty = run("snapshot", "--demo", "--format", "json", "--pretty")
    assert pretty.returncode == 0 and pretty.stdout.count("\n") > 100
