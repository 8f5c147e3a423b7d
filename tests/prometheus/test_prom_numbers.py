"""Hostile numbers and node names from Prometheus (issue #19 item 4): one bad value costs one
value (N/A plus one warning naming the metric), a bad node name costs its series, and a sample
of 1e308 neither crashes ``hpctui snapshot`` nor blanks the source."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from fakeprom import FakeProm

from hpctui.core.series_history import SeriesHistory, link_error_delta
from hpctui.model import IbPort
from hpctui.model.validate import DCGM_FP64_BLANK, DCGM_INT32_BLANK, DCGM_INT64_BLANK
from hpctui.sources.prometheus.client import Sample
from hpctui.sources.prometheus.parse import Collector, NodeNamer

HUGE = "1" + "0" * 300  # a 301-digit number


def sample(node: str, value: str, gpu: str = "0", **labels: str) -> Sample:
    return Sample(metric={"Hostname": node, "gpu": gpu, **labels}, value=(1.0, value))


def collector() -> Collector:
    return Collector(NodeNamer(["Hostname", "instance"], r"^([^:]+)", r"\1"))


def test_hostile_gpu_values_are_na_with_one_warning_and_the_others_intact() -> None:
    c = collector()
    c.add("gpu", "temp", [sample("gpu0003", "1e308"), sample("gpu0004", "61")])
    c.add("gpu", "power", [sample("gpu0003", "300.5"), sample("gpu0004", str(float(DCGM_INT64_BLANK)))])
    c.add("gpu", "hbm_temp", [sample("gpu0003", str(DCGM_FP64_BLANK)), sample("gpu0004", "-41")])
    c.add("gpu", "util", [sample("gpu0003", "NaN"), sample("gpu0004", "101")])
    c.add("gpu", "sm_clock", [sample("gpu0003", "+Inf"), sample("gpu0004", "1980")])
    c.add("gpu", "fb_used", [sample("gpu0003", HUGE), sample("gpu0004", "1024")])
    c.add("gpu", "ecc_dbe_vol", [sample("gpu0003", "-1"), sample("gpu0004", str(DCGM_INT32_BLANK + 2))])
    c.add("gpu", "ecc_sbe_vol", [sample("gpu0003", "7"), sample("gpu0004", "9.3e18")])
    c.add("gpu", "xid", [sample("gpu0003", "-1"), sample("gpu0004", "79")])
    c.add("gpu_prof", "", [sample("gpu0003", "1.5", __name__="DCGM_FI_PROF_SM_ACTIVE"),
                           sample("gpu0004", "0.25", __name__="DCGM_FI_PROF_SM_ACTIVE")])
    gpus = c.build_gpus()
    (a,), (b,) = gpus["gpu0003"], gpus["gpu0004"]
    assert (a.temp_c, a.hbm_temp_c, a.util_pct, a.sm_clock_mhz, a.memory_used_mib) == (None,) * 5
    assert (a.ecc_uncorrected_volatile, a.last_xid, a.profiling) == (None, None, {})
    assert a.power_w == 300.5 and a.ecc_corrected_volatile == 7  # the other values of that GPU are intact
    assert (b.power_w, b.hbm_temp_c, b.util_pct, b.ecc_uncorrected_volatile, b.ecc_corrected_volatile) == (None,) * 5
    assert (b.temp_c, b.sm_clock_mhz, b.memory_used_mib, b.last_xid, b.profiling) == (61, 1980, 1024, 79,
                                                                                      {"sm_active": 0.25})
    (line,) = [w for w in c.warnings() if "implausible" in w]
    assert line.startswith("11 implausible value(s) dropped, shown as N/A (DCGM_FI_DEV_GPU_TEMP=1e+308 on gpu0003, ")
    assert "DCGM_FI_DEV_POWER_USAGE=9.22337e+18 on gpu0004" in line and line.endswith(", …)")
    assert c.not_numbers == 2  # NaN and +Inf: counted apart, as before


def test_counter_placeholders_and_a_300_digit_number_name_the_metric_shortly() -> None:
    c = collector()
    c.add("gpu", "ecc_dbe_agg", [sample("n1", HUGE)])
    (line,) = c.warnings()
    assert line == "1 implausible value(s) dropped, shown as N/A (DCGM_FI_DEV_ECC_DBE_AGG_TOTAL=1e+300 on n1)"


def test_node_name_that_slurm_would_refuse_drops_its_series_with_a_warning() -> None:
    c = collector()
    c.add("gpu", "temp", [sample("[bold red]x", "50"), sample("gpu01", "50"), sample("-oProxyCommand=x", "50")])
    c.add("res", "load1", [Sample(metric={"instance": "[bold red]x:9100"}, value=(1.0, "1"))])
    assert sorted(c.build_gpus()) == ["gpu01"] and not c.build_resources()
    (line,) = c.warnings()
    assert line == "3 record(s) with an invalid node name dropped ('[bold red]x', '-oProxyCommand=x', '[bold red]x')"


def test_ib_rates_state_ids_and_counters_are_checked() -> None:
    c = collector()
    port = {"device": "mlx5_0", "port": "1"}
    c.add("ib", "rate", [sample("n1", "50000000000", **port), sample("n2", "1e308", **port)])  # 400 Gb/s; absurd
    c.add("ib", "state", [sample("n1", "4", **port), sample("n2", "-1", **port)])
    c.add("ib_delta", "link_downed", [sample("n1", "1e308", **port), sample("n2", "2", **port)])
    c.add("ib_counters", "", [sample("n1", "-5", __name__="node_infiniband_link_downed_total", **port),
                              sample("n2", "3", __name__="node_infiniband_link_downed_total", **port)])
    ports = c.build_ib()
    (p1,), (p2,) = ports["n1"], ports["n2"]
    assert (p1.rate_gbps, p1.state, p2.rate_gbps, p2.state) == (400.0, "ACTIVE", None, None)
    assert "link_downed" not in p1.deltas and p2.deltas["link_downed"] == 2
    assert "link_downed" not in p1.counters and p2.counters["link_downed"] == 3
    (line,) = c.warnings()
    assert line.startswith("4 implausible value(s) dropped, shown as N/A (node_infiniband_rate_bytes_per_second=1e+308 on n2")


def test_gpu_history_never_raises_on_forged_readings() -> None:
    huge = {"symbol_error": 10**308, "link_downed": 10**308, "port_rcv_errors": -1}
    port = IbPort(node="n1", device="mlx5_0", port=1, counters={"port_rcv_data": 10**400, "port_xmit_data": 5},
                  deltas=huge)
    assert link_error_delta(port) == 0.0  # forged deltas count as no increase, never OverflowError
    h = SeriesHistory()
    h.add_ib(1.0, {"n1": [port]})
    h.add_ib(2.0, {"n1": [port]})
    (series,) = h.port_series("n1", "rx", 60, 2.0)
    assert series.values == []  # no rate from a counter beyond 2**63


async def test_snapshot_with_1e308_samples_prints_no_traceback_and_keeps_the_source(tmp_path: Path) -> None:
    """End to end through ``hpctui snapshot``: GPU temperature 1e308 on every node and IB error
    increases of 1e308 (six of them summed overflowed a float in gpu_history.link_error_delta)."""
    fake = FakeProm(nodes=["gpu0001", "gpu0002"])
    fake.values["DCGM_FI_DEV_GPU_TEMP"] = "1e308"
    port = {"instance": "gpu0001:9100", "device": "mlx5_0", "port": "1"}
    fake.series += [("node_infiniband_state_id", port, "4"),  # a valid state: the port exists
                    ("node_infiniband", {**port, "__name__": "node_infiniband_link_downed_total"}, "1e308"),
                    ("timestamp(node_load1", {"instance": "gpu0001:9100"}, "now")]
    await fake.start()
    try:
        config = tmp_path / "prom.toml"
        config.write_text(f'[clusters.c]\n[[clusters.c.sources]]\nkind = "prometheus"\nurl = "{fake.url}"\n'
                          'resources = false\n')
        env = {**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"),
               "XDG_CONFIG_HOME": str(tmp_path / "config")}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "hpctui", "snapshot", "--config", str(config), "--format", "json",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
        out, err = await asyncio.wait_for(proc.communicate(), 120)
    finally:
        await fake.stop()
    assert "Traceback" not in err.decode() and proc.returncode == 0, err.decode()[-2000:]
    data = json.loads(out)
    health = data["sources"]["prometheus"]
    assert health["last_error"] is None
    (line,) = [w for w in health["warnings"] if "implausible" in w]
    assert "DCGM_FI_DEV_GPU_TEMP=1e+308 on gpu0001" in line
    gpu = data["gpus"]["gpu0001"][0]
    assert gpu["temp_c"] is None and gpu["power_w"] == 50  # N/A, and the rest of the GPU intact
    (ib,) = data["ib"]["gpu0001"]
    assert ib["state"] == "ACTIVE" and ib["rate_gbps"] is None and ib["deltas"].get("link_downed", 0) == 0
