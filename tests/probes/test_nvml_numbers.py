"""Hostile readings from NVML (issue #19 item 4): an out-of-range temperature, power, clock, ECC
count or Xid is N/A (no event) with one warning naming the field; the other readings stay."""

from __future__ import annotations

from fake_pynvml import new_module

from hpctui.sources.nvml.settings import NvmlSettings
from hpctui.sources.nvml.source import NvmlSource


async def test_implausible_nvml_readings_are_na_with_one_warning() -> None:
    m = new_module()
    m.nvmlDeviceGetTemperature = lambda h, sensor: 2**64 - 1 if h.index == 0 else 53  # type: ignore[attr-defined]
    m.nvmlDeviceGetClockInfo = lambda h, clock: float("inf") if h.index == 0 else 1e308  # type: ignore[attr-defined]
    m.nvmlDeviceGetTotalEccErrors = lambda h, kind, counter: -1 if kind == 1 else 0  # type: ignore[attr-defined]
    # (these stand-ins answer for the lost GPU 2 too: its values are checked the same way)
    src = NvmlSource(NvmlSettings(node="gpuhost"), nvml=m)
    await src.collect()
    m.state.events.extend([(0, -1), (0, 10**300), (0, 79)])
    result = await src.collect()
    g0, g1, _ = result.gpus["gpuhost"]
    assert (g0.temp_c, g0.sm_clock_mhz, g0.ecc_uncorrected_volatile, g0.ecc_uncorrected_aggregate) == (None,) * 4
    assert (g0.power_w, g0.util_pct, g0.ecc_corrected_volatile) == (631.95, 100.0, 0)  # the rest intact
    assert (g1.temp_c, g1.sm_clock_mhz) == (53, None)
    assert [e.message.split(" on ")[0] for e in result.events] == ["Xid 79"]  # no event for -1 nor 10**300
    assert g0.last_xid == 79
    (line,) = [w for w in result.warnings if "implausible" in w]
    assert line.startswith("11 implausible value(s) dropped, shown as N/A (temp_c=1.84467e+19 on gpuhost GPU 0, "), line
    await src.close()
