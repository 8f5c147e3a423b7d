"""Boundary tables for every rule in hpctui/findings/health.py: just below, at and just above each threshold, and None.

Expected severities and codes are written here from the defaults in the config documentation
(GPU warn 83 °C / crit 88 °C, HBM 90 °C, 1000 corrected ECC errors) and FACTS §1 (Xid catalogue),
§3 (Slurm states), §4 (IB link signals), §5 (mount states), §6 (K8s conditions) — never computed by
the code under test. Messages are checked only for their key facts (numbers, names) with ``in``,
so rewording a message does not break a table.
"""

from __future__ import annotations

import pytest

from hpctui.findings.health import (
    Finding,
    Thresholds,
    all_findings,
    gpu_findings,
    ib_findings,
    mount_findings,
    node_findings,
    node_severity,
    node_state_findings,
)
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
OK, INFO, WARN, ERR, CRIT = Severity.OK, Severity.INFO, Severity.WARNING, Severity.ERROR, Severity.CRITICAL


OBJECT_PREFIXES = ("gpu/g1/6", "ib/g1/mlx5_0:1", "node/g1", "mount/g1:")


def by_code(findings: list[Finding]) -> dict[str, Finding]:
    """Findings by code; every finding names its object and says something (no "None" shown)."""
    out: dict[str, Finding] = {}
    for f in findings:
        assert f.code not in out, f"one rule fired twice: {f.code}"
        assert isinstance(f.object, str) and f.object.startswith(OBJECT_PREFIXES), f.object
        assert isinstance(f.message, str) and f.message.strip() and "None" not in f.message, f.message
        out[f.code] = f
    return out


def gpu(**kw: object) -> Gpu:
    return Gpu(node="g1", index=6, **kw)  # type: ignore[arg-type]


def test_default_thresholds_are_the_documented_ones() -> None:
    assert (T.gpu_temp_warn_c, T.gpu_temp_crit_c, T.hbm_temp_warn_c) == (83.0, 88.0, 90.0)
    assert T.ecc_corrected_warn == 1000 and T.stale_factor == 3.0


# -- GPU temperature: warn at 83, error at 88 ---------------------------------------------------------
@pytest.mark.parametrize(("temp", "severity"), [
    (None, None), (0.0, None), (82.0, None), (82.9, None), (83.0, WARN), (83.1, WARN),
    (87.0, WARN), (87.9, WARN), (88.0, ERR), (88.1, ERR), (89.0, ERR), (120.0, ERR),
])
def test_gpu_temperature_boundaries(temp: float | None, severity: Severity | None) -> None:
    found = by_code(gpu_findings(gpu(temp_c=temp), T))
    if severity is None:
        assert "temp" not in found
        return
    assert found["temp"].severity is severity
    assert f"{temp:.0f}" in found["temp"].message
    assert found["temp"].object == "gpu/g1/6"


@pytest.mark.parametrize(("temp", "warn", "crit", "severity"), [
    (79.9, 80.0, 85.0, None), (80.0, 80.0, 85.0, WARN), (84.9, 80.0, 85.0, WARN), (85.0, 80.0, 85.0, ERR),
])
def test_gpu_temperature_follows_configured_thresholds(temp: float, warn: float, crit: float,
                                                       severity: Severity | None) -> None:
    found = by_code(gpu_findings(gpu(temp_c=temp), Thresholds(gpu_temp_warn_c=warn, gpu_temp_crit_c=crit)))
    assert (found["temp"].severity if "temp" in found else None) is severity


# -- HBM temperature: warn at 90 ---------------------------------------------------------------------
@pytest.mark.parametrize(("hbm", "severity"), [
    (None, None), (89.0, None), (89.9, None), (90.0, WARN), (90.1, WARN), (105.0, WARN),
])
def test_hbm_temperature_boundaries(hbm: float | None, severity: Severity | None) -> None:
    found = by_code(gpu_findings(gpu(hbm_temp_c=hbm), T))
    if severity is None:
        assert "hbm_temp" not in found
        return
    assert found["hbm_temp"].severity is severity and f"{hbm:.0f}" in found["hbm_temp"].message


def test_hbm_threshold_is_configurable() -> None:
    assert "hbm_temp" in by_code(gpu_findings(gpu(hbm_temp_c=80.0), Thresholds(hbm_temp_warn_c=80.0)))
    assert "hbm_temp" not in by_code(gpu_findings(gpu(hbm_temp_c=79.0), Thresholds(hbm_temp_warn_c=80.0)))


# -- ECC: any uncorrected is critical; corrected warns from 1000 (and only without uncorrected) ---------
@pytest.mark.parametrize(("corrected", "uncorrected", "expected"), [
    (None, None, {}),
    (0, 0, {}),
    (999, None, {}),
    (999, 0, {}),
    (1000, None, {"ecc_corrected": WARN}),
    (1000, 0, {"ecc_corrected": WARN}),
    (1001, 0, {"ecc_corrected": WARN}),
    (None, 1, {"ecc_uncorrected": CRIT}),
    (0, 1, {"ecc_uncorrected": CRIT}),
    (5000, 2, {"ecc_uncorrected": CRIT}),  # the worse finding only
])
def test_ecc_boundaries(corrected: int | None, uncorrected: int | None, expected: dict[str, Severity]) -> None:
    found = by_code(gpu_findings(gpu(ecc_corrected_volatile=corrected, ecc_uncorrected_volatile=uncorrected), T))
    ecc = {c: f.severity for c, f in found.items() if c.startswith("ecc")}
    assert ecc == expected
    if "ecc_corrected" in found:
        assert str(corrected) in found["ecc_corrected"].message
    if "ecc_uncorrected" in found:
        assert str(uncorrected) in found["ecc_uncorrected"].message


def test_ecc_corrected_threshold_is_configurable() -> None:
    t = Thresholds(ecc_corrected_warn=10)
    assert "ecc_corrected" not in by_code(gpu_findings(gpu(ecc_corrected_volatile=9), t))
    assert "ecc_corrected" in by_code(gpu_findings(gpu(ecc_corrected_volatile=10), t))


# -- Row remapping: failure (RMA) critical, pending (reset needed) error ------------------------------
@pytest.mark.parametrize(("failure", "pending", "expected"), [
    (None, None, {}),
    (False, False, {}),
    (None, True, {"remap_pending": ERR}),
    (False, True, {"remap_pending": ERR}),
    (True, None, {"remap_failure": CRIT}),
    (True, False, {"remap_failure": CRIT}),
    (True, True, {"remap_failure": CRIT}),
])
def test_row_remap(failure: bool | None, pending: bool | None, expected: dict[str, Severity]) -> None:
    found = by_code(gpu_findings(gpu(remap_failure=failure, remap_pending=pending), T))
    assert {c: f.severity for c, f in found.items() if c.startswith("remap")} == expected


# -- Lost GPU and Xid catalogue (FACTS §1) ------------------------------------------------------------
def test_lost_gpu_is_critical() -> None:
    assert by_code(gpu_findings(gpu(lost=True), T))["gpu_lost"].severity is CRIT
    assert "gpu_lost" not in by_code(gpu_findings(gpu(lost=False), T))


@pytest.mark.parametrize(("xid", "severity"), [
    # reset / reboot / RMA: critical
    (48, CRIT), (64, CRIT), (74, CRIT), (79, CRIT), (95, CRIT), (109, CRIT), (119, CRIT), (120, CRIT),
    (140, CRIT), (143, CRIT), (158, CRIT),
    # application-level (restart app / ignore): warning
    (13, WARN), (31, WARN), (43, WARN), (45, WARN), (63, WARN), (94, WARN),
    # everything else: error
    (92, ERR), (154, ERR), (1, ERR), (999, ERR),
])
def test_xid_severity_follows_the_catalogue(xid: int, severity: Severity) -> None:
    found = by_code(gpu_findings(gpu(last_xid=xid), T))
    assert found[f"xid{xid}"].severity is severity
    assert str(xid) in found[f"xid{xid}"].message


@pytest.mark.parametrize(("xid", "words"), [(79, "fallen off the bus"), (48, "double-bit ECC"), (64, "remap failure"),
                                            (999, "Xid catalog")])
def test_xid_message_says_what_it_means(xid: int, words: str) -> None:
    assert words in by_code(gpu_findings(gpu(last_xid=xid), T))[f"xid{xid}"].message


def test_no_xid_no_finding() -> None:
    assert not any(c.startswith("xid") for c in by_code(gpu_findings(gpu(last_xid=None), T)))


# -- Thermal throttling: only the thermal bits (0x20 SW, 0x40 HW) -----------------------------------------
@pytest.mark.parametrize(("mask", "fires", "name"), [
    (None, False, ""), (0, False, ""), (0x1, False, ""), (0x4, False, ""), (0x8, False, ""), (0x80, False, ""),
    (0x20, True, "SW_THERMAL_SLOWDOWN"), (0x40, True, "HW_THERMAL_SLOWDOWN"), (0x60, True, "HW_THERMAL_SLOWDOWN"),
    (0x41, True, "HW_THERMAL_SLOWDOWN"),
])
def test_thermal_throttle(mask: int | None, fires: bool, name: str) -> None:
    found = by_code(gpu_findings(gpu(throttle_reasons=mask), T))
    assert ("thermal_throttle" in found) is fires
    if fires:
        assert found["thermal_throttle"].severity is WARN and name in found["thermal_throttle"].message


def test_throttle_names_lists_every_bit_set() -> None:
    g = gpu(throttle_reasons=int(ThrottleReason.SW_POWER_CAP | ThrottleReason.SW_THERMAL_SLOWDOWN))
    assert g.throttle_names() == ["SW_POWER_CAP", "SW_THERMAL_SLOWDOWN"]
    assert gpu(throttle_reasons=0).throttle_names() == [] and gpu().throttle_names() == []


# -- PCIe width: info when narrower than max under load (width may drop at idle, FACTS §1) ------------------
@pytest.mark.parametrize(("cur", "mx", "util", "fires"), [
    (8, 16, 50.0, True), (15, 16, 1.0, True),
    (16, 16, 50.0, False),  # at max
    (8, 16, 0.0, False),  # idle: width may drop
    (8, 16, None, False),  # unknown load
    (None, 16, 50.0, False), (8, None, 50.0, False), (8, 0, 50.0, False),
])
def test_pcie_width(cur: int | None, mx: int | None, util: float | None, fires: bool) -> None:
    found = by_code(gpu_findings(gpu(pcie_width_current=cur, pcie_width_max=mx, util_pct=util), T))
    assert ("pcie_width" in found) is fires
    if fires:
        assert found["pcie_width"].severity is INFO
        assert f"x{cur}" in found["pcie_width"].message and f"x{mx}" in found["pcie_width"].message


def test_healthy_gpu_has_no_findings() -> None:
    g = gpu(util_pct=95.0, temp_c=82.0, hbm_temp_c=89.0, ecc_corrected_volatile=999, ecc_uncorrected_volatile=0,
            remap_pending=False, remap_failure=False, throttle_reasons=0x4, pcie_width_current=16, pcie_width_max=16)
    assert gpu_findings(g, T) == []


# -- InfiniBand (FACTS §4) --------------------------------------------------------------------------
def port(**kw: object) -> IbPort:
    return IbPort(node="g1", device="mlx5_0", port=1, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("state", "fires"), [
    (None, False), ("ACTIVE", False), ("DOWN", True), ("INIT", True), ("ARMED", True), ("ACTIVE_DEFER", True),
])
def test_ib_port_state(state: str | None, fires: bool) -> None:
    found = by_code(ib_findings(port(state=state, phys_state="Polling")))
    assert ("ib_down" in found) is fires
    if fires:
        assert found["ib_down"].severity is ERR and state in found["ib_down"].message
        assert found["ib_down"].object == "ib/g1/mlx5_0:1"


@pytest.mark.parametrize(("rate", "max_rate", "fires"), [
    (200.0, 400.0, True), (399.0, 400.0, True), (400.0, 400.0, False), (None, 400.0, False), (200.0, None, False),
])
def test_ib_rate(rate: float | None, max_rate: float | None, fires: bool) -> None:
    found = by_code(ib_findings(port(state="ACTIVE", rate_gbps=rate, max_rate_gbps=max_rate)))
    assert ("ib_rate" in found) is fires
    if fires:
        assert found["ib_rate"].severity is WARN and "400" in found["ib_rate"].message


def test_ib_rate_message_prefers_the_sysfs_text() -> None:
    f = by_code(ib_findings(port(rate_gbps=200.0, max_rate_gbps=400.0, rate_text="200 Gb/sec (4X HDR)")))["ib_rate"]
    assert "200 Gb/sec (4X HDR)" in f.message and "400" in f.message


@pytest.mark.parametrize(("deltas", "expected"), [
    ({}, {}),
    ({"link_downed": 0}, {}),
    ({"link_downed": 1}, {"ib_flap": ERR}),
    ({"link_downed": 3, "symbol_error": 5}, {"ib_flap": ERR}),  # the worse one only
    ({"symbol_error": 1}, {"ib_errors": WARN}),
    ({"link_error_recovery": 1}, {"ib_errors": WARN}),
    ({"local_link_integrity_errors": 2}, {"ib_errors": WARN}),
    ({"port_rcv_errors": 7}, {"ib_errors": WARN}),
    ({"port_rcv_remote_physical_errors": 1}, {"ib_errors": WARN}),
    ({"symbol_error": 0, "port_rcv_errors": 0}, {}),
    # congestion, not cabling (FACTS §4)
    ({"port_xmit_wait": 10_000}, {}),
    ({"port_xmit_discards": 5}, {}),
])
def test_ib_counters(deltas: dict[str, int], expected: dict[str, Severity]) -> None:
    found = by_code(ib_findings(port(state="ACTIVE", deltas=deltas)))
    assert {c: f.severity for c, f in found.items()} == expected


def test_ib_flap_and_error_messages_carry_the_counts() -> None:
    assert "3" in by_code(ib_findings(port(deltas={"link_downed": 3})))["ib_flap"].message
    msg = by_code(ib_findings(port(deltas={"symbol_error": 5, "port_rcv_errors": 2, "port_xmit_wait": 99})))["ib_errors"].message
    assert "symbol_error+5" in msg and "port_rcv_errors+2" in msg and "port_xmit_wait" not in msg
    msg = by_code(ib_findings(port(deltas={"link_error_recovery": 1, "port_rcv_errors": 0})))["ib_errors"].message
    assert "link_error_recovery+1" in msg and "port_rcv_errors" not in msg, "only the counters that rose"


# -- Mounts (FACTS §5) -------------------------------------------------------------------------------
@pytest.mark.parametrize(("state", "severity"), [
    (MountState.OK, None), (MountState.UNKNOWN, None),
    (MountState.SLOW, WARN), (MountState.DEGRADED, WARN),
    (MountState.READ_ONLY, ERR), (MountState.MISSING, ERR),
    (MountState.HUNG, CRIT),
])
def test_mount_states(state: MountState, severity: Severity | None) -> None:
    found = mount_findings(Mount(node="g1", target="/lustre", fstype="lustre", state=state, latency_ms=1234.0,
                                 detail="OST0003 inactive"))
    if severity is None:
        assert found == []
        return
    f = by_code(found)[f"mount_{state.value}"]
    assert f.severity is severity and f.object == "mount/g1:/lustre"
    assert "/lustre" in f.message and "1234" in f.message and "OST0003 inactive" in f.message


def test_mount_without_latency_says_no_number() -> None:
    f = by_code(mount_findings(Mount(node="g1", target="/scratch", fstype="nfs4", state=MountState.HUNG)))["mount_hung"]
    assert "/scratch" in f.message and "ms" not in f.message


# -- Slurm node states (FACTS §3) --------------------------------------------------------------------
@pytest.mark.parametrize(("base", "flags", "expected"), [
    ("IDLE", set(), {}),
    ("ALLOCATED", set(), {}),
    ("MIXED", set(), {}),
    ("COMPLETING", set(), {}),
    ("FUTURE", set(), {}),
    ("UNKNOWN", set(), {}),
    ("IDLE", {"MAINTENANCE"}, {}),
    ("IDLE", {"POWERED_DOWN"}, {}),
    ("IDLE", {"REBOOT_REQUESTED"}, {}),
    ("DOWN", set(), {"slurm_down": ERR}),
    ("ERROR", set(), {"slurm_down": ERR}),
    ("INVAL", set(), {"slurm_down": ERR}),
    ("IDLE", {"NOT_RESPONDING"}, {"slurm_down": ERR}),
    ("IDLE", {"FAIL"}, {"slurm_down": ERR}),
    ("ALLOCATED", {"FAIL"}, {"slurm_down": ERR}),
    ("MIXED", {"FAIL"}, {"slurm_down": ERR}),
    ("DOWN", {"DRAIN"}, {"slurm_down": ERR}),  # the worse finding only
    ("IDLE", {"DRAIN", "NOT_RESPONDING"}, {"slurm_down": ERR}),
    ("IDLE", {"DRAIN"}, {"slurm_drain": WARN}),
    ("MIXED", {"DRAIN"}, {"slurm_drain": WARN}),
    ("ALLOCATED", {"DRAIN"}, {"slurm_drain": WARN}),
    ("IDLE", {"DRAIN", "REBOOT_REQUESTED"}, {"slurm_drain": WARN}),
])
def test_slurm_node_states(base: str, flags: set[str], expected: dict[str, Severity]) -> None:
    node = Node(name="g1", slurm=SlurmNodeInfo(base_state=base, flags=frozenset(flags), reason="xid 79",
                                               reason_user="root"))
    found = by_code(node_state_findings(node))
    assert {c: f.severity for c, f in found.items()} == expected
    for f in found.values():
        assert f.object == "node/g1" and "xid 79" in f.message


@pytest.mark.parametrize(("base", "flags", "state_words"), [
    ("IDLE", {"DRAIN"}, "DRAINED"), ("MIXED", {"DRAIN"}, "DRAINING"), ("ALLOCATED", {"FAIL"}, "FAILING"),
    ("MIXED", {"FAIL"}, "FAILING"), ("IDLE", {"FAIL"}, "FAIL"), ("DOWN", set(), "DOWN"),
])
def test_slurm_finding_names_the_display_state(base: str, flags: set[str], state_words: str) -> None:
    (f,) = node_state_findings(Node(name="g1", slurm=SlurmNodeInfo(base_state=base, flags=frozenset(flags))))
    assert state_words in f.message and "no reason" in f.message


def test_slurm_drain_says_who() -> None:
    (f,) = node_state_findings(Node(name="g1", slurm=SlurmNodeInfo(base_state="IDLE", flags=frozenset({"DRAIN"}),
                                                                   reason="bad ib", reason_user="alice")))
    assert "alice" in f.message and "bad ib" in f.message
    (f,) = node_state_findings(Node(name="g1", slurm=SlurmNodeInfo(base_state="IDLE", flags=frozenset({"DRAIN"}))))
    assert " by " not in f.message


# -- Kubernetes node conditions (FACTS §6) -----------------------------------------------------------
@pytest.mark.parametrize(("conditions", "unschedulable", "expected"), [
    ({"Ready": "True"}, False, {}),
    ({"Ready": "False"}, False, {"k8s_notready": ERR}),
    ({"Ready": "Unknown"}, False, {"k8s_notready": ERR}),
    ({}, False, {"k8s_notready": ERR}),  # no Ready condition: unknown
    ({"Ready": "True"}, True, {"k8s_cordoned": INFO}),
    ({"Ready": "False"}, True, {"k8s_notready": ERR}),  # the worse one only
    ({"Ready": "True", "MemoryPressure": "True"}, False, {"MemoryPressure": WARN}),
    ({"Ready": "True", "DiskPressure": "True"}, False, {"DiskPressure": WARN}),
    ({"Ready": "True", "PIDPressure": "True"}, False, {"PIDPressure": WARN}),
    ({"Ready": "True", "NetworkUnavailable": "True"}, False, {"NetworkUnavailable": WARN}),
    ({"Ready": "True", "MemoryPressure": "False", "DiskPressure": "Unknown"}, False, {}),
    ({"Ready": "False", "DiskPressure": "True"}, True, {"k8s_notready": ERR, "DiskPressure": WARN}),
    ({"Ready": "True", "MemoryPressure": "True", "PIDPressure": "True"}, True,
     {"k8s_cordoned": INFO, "MemoryPressure": WARN, "PIDPressure": WARN}),
])
def test_k8s_conditions(conditions: dict[str, str], unschedulable: bool, expected: dict[str, Severity]) -> None:
    node = Node(name="g1", k8s=K8sNodeInfo(name="g1", conditions=conditions, unschedulable=unschedulable,
                                           condition_messages={"Ready": "kubelet stopped posting status"}))
    found = by_code(node_state_findings(node))
    assert {c: f.severity for c, f in found.items()} == expected
    if "k8s_notready" in found:
        assert conditions.get("Ready", "Unknown") in found["k8s_notready"].message
        assert "kubelet stopped posting status" in found["k8s_notready"].message


def test_not_ready_without_a_condition_message() -> None:
    f = by_code(node_state_findings(Node(name="g1", k8s=K8sNodeInfo(name="g1", conditions={"Ready": "False"}))))
    assert "False" in f["k8s_notready"].message


def test_node_known_to_neither_scheduler_has_no_state_findings() -> None:
    assert node_state_findings(Node(name="g1")) == []


# -- Aggregation: worst first, node severity is the worst finding -------------------------------------
def snap(**kw: object) -> ClusterSnapshot:
    return ClusterSnapshot(cluster="c", time=0.0, **kw)  # type: ignore[arg-type]


def test_node_findings_worst_first_and_severity_is_the_worst() -> None:
    s = snap(nodes={"g1": Node(name="g1", slurm=SlurmNodeInfo(base_state="IDLE", flags=frozenset({"DRAIN"})))},
             gpus={"g1": (gpu(temp_c=88.0), gpu(lost=True)), "g2": (Gpu(node="g2", index=0, temp_c=83.0),)},
             ib={"g1": (port(state="ACTIVE", rate_gbps=200.0, max_rate_gbps=400.0),)},
             mounts={"g1": (Mount(node="g1", target="/x", fstype="nfs4", state=MountState.MISSING),)})
    found = node_findings(s, "g1", T)
    assert [f.severity for f in found] == [CRIT, ERR, ERR, WARN, WARN]
    assert {f.code for f in found} == {"gpu_lost", "temp", "mount_missing", "slurm_drain", "ib_rate"}
    assert node_severity(s, "g1", T) is CRIT
    assert node_severity(s, "g2", T) is WARN  # a node known only from its GPUs
    assert node_severity(s, "nope", T) is OK
    everything = all_findings(s, T)
    assert len(everything) == 6 and everything[0].code == "gpu_lost" and everything[-1].severity is WARN
    assert {f.object for f in everything if f.object.startswith("gpu/g2")} == {"gpu/g2/0"}
