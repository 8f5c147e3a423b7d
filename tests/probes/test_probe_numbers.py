"""Hostile numbers in the probe's record stream (issue #19 item 4): an implausible nvidia-smi cell,
IB counter or rate, NVLink count or Xid code is N/A (or dropped) with one warning naming the field;
the node's other values stay as they were."""

from __future__ import annotations

from test_record import record

from hpctui.probes.parse_gpu import integer
from hpctui.probes.record import ProbeState, parse_record

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
    r, lines = parse(state, 2)  # same gpu and ib text: cached rows, same warning
    assert r.gpus is not None and len(r.gpus) == 3 and lines and lines[0].startswith("9 implausible")


def test_integer_cell_of_1e400_is_na_not_overflow_error() -> None:
    assert integer("1e400") is None
