"""The record parser on the probe loop's own recorded streams (tests/fixtures/probes/loop/, written by
tests/testbed/nodeshims/record_streams.py): splitting in any chunking, and every record of a faulty
H100 node, an H200 MIG node and a CPU node parsed in sequence (rates, deltas, flaps, new Xids), each
compared with its reviewed golden file and checked for the behaviours that matter."""

from __future__ import annotations

from pathlib import Path

import pytest
from golden import check_golden

from hpctui.model.common import Severity
from hpctui.model.mount import MountState
from hpctui.model.probe import ServiceStatus
from hpctui.sources.ssh.probe.record import (
    ProbeReading,
    ProbeState,
    RecordSplitter,
    parse_record,
    severity_of,
    split_sections,
)

LOOP = Path(__file__).resolve().parent.parent / "fixtures" / "probes" / "loop"
NODES = ("gpu-faulty", "gpu-mig", "cpu-ro")


def stream(node: str) -> bytes:
    return (LOOP / f"{node}.stream").read_bytes()


def readings(node: str) -> list[ProbeReading]:
    state = ProbeState()
    splitter = RecordSplitter()
    texts = splitter.feed(stream(node))
    assert splitter.take_warnings() == []
    return [parse_record(node, t, state, 0.0) for t in texts]


@pytest.mark.parametrize("chunk", [1, 13, 4096, 1 << 20])
@pytest.mark.parametrize("node", NODES)
def test_any_chunking_gives_the_same_three_records(node: str, chunk: int) -> None:
    data = stream(node)
    whole = data.decode().split("@@hpctui begin ")[1:]
    splitter = RecordSplitter()
    out: list[str] = []
    for i in range(0, len(data), chunk):
        out += splitter.feed(data[i:i + chunk])
    splitter.end_of_stream()
    assert out == ["@@hpctui begin " + w for w in whole]
    assert (splitter.records, splitter.dropped, splitter.take_warnings()) == (3, 0, [])


def test_garbage_cut_records_and_a_partial_tail_cost_only_themselves() -> None:
    data = stream("cpu-ro")
    recs = [b"@@hpctui begin " + r for r in data.split(b"@@hpctui begin ")[1:]]
    cut = recs[0][: recs[0].rfind(b"\n", 0, len(recs[0]) // 2) + 1]  # cut at a line end (as a dying loop)
    mixed = b"login banner\n" + recs[0] + cut + recs[1] + b"\x00junk\n" + recs[2] + recs[0][:40]
    splitter = RecordSplitter()
    out = splitter.feed(mixed)
    assert [t.encode() for t in out] == recs
    splitter.end_of_stream()
    assert splitter.take_warnings() == [
        "13 bytes outside a record dropped",
        "record cut off (a new record began before its end)",
        "6 bytes outside a record dropped",
        "record cut off (stream ended mid-record)",
    ]
    assert (splitter.records, splitter.dropped) == (3, 4)
    small = RecordSplitter(max_record_bytes=1000)
    assert small.feed(recs[0]) == [] and small.take_warnings() == ["record larger than 1000 bytes dropped"]


@pytest.mark.parametrize("node", NODES)
def test_records_match_their_golden_parse(node: str) -> None:
    rs = readings(node)
    assert [r.seq for r in rs] == [1, 2, 3]
    for i, r in enumerate(rs, 1):
        check_golden(f"loop-{node}-{i}", r)


def test_sections_of_a_recorded_record() -> None:
    text = stream("gpu-faulty").decode().split("@@hpctui begin ")[1]
    seq, epoch, secs = split_sections("@@hpctui begin " + text)
    assert seq == 1 and epoch == 1796163552375798325 / 1e9
    hung = secs["stat.194"]
    assert (hung.rc, hung.late, hung.extra) == (124, 1, "1796163552709161126 1796163553760077680")
    assert secs["config"].text.splitlines()[0].startswith("slow_ms ")
    assert not secs["gpu"].text.endswith("\n") and secs["gpu"].rc == 0


def test_faulty_node_across_three_records() -> None:
    first, second, third = readings("gpu-faulty")
    assert first.late_probes == ("stat.194",) and "stat.194: probe late" in first.warnings
    mounts = {m.target: m for m in first.mounts or ()}
    assert mounts["/mnt/nfs/test"].state is MountState.HUNG
    assert mounts["/mnt/nfs/test-dupe"].state is MountState.DEGRADED
    assert mounts["/lustre/scratch"].state is MountState.DEGRADED
    assert (mounts["/lustre/scratch"].detail or "").startswith("lfs check servers: ")
    assert mounts["/home"].state is MountState.MISSING and mounts["/home"].detail == "expected but not mounted"
    assert {m.node for m in first.mounts or ()} == {"gpu-faulty"}
    # mount-slow cleared after the first record: the Lustre mount is no longer slow, only degraded
    assert {m.target: m.state for m in third.mounts or ()}["/lustre/scratch"] is MountState.DEGRADED
    # mlx5_0 port 1 flapped twice between the first and the second record
    ib1 = {(p.device, p.port): p for p in first.ib or ()}
    ib2 = {(p.device, p.port): p for p in second.ib or ()}
    assert ib1[("mlx5_0", 1)].flaps == 0 and ib2[("mlx5_0", 1)].flaps == 2
    assert ib2[("mlx5_0", 1)].deltas == {"link_downed": 2} and ib2[("mlx5_0", 1)].last_down == second.time
    assert ib1[("mlx5_4", 1)].is_up is False and ib1[("mlx5_4", 1)].state == "DOWN"
    # the new Xid 79 line is an event once, on GPU 0 (bus 0000:18:00)
    xid79 = [e for r in (first, second, third) for e in r.events if e.message.startswith("Xid 79 on 0000:18:00")]
    assert len(xid79) == 1 and xid79[0].object == "gpu/gpu-faulty/0" and xid79[0].severity is Severity.CRITICAL
    assert second.gpus is not None and second.gpus[0].last_xid == 79
    assert severity_of(first) is Severity.CRITICAL and severity_of(third) is Severity.OK
    # NVSwitch SXids: the first record carries them, later ones the same switches without new events
    assert first.nvswitches and third.nvswitches == first.nvswitches
    assert not [e for e in third.events if e.source == "nvswitch"]
    svc = {s.name: s for s in first.services or ()}
    assert svc["nvidia-fabricmanager"].status is ServiceStatus.FAILED
    assert "Failed with result 'exit-code'" in (svc["nvidia-fabricmanager"].detail or "")
    # rates only between consecutive records
    assert first.resources is not None and first.resources.cpu_busy_pct is None
    assert second.resources is not None and second.resources.nic_rx_bps.keys() == {"eth0"}


def test_mig_node_keeps_its_instances_and_cpu_node_its_read_only_mount() -> None:
    for r in readings("gpu-mig"):
        (g,) = r.gpus or ()
        assert [(i.gi_id, i.ci_id, i.profile) for i in g.mig_instances] == [
            (2, 0, "3g.71gb"), (2, 1, "3g.71gb"), (3, 0, "2g.35gb"), (9, 0, "1g.18gb"), (10, 0, "1g.18gb")]
        assert g.nvlinks == () and r.warnings == ()
    for r in readings("cpu-ro"):
        assert r.gpus == ()
        states = {m.target: m.state for m in r.mounts or ()}
        assert states["/lustre/scratch"] is MountState.READ_ONLY


def record(node: str, i: int = 0) -> str:
    return "@@hpctui begin " + stream(node).decode().split("@@hpctui begin ")[1:][i]


def with_section(text: str, name: str, meta: str | None = None, body: str | None = None) -> str:
    """``text`` with section ``name``'s meta (``rc late``) and/or body replaced, or appended when absent;
    body ``""`` with meta ``"-"`` removes it."""
    head = f"@@hpctui section {name} "
    start = text.find(head)
    if start < 0:
        cut = text.rindex("@@hpctui end")
        return f"{text[:cut]}{head}{meta or '0 0'} \n{body or ''}\n\n{text[cut:]}"
    line_end = text.index("\n", start)
    end = text.index("@@hpctui ", line_end)
    old_meta, old_body = text[start + len(head):line_end], text[line_end + 1:end]
    if meta == "-":
        return text[:start] + text[end:]
    return f"{text[:start]}{head}{meta or old_meta}\n{old_body if body is None else body + chr(10) + chr(10)}{text[end:]}"


def gpus_of(text: str, node: str = "gpu-faulty") -> tuple[tuple[object, ...] | None, tuple[str, ...]]:
    r = parse_record(node, text, ProbeState(), 0.0)
    return r.gpus, r.warnings


def test_nvidia_smi_failing_missing_late_or_without_gpus() -> None:
    text = record("gpu-faulty")
    err = "Unable to determine the device handle for GPU0000:18:00.0: Unknown Error"
    gpus, warnings = gpus_of(with_section(text, "gpu", "9 0", err + "\nsecond line"))
    assert gpus is None and f"gpu: nvidia-smi exit 9: {err}" in warnings
    gpus, warnings = gpus_of(with_section(text, "gpu", "9 1", err))  # late: the old values stay, no warning
    assert gpus is None and "gpu: probe late" in warnings and not any("exit 9" in w for w in warnings)
    assert gpus_of(with_section(text, "gpu", "127 0", "sh: nvidia-smi: not found"))[0] == ()
    assert gpus_of(with_section(text, "gpu", "6 0", "No devices were found"))[0] == ()
    assert gpus_of(with_section(text, "gpu", "-"))[0] is None


def test_an_unparseable_nvidia_smi_row_costs_one_gpu_and_one_warning() -> None:
    text = record("gpu-faulty")
    gpus, warnings = gpus_of(text)
    assert gpus and not any("unparseable" in w for w in warnings)
    start = text.index("@@hpctui section gpu ")
    first_row_end = text.index("\n", text.index("\n", start) + 1)
    bad = text[:first_row_end] + "\n0, GPU-garbage, NVIDIA H100 80GB HBM3, not a bus id" + text[first_row_end:]
    bad_gpus, warnings = gpus_of(bad)
    assert bad_gpus == gpus and "gpu: 1 unparseable nvidia-smi row(s) dropped" in warnings


def test_remapped_rows_of_the_slow_section_reach_their_gpu() -> None:
    text = record("gpu-faulty")
    gpus, _ = gpus_of(text)
    assert gpus is not None
    uuid = gpus[1].uuid  # type: ignore[attr-defined]
    remapped, _ = gpus_of(with_section(text, "gpu-remap", "0 0", f"{uuid}, 3, 1, Yes, No"))
    assert remapped is not None
    g = remapped[1]
    assert (g.remapped_correctable, g.remapped_uncorrectable, g.remap_pending, g.remap_failure) == (3, 1, True, False)  # type: ignore[attr-defined]
    assert remapped[0] == gpus[0] and remapped[2:] == gpus[2:]
    assert gpus_of(with_section(text, "gpu-remap", "2 0", f"{uuid}, 3, 1, Yes, No"))[0] == gpus  # failed: ignored


def test_mig_instances_from_lgi_and_lci_when_the_q_memory_section_is_missing() -> None:
    text = record("gpu-mig")
    full, _ = gpus_of(text, "gpu-mig")
    bare, _ = gpus_of(with_section(text, "gpu-mem", "-"), "gpu-mig")
    assert full is not None and bare is not None
    f0, b0 = full[0], bare[0]
    assert [(i.gi_id, i.ci_id, i.profile) for i in b0.mig_instances] == [  # type: ignore[attr-defined]
        (i.gi_id, i.ci_id, i.profile) for i in f0.mig_instances]  # type: ignore[attr-defined]
    assert all(i.memory_total_mib is None for i in b0.mig_instances)  # type: ignore[attr-defined]
    no_ci, _ = gpus_of(with_section(with_section(text, "gpu-mem", "-"), "mig-ci", "-"), "gpu-mig")
    assert no_ci is not None  # one instance per GPU instance, its compute instance unknown
    assert [(i.gi_id, i.ci_id, i.profile) for i in no_ci[0].mig_instances] == [  # type: ignore[attr-defined]
        (2, None, "3g.71gb"), (3, None, "2g.35gb"), (9, None, "1g.18gb"), (10, None, "1g.18gb")]


def section_body(text: str, name: str) -> str:
    start = text.index(f"@@hpctui section {name} ")
    line_end = text.index("\n", start)
    return text[line_end + 1:text.index("@@hpctui ", line_end)].rstrip("\n")


def test_implausible_values_of_every_section_reach_the_records_one_warning() -> None:
    """The faulty node's first record with one implausible value in the kernel log (an Xid of 6
    digits and an SXid 0 line), the InfiniBand dump (a counter beyond 2**63) and /proc: each is
    N/A, and the record's warnings name them in one line."""
    text = record("gpu-faulty")
    xid = section_body(text, "xid")
    first = xid.splitlines()[0]
    bad_xid = first.replace("): 119,", "): 123456,").replace("1796163494.196513", "1796163494.296513")
    sxid = "1796163494.396513 gpu-faulty kernel: nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 0, Fatal, Link 1"
    ib = section_body(text, "ib") + f"\nmlx5_0/ports/1/counters/port_rcv_errors:{2**63}"
    bad = with_section(with_section(text, "xid", None, f"{xid}\n{bad_xid}\n{sxid}"), "ib", None, ib)
    r = parse_record("gpu-faulty", bad, ProbeState(), 0.0)
    good = parse_record("gpu-faulty", text, ProbeState(), 0.0)
    (line,) = [w for w in r.warnings if "implausible" in w]
    assert "Xid=123456 on gpu-faulty" in line and "SXid=0 on gpu-faulty" in line
    assert "mlx5_0/1 port_rcv_errors=19-digit number on gpu-faulty" in line
    assert r.gpus == good.gpus and r.nvswitches == good.nvswitches
    assert [w for w in r.warnings if "implausible" not in w] == list(good.warnings)


def test_an_unreadable_kernel_log_is_one_warning_and_no_events() -> None:
    text = record("gpu-faulty")
    denied = "dmesg: read kernel buffer failed: Operation not permitted"
    r = parse_record("gpu-faulty", with_section(text, "xid", "3 0", denied + "\nmore"), ProbeState(), 0.0)
    assert f"xid: kernel log not readable (exit 3): {denied}" in r.warnings and r.nvswitches is None
    assert not [e for e in r.events if "Xid" in str(e)]
    r = parse_record("gpu-faulty", with_section(text, "xid", "1 0", denied), ProbeState(), 0.0)
    assert f"xid: {denied}" in r.warnings and r.nvswitches == ()


def test_record_headers_in_seconds_or_nanoseconds_and_section_metas() -> None:
    text = record("cpu-ro")
    head, _, rest = text.partition("\n")
    assert head.split()[:4] == ["@@hpctui", "begin", "1", head.split()[3]]
    seq, epoch, secs = split_sections(text)
    assert seq == 1 and epoch == pytest.approx(int(head.split()[3]) / 1e9)
    assert split_sections(f"@@hpctui begin 7 1700000000\n{rest}")[:2] == (7, 1700000000.0)  # an old loop: seconds
    assert split_sections(f"@@hpctui begin 7 100000000000000\n{rest}")[1] == 100000000000000.0  # (10**14 s: not ns)
    assert split_sections(f"@@hpctui begin 7 100000000000001\n{rest}")[1] == pytest.approx(100000.000000001)
    assert split_sections(f"@@hpctui begin x {'9' * 21}\n{rest}")[:2] == (-1, None)
    assert split_sections(f"@@hpctui begin\n{rest}")[:2] == (-1, None)
    odd = with_section(with_section(text, "res", "-1 x"), "lfs", "0")
    _, _, osecs = split_sections(odd)
    assert (osecs["res"].rc, osecs["res"].late) == (-1, 1) and "lfs" not in osecs
    assert osecs["res"].name == "res" and osecs["mounts"] == secs["mounts"]


def test_records_with_nul_bytes_bad_utf8_or_mismatched_ends_cost_only_themselves() -> None:
    recs = [b"@@hpctui begin " + r for r in stream("gpu-faulty").split(b"@@hpctui begin ")[1:]]
    nul = recs[0].replace(b"slow_ms 500", b"slow_ms \x00500")
    latin1 = recs[0].replace(b"slow_ms 500", b"slow_ms \xe9500")
    other_end = recs[1].replace(b"@@hpctui end 2", b"@@hpctui end 9")
    splitter = RecordSplitter()
    out = [t.encode() for t in splitter.feed(nul + recs[0] + latin1 + other_end + recs[2])]
    assert out == [recs[0], recs[2]]
    assert splitter.take_warnings() == ["record with binary (NUL) bytes dropped", "record with invalid UTF-8 dropped",
                                        "record with mismatched begin/end dropped"]
    assert (splitter.records, splitter.dropped) == (2, 3)
    assert parse_record("gpu-faulty", out[0].decode(), ProbeState(), 0.0).seq == 1


def test_lustre_and_beegfs_server_problems_degrade_their_mounts_and_unprobed_mounts_say_so() -> None:
    text = record("cpu-ro")
    lfs = section_body(text, "lfs")
    osts = [f"scratch-OST000{i}-osc-ffff8a0c inactive." for i in range(4)]
    bee = "\n".join(["Management", "==========", "mgmt01 [ID: 1]: reachable at 10.0.0.1:8008 (protocol: TCP)",
                     "Metadata", "==========", *(f"meta0{i} [ID: {i}]: UNREACHABLE" for i in range(1, 5))])
    bad = with_section(with_section(text, "lfs", None, "\n".join([lfs, *osts])), "beegfs", "0 0", bee)
    bad = with_section(bad, "stat.194", "-").replace("/lustre/scratch ro,relatime", "/lustre/scratch rw,relatime")
    r = parse_record("cpu-ro", bad, ProbeState(), 0.0)
    by = {m.target: m for m in r.mounts or ()}
    assert by["/lustre/scratch"].state is MountState.DEGRADED  # (mounted rw here: read-only would win)
    assert by["/lustre/scratch"].detail == "lfs check servers: " + "; ".join(osts[:3])
    assert by["/mnt/beegfs"].state is MountState.DEGRADED
    assert by["/mnt/beegfs"].detail == "beegfs-check-servers: " + "; ".join(f"meta0{i} [ID: {i}]: UNREACHABLE" for i in (1, 2, 3))
    assert by["/mnt/nfs/test"].detail == "liveness not probed (max_mount_probes)"
    late = parse_record("cpu-ro", with_section(bad, "beegfs", "0 1"), ProbeState(), 0.0)
    assert {m.target: m for m in late.mounts or ()}["/mnt/beegfs"].state is MountState.OK  # a late check says nothing
    good = {m.target: m for m in parse_record("cpu-ro", text, ProbeState(), 0.0).mounts or ()}
    assert good["/mnt/beegfs"].state is MountState.OK and good["/mnt/nfs/test"].detail != by["/mnt/nfs/test"].detail


def test_an_unreadable_mountinfo_is_one_warning() -> None:
    text = record("cpu-ro")
    denied = "cat: /proc/self/mountinfo: Permission denied"
    r = parse_record("cpu-ro", with_section(text, "mounts", "1 0", denied + "\nmore"), ProbeState(), 0.0)
    assert r.mounts is None and f"mounts: {denied}" in r.warnings
    r = parse_record("cpu-ro", with_section(text, "mounts", "1 0", ""), ProbeState(), 0.0)
    assert "mounts: mountinfo not readable" in r.warnings


def test_ib_deltas_flaps_and_best_rate_across_records() -> None:
    """The faulty node's records 1 and 2, then record 3 with mlx5_0's port_rcv_errors up by 5, its
    link_downed by 3, its rate trained down to 200 Gb/s, and mlx5_1 gone down (a flap without a
    counter step); a failed sysfs read is one warning and keeps nothing."""
    state = ProbeState()
    for i in (0, 1):
        parse_record("gpu-faulty", record("gpu-faulty", i), state, 0.0)
    third = (record("gpu-faulty", 2)
             .replace("mlx5_0/ports/1/counters/port_rcv_errors:14", "mlx5_0/ports/1/counters/port_rcv_errors:19")
             .replace("mlx5_0/ports/1/counters/link_downed:2", "mlx5_0/ports/1/counters/link_downed:5")
             .replace("mlx5_0/ports/1/rate:400 Gb/sec (4X NDR)", "mlx5_0/ports/1/rate:200 Gb/sec (4X HDR)")
             .replace("mlx5_1/ports/1/state:4: ACTIVE", "mlx5_1/ports/1/state:1: DOWN"))
    r = parse_record("gpu-faulty", third, state, 0.0)
    ib = {(p.device, p.port): p for p in r.ib or ()}
    p0, p1 = ib[("mlx5_0", 1)], ib[("mlx5_1", 1)]
    assert p0.deltas == {"port_rcv_errors": 5, "link_downed": 3} and p0.flaps == 2 + 3 and p0.last_down == r.time
    assert (p0.rate_gbps, p0.max_rate_gbps) == (200.0, 400.0)
    assert p1.flaps == 1 and p1.deltas == {} and p1.last_down == r.time and p1.max_rate_gbps == p1.rate_gbps
    again = parse_record("gpu-faulty", third.replace("@@hpctui begin 3 ", "@@hpctui begin 4 "), state, 0.0)
    assert {(p.device, p.port): p.deltas for p in again.ib or ()}[("mlx5_0", 1)] == {}  # same text: no deltas
    failed = parse_record("gpu-faulty", with_section(third, "ib", "3 0", ""), ProbeState(), 0.0)
    assert failed.ib is None and "ib: sysfs read failed (exit 3)" in failed.warnings
    partial = parse_record("gpu-faulty", with_section(third, "ib", "2 0"), ProbeState(), 0.0)
    assert partial.ib and not any(w.startswith("ib:") for w in partial.warnings)  # grep: a file went missing


def test_nvlink_errors_without_a_status_read_keep_the_links_last_state() -> None:
    """Record 1 reads both NVLink sections; in record 2 the status read is late and GPU 0's link 0
    has 4 replays more: the link keeps its last up/speed and shows the rise; record 3 reads neither:
    the last links, without deltas."""
    state = ProbeState()
    first = parse_record("gpu-faulty", record("gpu-faulty", 0), state, 0.0)
    assert first.gpus is not None
    links0 = first.gpus[0].nvlinks
    assert links0 and links0[0].up is True and links0[0].speed_gbps == 26.562
    second = record("gpu-faulty", 1)
    err = section_body(second, "nvlink-err")
    gpu0_end = err.index("\nGPU 1:") if "\nGPU 1:" in err else len(err)
    bumped = err[:gpu0_end].replace("Link 0: Replay Errors: 0", "Link 0: Replay Errors: 4", 1) + err[gpu0_end:]
    r2 = parse_record("gpu-faulty", with_section(with_section(second, "nvlink", "0 1"), "nvlink-err", None, bumped),
                      state, 0.0)
    assert r2.gpus is not None
    l0 = r2.gpus[0].nvlinks[0]
    assert (l0.link, l0.up, l0.speed_gbps, l0.replay_errors, l0.deltas) == (0, True, 26.562, 4, {"replay": 4})
    assert [(x.link, x.up, x.speed_gbps) for x in r2.gpus[0].nvlinks] == [(x.link, x.up, x.speed_gbps) for x in links0]
    third = with_section(with_section(record("gpu-faulty", 2), "nvlink", "0 1"), "nvlink-err", "0 1")
    r3 = parse_record("gpu-faulty", third, state, 0.0)
    assert r3.gpus is not None
    assert r3.gpus[0].nvlinks[0].replay_errors == 4 and all(not x.deltas for x in r3.gpus[0].nvlinks)


def test_xid_events_name_the_gpu_instance_the_meaning_and_the_process() -> None:
    from hpctui.model.gpu import XID_ACTION, XID_MEANING

    text = record("gpu-faulty")
    xid = section_body(text, "xid")
    t = "1796163494.596513 gpu-faulty kernel: NVRM: Xid (PCI:0000:18:00 GPU-I:03): "
    long = "x" * 600
    lines = [t + "9998, pid=42, name=python, an Xid without a catalogue entry",
             t.replace("94.596513", "94.696513") + "79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
             t.replace("94.596513", "94.796513") + f"13, pid=7, {long}"]
    r = parse_record("gpu-faulty", with_section(text, "xid", None, "\n".join([xid, *lines])), ProbeState(), 0.0)
    ev = {e.message.split(" ", 2)[1]: e for e in r.events if e.source == "gpu" and "GI 3" in e.message}
    assert ev["9998"].message == ("Xid 9998 on 0000:18:00 GI 3: see NVIDIA's Xid catalogue — "
                                  "an Xid without a catalogue entry [pid 42 python]")
    assert ev["9998"].object == "gpu/gpu-faulty/0" and ev["9998"].time == pytest.approx(1796163494.596513)
    assert ev["79"].message == (f"Xid 79 on 0000:18:00 GI 3: {XID_MEANING[79]}; action: {XID_ACTION[79]} — "
                                "GPU has fallen off the bus.")
    assert ev["13"].message.endswith("x" * 50 + " [pid 7]") and len(ev["13"].message) < 600
    assert r.gpus is not None
    (x9998,) = [x for x in r.gpus[0].xid_events if x.xid == 9998]
    assert (x9998.gpu_instance, x9998.pid, x9998.process) == (3, 42, "python")


def test_a_failing_systemctl_and_journals_under_either_name() -> None:
    text = record("gpu-faulty")
    bus = "Failed to connect to bus: No such file or directory"
    r = parse_record("gpu-faulty", with_section(text, "svc", "1 0", bus + "\nmore"), ProbeState(), 0.0)
    assert r.services is None and f"services: systemctl exit 1: {bus}" in r.warnings
    named = text.replace("@@hpctui section journal.nvidia-fabricmanager.service ",
                         "@@hpctui section journal.nvidia-fabricmanager ")
    svc = {s.name: s for s in parse_record("gpu-faulty", named, ProbeState(), 0.0).services or ()}
    assert "Failed with result 'exit-code'" in (svc["nvidia-fabricmanager"].detail or "")
    late = with_section(text, "journal.nvidia-fabricmanager.service", "0 1")
    svc = {s.name: s for s in parse_record("gpu-faulty", late, ProbeState(), 0.0).services or ()}
    assert "Failed with result" not in (svc["nvidia-fabricmanager"].detail or "")


def test_sxids_outside_the_table_get_their_class_and_lines_without_a_time_the_records() -> None:
    """The faulty node's kernel-log section with two SXid lines of codes the table lacks: a fatal one
    (class and severity from ``fatal``) and a non-fatal one written without a timestamp, and an Xid
    line without one: their events take the record's time."""
    from hpctui.model.nvswitch import SXID_MEANING, sxid_class, sxid_severity

    text = record("gpu-faulty")
    xid = section_body(text, "xid")
    codes = [c for c in (29998, 29999) if c not in SXID_MEANING]
    assert len(codes) == 2
    lines = [f"1796163494.896513 gpu-faulty kernel: nvidia-nvswitch5: SXid (PCI:0000:0b:00.0): {codes[0]}, "
             "Fatal, Link 7 something unknown",
             f"nvidia-nvswitch6: SXid (PCI:0000:0c:00.0): {codes[1]}, Non-fatal, Link 9 something else",
             "NVRM: Xid (PCI:0000:18:00): 13, pid=7, Graphics Exception without a time"]
    state = ProbeState()
    r = parse_record("gpu-faulty", with_section(text, "xid", None, "\n".join([xid, *lines])), state, 0.0)
    ev = {e.object: e for e in r.events if e.source == "nvswitch"}
    fatal, other = ev["nvswitch/gpu-faulty/nvidia-nvswitch5"], ev["nvswitch/gpu-faulty/nvidia-nvswitch6"]
    assert fatal.message == (f"SXid {codes[0]} on nvidia-nvswitch5 (0000:0b:00.0): {sxid_class(codes[0], True)}"
                             " — Link 7 something unknown")
    assert fatal.severity is sxid_severity(codes[0], True) and fatal.time == pytest.approx(1796163494.896513)
    assert other.message.endswith(f"{sxid_class(codes[1], False)} — Link 9 something else")
    assert other.severity is sxid_severity(codes[1], False) is not fatal.severity
    assert other.time == r.time and r.time  # (was 0.0 on a first record: 1970)
    (xid13,) = [e for e in r.events if e.source == "gpu" and "without a time" in e.message]
    assert xid13.time == r.time
