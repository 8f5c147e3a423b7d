"""``hpctui act custom`` end to end: the installed command, a config with the demo cluster."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CONFIG = """
audit_log = "{audit}"
[clusters.demo]
sources = [{{kind = "demo", size = 8}}]

[[custom_actions]]
name = "parity"
key = "ctrl+g"
command = ["sh", "-c", 'case "$1" in *[13579]) echo odd;; *) echo even;; esac', "sh", "{{node}}"]

[[custom_actions]]
name = "fails"
command = ["sh", "-c", 'case "$1" in *1) exit 4;; *) echo fine;; esac', "sh", "{{node}}"]

[[custom_actions]]
name = "limit"
command = "echo ansible-playbook site.yml --limit {{nodes_csv}}"
dangerous = true

[[custom_actions]]
name = "diag"
command = "echo diag {{nodes}}"
read_only_ok = true
"""


def hpctui() -> list[str]:
    exe = shutil.which("hpctui", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "hpctui"]


@pytest.fixture()
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG.format(audit=tmp_path / "audit.jsonl"))
    return path


def act(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*hpctui(), "act", "custom", "--config", str(config), *args], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


def audit(config: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (config.parent / "audit.jsonl").read_text().splitlines()]


def test_folded_output_and_exit_0(config: Path) -> None:
    proc = act(config, "--param", "name=parity", "--targets", "gpu[0001-0006]", "--yes")
    assert proc.returncode == 0, proc.stderr
    assert "---------------- gpu[0001,0003,0005] (3) ----------------\nodd\n" in proc.stdout
    assert "---------------- gpu[0002,0004,0006] (3) ----------------\neven\n" in proc.stdout
    assert "6/6 ok" in proc.stdout
    assert [r["phase"] for r in audit(config)] == ["intent", "outcome"]


def test_some_failed_exit_1(config: Path) -> None:
    proc = act(config, "--param", "name=fails", "--targets", "gpu[0001-0003]", "--yes")
    assert proc.returncode == 1
    assert "exit code 4: gpu0001 (1)" in proc.stdout
    assert "---------------- gpu0001 (1) ----------------\n(no output)\n" in proc.stdout
    assert "gpu[0002-0003] (2) ----------------\nfine" in proc.stdout


def test_dry_run_prints_the_exact_argv_and_runs_nothing(config: Path) -> None:
    proc = act(config, "--param", "name=limit", "--targets", "gpu[0001-0002],gpu0005", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "local: echo ansible-playbook site.yml --limit gpu0001,gpu0002,gpu0005" in proc.stdout
    assert "type 'limit-3'" in proc.stdout
    assert not (config.parent / "audit.jsonl").exists()


def test_json(config: Path) -> None:
    proc = act(config, "--param", "name=parity", "--targets", "gpu[0001-0002]", "--yes", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["ok"] is True and doc["argv"]["gpu0002"][-1] == "gpu0002"
    assert [f["nodes"] for f in doc["folds"]] == ["gpu0001", "gpu0002"]


def test_no_terminal_without_yes_refuses_and_audits(config: Path) -> None:
    proc = act(config, "--param", "name=parity", "--targets", "gpu0001")
    assert proc.returncode == 2
    assert "not confirmed" in proc.stderr
    assert audit(config)[-1]["refused"] == "not confirmed"


def test_read_only_refuses_unless_read_only_ok(config: Path) -> None:
    proc = act(config, "--param", "name=parity", "--targets", "gpu0001", "--yes", "--read-only")
    assert proc.returncode == 2 and "read-only mode: parity is not marked read_only_ok" in proc.stdout
    proc = act(config, "--param", "name=limit", "--targets", "gpu0001", "--yes", "--read-only")
    assert proc.returncode == 2 and "read-only mode: limit is dangerous" in proc.stdout
    proc = act(config, "--param", "name=diag", "--targets", "gpu[0001-0002]", "--yes", "--read-only")
    assert proc.returncode == 0 and "diag gpu[0001-0002]" in proc.stdout


def test_unknown_name_is_a_usage_error(config: Path) -> None:
    proc = act(config, "--param", "name=nope", "--targets", "gpu0001", "--yes")
    assert proc.returncode == 2
    assert proc.stderr.startswith("hpctui act custom: unknown custom action 'nope' (custom actions: parity, fails, "
                                  "limit, diag)\n")
    assert audit(config)[-1]["refused"]  # refused by the executor, and audited like any refusal


def test_bad_config_is_one_line_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[clusters.c]\nsources = [{kind = "demo"}]\n[[custom_actions]]\nname = "x"\n'
                    'command = "echo {job}"\n')
    proc = act(path, "--param", "name=x", "--targets", "gpu0001")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert 'placeholder {job} does not fit scope = "nodes"' in proc.stderr
