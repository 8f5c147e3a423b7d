"""Health checks and the resume gate on the real beds together, from the installed command.

The Slurm bed (slurmctld + slurmd: ``gpu01``/``gpu02``) and a real sshd (tests/testbed/ssh) whose two
loopback addresses answer as ``gpu01``/``gpu02`` (an ssh_config alias per node). The SSH probe reads the
node shims (tests/testbed/nodeshims): gpu01's kernel log holds the real Xid 119 lines of GPU 4. The
check tools on the far side are the shims printing real recorded outputs (tests/fixtures/checks).

The walk: gpu01 drained → ``hpctui act resume`` refused by the gate (exit 2, the Xid named) → a DCGM
level-2 diag that fails (the recorded memory failure on GPU 3: exit 1, the drain offered with the
failure as the reason) → the diag passes → ``resume`` allowed, and Slurm shows the node resumed; the
results are kept per node in the state directory and the audit log has every step.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_helpers import hpctui_act
from slurmlab import SlurmLab

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "ssh"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "nodeshims"))

from nodeshims import NodeSpec, build_shim_root
from sshbed import SshBed, sshd_missing

pytestmark = [pytest.mark.live, pytest.mark.slurm]
IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")
FIX = Path(__file__).resolve().parents[1] / "fixtures" / "checks"


@pytest.fixture(scope="module")
def sshd() -> Iterator[SshBed]:
    why_not = sshd_missing()
    if why_not:
        if IN_CI:
            pytest.fail(f"CI=true but the SSH test bed cannot run: {why_not}", pytrace=False)
        pytest.skip(why_not)
    bed = SshBed(n_nodes=2, faults={})
    atexit.register(bed.stop)
    try:
        bed.start()
        yield bed
    finally:
        bed.stop()


def config(tmp_path: Path, lab: SlurmLab, bed: SshBed, shims: Path) -> Path:
    aliases = tmp_path / "ssh_config"
    blocks = [f"Host gpu0{i}\n  HostName {n.address}\n  Port {bed.port}\n  User {bed.user}\n"
              f"  IdentityFile {bed.client_key}\n" for i, n in enumerate(bed.nodes, start=1)]
    aliases.write_text("\n".join([*blocks, f"Host *\n  UserKnownHostsFile {bed.known_hosts}\n  BatchMode yes\n"]))
    path = tmp_path / "config.toml"
    path.write_text(f"""audit_log = "{tmp_path / 'audit.jsonl'}"
[health_checks]
dcgmi = ["env", "HPCTUI_SHIM_ROOT={shims}", "{shims}/bin/dcgmi"]
[clusters.lab]
[[clusters.lab.sources]]
kind = "slurm"
backend = "cli"
slurm_conf = "{lab.slurm_conf}"
[[clusters.lab.sources]]
kind = "ssh"
nodes = "gpu[01-02]"
from_snapshot = false
ssh_config = ["{aliases}"]
known_hosts = ["{bed.known_hosts}"]
connect_timeout_s = 5.0
keepalive_s = 0
[clusters.lab.sources.probe]
shim_root = "{shims}"
probe_timeout_s = 4
""")
    return path


hpctui = hpctui_act  # the installed command (tests/slurm/slurm_helpers.py)


def slurm_state(lab: SlurmLab, node: str) -> str:
    return lab.run("scontrol", "show", "node", node).stdout.split("State=")[1].split()[0]


def test_xid_then_resume_refused_then_diag_passes_then_resume_allowed(lab: SlurmLab, sshd: SshBed,
                                                                      tmp_path: Path) -> None:
    xid_node, healthy = sshd.nodes[0].address, sshd.nodes[1].address
    shims = build_shim_root(tmp_path / "shims", {xid_node: NodeSpec(faults={"xid"}), healthy: NodeSpec()})
    cfg = config(tmp_path, lab, sshd, shims)
    lab.run("scontrol", "update", "NodeName=gpu01", "State=DRAIN", "Reason=xid 119 gpu4")

    refused = hpctui(lab, tmp_path, "resume", "--targets", "gpu01", "--yes", "--config", str(cfg))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "gpu01: GPU 4 Xid 119" in refused.stdout and "no passing gpu check since" in refused.stdout, refused.stdout
    assert "DRAIN" in slurm_state(lab, "gpu01")

    node_checks = shims / "nodes" / xid_node / "checks"
    node_checks.mkdir(parents=True, exist_ok=True)
    (node_checks / "dcgm-r2.out").write_text((FIX / "dcgm4-r2-h100-fail.json").read_text())
    (node_checks / "dcgm-r2.rc").write_text("226\n")
    failed = hpctui(lab, tmp_path, "check", "--targets", "gpu[01-02]", "--param", "check=dcgm-r2", "--yes",
                    "--config", str(cfg))
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "gpu01: failed: diag r2 failed: memory GPU 3" in failed.stdout, failed.stdout
    assert "gpu02: passed: diag r2 passed (4 tests)" in failed.stdout
    assert ("to drain the failed node(s): hpctui act drain --targets gpu01 --reason 'health check dcgm-r2 failed: "
            "memory GPU 3: Detected 2 volatile double-bit ECC error(s) in GPU 3.'") in failed.stdout
    still = hpctui(lab, tmp_path, "resume", "--targets", "gpu01", "--yes", "--config", str(cfg))
    assert still.returncode == 2, still.stdout  # a failed diag clears nothing

    (node_checks / "dcgm-r2.out").unlink()
    (node_checks / "dcgm-r2.rc").unlink()
    passed = hpctui(lab, tmp_path, "check", "--targets", "gpu01", "--param", "check=dcgm-r2", "--yes",
                    "--config", str(cfg))
    assert passed.returncode == 0, passed.stdout + passed.stderr
    allowed = hpctui(lab, tmp_path, "resume", "--targets", "gpu01", "--yes", "--config", str(cfg))
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "DRAIN" not in slurm_state(lab, "gpu01")

    records = json.loads((tmp_path / "checks" / "lab.json").read_text())
    assert [r["status"] for r in records["checks"]["gpu01"]] == ["passed", "failed"]
    assert records["marks"]["gpu01"][0]["key"] == "gpu/gpu01/4#xid119"
    audit = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    outcomes = [(r["action"], r.get("refused") is None) for r in audit if r.get("phase") == "outcome"]
    assert outcomes == [("resume", False), ("check", True), ("resume", False), ("check", True), ("resume", True)]
