"""parse_record on hand-written records: sanitising, late/stuck probes, rates, Xid de-duplication."""

from __future__ import annotations

import msgspec

from hpctui.base.sanitize import is_clean
from hpctui.model.probe import ServiceStatus
from hpctui.sources.ssh.probe.record import ProbeState, parse_record


def record(seq: int, epoch_s: float, sections: dict[str, tuple[int, int, str]] | dict[str, tuple]) -> str:
    out = [f"@@hpctui begin {seq} {int(epoch_s * 1e9)} 1"]
    for name, spec in sections.items():
        rc, late, text, *extra = spec
        out.append(f"@@hpctui section {name} {rc} {late} {' '.join(extra)}")
        out.append(text)
    out.append(f"@@hpctui end {seq}")
    return "\n".join(out) + "\n"


def strings(obj: object) -> list[str]:
    found: list[str] = []

    def walk(x: object) -> None:
        if isinstance(x, str):
            found.append(x)
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(k)
                walk(v)
        elif isinstance(x, list | tuple):
            for v in x:
                walk(v)

    walk(msgspec.to_builtins(obj))
    return found


ESC = "\x1b]0;owned\x07\x1b[2J"


def test_every_string_from_the_node_is_sanitised():
    rec = record(1, 1_700_000_000, {
        "gpu-fields": (0, 0, "index,uuid,name,pci.bus_id"),
        "gpu": (0, 0, f"0, GPU-a{ESC}, NVIDIA H100{ESC}, 00000000:18:00.0"),
        "gpu-apps": (0, 0, "4242, GPU-a\x1b]0;owned\x07\x1b[2J, 100"),
        "gpu-procs": (0, 0, f"pid 4242\nuid 1000 ev{ESC}il\ncmd run{ESC}\ncgroup 0::/job_5/x"),
        "xid": (0, 0, f"1700000000.5 h kernel: NVRM: Xid (PCI:0000:18:00): 13, {ESC} boom"),
        "ib": (0, 0, f"mlx5_0{ESC}/ports/1/state:4: ACTIVE{ESC}\nmlx5_0/ports/1/rate:400 Gb/sec (4X NDR){ESC}"),
        "mounts": (0, 0, "77 1 0:5 / /mnt/x\\033y rw - nfs4 srv:/e\\033x rw"),
        "svc": (0, 0, f"Id=bad{ESC}.service\nLoadState=loaded\nActiveState=failed\nSubState=failed{ESC}"),
        f"journal.bad{ESC}.service".replace(" ", ""): (0, 0, f"line one{ESC}\nline two"),
        "config": (0, 0, f"expect /lustre{ESC}"),
    })
    r = parse_record("n1", rec, ProbeState(), 0.0)
    assert r.gpus and r.ib and r.mounts and r.services and r.events
    for s in strings(r):
        assert is_clean(s.replace("\n", "")), repr(s)


def test_late_and_stuck_probes_leave_their_part_out():
    rec = record(1, 1_700_000_000, {
        "gpu": (124, 1, ""), "ib": (124, 2, ""), "svc": (124, 1, ""), "res": (0, 0, "loadavg 1 2 3 1/1 1"),
    })
    r = parse_record("n1", rec, ProbeState(), 0.0)
    assert r.gpus is None and r.ib is None and r.services is None and r.resources is not None
    assert r.late_probes == ("gpu", "ib", "svc")
    assert any("still stuck" in w for w in r.warnings)


def test_rates_between_consecutive_records_only():
    def res(busy: int, idle: int, io_ms: int, rx: int, errs: int) -> tuple[int, int, str]:
        return (0, 0, "\n".join([
            f"stat cpu  {busy} 0 0 {idle} 0 0 0 0 0 0",
            f"diskstats 259 0 nvme0n1 1 0 1 1 1 0 1 1 0 {io_ms} 1 0 0 0 0",
            f"netdev   eth0: {rx} 1 {errs} 0 0 0 0 0 {rx // 2} 1 0 0 0 0 0 0",
        ]))
    st = ProbeState()
    t0 = 1_700_000_000.0
    a = parse_record("n", record(1, t0, {"res": res(100, 900, 1000, 1000, 0)}), st, 0.0)
    b = parse_record("n", record(2, t0 + 2, {"res": res(600, 1400, 2000, 3000, 3)}), st, 0.0)
    c = parse_record("n", record(9, t0 + 10, {"res": res(700, 1500, 2100, 4000, 3)}), st, 0.0)  # loop restarted
    assert a.resources is not None and a.resources.cpu_busy_pct is None and a.resources.disk_busy_pct == {}
    rb = b.resources
    assert rb is not None and rb.cpu_busy_pct == 50.0 and rb.disk_busy_pct == {"nvme0n1": 50.0}
    assert rb.nic_rx_bps == {"eth0": 1000.0} and rb.nic_tx_bps == {"eth0": 500.0} and rb.nic_errors == {"eth0": 3}
    assert c.resources is not None and c.resources.cpu_busy_pct is None  # no rate across a gap


def test_dmesg_xids_repeat_every_record_but_are_events_once():
    lines = ("[  100.0] NVRM: Xid (PCI:0000:18:00): 13, pid=1, Graphics Exception\n"
             "[  200.0] NVRM: Xid (PCI:0000:18:00): 31, pid=2, MMU Fault\n")
    st = ProbeState()
    gpu = {"gpu-fields": (0, 0, "index,pci.bus_id"), "gpu": (0, 0, "0, 00000000:18:00.0"),
           "res": (0, 0, "stat btime 1700000000")}
    first = parse_record("n", record(1, 1_700_000_400.0, {**gpu, "xid": (0, 0, lines)}), st, 0.0)
    second = parse_record("n", record(2, 1_700_000_402.0, {**gpu, "xid": (0, 0, lines + lines.replace("200.0", "300.0"))}),
                          st, 0.0)
    assert [e.message.split(":")[0] for e in first.events] == ["Xid 13 on 0000", "Xid 31 on 0000"]
    assert len(second.events) == 1 and second.events[0].time == 1_700_000_300.0
    assert (second.gpus or ())[0].last_xid == 31 and len((second.gpus or ())[0].xid_events) == 3


def test_unknown_service_state_and_pid_files():
    st = ProbeState()
    r = parse_record("n", record(1, 1.0, {"svc-pid": (0, 0, "slurmd active\nmunge inactive")}), st, 0.0)
    assert [(s.name, s.status) for s in r.services or ()] == [("slurmd", ServiceStatus.ACTIVE),
                                                              ("munge", ServiceStatus.INACTIVE)]
