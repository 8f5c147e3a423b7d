"""Hybrid drain on the real beds together: the Slurm test bed (slurmctld + slurmd) and a real
kube-apiserver, one config with both sources and a ``node_map`` that joins the K8s node
``k8s-gpu02`` to the Slurm node ``gpu02``. ``hpctui act drain`` (the installed command) drains
the node in Slurm AND cordons it in Kubernetes with one confirmation; ``hpctui act resume``
reverses both. Judged by the real states: ``scontrol show node`` and ``Node.spec.unschedulable``.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "k8s"))

from k8slab import K8sLab, k8s_installed

pytestmark = [pytest.mark.live, pytest.mark.slurm]
IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")
K8S_NODE = "k8s-gpu02"


@pytest.fixture(scope="module")
def kube() -> Iterator[K8sLab]:
    why_not = k8s_installed()
    if why_not:
        if IN_CI:
            pytest.fail(f"CI=true but the Kubernetes test bed cannot run: {why_not}", pytrace=False)
        pytest.skip(why_not)
    bed = K8sLab()
    atexit.register(bed.stop)
    try:
        bed.start()
        bed.ensure_namespace("hpc")
        yield bed
    finally:
        bed.stop()


def config(tmp_path: Path, lab: SlurmLab, kube: K8sLab, extra: str = "", name: str = "config.toml") -> Path:
    path = tmp_path / name
    path.write_text(f"""audit_log = "{tmp_path / 'audit.jsonl'}"
{extra}
[clusters.lab]
node_map = {{ explicit = {{ "{K8S_NODE}" = "gpu02" }} }}
[[clusters.lab.sources]]
kind = "slurm"
backend = "cli"
slurm_conf = "{lab.slurm_conf}"
[[clusters.lab.sources]]
kind = "k8s"
kubeconfig = "{kube.kubeconfig()}"
events = false
""")
    return path


hpctui = hpctui_act  # the installed command (tests/slurm/slurm_helpers.py)


def slurm_state(lab: SlurmLab, node: str) -> str:
    return lab.run("scontrol", "show", "node", node).stdout


def unschedulable(kube: K8sLab) -> bool:
    return bool(kube.ok("GET", f"/api/v1/nodes/{K8S_NODE}").get("spec", {}).get("unschedulable"))


def test_drain_and_resume_a_node_in_both_schedulers_with_one_action(lab: SlurmLab, kube: K8sLab,
                                                                    tmp_path: Path) -> None:
    kube.make_node(K8S_NODE, gpus=8)
    kube.make_pod("hpc", "infer", K8S_NODE, owner=("ReplicaSet", "infer-1"), gpus=1)
    jid = lab.sbatch("-p", "gpu", "-w", "gpu02", "--gres=gpu:1", "-J", "victim")
    lab.wait_state(jid, "RUNNING")
    cfg = config(tmp_path, lab, kube)
    try:
        dry = hpctui(lab, tmp_path, "drain", "--targets", "gpu02", "--reason", "xid 79 hybrid", "--dry-run",
                     "--config", str(cfg))
        assert dry.returncode == 0, dry.stdout + dry.stderr
        assert "action:   drain via slurm+k8s (2 steps)" in dry.stdout
        step1, step2 = dry.stdout.split("step 1:")[1].split("step 2:")
        assert "scontrol update NodeName=gpu02 State=DRAIN 'Reason=xid 79 hybrid'" in step1
        assert f"job {jid} (root, victim) RUNNING on gpu02: keeps running until it ends" in step1
        assert f"PATCH /api/v1/nodes/{K8S_NODE}" in step2 and "hpc/infer (ReplicaSet/infer-1)" in step2
        assert "keeps running (cordon only stops new pods)" in step2 and f"job {jid}" not in step2
        assert "State=DRAIN" not in slurm_state(lab, "gpu02") and not unschedulable(kube)  # a dry run

        run = hpctui(lab, tmp_path, "drain", "--targets", "gpu02", "--reason", "xid 79 hybrid", "--yes", "--json",
                     "--config", str(cfg))
        assert run.returncode == 0, run.stdout + run.stderr
        doc = json.loads(run.stdout)
        assert [(s["source"], s["kind"], s["ok"]) for s in doc["steps"]] == [("slurm", "drain", True),
                                                                            ("k8s", "cordon", True)]
        shown = slurm_state(lab, "gpu02")
        assert "DRAIN" in shown.split("State=")[1].split()[0] and "Reason=xid 79 hybrid" in shown, shown
        assert unschedulable(kube)
        assert kube.ok("GET", "/api/v1/namespaces/hpc/pods/infer")["status"]["phase"] == "Running"  # cordon only

        back = hpctui(lab, tmp_path, "resume", "--targets", "gpu02", "--yes", "--config", str(cfg))
        assert back.returncode == 0, back.stdout + back.stderr
        assert "step 1 k8s uncordon: 1/1 ok" in back.stdout and "step 2 slurm resume: 1/1 ok" in back.stdout
        assert "DRAIN" not in slurm_state(lab, "gpu02").split("State=")[1].split()[0]
        assert not unschedulable(kube)

        # configured default Slurm only: the K8s node is left alone
        slurm_only = config(tmp_path, lab, kube, extra='[actions]\ndrain_in = "slurm"\n',
                            name="slurm-only.toml")
        only = hpctui(lab, tmp_path, "drain", "--targets", "gpu02", "--reason", "slurm only", "--yes",
                      "--config", str(slurm_only))
        assert only.returncode == 0, only.stdout + only.stderr
        assert "Reason=slurm only" in slurm_state(lab, "gpu02") and not unschedulable(kube)

        # K8s side as kubectl drain: cordon + eviction (the DaemonSet pod stays), per action
        kube.make_pod("hpc", "node-agent", K8S_NODE, owner=("DaemonSet", "node-agent"))
        # (gpu02 is still drained "slurm only": draining it again must say what to do with that reason)
        evict = hpctui(lab, tmp_path, "drain", "--targets", "gpu02", "--reason", "evict too", "--yes",
                       "--param", "reason_mode=replace", "--param", "k8s_drain=evict", "--param", "grace_period_s=0", "--config", str(cfg))
        assert evict.returncode == 0, evict.stdout + evict.stderr
        assert "step 2 k8s k8s_drain: 1/1 ok" in evict.stdout and "evicted 1 pod(s)" in evict.stdout, evict.stdout
        assert unschedulable(kube)
        assert kube.http("GET", "/api/v1/namespaces/hpc/pods/infer")[0] == 404
        assert kube.http("GET", "/api/v1/namespaces/hpc/pods/node-agent")[0] == 200
        back = hpctui(lab, tmp_path, "resume", "--targets", "gpu02", "--yes", "--config", str(cfg))
        assert back.returncode == 0 and not unschedulable(kube), back.stdout + back.stderr
    finally:
        lab.run("scancel", jid, check=False)
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(r["phase"], r.get("step_action")) for r in records[:4]] == [
        ("intent", None), ("step", "drain"), ("step", "cordon"), ("outcome", None)]
