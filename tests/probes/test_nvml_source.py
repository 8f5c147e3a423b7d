"""The local NVML source against a stand-in pynvml (no GPU on this machine; see fake_pynvml.py),
plus the real pynvml's behaviour here: no NVIDIA driver, so collect fails with NVML's own message."""

from __future__ import annotations

import getpass
import importlib.util

import pytest
from fake_pynvml import new_module

from hpctui.core.config import ConfigError, parse_config, source_settings
from hpctui.sources.base import SourceError
from hpctui.sources.nvml.settings import NvmlSettings
from hpctui.sources.nvml.source import NvmlSource
from hpctui.sources.registry import PLANNED_SOURCE_KINDS, SOURCE_KINDS, build_source


async def test_gpus_mig_nvlink_processes_and_lost_gpu():
    m = new_module()
    src = NvmlSource(NvmlSettings(node="gpuhost"), nvml=m)
    result = await src.collect()
    assert result.source == "nvml" and result.probes["gpuhost"].reachable
    g0, g1, g2 = result.gpus["gpuhost"]
    assert g0.model == "NVIDIA H100 80GB HBM3" and g0.pci_bus_id == "00000000:00:09.0"
    assert (g0.util_pct, g0.mem_util_pct, g0.memory_used_mib, g0.memory_total_mib) == (100.0, 11.0, 19818.0, 81559.0)
    assert (g0.temp_c, g0.hbm_temp_c, g0.power_w, g0.power_limit_w, g0.sm_clock_mhz) == (59.0, 54.0, 631.95, 700.0,
                                                                                          1980.0)
    assert g0.pcie_gen_current == 5 and g0.pcie_width_max == 16 and g0.persistence_mode is True
    assert g0.throttle_reasons == 0 and g0.remap_pending is False and g0.ecc_uncorrected_volatile == 0
    assert len(g0.nvlinks) == 18 and all(link.up for link in g0.nvlinks)
    (p,) = g0.processes
    assert p.gpu_index == 0 and p.used_memory_mib == 2566.0 and p.user == getpass.getuser()
    assert p.command and "py" in p.command
    # MIG on: utilisation and NVLink "not supported" are not available, never 0.
    assert g1.mig_mode_current is True and g1.util_pct is None and g1.hbm_temp_c is None and g1.nvlinks == ()
    assert g1.remapped_correctable is None
    assert [(i.profile, i.gi_id, i.ci_id, i.memory_total_mib) for i in g1.mig_instances] == [
        ("3g.40gb", 2, 0, 40192.0), ("2g.20gb", 3, 0, 19968.0), ("1g.10gb", 9, 0, 9856.0), ("1g.10gb", 10, 0, 9856.0)]
    # Fallen off the bus: marked lost, everything else N/A.
    assert g2.lost and g2.uuid is None and g2.temp_c is None and g2.util_pct is None
    await src.close()
    assert not m.state.inited


async def test_xid_events_once_and_nvlink_deltas():
    m = new_module()
    src = NvmlSource(NvmlSettings(node="gpuhost"), nvml=m)
    first = await src.collect()
    assert first.events == ()
    m.state.events.append((0, 79))
    m.gpus[0].crc[0] = 4
    second = await src.collect()
    (ev,) = second.events
    assert ev.object == "gpu/gpuhost/0" and "Xid 79" in ev.message and "fallen off the bus" in ev.message
    g0 = second.gpus["gpuhost"][0]
    assert g0.last_xid == 79 and g0.xid_events[0].pci_bus_id == "00000000:00:09.0"
    assert g0.nvlinks[0].crc_errors == 4 and g0.nvlinks[0].deltas == {"crc": 4}
    third = await src.collect()
    assert third.events == () and third.gpus["gpuhost"][0].last_xid == 79


async def test_missing_binding_function_falls_back_or_is_none():
    m = new_module(nvmlDeviceGetCurrentClocksEventReasons=None, nvmlDeviceGetRemappedRows=None)
    result = await NvmlSource(NvmlSettings(node="h"), nvml=m).collect()
    g0 = result.gpus["h"][0]
    assert g0.throttle_reasons == 0x1  # the older ...ThrottleReasons name
    assert g0.remapped_correctable is None and g0.remap_failure is None


async def test_init_failure_is_a_source_error():
    m = new_module()
    m.state.init_error = 9
    with pytest.raises(SourceError, match="Driver Not Loaded"):
        await NvmlSource(NvmlSettings(node="h"), nvml=m).collect()


@pytest.mark.skipif(importlib.util.find_spec("pynvml") is None, reason="nvidia-ml-py not installed")
async def test_real_pynvml_without_a_driver_fails_cleanly():
    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("an NVIDIA driver is present here: this test is for hosts without one")
    with pytest.raises(SourceError, match="NVML"):
        await NvmlSource(NvmlSettings(node="h")).collect()


def test_nvml_is_a_registered_kind_with_validated_settings():
    assert "nvml" in SOURCE_KINDS and "nvml" not in PLANNED_SOURCE_KINDS
    config = parse_config({"clusters": {"here": {"sources": [{"kind": "nvml", "node": "gpu01", "interval_s": 1}]}}})
    settings = source_settings(config, "here", 0)
    assert isinstance(settings, NvmlSettings) and settings.node == "gpu01"
    source = build_source(settings)
    assert source.kind == "nvml" and source.name == "nvml" and source.interval_s == 1
    with pytest.raises(ConfigError, match="nvidia_smi"):
        source_settings(parse_config({"clusters": {"here": {"sources": [{"kind": "nvml", "nvidia_smi": 1}]}}}),
                        "here", 0)


async def test_fabric_state_through_nvml():
    """nvmlDeviceGetGpuFabricInfoV: Completed + success is healthy; a stuck or failed registration is read
    as nvidia-smi names it; NOT_SUPPORTED (no NVLink fabric) is N/A, not a state."""
    from hpctui.findings.health import Thresholds, gpu_findings

    m = new_module()
    m.gpus[0].fabric = (3, 0)
    m.gpus[1].fabric = None
    src = NvmlSource(NvmlSettings(node="gpuhost"), nvml=m)
    g0, g1, _ = (await src.collect()).gpus["gpuhost"]
    assert (g0.fabric_state, g0.fabric_status) == ("Completed", "Success") and not g0.fabric_failed
    assert g1.fabric_state is None
    m.gpus[0].fabric = (2, 0)  # NVML_GPU_FABRIC_STATE_IN_PROGRESS
    m.gpus[1].fabric = (3, 23)  # Completed with NVML_ERROR_INSUFFICIENT_RESOURCES
    g0, g1, _ = (await src.collect()).gpus["gpuhost"]
    assert (g0.fabric_state, g0.fabric_status) == ("In Progress", None)
    assert (g1.fabric_state, g1.fabric_status) == ("Completed", "Insufficient Resources")
    assert all(any(f.code == "fabric" for f in gpu_findings(g, Thresholds())) for g in (g0, g1))
    await src.close()
