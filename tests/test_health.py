"""Health findings: what the heatmap colours and the snapshot table call sick."""

from __future__ import annotations

from hpctui.findings.health import Thresholds, all_findings, node_findings, node_severity
from hpctui.model import (
    ClusterSnapshot,
    Gpu,
    IbPort,
    K8sNodeInfo,
    Mount,
    MountState,
    Node,
    Severity,
    SlurmNodeInfo,
    ThrottleReason,
)

T = Thresholds()


def snap(**kw: object) -> ClusterSnapshot:
    return ClusterSnapshot(cluster="c", time=0.0, **kw)  # type: ignore[arg-type]


def test_healthy_node_has_no_findings() -> None:
    s = snap(nodes={"n1": Node(name="n1", slurm=SlurmNodeInfo(base_state="IDLE"),
                               k8s=K8sNodeInfo(name="n1", conditions={"Ready": "True"}))},
             gpus={"n1": (Gpu(node="n1", index=0, util_pct=50, temp_c=60),)})
    assert node_findings(s, "n1", T) == []
    assert node_severity(s, "n1", T) is Severity.OK


def test_each_fault_is_found_with_its_severity() -> None:
    gpus = (
        Gpu(node="n1", index=0, lost=True, last_xid=79),
        Gpu(node="n1", index=1, ecc_uncorrected_volatile=3, remap_pending=True),
        Gpu(node="n1", index=2, temp_c=89, throttle_reasons=int(ThrottleReason.HW_THERMAL_SLOWDOWN)),
        Gpu(node="n1", index=3, temp_c=None),  # unavailable is not a fault
    )
    s = snap(
        nodes={"n1": Node(name="n1", slurm=SlurmNodeInfo(base_state="IDLE", flags=frozenset({"DRAIN"}),
                                                          reason="xid 79", reason_user="root"),
                          k8s=K8sNodeInfo(name="n1", conditions={"Ready": "Unknown"}))},
        gpus={"n1": gpus},
        ib={"n1": (IbPort(node="n1", device="mlx5_0", port=1, state="ACTIVE", rate_gbps=200, max_rate_gbps=400,
                          rate_text="200 Gb/sec (4X HDR)"),
                   IbPort(node="n1", device="mlx5_1", port=1, state="DOWN", deltas={"link_downed": 1}))},
        mounts={"n1": (Mount(node="n1", target="/lustre", fstype="lustre", state=MountState.HUNG),)},
    )
    codes = {(f.object, f.code): f.severity for f in node_findings(s, "n1", T)}
    assert codes[("gpu/n1/0", "gpu_lost")] is Severity.CRITICAL
    assert codes[("gpu/n1/0", "xid79")] is Severity.CRITICAL
    assert codes[("gpu/n1/1", "ecc_uncorrected")] is Severity.CRITICAL
    assert codes[("gpu/n1/1", "remap_pending")] is Severity.ERROR
    assert codes[("gpu/n1/2", "temp")] is Severity.ERROR
    assert codes[("gpu/n1/2", "thermal_throttle")] is Severity.WARNING
    assert codes[("ib/n1/mlx5_0:1", "ib_rate")] is Severity.WARNING
    assert codes[("ib/n1/mlx5_1:1", "ib_down")] is Severity.ERROR
    assert codes[("ib/n1/mlx5_1:1", "ib_flap")] is Severity.ERROR
    assert codes[("mount/n1:/lustre", "mount_hung")] is Severity.CRITICAL
    assert codes[("node/n1", "slurm_drain")] is Severity.WARNING
    assert codes[("node/n1", "k8s_notready")] is Severity.ERROR
    assert not any(o == "gpu/n1/3" for o, _ in codes)
    findings = all_findings(s, T)
    assert findings[0].severity is Severity.CRITICAL
    assert [f.severity for f in findings] == sorted((f.severity for f in findings), reverse=True)


def test_thresholds_are_configurable() -> None:
    s = snap(gpus={"n1": (Gpu(node="n1", index=0, temp_c=81),)})
    assert node_severity(s, "n1", T) is Severity.OK
    assert node_severity(s, "n1", Thresholds(gpu_temp_warn_c=80)) is Severity.WARNING
