"""``hpctui snapshot --format table`` prints every source warning (README), end to end through the
installed command with a fake Slurm CLI whose sinfo has two unreadable node records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hpctui.cli.snapshot import render_table
from hpctui.core.runtime import Runtime
from hpctui.findings.health import Thresholds
from hpctui.model import SlurmNodeInfo, SourceResult

FIX = Path(__file__).parent / "fixtures" / "slurm"


def _tool(bin_dir: Path, name: str, script: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(0o755)


def _fake_slurm(tmp_path: Path) -> Path:
    """sinfo/squeue/sdiag/scontrol from the recorded fixtures; two of sinfo's nodes have invalid names."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    nodes = json.loads((FIX / "cli_sinfo.json").read_text())
    nodes["nodes"][0]["name"] = "bad name!"
    nodes["nodes"][1]["name"] = "[x"
    (tmp_path / "sinfo.json").write_text(json.dumps(nodes))
    _tool(bin_dir, "sinfo", f'cat "{tmp_path}/sinfo.json"')
    _tool(bin_dir, "squeue", f'cat "{FIX}/cli_squeue.json"')
    _tool(bin_dir, "sdiag", f'cat "{FIX}/cli_sdiag.txt"')
    _tool(bin_dir, "scontrol", f'cat "{FIX}/cli_scontrol_show_partition_oneliner.txt"')
    return bin_dir


def test_snapshot_table_prints_every_source_warning(tmp_path: Path) -> None:
    bin_dir = _fake_slurm(tmp_path)
    config = tmp_path / "config.toml"
    config.write_text(f"[clusters.lab]\n[[clusters.lab.sources]]\nkind = 'slurm'\nbackend = 'cli'\n"
                      f"bin_dir = '{bin_dir}'\n")
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "XDG_STATE_HOME": str(tmp_path / "state")}
    proc = subprocess.run([sys.executable, "-m", "hpctui", "--config", str(config), "snapshot", "--format", "table"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    source = next(i for i, line in enumerate(lines) if line.startswith("source slurm (slurm): ok, data "))
    assert lines[source + 1].startswith("  warning: 2 unreadable node record(s) dropped: invalid node name 'bad name!'")
    assert "invalid node name '[x'" in lines[source + 1]


def test_snapshot_table_names_parts_that_were_not_read(tmp_path: Path) -> None:
    runtime = Runtime("c", [], clock=lambda: 100.0, audit_path=tmp_path / "audit.jsonl")
    runtime.store.apply(SourceResult(source="k", time=100.0, slurm_nodes={"n1": SlurmNodeInfo(base_state="IDLE")},
                                     warnings=("w one", "w two"), part_errors={"pods": "403 Forbidden"}))
    table = render_table(runtime.store.snapshot(), Thresholds(), now=100.0)
    assert "  warning: w one\n  warning: w two\n  warning: pods not read: 403 Forbidden\n" in table
