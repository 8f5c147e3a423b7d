"""End to end without sshd: the generated sh loop runs locally (dash when present) against the node
shims, its stdout goes through RecordSplitter and parse_record exactly as an SSH stream would."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from nodeshims import BUS_IDS, NodeSpec, append_kernel_log, build_shim_root, flap_ib, gpu_uuid, set_fault
from probe_loop import SHELL, probe_loop

from hpctui.model.common import Severity
from hpctui.model.mount import MountState
from hpctui.model.probe import ServiceStatus
from hpctui.sources.ssh.probe import ProbeOptions, RecordSplitter, build_probe_script, parse_record, remote_command
from hpctui.sources.ssh.probe.record import ProbeState, split_sections

NODES = {
    "127.0.1.1": NodeSpec("h100"),
    "127.0.1.2": NodeSpec("h200-mig"),
    "127.0.1.3": NodeSpec("cpu"),
    "127.0.1.4": NodeSpec("h100", faults={"svc-failed", "mount-hang", "mount-stale", "mount-slow", "ib-down",
                                          "lfs-inactive", "pcie-downshift", "nvlink-down", "stray-process"}),
    "127.0.1.5": NodeSpec("h100", faults={"hang-nvidia-smi", "mount-stuck"}),
    "127.0.1.6": NodeSpec("h100", faults={"xid"}),
    "127.0.1.7": NodeSpec("h200", faults={"mount-ro"}),
}


@pytest.fixture(scope="module")
def shim_root(tmp_path_factory):
    return build_shim_root(tmp_path_factory.mktemp("shims"), NODES)


def opts(root: Path, **kw) -> ProbeOptions:
    base: dict[str, object] = {
        "shim_root": str(root), "interval_s": 0.2, "probe_timeout_s": 1.0, "mount_timeout_s": 1.0,
        "slow_mount_ms": 5000, "slow_every": 1, "expected_mounts": ("/mnt/nfs/test", "/lustre/scratch", "/home")}
    base.update(kw)
    return ProbeOptions(**base)  # type: ignore[arg-type]


def test_script_parses_in_posix_shells():
    script = build_probe_script(2.0, ProbeOptions(expected_mounts=("/a b", "/it's")))
    for shell in ("dash", "bash", "busybox"):
        exe = shutil.which(shell)
        if exe is None:
            continue
        cmd = [exe, "sh", "-n", "-c", script] if shell == "busybox" else [exe, "-n", "-c", script]
        assert subprocess.run(cmd, capture_output=True).returncode == 0, shell


def test_healthy_h100_node(shim_root):
    node = "127.0.1.1"
    with probe_loop(shim_root, node, opts(shim_root)) as loop:
        first, second = loop.records(2)
        assert loop.stderr_text() == ""
    assert second.seq == first.seq + 1 and second.time > first.time
    for r in (first, second):
        assert r.warnings == () and r.late_probes == ()
    gpus = second.gpus
    assert gpus is not None and len(gpus) == 8
    assert [g.pci_bus_id for g in gpus] == list(BUS_IDS)
    assert [g.uuid for g in gpus] == [gpu_uuid(node, i) for i in range(8)]
    g0 = gpus[0]
    assert g0.model == "NVIDIA H100 80GB HBM3" and g0.memory_total_mib == 81559.0 and g0.power_w == 631.95
    assert g0.pcie_gen_current == 5 and g0.pcie_gen_max == 5 and g0.persistence_mode is True
    assert g0.remapped_uncorrectable == 0 and g0.remap_failure is False and g0.throttle_reasons == 0
    assert len(g0.nvlinks) == 18 and all(link.up and link.speed_gbps == 26.562 for link in g0.nvlinks)
    assert all(link.crc_errors == 0 for link in g0.nvlinks)
    (p,) = g0.processes
    assert p.pid == 4242 and p.slurm_job_id == "1234" and p.gpu_index == 0 and p.used_memory_mib == 20480.0
    assert p.command == "python train.py --epochs 10" and p.user is not None
    (pod,) = gpus[1].processes
    assert pod.pod == "8f2b6c1e-1a2b-4c3d-9e8f-0123456789ab" and pod.slurm_job_id is None and pod.user == "root"
    ib = second.ib
    assert ib is not None and len(ib) == 9 and all(p.is_up for p in ib)
    assert {p.rate_gbps for p in ib if p.link_layer == "InfiniBand"} == {400.0}
    mounts = {m.target: m for m in second.mounts or ()}
    assert mounts["/mnt/nfs/test"].state is MountState.OK and mounts["/mnt/nfs/test"].fstype == "nfs4"
    assert mounts["/lustre/scratch"].state is MountState.OK and mounts["/mnt/beegfs"].fstype == "beegfs"
    assert mounts["/home"].state is MountState.MISSING
    assert mounts["/mnt/nfs/test"].latency_ms is not None
    svc = {s.name: s.status for s in second.services or ()}
    assert svc == {"nvidia-persistenced": ServiceStatus.ACTIVE, "nvidia-fabricmanager": ServiceStatus.ACTIVE,
                   "nvidia-dcgm": ServiceStatus.ACTIVE, "slurmd": ServiceStatus.ACTIVE,
                   "kubelet": ServiceStatus.NOT_FOUND, "containerd": ServiceStatus.NOT_FOUND}
    res = second.resources
    assert res is not None and res.cpu_count == 32 and res.mem_total_mib == 2113622016 / 1024
    assert res.swap_total_mib == 8388604 / 1024 and res.load1 is not None
    assert res.disk_busy_pct == {"nvme0n1": 0.0} and res.nic_rx_bps == {"eth0": 0.0}
    assert first.resources is not None and first.resources.disk_busy_pct == {}  # no rate from one sample


def test_mig_node_real_outputs(shim_root):
    with probe_loop(shim_root, "127.0.1.2", opts(shim_root)) as loop:
        (r,) = loop.records(1)
    assert r.warnings == ()
    (g,) = r.gpus or ()
    assert g.mig_mode_current is True and g.util_pct is None and g.model == "NVIDIA H200"
    assert [(i.gi_id, i.ci_id, i.profile, i.memory_total_mib) for i in g.mig_instances] == [
        (2, 0, "3g.71gb", 71424.0), (2, 1, "3g.71gb", 71424.0), (3, 0, "2g.35gb", 33280.0),
        (9, 0, "1g.18gb", 16384.0), (10, 0, "1g.18gb", 16384.0)]
    assert g.nvlinks == ()  # "Nvlink queries are not supported for Devices in MIG mode": unknown, not down


def test_cpu_node_has_no_gpus(shim_root):
    with probe_loop(shim_root, "127.0.1.3", opts(shim_root)) as loop:
        (r,) = loop.records(1)
    assert r.gpus == () and r.warnings == () and r.ib is not None


def test_faulty_node(shim_root):
    node = "127.0.1.4"
    with probe_loop(shim_root, node, opts(shim_root)) as loop:
        (r,) = loop.records(1)
    assert r.late_probes == ("stat.194",)  # /mnt/nfs/test hangs; timeout ends it: late, not stuck
    mounts = {m.target: m for m in r.mounts or ()}
    assert mounts["/mnt/nfs/test"].state is MountState.HUNG and mounts["/mnt/nfs/test"].latency_ms is None
    assert mounts["/mnt/nfs/test-dupe"].state is MountState.DEGRADED
    assert "Stale file handle" in (mounts["/mnt/nfs/test-dupe"].detail or "")
    assert mounts["/lustre/scratch"].state is MountState.DEGRADED  # lfs check servers: OST inactive
    assert "OST0001" in (mounts["/lustre/scratch"].detail or "")
    assert mounts["/mnt/beegfs"].state is MountState.OK
    svc = {s.name: s for s in r.services or ()}
    fm = svc["nvidia-fabricmanager"]
    assert fm.status is ServiceStatus.FAILED and "Failed with result 'exit-code'" in (fm.detail or "")
    ib = {p.device: p for p in r.ib or ()}
    assert ib["mlx5_4"].state == "DOWN" and ib["mlx5_4"].phys_state == "Disabled" and not ib["mlx5_4"].is_up
    gpus = r.gpus or ()
    assert (gpus[2].pcie_gen_current, gpus[2].pcie_width_current) == (3, 8)
    link3 = gpus[1].nvlinks[3]
    assert link3.up is False and gpus[1].nvlinks[0].crc_errors == 7
    assert [p.pid for p in gpus[3].processes] == [4444] and gpus[3].processes[0].slurm_job_id is None


def test_mount_slow_is_reported_slow(shim_root, tmp_path):
    root = build_shim_root(tmp_path, {"n": NodeSpec("cpu", faults={"mount-slow"})})
    with probe_loop(root, "n", opts(root, slow_mount_ms=300, mount_timeout_s=5)) as loop:
        (r,) = loop.records(1)
    mounts = {m.target: m for m in r.mounts or ()}
    assert mounts["/lustre/scratch"].state is MountState.SLOW and (mounts["/lustre/scratch"].latency_ms or 0) > 300


def test_hung_gpu_and_unreapable_mount_never_hang_the_loop(shim_root):
    node = "127.0.1.5"
    with probe_loop(shim_root, node, opts(shim_root)) as loop:
        first, second, third = loop.records(3)
        texts = loop.texts[-3:]
    for r in (first, second, third):
        assert r.gpus is None  # nvidia-smi late: GPU part not in the record (the source keeps the last)
        assert {"gpu", "gpu-apps", "stat.194"} <= set(r.late_probes)
        assert r.ib is not None and r.resources is not None  # everything else keeps coming
    # The stuck stat is not started again while the first one lives: later records say "still stuck".
    assert split_sections(texts[0])[2]["stat.194"].late == 1
    assert split_sections(texts[1])[2]["stat.194"].late == 2
    assert any("still stuck" in w for w in second.warnings)
    assert {m.target: m.state for m in third.mounts or ()}["/mnt/nfs/test"] is MountState.HUNG


def test_xid_events_once_each_attached_by_bus_id(shim_root):
    node = "127.0.1.6"
    with probe_loop(shim_root, node, opts(shim_root)) as loop:
        (first,) = loop.records(1)
        assert len(first.events) == 5 and {e.object for e in first.events} == {f"gpu/{node}/4"}
        assert all(e.severity is Severity.CRITICAL and "Xid 119" in e.message and "GSP" in e.message
                   for e in first.events)
        g4 = (first.gpus or ())[4]
        assert g4.last_xid == 119 and len(g4.xid_events) == 5 and g4.xid_events[0].pci_bus_id == "0000:9b:00"
        (second,) = loop.records(1)
        assert second.events == ()  # seen once, not again
        append_kernel_log(shim_root, node, "NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.")
        later = loop.records(3)
    new = [e for r in later for e in r.events]
    assert len(new) == 1 and new[0].object == f"gpu/{node}/0" and "fallen off the bus" in new[0].message
    assert (later[-1].gpus or ())[0].last_xid == 79 and (later[-1].gpus or ())[4].last_xid == 119


def test_ib_flap_stays_visible_after_the_port_is_back(tmp_path):
    root = build_shim_root(tmp_path, {"n": NodeSpec("cpu")})
    with probe_loop(root, "n", opts(root)) as loop:
        (first,) = loop.records(1)
        assert {p.device: p.flaps for p in first.ib or ()}["mlx5_0"] == 0
        flap_ib(root, "n", "mlx5_0")
        later = loop.records(3)
    flapped = [{p.device: p for p in r.ib or ()}["mlx5_0"] for r in later]
    assert any(p.deltas.get("link_downed") == 1 for p in flapped)
    assert flapped[-1].flaps == 1 and flapped[-1].last_down is not None and flapped[-1].is_up


def test_garbage_output_costs_only_those_records(tmp_path):
    root = build_shim_root(tmp_path, {"n": NodeSpec("h100")})
    with probe_loop(root, "n", opts(root)) as loop:
        (ok,) = loop.records(1)
        set_fault(root, "n", "garbage")
        loop.records(2, count_dropped=True)
        dropped = loop.splitter.take_warnings()
        set_fault(root, "n", "garbage", on=False)
        after = loop.records(3)
    assert ok.gpus and len(ok.gpus) == 8
    assert dropped and all("NUL" in w for w in dropped)
    assert after[-1].gpus is not None and len(after[-1].gpus) == 8


def test_stream_cut_mid_record_then_comes_back(tmp_path):
    root = build_shim_root(tmp_path, {"n": NodeSpec("h100", faults={"cut-once"})})
    with probe_loop(root, "n", opts(root)) as loop:
        assert loop.records(1) == []  # the first record is cut and the loop dies
        assert loop.eof and any("cut" in w for w in loop.splitter.take_warnings())
    with probe_loop(root, "n", opts(root)) as loop:  # reconnect: a new loop, the fault was once
        (r,) = loop.records(1)
    assert r.gpus and len(r.gpus) == 8


def test_read_only_mount(shim_root):
    with probe_loop(shim_root, "127.0.1.7", opts(shim_root)) as loop:
        (r,) = loop.records(1)
    assert {m.target: m.state for m in r.mounts or ()}["/lustre/scratch"] is MountState.READ_ONLY


def test_config_values_with_shell_metacharacters_reach_the_node_literally(tmp_path):
    canary = tmp_path / "pwned"
    evil = (f"/mnt/$(touch {canary})", f"/mnt/`touch {canary}`", "/mnt/'; touch " + str(canary) + "; '",
            "/mnt/a b;c|d&e>f")
    root = build_shim_root(tmp_path / "shims", {"n": NodeSpec("cpu")})
    with probe_loop(root, "n", opts(root, expected_mounts=evil)) as loop:
        (r,) = loop.records(1)
    assert not canary.exists()
    missing = {m.target for m in r.mounts or () if m.state is MountState.MISSING}
    assert missing == set(evil)
    with pytest.raises(ValueError):
        ProbeOptions(service_names=("slurmd; reboot",))
    with pytest.raises(ValueError):
        ProbeOptions(expected_mounts=("/a\nb",))


def test_remote_command_runs_under_a_login_shell(tmp_path):
    root = build_shim_root(tmp_path, {"n": NodeSpec("cpu")})
    script = build_probe_script(None, opts(root, max_records=1))
    out = subprocess.run(["bash", "-c", remote_command(script)], capture_output=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "HPCTUI_SHIM_NODE": "n"}).stdout
    (text,) = RecordSplitter().feed(out)
    r = parse_record("n", text, ProbeState(), 0.0)
    assert r.gpus == () and r.warnings == ()


def test_node_identity_from_ssh_connection(tmp_path):
    root = build_shim_root(tmp_path, {"127.0.3.9": NodeSpec("h200-mig")})
    script = build_probe_script(None, opts(root, max_records=1))
    env = {"PATH": "/usr/bin:/bin", "SSH_CONNECTION": "127.0.0.1 41374 127.0.3.9 2222"}
    out = subprocess.run([SHELL, "-c", script], capture_output=True, timeout=60, env=env).stdout
    (text,) = RecordSplitter().feed(out)
    r = parse_record("x", text, ProbeState(), 0.0)
    assert r.gpus is not None and len(r.gpus) == 1 and r.gpus[0].mig_mode_current


def test_timeout_stand_in_for_nodes_without_coreutils_timeout():
    script = build_probe_script(None, ProbeOptions())
    body = script.split("if ! have timeout; then\n", 1)[1].split("\nfi\n", 1)[0]
    for cmd, want in (("timeout -k 1 0.3 sleep 30", "124"), ("timeout -k 1 5 true", "0"),
                      ("timeout 5 sh -c 'exit 3'", "3")):
        out = subprocess.run([SHELL, "-c", f"{body}\n{cmd}; echo $?"], capture_output=True, text=True, timeout=30)
        assert out.stdout.strip().splitlines()[-1] == want, cmd


def test_mount_probes_are_capped(tmp_path):
    root = build_shim_root(tmp_path, {"n": NodeSpec("cpu")})
    with probe_loop(root, "n", opts(root, max_mount_probes=1, expected_mounts=())) as loop:
        (r,) = loop.records(1)
    states = {m.target: (m.state, m.detail) for m in r.mounts or ()}
    assert states["/mnt/nfs/test"][0] is MountState.OK
    assert states["/lustre/scratch"] == (MountState.UNKNOWN, "liveness not probed (max_mount_probes)")
