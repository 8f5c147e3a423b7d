"""Model semantics: not-available is None, derived Slurm states, hostlists."""

from __future__ import annotations

import msgspec
import pytest

from hpctui.model import Gpu, IbPort, SlurmJob, SlurmNodeInfo, ThrottleReason, fmt_na, slurm_display_state
from hpctui.model.hostlist import HostlistError, collect, expand, expand_each, is_valid_hostname


@pytest.mark.parametrize(
    ("base", "flags", "expected"),
    [
        ("MIXED", {"DRAIN"}, "DRAINING"),
        ("ALLOCATED", {"DRAIN"}, "DRAINING"),
        ("IDLE", {"DRAIN"}, "DRAINED"),
        ("IDLE", {"DRAIN", "COMPLETING"}, "DRAINING+COMPLETING"),
        ("DOWN", {"DRAIN", "NOT_RESPONDING"}, "DRAINED+NOT_RESPONDING"),
        ("IDLE", set(), "IDLE"),
        ("ALLOCATED", {"FAIL"}, "FAILING"),
        ("idle", {"REBOOT_REQUESTED"}, "IDLE+REBOOT_REQUESTED"),
    ],
)
def test_drain_is_derived_from_base_state(base: str, flags: set[str], expected: str) -> None:
    assert slurm_display_state(base, frozenset(flags)) == expected
    assert SlurmNodeInfo(base_state=base, flags=frozenset(flags)).display_state == expected


def test_unavailable_gpu_values_are_none_not_zero() -> None:
    gpu = Gpu(node="n1", index=0)
    assert gpu.util_pct is None and gpu.temp_c is None and gpu.memory_pct is None
    assert fmt_na(gpu.util_pct, "{:.0f}%") == "N/A"
    assert fmt_na(0.0, "{:.0f}%") == "0%"
    encoded = msgspec.json.decode(msgspec.json.encode(gpu))
    assert encoded["util_pct"] is None


def test_gpu_derived_properties() -> None:
    gpu = Gpu(node="n1", index=3, memory_used_mib=40779.5, memory_total_mib=81559,
              throttle_reasons=int(ThrottleReason.HW_THERMAL_SLOWDOWN | ThrottleReason.SW_POWER_CAP))
    assert gpu.memory_pct == pytest.approx(50.0)
    assert gpu.thermal_throttled
    assert set(gpu.throttle_names()) == {"HW_THERMAL_SLOWDOWN", "SW_POWER_CAP"}
    assert not Gpu(node="n1", index=0, throttle_reasons=int(ThrottleReason.SW_POWER_CAP)).thermal_throttled


def test_ib_port_degraded_and_flapping() -> None:
    port = IbPort(node="n1", device="mlx5_0", port=1, state="ACTIVE", phys_state="LinkUp",
                  rate_gbps=200, max_rate_gbps=400, deltas={"link_downed": 2, "port_xmit_wait": 50})
    assert port.degraded_rate and port.link_errors_rising and port.is_up
    quiet = IbPort(node="n1", device="mlx5_0", port=1, rate_gbps=400, max_rate_gbps=400, deltas={"port_xmit_wait": 9})
    assert not quiet.degraded_rate and not quiet.link_errors_rising


def test_array_job_display_ids() -> None:
    assert SlurmJob(job_id=101, array_job_id=100, array_task_id=1).display_id == "100_1"
    assert SlurmJob(job_id=100, array_job_id=100, array_task_str="4-9%2").display_id == "100_[4-9%2]"
    assert SlurmJob(job_id=7).display_id == "7"


def test_hostlist_round_trip() -> None:
    names = expand("gpu[01-03,07],cpu[1-2]")
    assert names == ["gpu01", "gpu02", "gpu03", "gpu07", "cpu1", "cpu2"]
    assert collect(["gpu01", "gpu02", "gpu03"]) == "gpu[01-03]"
    assert collect(["gpu[/]x", "gpu02"]) == "gpu[/]x,gpu02"  # names hostlist refuses: listed, never a crash
    assert expand("rack[1-2]-node[01-02]") == ["rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"]
    assert expand("") == [] and expand("(null)") == []


@pytest.mark.parametrize("bad", ["gpu[01-", "gpu[3-1]", "bad name", "gpu;rm -rf /", "-x"])
def test_hostlist_rejects_garbage_and_non_hostnames(bad: str) -> None:
    with pytest.raises(HostlistError):
        expand(bad)


def test_hostname_validation() -> None:
    assert is_valid_hostname("gpu-01.cluster.local")
    assert not is_valid_hostname("gpu_01$(reboot)")
    assert not is_valid_hostname("a" * 64)


def test_expand_each_keeps_the_good_hostlists_and_names_the_bad() -> None:
    names, errors = expand_each(["gpu[01-02]", "gpu[3-", "cpu1"])
    assert names == ["gpu01", "gpu02", "cpu1"]
    assert len(errors) == 1 and "gpu[3-" in errors[0]
