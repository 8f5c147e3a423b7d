"""Hostile readings from NVML (issue #19 item 4): an out-of-range temperature, power, clock, ECC
count, Xid, NVLink counter or MIG reading is N/A (no event) with one warning naming the field; the other
readings stay. The host name that names the node follows the one node-name rule."""

from __future__ import annotations

import socket
from types import SimpleNamespace

import pytest
from fake_pynvml import new_module

from hpctui.sources.base import SourceError
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


async def test_implausible_nvlink_counters_and_mig_readings_are_na_with_one_warning() -> None:
    m = new_module()
    m.gpus[0].crc = {0: -1, 1: 2**64, 2: 5}  # type: ignore[attr-defined]
    inner_ci, inner_mem = m.nvmlDeviceGetComputeInstanceId, m.nvmlDeviceGetMemoryInfo  # type: ignore[attr-defined]
    m.nvmlDeviceGetGpuInstanceId = lambda h: 10**300 if h.slot == 0 else [2, 3, 9, 10][h.slot]  # type: ignore[attr-defined]
    m.nvmlDeviceGetComputeInstanceId = lambda h: -5 if h.slot == 1 else inner_ci(h)  # type: ignore[attr-defined]
    m.nvmlDeviceGetMemoryInfo = (  # type: ignore[attr-defined]
        lambda h: SimpleNamespace(total=2**60, used=-(2**20), free=0) if getattr(h, "slot", None) == 2 else inner_mem(h))
    src = NvmlSource(NvmlSettings(node="gpuhost"), nvml=m)
    result = await src.collect()
    g0, g1, _ = result.gpus["gpuhost"]
    crc = {n.link: n.crc_errors for n in g0.nvlinks}
    assert (crc[0], crc[1], crc[2], crc[3]) == (None, None, 5, 0)
    assert [(i.gi_id, i.ci_id, i.memory_total_mib) for i in g1.mig_instances] == [
        (3, None, 19968.0), (9, 0, None), (10, 0, 9856.0)]  # the instance without a valid GI id is left out
    (line,) = [w for w in result.warnings if "implausible" in w]
    assert line.startswith("6 implausible value(s) dropped, shown as N/A (nvlink 0 crc_flit errors=-1 on gpuhost "
                           "GPU 0, nvlink 1 crc_flit errors=20-digit number on gpuhost GPU 0, "), line
    await src.close()


async def test_the_host_name_is_checked_with_the_node_name_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "gethostname", lambda: "[bold red]x.example")
    src = NvmlSource(NvmlSettings(), nvml=new_module())
    with pytest.raises(SourceError, match=r"host's name '\[bold red\]x' is no valid node name; set node"):
        await src.collect()
    monkeypatch.setattr(socket, "gethostname", lambda: "gpu-07.example")
    src = NvmlSource(NvmlSettings(), nvml=new_module())
    assert list((await src.collect()).gpus) == ["gpu-07"]
    await src.close()
    for bad in ("-oProxyCommand=x", "a b", "gpu\x1b[2J"):
        with pytest.raises(ValueError, match="no valid host name"):
            NvmlSettings(node=bad)
