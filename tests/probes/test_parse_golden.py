"""Every real recorded output in tests/fixtures/probes, parsed whole and compared with its reviewed
golden file (tests/fixtures/probes/golden/), plus the behaviours a golden file cannot name."""

from __future__ import annotations

import pytest
from golden import check_golden

from hpctui.model.mount import MountState
from hpctui.probes import parse_gpu as pg
from hpctui.probes import parse_node as pn
from hpctui.validate import Drops

QUERY_GPU = ("nvidia-smi_query-gpu_allfields_h100-80gb-hbm3_drv590.48.01_load.csv",
             "nvidia-smi_query-gpu_allfields_h100-mig-enabled_drv590.48.01_load.csv",
             "nvidia-smi_query-gpu_allfields_h200_drv590.48.01_idle.csv")
LIST = ("nvidia-smi_L_h100-80gb-hbm3_mig-7x1g.10gb.txt", "nvidia-smi_L_h100-mig-enabled_drv590.48.01.txt",
        "nvidia-smi_L_h200-mig-enabled_drv590.48.01.txt")
NVLINK = ("nvidia-smi_nvlink-s_2x-a100-pcie-40gb_drv555.42.02_all-inactive.txt",
          "nvidia-smi_nvlink-s_h100-80gb-hbm3_drv590.48.01.txt",
          "nvidia-smi_nvlink-s_h100-mig-enabled_drv590.48.01.txt", "nvidia-smi_nvlink-status_8x-a100-sxm4-80gb.txt")
Q = ("nvidia-smi_q_h100-80gb-hbm3_drv590.48.01_load.txt", "nvidia-smi_q_h200-mig-enabled_drv590.48.01_load.txt")
DMESG = ("dmesg-T_xid119-gsp-timeout_dell-xe9680.log", "dmesg-decode-iso_xid13-xid43.log",
         "dmesg_xid79-sxid20034_hgx-a100_gpud-readme.log")
IB = ("sysfs-class-infiniband_h100-node_8x-cx7-ndr400_plus_bf3-bond.txt",
      "sysfs-class-infiniband_procfs-fixture_mlx4-qdr_mlx5_hfi1-opa.txt")


@pytest.mark.parametrize("name", QUERY_GPU)
def test_query_gpu(fixture_text, name: str) -> None:
    drops = Drops()
    check_golden(f"{name}.query_gpu", pg.parse_query_gpu("n1", fixture_text(name), drops=drops))
    assert drops.warnings() == []


@pytest.mark.parametrize("name", LIST)
def test_list_gpus(fixture_text, name: str) -> None:
    check_golden(f"{name}.list_gpus", pg.parse_list_gpus(fixture_text(name)))


@pytest.mark.parametrize("name", NVLINK)
def test_nvlink_status_and_notes(fixture_text, name: str) -> None:
    drops = Drops()
    links, unsupported = pg.parse_nvlink_status(fixture_text(name), drops, "n1")
    check_golden(f"{name}.nvlink", {"links": links, "unsupported": sorted(unsupported),
                                    "notes": pg.parse_nvlink_notes(fixture_text(name))})
    assert drops.warnings() == []


@pytest.mark.parametrize("name", Q)
def test_q_mig_memory(fixture_text, name: str) -> None:
    check_golden(f"{name}.mig_memory", pg.parse_q_mig_memory(fixture_text(name), None, "n1"))


def test_mig_lgi_and_compute_apps(fixture_text) -> None:
    check_golden("nvidia-smi_mig-lgi_a100-40gb_7x1g.5gb.txt.lgi",
                 pg.parse_mig_lgi(fixture_text("nvidia-smi_mig-lgi_a100-40gb_7x1g.5gb.txt")))
    name = "nvidia-smi_query-compute-apps_h100-80gb-hbm3_drv590.48.01_load.csv"
    check_golden(f"{name}.apps", pg.parse_compute_apps(fixture_text(name), None))


@pytest.mark.parametrize("name", DMESG)
def test_kernel_log_xids_and_sxids(fixture_text, name: str) -> None:
    text = fixture_text(name)
    check_golden(f"{name}.xid", {"xid": pn.parse_xid_lines(text, 1_700_000_000.0, None, "n1"),
                                 "sxid": pn.parse_sxid_lines(text, 1_700_000_000.0, None, "n1")})


@pytest.mark.parametrize("name", IB)
def test_ib_sysfs(fixture_text, name: str) -> None:
    drops = Drops()
    check_golden(f"{name}.ib", pn.parse_ib_sysfs(fixture_text(name), drops, "n1"))
    assert drops.warnings() == []


def test_mountinfo_and_mount_states(fixture_text) -> None:
    name = "proc-mountinfo_nfs4-nfs3_node-exporter-fixture.txt"
    infos = pn.parse_mountinfo(fixture_text(name))
    check_golden(f"{name}.mountinfo", infos)
    assert [i.fstype for i in pn.parse_mountinfo(fixture_text(name), ("nfs4",))] == ["nfs4", "nfs4"]
    nfs = next(i for i in infos if i.target == "/mnt/nfs/test")
    ok = pn.StatResult(rc=0, late=False, latency_ms=12.5, error=None)
    m = pn.mount_state(nfs, ok, 1000.0)
    assert (m.node, m.target, m.fstype, m.source, m.state, m.latency_ms, m.detail) == (
        "", "/mnt/nfs/test", "nfs4", "192.168.1.1:/srv/test", MountState.OK, 12.5, None)
    at_limit = pn.mount_state(nfs, pn.StatResult(rc=0, late=False, latency_ms=1000.0, error=None), 1000.0)
    assert at_limit.state is MountState.OK  # slow means over the limit
    assert pn.mount_state(nfs, pn.StatResult(rc=0, late=False, latency_ms=1000.5, error=None), 1000.0).state \
        is MountState.SLOW
    hung = pn.mount_state(nfs, pn.StatResult(rc=None, late=True, latency_ms=None, error=None), 1000.0)
    assert (hung.state, hung.detail) == (MountState.HUNG, "stat -f did not return in time")
    failed = pn.mount_state(nfs, pn.StatResult(rc=1, late=False, latency_ms=3.0, error=None), 1000.0)
    assert (failed.state, failed.detail, failed.latency_ms) == (MountState.DEGRADED, "stat -f exit 1", 3.0)
    assert pn.mount_state(nfs, None, 1000.0).state is MountState.UNKNOWN
