"""Every real recorded output in tests/fixtures/probes, parsed whole and compared with its reviewed
golden file (tests/fixtures/probes/golden/), plus the behaviours a golden file cannot name and the
paths the recordings leave untried: MIG instances from ``-lgi``/``-lci`` or ``-L`` alone, NVLink
error lines the parser must skip, implausible values and the warning that names them, remapped
rows, GPU process owners, services. The ``nvlink -e``, ``-lci``, ``--query-remapped-rows`` and
``beegfs-check-servers`` texts below are written in their documented formats (no real recording here; the
last in the format its script prints, BeeGFS 7.4.7 utils/scripts/beegfs-check-servers)."""

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
    text = ("Management\n==========\nmgmt01 [ID: 1]: reachable at 10.0.0.1:8008 (protocol: TCP)\n\n"
            "Storage\n==========\nstor02 [ID: 2]: UNREACHABLE\n"
            "error-stor3 [ID: 3]: reachable at 10.0.0.3:8003 (protocol: RDMA)\n Error: x \n")
    assert pn.parse_beegfs_check_servers(text) == ["stor02 [ID: 2]: UNREACHABLE", "Error: x"], \
        "a reachable server whose name says error is not a problem"


@pytest.mark.parametrize(("text", "want"), [
    ("Yes", True), ("No", False), ("Enabled", True), ("Disabled", False), ("Active", True), ("Not Active", False),
    (" yes ", True), ("ENABLED", True), ("active", True), ("On", True), ("true", True), ("1", True),
    ("NO", False), ("disabled", False), ("not active", False), ("Off", False), ("False", False), ("0", False),
    ("[N/A]", None), ("N/A", None), ("[Not Supported]", None), ("Pending", None), ("", None), (None, None)])
def test_on_off_cells_in_any_spelling_and_case(text: str | None, want: bool | None) -> None:
    """nvidia-smi writes flags as Yes/No, Enabled/Disabled or Active/Not Active (``-q`` and CSV differ
    by field and driver); any case of those or of on/off, true/false, 1/0 reads, anything else is N/A."""
    assert pg.flag(text) is want


def test_q_mig_memory_implausible_device_and_compute_instance_ids_are_named(fixture_text) -> None:
    text = fixture_text(H200_MIG_Q)
    bad = re.sub(r"(Compute Instance ID\s+: )1\b", r"\g<1>4096", text, count=1)
    bad = re.sub(r"(\n\s+Index\s+: )2\b", r"\g<1>-1", bad, count=1)
    drops = Drops()
    mem = pg.parse_q_mig_memory(bad, drops, "n1")
    good = pg.parse_q_mig_memory(text)
    assert [m.device for m in mem] == [m.device for m in good if m.device != 2]  # no plausible index: left out
    assert mem[1].ci_id is None and mem[1].gi_id == good[1].gi_id and mem[0] == good[0]
    (warning,) = drops.warnings()
    assert warning == ("2 implausible value(s) dropped, shown as N/A (MIG compute instance id=4096 on n1 "
                       f"{good[1].gpu_bus_id}, MIG device index=-1 on n1 {good[2].gpu_bus_id})")


SXID_LOG = "dmesg_xid79-sxid20034_hgx-a100_gpud-readme.log"


def test_sxid_codes_outside_1_to_99999_are_dropped_and_named(fixture_text) -> None:
    """The real NVSwitch log's first headline with its code replaced: 1 and 99999 are SXids; 0,
    100000 and 7+ digits are not, each named once (7+ digits cut short, never an int() of them)."""
    line = fixture_text(SXID_LOG).splitlines()[5]
    assert ": 20034, Fatal" in line
    codes = ("1", "99999", "0", "100000", "1234567", "9" * 30)
    text = "\n".join(line.replace(": 20034,", f": {c},") for c in codes)
    drops = Drops()
    xs = pn.parse_sxid_lines(text, 1_700_000_000.0, drops, "n1")
    assert [x.sxid for x in xs] == [1, 99999]
    assert [x.pci_bus_id for x in xs] == ["0000:06:00.0"] * 2
    assert xs[0].time == pytest.approx(1_700_000_000.0 + 6781753.400584)
    (warning,) = drops.warnings()
    assert warning == ("4 implausible value(s) dropped, shown as N/A (SXid=0 on n1, SXid=100000 on n1, "
                       "SXid='1234567…' on n1, …)")
    assert pn.parse_sxid_lines(text, 1_700_000_000.0) == xs  # without drops: the same events, nothing recorded


def test_sxid_pci_ids_read_in_lower_case_and_detail_lines_of_a_headed_event_fold(fixture_text) -> None:
    text = fixture_text(SXID_LOG).replace("PCI:0000:06:00.0", "PCI:0000:0A:00.0")
    xs = pn.parse_sxid_lines(text, 1_700_000_000.0)
    assert xs[0].pci_bus_id == "0000:0a:00.0" and xs[0].switch == "nvidia-nvswitch1"
    assert [x.time for x in xs] == sorted(x.time or 0.0 for x in xs)
    # two detail lines of one switch and SXid without a headline: one event, the first of them
    alone = [ln.replace("nvswitch2", "nvswitch7").replace("0000:07:", "0000:17:") for ln in text.splitlines()
             if "nvswitch2" in ln and "Fatal" not in ln]
    alone = [*alone, alone[0].replace("Severity 1", "Severity 2")]
    (x,) = pn.parse_sxid_lines("\n".join(alone))
    assert (x.switch, x.fatal, x.time) == ("nvidia-nvswitch7", None, None) and x.message.startswith("Severity 1 ")


def test_xid_codes_of_6_digits_and_more_are_dropped_and_named(fixture_text) -> None:
    text = fixture_text("dmesg-T_xid119-gsp-timeout_dell-xe9680.log")
    line = next(ln for ln in text.splitlines() if "NVRM: Xid" in ln)
    code = re.search(r"\): (\d+),", line).group(1)  # type: ignore[union-attr]
    bad = "\n".join(line.replace(f"): {code},", f"): {c},") for c in ("9999", "10000", "123456", "1" * 4001))
    drops = Drops()
    xs = pn.parse_xid_lines(bad, drops=drops, node="n1")
    assert [x.xid for x in xs] == [9999]
    (warning,) = drops.warnings()
    assert warning == ("3 implausible value(s) dropped, shown as N/A (Xid=10000 on n1, Xid=123456 on n1, "
                       f"Xid='{'1' * 20}…' on n1)")


def recorded_res_section(fixture_text) -> str:
    """The first ``res`` section of the recorded probe loop stream of the CPU node (tests/fixtures/probes/loop)."""
    text = fixture_text("loop/cpu-ro.stream")
    start = text.index("@@hpctui section res ")
    body = text[text.index("\n", start) + 1:]
    return body[:body.index("\n@@hpctui")]


def test_a_recorded_res_section_reads_whole(fixture_text) -> None:
    s = pn.parse_proc_resources(recorded_res_section(fixture_text))
    assert s.load == (5.02, 3.02, 1.02) and s.cpu_count == 32 and s.boot_time == 1700000000.0
    # user..steal (guest is already in user), idle = idle + iowait
    assert (s.cpu_total, s.cpu_busy) == (4705 + 356 + 584 + 3699 + 23 + 23, 4705 + 356 + 584 + 23)
    assert s.mem_kib == {"MemTotal": 2113622016, "MemAvailable": 1800031702, "SwapTotal": 8388604, "SwapFree": 8388604}
    assert s.disk_io_ms == {"nvme0n1": 12840}  # the partition is left out
    assert s.nic == {"eth0": (800128970, 1591370, 0)}  # lo is left out


def test_implausible_res_values_leave_their_line_out_and_are_named(fixture_text) -> None:
    text = recorded_res_section(fixture_text)
    bad = (text.replace("stat cpu  4705 356 584 3699", "stat cpu  4705 356 584 -3699")
           .replace("MemTotal:       2113622016", "MemTotal:       2113622016999999999")
           .replace("nvme0n1 61976 10325 4324250 24178 40825 191746 15124944 76620 0 12840",
                    "nvme0n1 61976 10325 4324250 24178 40825 191746 15124944 76620 0 -12840")
           .replace("eth0: 800128970   19685    0", "eth0: 800128970   19685    -7")
           .replace("cpus 32", "cpus 4294967296")
           .replace("stat btime 1700000000", "stat btime 1e12"))
    drops = Drops()
    s = pn.parse_proc_resources(bad, drops, "n1")
    assert (s.cpu_total, s.cpu_busy, s.cpu_count, s.boot_time, s.disk_io_ms, s.nic) == (None, None, None, None, {}, {})
    assert "MemTotal" not in s.mem_kib and s.mem_kib["SwapFree"] == 8388604 and s.load == (5.02, 3.02, 1.02)
    assert drops.values == 6
    (warning,) = drops.warnings()
    assert warning == ("6 implausible value(s) dropped, shown as N/A (cpu jiffies=-3699 on n1, btime=1e+12 on n1, "
                       "MemTotal=19-digit number on n1, …)")
    drops = Drops(keep=8)
    pn.parse_proc_resources(bad, drops, "n1")
    assert drops.warnings()[0].endswith("nvme0n1 io ms=-12840 on n1, eth0 counters=-7 on n1, cpus=4294967296 on n1)")


IB_MIXED = "sysfs-class-infiniband_procfs-fixture_mlx4-qdr_mlx5_hfi1-opa.txt"


def test_ib_counters_beyond_2_63_and_rates_that_are_no_link_rate_are_named(fixture_text) -> None:
    """The real hfi1 port with its port_rcv_data at 2**63 (19 digits, one past the limit) and at 25
    digits (cut short), and its rate turned into 37 Gb/s; 2**63 - 1 still reads."""
    text = fixture_text(IB_MIXED)
    good = {(p.device, p.port): p for p in pn.parse_ib_sysfs(text)}
    assert good[("hfi1_0", 1)].counters["port_rcv_data"] == 345091702026 and good[("hfi1_0", 1)].rate_gbps == 100.0
    bad = (text.replace("hfi1_0/ports/1/counters/port_rcv_data:345091702026", f"hfi1_0/ports/1/counters/port_rcv_data:{2**63}")
           .replace("hfi1_0/ports/1/counters/port_xmit_data:273558326543", f"hfi1_0/ports/1/counters/port_xmit_data:1{'0' * 24}")
           .replace("hfi1_0/ports/1/counters/port_rcv_packets:638036947", f"hfi1_0/ports/1/counters/port_rcv_packets:{2**63 - 1}")
           .replace("hfi1_0/ports/1/rate:100 Gb/sec (4X EDR)", "hfi1_0/ports/1/rate:37 Gb/sec (4X EDR)"))
    drops = Drops()
    ports = {(p.device, p.port): p for p in pn.parse_ib_sysfs(bad, drops, "n1")}
    hfi = ports[("hfi1_0", 1)]
    assert "port_rcv_data" not in hfi.counters and "port_xmit_data" not in hfi.counters
    assert hfi.counters["port_rcv_packets"] == 2**63 - 1 and hfi.rate_gbps is None
    assert hfi.rate_text == "37 Gb/sec (4X EDR)" and hfi.state == "ACTIVE" and hfi.phys_state == "LinkUp"
    (warning,) = drops.warnings()
    assert warning == ("3 implausible value(s) dropped, shown as N/A (hfi1_0/1 port_rcv_data=19-digit number on n1, "
                       "hfi1_0/1 port_xmit_data=25-digit number on n1, hfi1_0/1 rate=37 on n1)")
    assert {k: v for k, v in ports.items() if k != ("hfi1_0", 1)} == {k: v for k, v in good.items() if k != ("hfi1_0", 1)}


def test_mountinfo_private_mounts_superblock_read_only_and_short_lines(fixture_text) -> None:
    """The recorded NFS line as a private mount (no optional fields: the ``-`` is field 7,
    proc_pid_mountinfo(5)), read-only only in its superblock options, and cut before its source."""
    line = next(ln for ln in fixture_text("proc-mountinfo_nfs4-nfs3_node-exporter-fixture.txt").splitlines()
                if " /mnt/nfs/test " in ln)
    private = line.replace(" shared:144 - ", " - ")
    ro_super = private.replace("/mnt/nfs/test", "/mnt/nfs/ro").replace(" 192.168.1.1:/srv/test rw,", " 192.168.1.1:/srv/test ro,")
    no_super = private.replace("/mnt/nfs/test", "/mnt/nfs/bare").split(" 192.168.1.1:/srv/test ")[0] + " 192.168.1.1:/srv/test"
    cut = private.replace("/mnt/nfs/test", "/mnt/nfs/cut").split(" 192.168.1.1:")[0]
    out = {m.target: m for m in pn.parse_mountinfo("\n".join((private, ro_super, no_super, cut, "x " + private)))}
    assert sorted(out) == ["/mnt/nfs/bare", "/mnt/nfs/ro", "/mnt/nfs/test"]
    m = out["/mnt/nfs/test"]
    assert (m.mount_id, m.fstype, m.source, m.read_only) == (194, "nfs4", "192.168.1.1:/srv/test", False)
    assert out["/mnt/nfs/ro"].read_only is True and out["/mnt/nfs/bare"].read_only is False


def test_res_lines_of_other_kernels_and_vms(fixture_text) -> None:
    """The recorded res section with /proc/stat's cpu line as older kernels print it (4 values before
    2.5.41, 5 before 2.6.11), a unit-less meminfo line (``HugePages_Total:``), and the CPU count of a
    1-CPU VM; a count of 0 or a non-number is N/A."""
    text = recorded_res_section(fixture_text)
    cpu_line = next(ln for ln in text.splitlines() if ln.startswith("stat cpu "))

    def parse(*lines: str) -> pn.ProcSample:
        return pn.parse_proc_resources(text.replace(cpu_line, lines[0]) + "\n" + "\n".join(lines[1:]))
    s = parse("stat cpu  100 0 50 800", "meminfo HugePages_Total:       4")
    assert (s.cpu_total, s.cpu_busy) == (950, 150) and s.mem_kib["HugePages_Total"] == 4
    s = parse("stat cpu  100 0 50 800 50")
    assert (s.cpu_total, s.cpu_busy) == (1000, 150)  # iowait counts as idle
    assert pn.parse_proc_resources(text.replace("cpus 32", "cpus 1")).cpu_count == 1
    for bad in ("cpus 0", "cpus x", "cpus"):
        assert pn.parse_proc_resources(text.replace("cpus 32", bad)).cpu_count is None
