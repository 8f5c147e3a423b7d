"""Every real recorded output in tests/fixtures/probes, parsed whole and compared with its reviewed
golden file (tests/fixtures/probes/golden/), plus the behaviours a golden file cannot name and the
paths the recordings leave untried: MIG instances from ``-lgi``/``-lci`` or ``-L`` alone, NVLink
error lines the parser must skip, implausible values and the warning that names them, remapped
rows, GPU process owners, services. The ``nvlink -e``, ``-lci``, ``--query-remapped-rows`` and
``beegfs-check-servers`` texts below are written in their documented formats (no real recording here)."""

from __future__ import annotations

import re

import pytest
from golden import check_golden

from hpctui.model.gpu import Gpu, MigInstance
from hpctui.model.mount import MountState
from hpctui.model.probe import GpuProcess, ServiceState, ServiceStatus
from hpctui.model.validate import Drops
from hpctui.sources.ssh.probe import parse_gpu as pg
from hpctui.sources.ssh.probe import parse_node as pn

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


H100_MIG_L = "nvidia-smi_L_h100-mig-enabled_drv590.48.01.txt"
H200_MIG_Q = "nvidia-smi_q_h200-mig-enabled_drv590.48.01_load.txt"
H200_MIG_L = "nvidia-smi_L_h200-mig-enabled_drv590.48.01.txt"
A100_LGI = "nvidia-smi_mig-lgi_a100-40gb_7x1g.5gb.txt"


def _gpu(bus: str = "00000000:83:00.0") -> Gpu:
    return Gpu(node="n", index=0, pci_bus_id=bus, mig_mode_current=True)


def test_mig_instances_from_lgi_and_lci_when_q_has_no_memory(fixture_text) -> None:
    lgi = pg.parse_mig_lgi(fixture_text(A100_LGI))
    lci = [pg.ComputeInstanceRow(0, 9, "1g.5gb", 0), pg.ComputeInstanceRow(1, 7, "1g.5gb", 3)]
    other_gpu = [*lgi, pg.GpuInstanceRow(1, "7g.40gb", 0, 0)]
    inst = pg.mig_instances(_gpu(), [], other_gpu, lci, [])
    assert inst == tuple(MigInstance(gi_id=g, profile="1g.5gb", ci_id=0 if g == 9 else None) for g in range(7, 14))


def test_mig_instances_from_L_alone_are_numbered_by_device(fixture_text) -> None:
    _, migs = pg.parse_list_gpus(fixture_text(H100_MIG_L))
    inst = pg.mig_instances(_gpu(), [*migs, pg.MigDevice(1, 0, "7g.80gb", "MIG-other")], [], [], [])
    assert inst == (MigInstance(gi_id=0, profile="3g.40gb", uuid="MIG-00000000-0000-0000-0000-000000000000"),
                    MigInstance(gi_id=1, profile="2g.20gb", uuid="MIG-00000001-0000-0000-0000-000000000001"),
                    MigInstance(gi_id=2, profile="1g.10gb", uuid="MIG-00000002-0000-0000-0000-000000000002"),
                    MigInstance(gi_id=3, profile="1g.10gb", uuid="MIG-00000003-0000-0000-0000-000000000003"))


def test_mig_devices_without_memory_rows_are_skipped_not_the_rest(fixture_text) -> None:
    _, migs = pg.parse_list_gpus(fixture_text(H200_MIG_L))
    mem = [m for m in pg.parse_q_mig_memory(fixture_text(H200_MIG_Q)) if m.device != 0]
    inst = pg.mig_instances(_gpu(), migs, [], [], mem)
    assert [(i.gi_id, i.ci_id, i.profile, i.memory_used_mib, i.memory_total_mib) for i in inst] == [
        (2, 1, "3g.71gb", 16925.0, 71424.0), (3, 0, "2g.35gb", 17.0, 33280.0), (9, 0, "1g.18gb", 9.0, 16384.0),
        (10, 0, "1g.18gb", 9.0, 16384.0)]
    assert pg.mig_instances(_gpu("0000:84:00.0"), migs, [], [], mem)[0].memory_total_mib is None


def test_q_mig_memory_implausible_ids_and_sizes_are_named_in_one_warning(fixture_text) -> None:
    text = fixture_text(H200_MIG_Q)
    bad = re.sub(r"(Total\s+: )71424 MiB", r"\g<1>9999999999999 MiB", text, count=1)
    bad = re.sub(r"(GPU Instance ID\s+: )3\b", r"\g<1>70000", bad, count=1)
    drops = Drops()
    mem = pg.parse_q_mig_memory(bad, drops, "n1")
    assert (mem[0].total_mib, mem[2].gi_id) == (None, None)
    assert mem[1].total_mib == 71424.0 and len(mem) == 5
    (warning,) = drops.warnings()
    assert "MIG memory total MiB=" in warning and "MIG GPU instance id=70000 on n1 00000000:83:00.0" in warning
    assert pg.parse_q_mig_memory(bad) == mem  # without drops: the same N/A, nothing recorded


def test_nvlink_errors_skip_unknown_labels_and_name_implausible_values() -> None:
    text = ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-a)\n"
            "\t Link 0: Rx Errors: 3\n\t Link 0: CRC Errors: N/A\n\t Link 1: Replay Errors: 2\n"
            "\t Link 1: CRC Flit Errors: 1\n\t Link 1: CRC Data Errors: 4\n\t Link 99999: Replay Errors: 1\n"
            "\t Link 2: Recovery Errors: 99999999999999999999\n"
            "GPU 1234567: NVIDIA H100 80GB HBM3 (UUID: GPU-b)\n\t Link 0: Replay Errors: 5\n"
            "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-c)\n\t Link 4: Recovery Errors: 6\n")
    drops = Drops()
    assert pg.parse_nvlink_errors(text, drops, "n1") == {0: {1: {"replay": 2, "crc": 5}}, 1: {4: {"recovery": 6}}}
    assert drops.warnings() == ["3 implausible value(s) dropped, shown as N/A (nvlink link index=99999 on n1, "
                                "nvlink Recovery errors=21-digit number on n1, nvlink GPU index='1234567' on n1)"]
    assert pg.parse_nvlink_errors(text) == pg.parse_nvlink_errors(text, Drops(), "n1")


def test_remapped_rows_with_and_without_header_onto_the_gpu() -> None:
    noheader = "GPU-a, 0, 2, No, No\nGPU-b, 1, 0, Yes, Yes\n, 1, 1, No, No\nGPU-c, 1\n"
    header = "gpu_uuid, remapped_rows.correctable, remapped_rows.uncorrectable, remapped_rows.pending, " \
             "remapped_rows.failure\n" + noheader
    for text in (noheader, "  " + header):
        rows = pg.parse_remapped_rows(text)
        assert rows == {"GPU-a": pg.RemapRow(0, 2, False, False), "GPU-b": pg.RemapRow(1, 0, True, True)}
    g = Gpu(node="n", index=0, uuid="GPU-b")
    assert pg.apply_remap(g, None) is g
    assert pg.apply_remap(g, rows["GPU-b"]) == Gpu(node="n", index=0, uuid="GPU-b", remapped_correctable=1,
                                                  remapped_uncorrectable=0, remap_pending=True, remap_failure=True)


def test_process_owners_from_the_procs_section() -> None:
    procs = pg.parse_procs("cmd before any pid\npid 7\nuid 0\ncmd   \n"
                           "cgroup 0::/kubepods/burstable/pod8f2b6c1e_1a2b_4c3d_9e8f_0123456789ab/x\n"
                           "cgroup 0::/slurm/uid_0/job_12/step_0\nbogus 1\npid 8\nuid\npid x\nuid 5 bob\n"
                           "pid 9\nuid 1000 alice\ncmd python train.py\ngone\n")
    assert procs == {7: pg.ProcInfo(pid=7, uid=0, slurm_job_id="12", pod="8f2b6c1e-1a2b-4c3d-9e8f-0123456789ab"),
                     8: pg.ProcInfo(pid=8), 9: pg.ProcInfo(pid=9, uid=1000, user="alice", command="python train.py",
                                                          gone=True)}
    apps = [GpuProcess(pid=7, gpu_uuid="GPU-a", command="nvidia-smi-name"), GpuProcess(pid=9, gpu_uuid="GPU-z"),
            GpuProcess(pid=10, gpu_uuid=None)]
    merged = pg.merge_processes(apps, procs, {"GPU-a": 3})
    assert merged[0] == GpuProcess(pid=7, gpu_uuid="GPU-a", gpu_index=3, user="0", command="nvidia-smi-name",
                                   slurm_job_id="12", pod="8f2b6c1e-1a2b-4c3d-9e8f-0123456789ab")
    assert merged[1] is apps[1] and merged[2] is apps[2]  # gone / unknown: as nvidia-smi said


def test_services_from_systemctl_show_and_pid_files() -> None:
    text = ("Id=a.service\nLoadState=loaded\nActiveState=inactive\nSubState=dead\n\n"
            "Id=b.service\nLoadState=loaded\nActiveState=activating\nSubState=auto-restart\n\n"
            "Id=c.service\nLoadState=not-found\nActiveState=inactive\nSubState=dead\n\n"
            "Id=d\nActiveState=weird\nSubState=x=y\n\nLoadState=loaded\n\n"
            "Id=e.service\nActiveState=active\nSubState=running\n")
    assert pn.parse_systemctl_show("n", text) == [
        ServiceState(node="n", name="a", status=ServiceStatus.INACTIVE, detail="dead"),
        ServiceState(node="n", name="b", status=ServiceStatus.ACTIVATING, detail="auto-restart"),
        ServiceState(node="n", name="c", status=ServiceStatus.NOT_FOUND),
        ServiceState(node="n", name="d", status=ServiceStatus.UNKNOWN, detail="x=y"),
        ServiceState(node="n", name="e", status=ServiceStatus.ACTIVE)]
    assert pn.parse_service_pids("n", "slurmd active\n  munge inactive\nkubelet not-found\nx weird state\n\n") == [
        ServiceState(node="n", name="slurmd", status=ServiceStatus.ACTIVE),
        ServiceState(node="n", name="munge", status=ServiceStatus.INACTIVE),
        ServiceState(node="n", name="kubelet", status=ServiceStatus.NOT_FOUND),
        ServiceState(node="n", name="x", status=ServiceStatus.UNKNOWN)]
    assert pn.unit_name("slurmd.service") == "slurmd" and pn.unit_name("slurmd.socket") == "slurmd.socket"


def test_beegfs_check_servers_problem_lines() -> None:
    text = ("Management\n==========\nmgmt01 [ID: 1]: reachable at 10.0.0.1:8008 (protocol: TCP)\n"
            "Storage\n==========\nstor02 [ID: 2]: UNREACHABLE\nstor03 [ID: 3]: offline\n Error: x \n")
    assert pn.parse_beegfs_check_servers(text) == ["stor02 [ID: 2]: UNREACHABLE", "stor03 [ID: 3]: offline",
                                                   "Error: x"]
