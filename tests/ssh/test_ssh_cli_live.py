"""The installed command end to end: `hpctui snapshot` with an ssh source pointed at the bed + shims."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sshbed import SshBed, shim_probe_table

pytestmark = pytest.mark.live


def test_hpctui_snapshot_over_ssh(ssh_bed: SshBed, tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "nodeshims"))
    from nodeshims import NodeSpec, build_shim_root

    n1, n2 = ssh_bed.node("node0001"), ssh_bed.node("node0002")  # node0003 is unreachable in the bed
    shims = build_shim_root(tmp_path / "shims", {n1.address: NodeSpec(variant="h100"),
                                                 n2.address: NodeSpec(variant="h200", faults={"svc-failed"})})
    config = tmp_path / "config.toml"
    config.write_text(
        "[clusters.lab]\n[[clusters.lab.sources]]\nkind = \"ssh\"\nnodes = \"node[0001-0003]\"\n"
        f"ssh_config = [\"{ssh_bed.ssh_config}\"]\nknown_hosts = [\"{ssh_bed.known_hosts}\"]\ninterval_s = 1.0\n"
        "connect_timeout_s = 5.0\n" + shim_probe_table(shims, "clusters.lab.sources"))
    out = subprocess.run([sys.executable, "-m", "hpctui", "snapshot", "--config", str(config), "--cluster", "lab",
                          "--format", "json"], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    snap = json.loads(out.stdout)
    assert set(snap["nodes"]) == {"node0001", "node0002", "node0003"}
    assert len(snap["gpus"]["node0001"]) == 8 and len(snap["gpus"]["node0002"]) == 8
    assert snap["ib"]["node0001"] and snap["mounts"]["node0001"]
    assert {s["name"]: s["status"] for s in snap["services"]["node0002"]}["nvidia-fabricmanager"] == "failed"
    assert snap["probes"]["node0003"]["reachable"] is False
    assert snap["probes"]["node0003"]["error"] == "connection refused"
    table = subprocess.run([sys.executable, "-m", "hpctui", "snapshot", "--config", str(config), "--cluster", "lab"],
                           capture_output=True, text=True, timeout=120, check=False).stdout
    assert "node probe failed: connection refused" in table and "nvidia-fabricmanager failed" in table
