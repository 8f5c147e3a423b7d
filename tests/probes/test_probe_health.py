"""Health rules for what the node probe adds: NVLink, PCIe generation, stray GPU processes, services,
missing mounts, IB flaps that stay visible. Fed by the real probe loop against the faulty shim node."""

from __future__ import annotations

from nodeshims import NodeSpec, build_shim_root
from probe_loop import probe_loop

from hpctui.findings.health import Thresholds, node_findings
from hpctui.findings.index import findings_for
from hpctui.model import ClusterSnapshot, Severity
from hpctui.model.ib import IbPort
from hpctui.model.jobs import SlurmJob
from hpctui.model.node import Node, SlurmNodeInfo
from hpctui.sources.ssh.probe import ProbeOptions

FAULTS = {"svc-failed", "pcie-downshift", "nvlink-down", "stray-process", "ib-down"}


def _reading(tmp_path, faults=frozenset(FAULTS)):
    root = build_shim_root(tmp_path, {"gpu01": NodeSpec("h100", faults=set(faults))})
    options = ProbeOptions(shim_root=str(root), interval_s=0.2, probe_timeout_s=2, mount_timeout_s=2, slow_mount_ms=5000,
                           expected_mounts=("/mnt/nfs/test", "/home"))
    with probe_loop(root, "gpu01", options) as loop:
        (r,) = loop.records(1)
    return r


JOB_1234 = (SlurmJob(job_id=1234, state="RUNNING"),)


def _snapshot(r, jobs=JOB_1234, slurm=True) -> ClusterSnapshot:
    node = Node(name="gpu01", slurm=SlurmNodeInfo(base_state="MIXED") if slurm else None)
    return ClusterSnapshot(cluster="c", time=r.time, nodes={"gpu01": node}, gpus={"gpu01": r.gpus},
                           ib={"gpu01": r.ib}, mounts={"gpu01": r.mounts}, services={"gpu01": r.services},
                           jobs=tuple(jobs))


def test_probe_findings_on_the_faulty_node(tmp_path):
    r = _reading(tmp_path)
    findings = node_findings(_snapshot(r), "gpu01", Thresholds())
    by_code = {}
    for f in findings:
        by_code.setdefault(f.code, []).append(f)
    assert by_code["nvlink_down"][0].object == "gpu/gpu01/1" and "NVLink 3 down" in by_code["nvlink_down"][0].message
    assert by_code["pcie_gen"][0].object == "gpu/gpu01/2" and "gen3 of gen5 x8 of x16" in by_code["pcie_gen"][0].message
    (stray,) = by_code["gpu_stray_process"]
    assert stray.object == "gpu/gpu01/3" and "pid 4444" in stray.message  # 4242 (job 1234) and the pod are owned
    (svc,) = by_code["service_failed"]
    assert svc.severity is Severity.CRITICAL and "nvidia-fabricmanager" in svc.message
    assert "exit-code" in svc.message
    assert by_code["mount_missing"][0].object == "mount/gpu01:/home"
    assert by_code["ib_down"][0].object == "ib/gpu01/mlx5_4:1"
    assert "kubelet" not in " ".join(f.message for f in findings)  # not installed: not a finding
    # The shared index sees the same.
    assert any(f.code == "nvlink_down" for f in findings_for(_snapshot(r), Thresholds()).node("gpu01"))


def test_job_that_is_no_longer_running_makes_its_process_stray(tmp_path):
    r = _reading(tmp_path, faults=frozenset())
    findings = node_findings(_snapshot(r, jobs=(SlurmJob(job_id=99, state="RUNNING"),)), "gpu01", Thresholds())
    (stray,) = [f for f in findings if f.code == "gpu_stray_process"]
    assert stray.object == "gpu/gpu01/0" and "job 1234 (not running)" in stray.message
    # Without a scheduler view of the node, nobody could own a process: no finding.
    assert not [f for f in node_findings(_snapshot(r, slurm=False), "gpu01", Thresholds())
                if f.code == "gpu_stray_process"]


def test_healthy_node_has_no_probe_findings(tmp_path):
    r = _reading(tmp_path, faults=frozenset())
    codes = {f.code for f in node_findings(_snapshot(r), "gpu01", Thresholds())}
    assert codes == {"mount_missing"}  # /home is expected but the shim node does not mount it


def test_ib_flap_stays_a_finding_after_the_port_is_back():
    port = IbPort(node="n", device="mlx5_0", port=1, state="ACTIVE", phys_state="LinkUp", flaps=2,
                  last_down=1_700_000_000.0)
    snap = ClusterSnapshot(cluster="c", time=0, ib={"n": (port,)})
    (f,) = node_findings(snap, "n", Thresholds())
    assert f.code == "ib_flapped" and "flapped 2×" in f.message
