"""Hostile numbers in the probe's record stream (issue #19 item 4): an implausible nvidia-smi cell,
IB counter or rate, NVLink count, speed or index, /proc value, NIC rate, MIG memory or Xid code is N/A
(or dropped) with one warning naming the field, kept while the same text is read again; a bad Xid line
is reported once; the node's other values stay as they were."""

from __future__ import annotations

from test_record import record

from hpctui.model.validate import Drops
from hpctui.sources.ssh.probe.parse_gpu import integer, parse_q_mig_memory
from hpctui.sources.ssh.probe.record import ProbeState, parse_record

FIELDS = "index,uuid,temperature.gpu,power.draw,utilization.gpu,ecc.errors.uncorrected.volatile.total,clocks.sm"
HUGE = "1" + "0" * 300
ROWS = "\n".join([
    f"0, GPU-a, 1e308, 300.5, 50, -1, {HUGE}",  # every number but power is implausible
    "1, GPU-b, 9223372036854775792, 299, NaN, 0, 1980",  # DCGM_INT64_BLANK as a temperature, NaN utilisation
    "2, GPU-c, 61, 2147483634, 40, 3, 1410",  # DCGM_INT32_NOT_SUPPORTED as a power draw
    "-1, GPU-d, 61, 100, 40, 0, 1410",  # no valid index: the row is dropped
])


def parse(state: ProbeState | None = None, seq: int = 1) -> tuple:
    rec = record(seq, 1_700_000_000 + seq, {
        "gpu-fields": (0, 0, FIELDS),
        "gpu": (0, 0, ROWS),
        "xid": (0, 0, "1700000000.5 h kernel: NVRM: Xid (PCI:0000:18:00): 99999999, boom\n"
                      "1700000000.6 h kernel: NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus"),
        "ib": (0, 0, "mlx5_0/ports/1/state:4: ACTIVE\nmlx5_0/ports/1/rate:1000 Gb/sec (4X NDR)\n"
                     f"mlx5_0/ports/1/counters/symbol_error:{HUGE}\nmlx5_0/ports/1/counters/link_downed:3\n"
                     "mlx5_1/ports/1/rate:400 Gb/sec (4X NDR)"),
    })
    r = parse_record("gpu0003", rec, state or ProbeState(), 0.0)
    return r, [w for w in r.warnings if "implausible" in w]


def test_implausible_gpu_cells_are_na_with_one_warning_and_the_rest_intact() -> None:
    r, lines = parse()
    a, b, c = r.gpus
    assert [g.index for g in r.gpus] == [0, 1, 2]
    assert (a.temp_c, a.ecc_uncorrected_volatile, a.sm_clock_mhz, a.power_w, a.util_pct) == (None, None, None, 300.5, 50)
    assert (b.temp_c, b.util_pct, b.power_w, b.sm_clock_mhz) == (None, None, 299, 1980)
    assert (c.power_w, c.temp_c, c.ecc_uncorrected_volatile) == (None, 61, 3)
    (line,) = lines
    assert line == ("9 implausible value(s) dropped, shown as N/A (Xid=99999999 on gpu0003, "
                    "temperature.gpu=1e+308 on gpu0003, clocks.sm=1e+300 on gpu0003, …)")


def test_xid_codes_ib_rates_and_counters_are_checked() -> None:
    r, _ = parse()
    assert [e.message.split(" on ")[0] for e in r.events] == ["Xid 79"]  # 99999999 is no Xid: no CRITICAL event
    p0, p1 = r.ib
    assert p0.rate_gbps is None and "symbol_error" not in p0.counters and p0.counters["link_downed"] == 3
    assert p1.rate_gbps == 400.0


def test_the_warning_stays_while_the_same_text_is_read_again() -> None:
    state = ProbeState()
    parse(state, 1)
    r, lines = parse(state, 2)  # same gpu and ib text: cached rows, same warning; the Xid line is not new
    assert r.gpus is not None and len(r.gpus) == 3 and lines and lines[0].startswith("8 implausible")
    assert "Xid" not in lines[0]


def test_integer_cell_of_1e400_is_na_not_overflow_error() -> None:
    assert integer("1e400") is None


# -- /proc resources, NVLink, MIG memory; an Xid line reported once --------------------------------
def resources_record(seq: int, rx: int, load: str = "1.5 0.7 0.2") -> str:
    return record(seq, 1_700_000_000 + seq, {"res": (0, 0, "\n".join([
        f"loadavg {load} 2/300 12345",
        "stat cpu  100 0 50 800 50 0 0 0 0 0",
        "stat btime -1",
        f"meminfo MemTotal:       {HUGE} kB", "meminfo MemAvailable:    524288 kB",
        "diskstats  259       0 nvme0n1 100 0 800 10 50 0 400 5 0 99999999999999999999 15 0 0 0 0",
        "diskstats  259       0 nvme1n1 100 0 800 10 50 0 400 5 0 250 15 0 0 0 0",
        f"netdev   eth0: {rx} 10 1 0 0 0 0 0 2000 20 2 0 0 0 0 0",
        "netdev   eth1: -5 10 1 0 0 0 0 0 2000 20 2 0 0 0 0 0",
        "cpus 64",
    ]))})


def test_implausible_proc_values_are_na_with_one_warning() -> None:
    state = ProbeState()
    r = parse_record("n1", resources_record(1, 1000, load="inf 0.7 0.2"), state, 0.0)
    res = r.resources
    assert res is not None and (res.load1, res.mem_total_mib, res.mem_available_mib, res.cpu_count) == (None, None, 512.0, 64)
    assert state.boot_time is None and set(state.proc.disk_io_ms) == {"nvme1n1"} and set(state.proc.nic) == {"eth0"}  # type: ignore[union-attr]
    (line,) = [w for w in r.warnings if "implausible" in w]
    assert line == ("5 implausible value(s) dropped, shown as N/A (load=inf on n1, btime=-1 on n1, "
                    "MemTotal=301-digit number on n1, …)")
    r = parse_record("n1", resources_record(2, 1000 + 2**62), state, 0.0)  # a forged jump: 4.6e18 B/s
    assert r.resources is not None and r.resources.nic_rx_bps == {} and r.resources.load1 == 1.5
    (line,) = [w for w in r.warnings if "implausible" in w]
    assert line.startswith("5 implausible value(s) dropped")  # load is plausible now; the eth0 rate is not
    assert r.resources.nic_errors == {"eth0": 0}


NV_FIELDS = "index,uuid,temperature.gpu"


def nvlink_record(seq: int, xid: str) -> str:
    return record(seq, 1_700_000_000 + seq, {
        "gpu-fields": (0, 0, NV_FIELDS), "gpu": (0, 0, "0, GPU-a, 50\n1, GPU-b, 51"),
        "nvlink": (0, 0, "GPU 0: NVIDIA H100 (UUID: GPU-a)\n\t Link 0: 26.562 GB/s\n\t Link 1: 1.2.3 GB/s\n"
                         "\t Link 2: 99999 GB/s\n\t Link 123456789: 26.562 GB/s\nGPU 1: NVIDIA H100 (UUID: GPU-b)\n"
                         "\t Link 0: 26.562 GB/s"),
        "nvlink-err": (0, 0, "GPU 0: NVIDIA H100 (UUID: GPU-a)\n\t Link 0: Replay Errors: 0\n\t Link 0: CRC Errors: "
                             f"{HUGE}\nGPU {HUGE}: x\n\t Link 0: CRC Errors: 5\nGPU 1: NVIDIA H100 (UUID: GPU-b)\n"
                             "\t Link 0: CRC Errors: 7"),
        "xid": (0, 0, xid),
    })


def test_implausible_nvlink_speeds_indexes_and_counters_are_na_and_stay_warned() -> None:
    state = ProbeState()
    r = parse_record("n1", nvlink_record(1, ""), state, 0.0)
    assert r.gpus is not None
    g0, g1 = r.gpus
    assert [(n.link, n.up, n.speed_gbps) for n in g0.nvlinks] == [(0, True, 26.562), (1, True, None), (2, True, None)]
    assert g0.nvlinks[0].crc_errors is None and g0.nvlinks[0].replay_errors == 0 and g1.nvlinks[0].crc_errors == 7
    (line,) = [w for w in r.warnings if "implausible" in w]
    assert line == ("5 implausible value(s) dropped, shown as N/A (nvlink 1 GB/s='1.2.3' on n1 GPU 0, "
                    "nvlink 2 GB/s=99999 on n1 GPU 0, nvlink link index='123456789' on n1 GPU 0, …)")
    r = parse_record("n1", nvlink_record(2, ""), state, 0.0)  # the same texts: links as they were, still warned
    assert [w for w in r.warnings if "implausible" in w] == [line]


def test_a_bad_xid_line_is_reported_once_per_distinct_line() -> None:
    state = ProbeState()
    one = "1700000000.5 h kernel: NVRM: Xid (PCI:0000:18:00): 99999999, boom"
    two = "1700000001.5 h kernel: NVRM: Xid (PCI:0000:18:00): 123456, boom"

    def xid_warnings(seq: int, excerpt: str) -> list[str]:
        r = parse_record("n1", record(seq, 1_700_000_000 + seq, {"xid": (0, 0, excerpt)}), state, 0.0)
        return [w for w in r.warnings if "implausible" in w]

    assert xid_warnings(1, one) == ["1 implausible value(s) dropped, shown as N/A (Xid=99999999 on n1)"]
    assert xid_warnings(2, one) == []  # the excerpt still holds it: not reported again
    assert xid_warnings(3, f"{one}\n{two}") == ["1 implausible value(s) dropped, shown as N/A (Xid=123456 on n1)"]
    assert xid_warnings(4, f"{one}\n{two}") == []


def test_implausible_mig_memory_and_ids_are_na() -> None:
    text = ("GPU 00000000:18:00.0\n    MIG Device\n        Index                     : 0\n"
            "        GPU Instance ID           : 99999\n        Compute Instance ID       : 0\n"
            "        FB Memory Usage\n            Total                 : 99999999999 MiB\n"
            "            Used                  : -3 MiB\n    MIG Device\n        Index                     : -1\n"
            "        GPU Instance ID           : 1\n        FB Memory Usage\n            Total   : 9984 MiB\n")
    drops = Drops()
    (m,) = parse_q_mig_memory(text, drops, "n1")  # the device without a plausible index is left out
    assert (m.device, m.gi_id, m.ci_id, m.total_mib, m.used_mib) == (0, None, 0, None, None)
    assert drops.warnings() == ["4 implausible value(s) dropped, shown as N/A (MIG GPU instance id=99999 on n1 "
                                "00000000:18:00.0, MIG memory total MiB=1e+11 on n1 00000000:18:00.0, MIG memory "
                                "used MiB=-3 on n1 00000000:18:00.0, …)"]
