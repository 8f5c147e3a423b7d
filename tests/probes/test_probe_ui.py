"""The node panel shows what the probe adds: NVLink, processes per GPU, services (with a failed
unit's journal lines), from the real probe loop against the faulty shim node."""

from __future__ import annotations

from nodeshims import NodeSpec, build_shim_root
from probe_loop import probe_loop

from hpctui.findings.health import Thresholds
from hpctui.model import ClusterSnapshot
from hpctui.model.node import Node, SlurmNodeInfo
from hpctui.sources.ssh.probe import ProbeOptions
from hpctui.ui.widgets.gpu_panel import node_detail


def test_node_panel_shows_nvlink_processes_and_services(tmp_path):
    root = build_shim_root(tmp_path, {"gpu01": NodeSpec("h100", faults={"nvlink-down", "stray-process",
                                                                         "svc-failed"})})
    opts = ProbeOptions(shim_root=str(root), interval_s=0.2, probe_timeout_s=2, mount_timeout_s=2,
                        slow_mount_ms=5000)
    with probe_loop(root, "gpu01", opts) as loop:
        (r,) = loop.records(1)
    snap = ClusterSnapshot(cluster="c", time=r.time, nodes={"gpu01": Node(name="gpu01",
                                                                          slurm=SlurmNodeInfo(base_state="MIXED"))},
                           gpus={"gpu01": r.gpus}, services={"gpu01": r.services})
    text = node_detail(snap, "gpu01", Thresholds()).plain
    assert "NVLink 18/18 up × 26.562 GB/s" in text
    assert "NVLink 17/18 up × 26.562 GB/s  down: 3" in text
    assert "proc 4242 " in text and "job 1234" in text and "python train.py --epochs 10" in text
    assert "pod 8f2b6c1e-1a2b-4c3d-9e8f-0123456789ab" in text
    assert "proc 4444 " in text and "no job" in text
    assert "Services" in text and "nvidia-fabricmanager failed" in text and "slurmd active" in text
    assert "kubelet" not in text  # not installed
    assert "Failed with result 'exit-code'" in text


def test_node_panel_without_probe_data_is_unchanged():
    snap = ClusterSnapshot(cluster="c", time=0.0, nodes={"n": Node(name="n")})
    text = node_detail(snap, "n", Thresholds()).plain
    assert "NVLink" not in text and "Services" not in text and "proc " not in text
