"""K8s beside Slurm: the real kube-apiserver and the real Slurm test bed in one config; the
K8s nodes (gpu01.lab, ...) join the Slurm nodes (gpu01, ...) through node_map, so one
node carries both views and its pods sit beside its jobs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from k8slab import K8sLab

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "slurm"))
from slurmlab import SlurmLab, slurm_installed

pytestmark = pytest.mark.live
IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")


def test_snapshot_joins_k8s_and_slurm_nodes(lab: K8sLab, tmp_path: Path) -> None:
    why_not = slurm_installed()
    if why_not:
        if IN_CI:
            pytest.fail(f"CI=true but the Slurm test bed cannot run: {why_not}", pytrace=False)
        pytest.skip(why_not)
    for n in ("gpu01", "gpu02"):
        lab.make_node(f"{n}.lab", gpus=8)
    lab.make_pod("hpc", "train-0", "gpu01.lab", gpus=4, owner=("Job", "train"))
    slurm = SlurmLab()
    try:
        slurm.start()
        config = tmp_path / "side-by-side.toml"
        config.write_text(f"""
[clusters.lab]
node_map = {{ strip_suffix = ".lab" }}
[[clusters.lab.sources]]
kind = "slurm"
backend = "cli"
slurm_conf = "{slurm.slurm_conf}"
[[clusters.lab.sources]]
kind = "k8s"
kubeconfig = "{lab.kubeconfig()}"
""")
        env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
        proc = subprocess.run([sys.executable, "-m", "hpctui", "snapshot", "--config", str(config), "--format",
                               "json"], capture_output=True, text=True, timeout=180, env=env)
    finally:
        slurm.stop()
    assert proc.returncode == 0, proc.stderr
    nodes = json.loads(proc.stdout)["nodes"]
    both = sorted(n for n, v in nodes.items() if v.get("slurm") and v.get("k8s"))
    assert both == ["gpu01", "gpu02"]
    assert nodes["gpu01"]["k8s"]["name"] == "gpu01.lab" and nodes["gpu01"]["k8s"]["gpu_capacity"] == 8
    assert "gpu03" in nodes and not nodes["gpu03"].get("k8s")  # Slurm-only nodes stay Slurm-only
    pods = json.loads(proc.stdout)["pods"]
    assert [(p["name"], p["node"]) for p in pods] == [("train-0", "gpu01")]
