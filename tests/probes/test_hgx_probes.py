"""Node probes on HGX/DGX systems (issue #21 §4): NVSwitch SXids, NVLink fabric state, the mount types
of parallel file systems, ``[GPU requires reset]``, "no NVLink" vs "all links inactive", Xid messages
without the driver's ``pid=…, name=…,`` prefix. Real recorded outputs where one exists (SOURCES.md)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from hpctui.actions.plans import preview_warnings
from hpctui.findings.health import Thresholds, gpu_findings, node_findings, nvlink_findings, nvswitch_findings
from hpctui.findings.index import findings_for
from hpctui.model import ClusterSnapshot, Gpu, Node, Severity, SlurmNodeInfo
from hpctui.model.action import ActionKind
from hpctui.model.nvswitch import NvSwitch, SxidEvent, sxid_severity
from hpctui.sources.ssh.probe import parse_gpu as pg
from hpctui.sources.ssh.probe import parse_node as pn
from hpctui.sources.ssh.probe.record import ProbeState, parse_record
from hpctui.sources.ssh.probe.script import GPU_FIELD_GROUPS, NETWORK_FSTYPES, ProbeOptions, _fstype_regex

SXID_LOG = "dmesg_xid79-sxid20034_hgx-a100_gpud-readme.log"
H100_CSV = "nvidia-smi_query-gpu_allfields_h100-80gb-hbm3_drv590.48.01_load.csv"
T = Thresholds()


# ---------------------------------------------------------------- SXid

def test_sxid_lines_of_a_real_nvswitch_log(fixture_text):
    """The real log: 4 headline events on 3 switches; detail lines (Severity…, Data…) are folded in."""
    xs = pn.parse_sxid_lines(fixture_text(SXID_LOG), boot_time=1_700_000_000.0)
    assert [(x.switch, x.message) for x in xs] == [
        ("nvidia-nvswitch1", "Link 48 LTSSM Fault Up"), ("nvidia-nvswitch0", "Link 63 LTSSM Fault Up"),
        ("nvidia-nvswitch2", "Link 37 LTSSM Fault Up"), ("nvidia-nvswitch0", "Link 62 LTSSM Fault Up")]
    assert {x.sxid for x in xs} == {20034} and all(x.fatal for x in xs)
    assert xs[0].pci_bus_id == "0000:06:00.0" and xs[0].time == pytest.approx(1_700_000_000.0 + 6781753.400584)
    assert pn.parse_xid_lines("\n".join(x.raw for x in xs)) == []  # SXids are no GPU Xids


def test_sxid_detail_line_alone_stands_for_its_event_and_bad_codes_drop():
    from hpctui.model.validate import Drops

    drops = Drops()
    text = ("[131453.740758] nvidia-nvswitch0: SXid (PCI:0000:a9:00.0): 20034, Data {0x50610002, 0x10100030}\n"
            "nvidia-nvswitch0: SXid (PCI:0000:00:00.0): xyz, Fatal error\n"  # gpud's kmsg_test: not an SXid
            "nvidia-nvswitch0: SXid (PCI:0000:00:00.0): 99999999, Fatal, Link 1\n")
    [x] = pn.parse_sxid_lines(text, drops=drops, node="n1")
    assert x.fatal is None and x.message.startswith("Data {0x50610002")
    assert drops.warnings()


def test_sxid_severity_follows_the_fm_guide_classes():
    assert sxid_severity(20034, True) is Severity.CRITICAL  # fatal (port)
    assert sxid_severity(23001, None) is Severity.CRITICAL  # always fatal, even from a detail line
    assert sxid_severity(12028, False) is Severity.CRITICAL  # "Non-fatal" but traffic stalls (gpud: reboot)
    assert sxid_severity(11012, False) is Severity.INFO  # single-bit ECC, corrected
    assert sxid_severity(20009, False) is Severity.WARNING  # other non-fatal


def _record(seq: int, sections: dict[str, str]) -> str:
    body = "".join(f"@@hpctui section {name} 0 0\n{text}\n" for name, text in sections.items())
    return f"@@hpctui begin {seq} {1_750_000_000 + seq}000000000 1\n{body}@@hpctui end {seq}\n"


def _journal(dmesg: str, epoch: float = 1_750_000_000.0) -> str:
    """The real lines as ``journalctl -k -o short-unix`` prints them (what the probe reads)."""
    out = []
    for i, line in enumerate(dmesg.splitlines()):
        if "SXid" in line or "NVRM: Xid" in line:
            out.append(f"{epoch + i:.6f} hgx01 kernel: {line.split('] ', 1)[1]}")
    return "\n".join(out)


def test_probe_record_attaches_sxids_to_their_nvswitch_and_raises_critical_findings(fixture_text):
    state = ProbeState()
    r = parse_record("hgx01", _record(1, {"xid": _journal(fixture_text(SXID_LOG))}), state, 0.0)
    assert r.nvswitches is not None
    switches = {s.name: s for s in r.nvswitches}
    assert set(switches) == {"nvidia-nvswitch0", "nvidia-nvswitch1", "nvidia-nvswitch2"}
    assert [e.message for e in switches["nvidia-nvswitch0"].sxid_events] == ["Link 63 LTSSM Fault Up",
                                                                            "Link 62 LTSSM Fault Up"]
    sx = [e for e in r.events if e.source == "nvswitch"]
    assert len(sx) == 4 and all(e.severity is Severity.CRITICAL for e in sx)
    assert sx[0].object == "nvswitch/hgx01/nvidia-nvswitch1" and "SXid 20034" in sx[0].message
    [f] = nvswitch_findings(switches["nvidia-nvswitch0"])
    assert f.severity is Severity.CRITICAL and f.code == "sxid20034" and "LTSSM" in f.message
    # the same lines again (journal cursor reset): no new events, the same switches object
    again = parse_record("hgx01", _record(2, {"xid": _journal(fixture_text(SXID_LOG))}), state, 0.0)
    assert not [e for e in again.events if e.source == "nvswitch"] and again.nvswitches is r.nvswitches
    # no kernel-log section in a record: the part is "not in this record", not "no switches"
    assert parse_record("hgx01", _record(3, {"config": ""}), state, 0.0).nvswitches is None


def test_nvswitch_findings_reach_the_node_and_gate_resume():
    sw = NvSwitch(node="hgx01", name="nvidia-nvswitch3", pci_bus_id="0000:05:00.0", sxid_events=(
        SxidEvent(time=1.0, sxid=12028, switch="nvidia-nvswitch3", pci_bus_id="0000:05:00.0", fatal=False,
                  message="Link 32 egress non-posted PRIV error (First)"),))
    snap = ClusterSnapshot(cluster="c", time=0.0, nodes={"hgx01": Node(name="hgx01", slurm=SlurmNodeInfo(
        base_state="IDLE", flags=frozenset({"DRAIN"})))}, nvswitches={"hgx01": (sw,)})
    fs = node_findings(snap, "hgx01", T)
    assert fs[0].severity is Severity.CRITICAL and fs[0].object == "nvswitch/hgx01/nvidia-nvswitch3"
    [w] = preview_warnings(ActionKind.RESUME_NODES, ["hgx01"], snap, findings_for(snap, T))
    assert "hgx01 has an active" in w and "SXid 12028" in w


# ---------------------------------------------------------------- Xid message prefix

def test_xid_message_without_the_process_prefix(fixture_text):
    [x] = pn.parse_xid_lines(fixture_text(SXID_LOG))
    assert x.xid == 79 and x.message == "GPU has fallen off the bus." and x.pid is None and x.process is None
    gsp = pn.parse_xid_lines(fixture_text("dmesg-T_xid119-gsp-timeout_dell-xe9680.log"))[0]
    assert gsp.message.startswith("Timeout after 6s") and (gsp.pid, gsp.process) == (2024380, "nvidia-smi")
    old = pn.parse_xid_lines("NVRM: Xid (PCI:0000:01:00): 94, pid=7194, Contained: CE User Channel (0x9).")[0]
    assert old.message == "Contained: CE User Channel (0x9)." and old.pid == 7194


def _h100_rows(fixture_text, cells: dict[str, str] | None = None) -> tuple[list[str], str]:
    """The real H100 ``--query-gpu`` header and row, some cells replaced (field name -> value)."""
    header, row = fixture_text(H100_CSV).splitlines()[:2]
    fields = [pg.field_name(h) for h in header.split(", ")]
    values = row.split(", ")
    for name, value in (cells or {}).items():
        values[fields.index(name)] = value
    return fields, ", ".join(values)


def test_xid_event_shows_the_message_and_the_process(fixture_text):
    fields, row = _h100_rows(fixture_text, {"pci.bus_id": "00000000:91:00.0"})
    xid = _journal(fixture_text(SXID_LOG)).splitlines()[0]
    gsp = _journal(fixture_text("dmesg-T_xid119-gsp-timeout_dell-xe9680.log").replace("0000:9b:00", "0000:91:00"))
    r = parse_record("hgx01", _record(1, {"gpu-fields": ",".join(fields), "gpu": row,
                                          "xid": xid + "\n" + gsp.splitlines()[0]}), ProbeState(), 0.0)
    msgs = [e.message for e in r.events if e.source == "gpu"]
    assert msgs[0].endswith("— GPU has fallen off the bus.") and "pid=" not in msgs[0]
    assert "pid=" not in msgs[1] and msgs[1].endswith("[pid 2024380 nvidia-smi]")
    assert r.gpus is not None and r.gpus[0].xid_events[-1].process == "nvidia-smi"


# ---------------------------------------------------------------- fabric state

def test_fabric_state_of_a_real_h100_row_is_healthy(fixture_text):
    fields, row = _h100_rows(fixture_text)
    [g] = pg.parse_query_gpu("hgx01", row, fields)
    assert (g.fabric_state, g.fabric_status) == ("Completed", "Success") and not g.fabric_failed
    assert not [f for f in gpu_findings(g, T) if f.code == "fabric"]
    assert ("fabric.state",) in GPU_FIELD_GROUPS and ("fabric.status",) in GPU_FIELD_GROUPS


@pytest.mark.parametrize(("state", "status", "why"), [
    ("In Progress", "N/A", "stuck in progress"),
    ("Not Started", "N/A", "not started"),
    ("Completed", "Insufficient Resources", "Insufficient Resources"),  # seen in the field (FACTS §8)
])
def test_fabric_not_completed_or_failed_is_critical_and_gates_resume(fixture_text, state, status, why):
    fields, row = _h100_rows(fixture_text, {"fabric.state": state, "fabric.status": status})
    [g] = pg.parse_query_gpu("hgx01", row, fields)
    [f] = [f for f in gpu_findings(g, T) if f.code == "fabric"]
    assert f.severity is Severity.CRITICAL and why in f.message and "hang" in f.message
    snap = ClusterSnapshot(cluster="c", time=0.0, nodes={"hgx01": Node(name="hgx01")}, gpus={"hgx01": (g,)})
    warnings = preview_warnings(ActionKind.RESUME_NODES, ["hgx01"], snap, findings_for(snap, T))
    assert any("fabric" in w for w in warnings)


def test_fabric_not_supported_or_unknown_is_no_finding():
    for state in (None, "Not Supported"):
        assert not Gpu(node="n", index=0, fabric_state=state).fabric_failed


# ---------------------------------------------------------------- [GPU requires reset]

def test_gpu_requires_reset_is_a_gpu_state():
    # a real query (srun nvidia-smi --query-gpu=index,temperature.gpu,utilization.gpu,memory.used)
    text = ("index, temperature.gpu, utilization.gpu [%], memory.used [MiB]\n"
            "0, [GPU requires reset], [GPU requires reset], 0 MiB\n")
    [g] = pg.parse_query_gpu("n1", text)
    assert g.reset_required and not g.lost and g.temp_c is None and g.util_pct is None
    [f] = [f for f in gpu_findings(g, T) if f.code == "gpu_reset_required"]
    assert f.severity is Severity.CRITICAL
    [ok] = pg.parse_query_gpu("n1", "index, temperature.gpu\n0, 74\n")
    assert not ok.reset_required


# ---------------------------------------------------------------- no NVLink vs all links inactive

def test_all_links_inactive_on_pcie_cards_is_not_a_fault(fixture_text):
    text = fixture_text("nvidia-smi_nvlink-s_2x-a100-pcie-40gb_drv555.42.02_all-inactive.txt")
    assert pg.parse_nvlink_notes(text) == {0: "inactive", 1: "inactive"}
    links, unsupported = pg.parse_nvlink_status(text)
    assert links == {0: [], 1: []} and not unsupported
    pcie = Gpu(node="n", index=0, model="NVIDIA A100-PCIE-40GB", nvlink_state="inactive")
    assert nvlink_findings(pcie) == []


def test_all_links_inactive_on_an_sxm_gpu_is_a_fault():
    for gpu in (Gpu(node="n", index=1, model="NVIDIA A100-SXM4-80GB", nvlink_state="inactive"),
                Gpu(node="n", index=1, model="NVIDIA H100 80GB HBM3", nvlink_state="inactive"),
                Gpu(node="n", index=1, model="NVIDIA H200", nvlink_state="inactive"),
                Gpu(node="n", index=1, model="?", fabric_state="Completed", nvlink_state="inactive")):
        [f] = nvlink_findings(gpu)
        assert f.code == "nvlink_inactive" and f.severity is Severity.ERROR, gpu.model
    # a PCIe card whose node peers have NVLinks up (the 8-GPU board with one dead GPU)
    assert nvlink_findings(Gpu(node="n", index=2, model="x", nvlink_state="inactive"), peers_linked=True)


def test_device_without_nvlink_is_not_a_fault():
    text = ("GPU 0: NVIDIA RTX A4000 (UUID: GPU-c70cc88f-417f-faf3-9238-292380156520)\n"
            "Device does not have or support Nvlink\n")  # R595 wording (driver behaviour noted upstream)
    assert pg.parse_nvlink_notes(text) == {0: "none"}
    assert nvlink_findings(Gpu(node="n", index=0, model="NVIDIA H100 80GB HBM3", nvlink_state="none")) == []


def test_probe_record_carries_the_nvlink_note(fixture_text):
    fields, row = _h100_rows(fixture_text)
    rec = _record(1, {"gpu-fields": ",".join(fields), "gpu": row,
                      "nvlink": fixture_text("nvidia-smi_nvlink-s_2x-a100-pcie-40gb_drv555.42.02_all-inactive.txt")})
    r = parse_record("n1", rec, ProbeState(), 0.0)
    assert r.gpus is not None and r.gpus[0].nvlink_state == "inactive"


# ---------------------------------------------------------------- mount types

# /proc/mounts lines of real client mounts, as mountinfo(5) lines (id, parent, dev, root, target, options,
# "-", fstype, source, super options): WEKA CSI driver test data, JuiceFS docs, a ceph-fuse CSI test,
# BeeGFS CSI driver test data; smb3/cifs are the kernel's own fs type names (fs/smb/client/cifsfs.c).
REAL_MOUNTS = (
    ("10.108.97.126/default", "/mnt/weka", "wekafs", "rw,relatime,writecache,inode_bits=auto"),
    ("JuiceFS:juicefs-volume1", "/var/lib/juicefs/volume/juicefs-volume1-pv", "fuse.juicefs",
     "rw,relatime,user_id=0,group_id=0,default_permissions,allow_other"),
    ("ceph-fuse", "/mnt/cephfuse", "fuse.ceph-fuse", "rw"),
    ("beegfs_nodev", "/mnt/beegfs", "beegfs", "rw,relatime,cfgFile=/etc/beegfs/beegfs-client.conf"),
    ("//box/share", "/mnt/smb3", "smb3", "rw"),
    ("//srv/share", "/mnt/cifs", "cifs", "rw"),
    ("gpfs0", "/gpfs/fs0", "gpfs", "rw,relatime"),
)


def _mountinfo() -> str:
    return "".join(f"{100 + i} 21 0:{50 + i} / {target} rw,relatime shared:{i} - {fstype} {source} {opts}\n"
                   for i, (source, target, fstype, opts) in enumerate(REAL_MOUNTS)) + \
        "30 21 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"


@pytest.mark.skipif(shutil.which("grep") is None, reason="no grep")
def test_probe_selects_every_parallel_fs_mount_for_hang_detection():
    regex = _fstype_regex(ProbeOptions().fstypes)
    out = subprocess.run(["grep", "-E", regex], input=_mountinfo(), capture_output=True, text=True, check=False)
    assert out.stderr == ""  # no "stray \\" warning from GNU grep
    picked = {m.fstype for m in pn.parse_mountinfo(out.stdout)}
    assert picked == {fstype for _, _, fstype, _ in REAL_MOUNTS}
    assert {"fuse.ceph-fuse", "wekafs", "fuse.juicefs", "smb3", "cifs"} <= set(NETWORK_FSTYPES)


def test_node_panel_tells_no_nvlink_from_inactive_links_and_shows_a_failed_fabric():
    from hpctui.ui.widgets.probe_detail import probe_gpu_lines

    def text(g: Gpu) -> str:
        return " ".join(c.plain for c in probe_gpu_lines(g))

    assert "none on this device" in text(Gpu(node="n", index=0, nvlink_state="none"))
    assert "PCIe only" in text(Gpu(node="n", index=0, model="NVIDIA A100-PCIE-40GB", nvlink_state="inactive"))
    assert "an NVLink GPU" in text(Gpu(node="n", index=0, model="NVIDIA A100-SXM4-80GB", nvlink_state="inactive"))
    assert "In Progress" in text(Gpu(node="n", index=0, fabric_state="In Progress"))
    assert text(Gpu(node="n", index=0, fabric_state="Completed", fabric_status="Success")) == ""
