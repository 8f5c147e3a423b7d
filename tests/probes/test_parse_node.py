"""Kernel log (Xid), IB sysfs, mountinfo, services and /proc parsers against real recorded outputs."""

from __future__ import annotations

from hpctui.model.mount import MountState
from hpctui.model.probe import ServiceStatus
from hpctui.sources.ssh.probe import parse_node as pn

IB_H100 = "sysfs-class-infiniband_h100-node_8x-cx7-ndr400_plus_bf3-bond.txt"
IB_MIXED = "sysfs-class-infiniband_procfs-fixture_mlx4-qdr_mlx5_hfi1-opa.txt"


def test_xid_dmesg_T_gsp_timeout(fixture_text):
    xs = pn.parse_xid_lines(fixture_text("dmesg-T_xid119-gsp-timeout_dell-xe9680.log"))
    assert len(xs) == 5 and {x.xid for x in xs} == {119} and {x.pci_bus_id for x in xs} == {"0000:9b:00"}
    assert xs[0].message.startswith("Timeout after 6s")  # the driver's "pid=…, name=…," prefix is split off
    assert (xs[0].pid, xs[0].process) == (2024380, "nvidia-smi")
    assert xs[0].time is not None and xs[1].time is not None and xs[1].time - xs[0].time == 6.0


def test_xid_dmesg_iso_13_and_43(fixture_text):
    xs = pn.parse_xid_lines(fixture_text("dmesg-decode-iso_xid13-xid43.log"))
    assert {x.xid for x in xs} == {13, 43} and len(xs) == 30
    assert xs[0].time == 1737426093.498559  # 2025-01-21T02:21:33,498559+00:00


def test_xid_journal_short_unix_monotonic_and_mig_instance():
    text = ("1737426093.498559 gpu01 kernel: NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: "
            "CE User Channel (0x9). RST: No, D-RST: No\n"
            "[  100.250000] NVRM: Xid (PCI:0000:02:00): 79, pid=0, GPU has fallen off the bus.\n"
            "unrelated kernel line\n")
    a, b = pn.parse_xid_lines(text, boot_time=1_700_000_000.0)
    assert (a.xid, a.gpu_instance, a.time) == (94, 5, 1737426093.498559)
    assert (b.xid, b.pci_bus_id, b.time) == (79, "0000:02:00", 1_700_000_100.25)


def test_xid_message_is_sanitised():
    (x,) = pn.parse_xid_lines("NVRM: Xid (PCI:0000:01:00): 13, \x1b[2J\x1b]0;pwned\x07 boom\n")
    assert "\x1b" not in x.message and "\x07" not in x.message


def test_ib_sysfs_h100_node(fixture_text):
    ports = pn.parse_ib_sysfs(fixture_text(IB_H100))
    assert len(ports) == 9
    cx7 = [p for p in ports if p.link_layer == "InfiniBand"]
    assert len(cx7) == 8 and all(p.rate_gbps == 400.0 and p.state == "ACTIVE" and p.phys_state == "LinkUp"
                                 for p in cx7)
    bond = next(p for p in ports if p.device == "mlx5_bond_0")
    assert bond.link_layer == "Ethernet" and bond.rate_text == "200 Gb/sec (2X NDR)"
    mlx5_1 = next(p for p in ports if p.device == "mlx5_1")
    assert mlx5_1.counters["link_downed"] == 255 and mlx5_1.counters["port_rcv_errors"] == 14


def test_ib_sysfs_mixed_hcas_and_relative_paths(fixture_text):
    ports = pn.parse_ib_sysfs(fixture_text(IB_MIXED))
    assert [(p.device, p.port, p.rate_gbps) for p in ports] == [
        ("hfi1_0", 1, 100.0), ("mlx4_0", 1, 40.0), ("mlx4_0", 2, 40.0), ("mlx5_0", 1, 25.0)]
    rel = pn.parse_ib_sysfs("mlx5_0/ports/1/state:1: DOWN\nmlx5_0/ports/1/phys_state:2: Polling\n"
                            "mlx5_0/ports/1/counters/symbol_error:7\nmlx5_0/ports/1/counters/bad:x\n")
    assert rel[0].state == "DOWN" and rel[0].phys_state == "Polling" and rel[0].counters == {"symbol_error": 7}


def test_mountinfo_network_filesystems_real_fixture(fixture_text):
    mounts = pn.parse_mountinfo(fixture_text("proc-mountinfo_nfs4-nfs3_node-exporter-fixture.txt"),
                                ("nfs", "nfs4", "lustre"))
    assert [(m.target, m.fstype, m.mount_id) for m in mounts] == [
        ("/mnt/nfs/test", "nfs4", 194), ("/mnt/nfs/test-dupe", "nfs", 1398)]  # the later overmount wins
    assert mounts[0].source == "192.168.1.1:/srv/test" and not mounts[0].read_only


def test_mountinfo_escapes_and_read_only():
    line = "300 21 0:50 / /lustre/my\\040scratch ro,relatime shared:9 - lustre 10.0.0.1@o2ib:/scratch rw,flock\n"
    (m,) = pn.parse_mountinfo(line)
    assert m.target == "/lustre/my scratch" and m.read_only and m.fstype == "lustre"


def test_mount_states():
    info = pn.MountInfo(mount_id=1, target="/a", fstype="nfs4", source="s:/a", read_only=False)
    ok = pn.StatResult(rc=0, late=False, latency_ms=12.0, error=None)
    assert pn.mount_state(info, ok, 1000).state is MountState.OK
    assert pn.mount_state(info, pn.StatResult(rc=0, late=False, latency_ms=1500, error=None), 1000).state \
        is MountState.SLOW
    assert pn.mount_state(info, pn.StatResult(rc=124, late=True, latency_ms=None, error=None), 1000).state \
        is MountState.HUNG
    stale = pn.mount_state(info, pn.StatResult(rc=1, late=False, latency_ms=3, error="Stale file handle"), 1000)
    assert stale.state is MountState.DEGRADED and stale.detail == "Stale file handle"
    ro = pn.MountInfo(mount_id=1, target="/a", fstype="nfs4", source="s:/a", read_only=True)
    assert pn.mount_state(ro, ok, 1000).state is MountState.READ_ONLY
    assert pn.mount_state(info, ok, 1000, "lfs check servers: x inactive.").state is MountState.DEGRADED


def test_lfs_check_servers():
    text = "scratch-MDT0000-mdc-ffff active.\nscratch-OST0001-osc-ffff inactive.\nerror: check 'scratch-OST0002'\n"
    assert pn.parse_lfs_check_servers(text) == ["scratch-OST0001-osc-ffff inactive.", "error: check 'scratch-OST0002'"]


def test_systemctl_show_blocks():
    text = ("Id=nvidia-persistenced.service\nLoadState=loaded\nActiveState=active\nSubState=running\n\n"
            "Id=nvidia-fabricmanager.service\nLoadState=loaded\nActiveState=failed\nSubState=failed\n\n"
            "Id=kubelet.service\nLoadState=not-found\nActiveState=inactive\nSubState=dead\n")
    states = pn.parse_systemctl_show("n1", text)
    assert [(s.name, s.status) for s in states] == [
        ("nvidia-persistenced", ServiceStatus.ACTIVE), ("nvidia-fabricmanager", ServiceStatus.FAILED),
        ("kubelet", ServiceStatus.NOT_FOUND)]


def test_service_pid_files():
    states = pn.parse_service_pids("n1", "slurmd active\nmunge inactive\nkubelet not-found\n")
    assert [s.status for s in states] == [ServiceStatus.ACTIVE, ServiceStatus.INACTIVE, ServiceStatus.NOT_FOUND]


def test_proc_resources():
    text = "\n".join([
        "loadavg 1.50 0.75 0.25 2/300 12345",
        "stat cpu  100 0 50 800 50 0 0 0 0 0",
        "stat btime 1700000000",
        "meminfo MemTotal:       1048576 kB", "meminfo MemAvailable:    524288 kB",
        "meminfo SwapTotal:             0 kB", "meminfo SwapFree:              0 kB",
        "diskstats  259       0 nvme0n1 100 0 800 10 50 0 400 5 0 250 15 0 0 0 0",
        "diskstats  259       1 nvme0n1p1 100 0 800 10 50 0 400 5 0 250 15 0 0 0 0",
        "netdev   eth0: 1000 10 1 0 0 0 0 0 2000 20 2 0 0 0 0 0",
        "netdev     lo: 5 5 0 0 0 0 0 0 5 5 0 0 0 0 0 0",
        "cpus 64",
    ])
    s = pn.parse_proc_resources(text)
    assert s.load == (1.5, 0.75, 0.25) and s.cpu_busy == 150 and s.cpu_total == 1000 and s.cpu_count == 64
    assert s.boot_time == 1700000000.0 and s.mem_kib["MemAvailable"] == 524288
    assert s.disk_io_ms == {"nvme0n1": 250} and s.nic == {"eth0": (1000, 2000, 3)}
