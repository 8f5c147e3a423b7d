"""Every field the Prometheus collector fills, on the real recordings (tests/fixtures/prometheus):
node_exporter's resources (load, memory, swap, CPUs, disks, NICs), its file systems, the whole
dcgm-exporter answer of one GPU, MIG instances, NVLink rates, the follow-up query and the
freshness of each node. The answers to ``rate()``/``increase()``/``timestamp()`` queries cannot
come from one recorded scrape: they are the recorded series' labels with the value Prometheus
would compute, and say so."""

from __future__ import annotations

import pytest
from promtext import family, fixture_samples
from test_prom_field import answer

from hpctui.model import MountState
from hpctui.sources.prometheus.client import Sample
from hpctui.sources.prometheus.parse import MIB, Collector, NodeNamer
from hpctui.sources.prometheus.queries import INFO_METRICS, RESOURCE_GAUGES

RES = "node-exporter_resources_e2e-fixture.prom"
L4 = "dcgm-exporter_metrics_l4_gpu-operator_drv580.105.08_no-xid.prom"
H100 = "dcgm-exporter_metrics_8x-h100_gpu-operator_drv580.105.08_sampled.prom"
MIG = "dcgm-exporter_metrics_a100_mig-1g.5gb_GPU_I_PROFILE.prom"
T4 = "dcgm-exporter_metrics_t4_datadog-counters_no-fb-used-no-temp.prom"
IB = "node-exporter_infiniband_e2e-fixture.prom"
NODE = {"instance": "cpu01:9100"}


def collector() -> Collector:
    return Collector(NodeNamer(["Hostname", "instance"], r"^([^:]+)", r"\1"))


def with_value(s: Sample, value: str, **labels: str) -> Sample:
    """The answer of a function over ``s``'s series: its labels (``__name__`` dropped as PromQL's
    functions do, unless kept by ``by (__name__, …)``), the computed value."""
    metric = {k: v for k, v in s.metric.items() if k != "__name__"} | labels
    return Sample(metric=metric, value=(1_773_114_089.0, value))


def resources_answer(c: Collector, samples: list[Sample]) -> None:
    """What one refresh's resource families return for the recorded node (queries.families)."""
    c.add("res_gauges", "", [s for s in samples if s.metric["__name__"] in RESOURCE_GAUGES])
    idle = family(samples, "node_cpu_seconds_total")
    c.add("res", "cpu_count", [with_value(idle[0], str(len(idle)))])  # count by (instance)
    c.add("res", "cpu_busy", [with_value(idle[0], "12.5")])  # 100 * (1 - avg(rate(idle)))
    c.add("res_dev", "disk_busy", [with_value(s, v) for s, v in zip(  # 100 * rate(io_time), 1 s/s = 100 %
        family(samples, "node_disk_io_time_seconds_total")[:3], ("100.4", "0.5", "37.25"), strict=True)])
    lo = family(samples, "node_network_receive_errs_total")[0]
    c.add("res_dev", "nic_rx", [with_value(lo, "2048.5")])
    c.add("res_dev", "nic_tx", [with_value(lo, "1024.25")])
    c.add("res_dev", "nic_errors", [with_value(lo, "2.6")])  # increase() of rx + tx errors: not whole


def test_node_exporter_resources_fill_every_field() -> None:
    samples = fixture_samples(RES, NODE)
    c = collector()
    resources_answer(c, samples)
    r = c.build_resources()["cpu01"]
    assert (r.node, r.load1, r.load5, r.load15) == ("cpu01", 0.21, 0.37, 0.39)
    assert r.cpu_count == 8 and r.cpu_busy_pct == 12.5
    assert r.mem_total_mib == pytest.approx(3.831959552e9 / MIB) and r.mem_available_mib is None  # (no MemAvailable)
    assert r.swap_total_mib == pytest.approx(4096.0) and r.swap_free_mib == pytest.approx(3.23108864e9 / MIB)
    assert r.disk_busy_pct == {"dm-0": 100.0, "dm-1": 0.5, "dm-2": 37.25}  # rate() jitter past 100 %: clipped
    assert r.nic_rx_bps == {"lo": 2048.5} and r.nic_tx_bps == {"lo": 1024.25} and r.nic_errors == {"lo": 3}
    assert c.warnings() == []


def test_a_newer_kernels_memavailable_and_busy_cpu_clipped_at_100() -> None:
    samples = fixture_samples(RES, NODE)
    (total,) = family(samples, "node_memory_MemTotal_bytes")
    c = collector()
    c.add("res_gauges", "", [total, Sample(metric={**total.metric, "__name__": "node_memory_MemAvailable_bytes"},
                                            value=(1.0, "1073741824"))])
    c.add("res", "cpu_busy", [with_value(total, "100.3")])
    c.add("res", "cpu_busy", [with_value(total, "-0.2", instance="cpu02:9100")])
    out = c.build_resources()
    assert out["cpu01"].mem_available_mib == 1024.0 and out["cpu01"].mem_used_pct == pytest.approx(71.98, abs=0.01)
    assert out["cpu01"].cpu_busy_pct == 100.0 and out["cpu02"].cpu_busy_pct == 0.0
    assert out["cpu02"].load1 is None and out["cpu02"].mem_total_mib is None and out["cpu02"].disk_busy_pct == {}


def test_implausible_resource_values_are_na_and_named_by_their_query() -> None:
    samples = fixture_samples(RES, NODE)
    (load1,) = family(samples, "node_load1")
    c = collector()
    c.add("res_gauges", "", [with_value(load1, "-3", __name__="node_load1"),
                             with_value(load1, "0.5", __name__="node_load5"),
                             with_value(load1, "0.5", __name__="node_boot_time_seconds")])  # not a resource gauge
    c.add("res", "cpu_busy", [with_value(load1, "250")])
    c.add("res", "cpu_count", [with_value(load1, "8"), Sample(metric={"job": "node"}, value=(1.0, "8"))])
    disk = family(samples, "node_disk_io_time_seconds_total")[0]
    c.add("res_dev", "disk_busy", [with_value(disk, "-50"), with_value(disk, "5", device=""),
                                   with_value(disk, "5", instance="")])
    c.add("res_dev", "nic_errors", [with_value(disk, "-1", device="eth0")])
    r = c.build_resources()["cpu01"]
    assert (r.load1, r.load5, r.cpu_busy_pct, r.cpu_count, r.disk_busy_pct, r.nic_errors) == (None, 0.5, None, 8, {}, {})
    line = next(w for w in c.warnings() if "implausible" in w)
    assert line == ("4 implausible value(s) dropped, shown as N/A (node_load1=-3 on cpu01, "
                    "rate(node_cpu_seconds_total)=250 on cpu01, rate(node_disk_io_time_seconds_total)=-50 on cpu01, …)")
    # the unknown gauge, the series without a node and the two without device or node
    assert c.dropped == 4 and "4 series without node/gpu/device labels dropped" in c.warnings()


def test_a_node_without_a_current_node_exporter_sample_is_left_out() -> None:
    samples = fixture_samples(RES, NODE)
    stale = fixture_samples(RES, {"instance": "gone01:9100"})
    c = collector()
    resources_answer(c, samples)
    resources_answer(c, stale)  # rate() over the window still answers for a node that stopped
    (load1,) = family(samples, "node_load1")
    c.add("node_time", "", [with_value(load1, "1773114089"), with_value(load1, "1773114000")])
    assert list(c.build_resources()) == ["cpu01"]
    assert c.node_times() == {"cpu01": 1773114089.0}
    c.add("gpu_time", "", [Sample(metric={"Hostname": "cpu01"}, value=(1.0, "1773110000")),
                           Sample(metric={"Hostname": "gpu01"}, value=(1.0, "1773114080"))])
    # the older of a node's two exporters makes it stale; a GPU-only node has its GPU time
    assert c.node_times() == {"cpu01": 1773110000.0, "gpu01": 1773114080.0}
    c.add("node_time", "", [Sample(metric={"job": "node"}, value=(1.0, "1")),
                            with_value(load1, "1e12", instance="late01:9100")])
    assert c.dropped == 1 and "late01" not in c.node_times()
    assert any("timestamp()=1e+12 on late01" in w for w in c.warnings())


def test_before_node_time_answers_every_node_counts_as_live() -> None:
    c = collector()
    resources_answer(c, fixture_samples(RES, NODE))
    assert list(c.build_resources()) == ["cpu01"] and c.node_times() == {}
    c.add("node_time", "", [])  # answered, nobody current
    assert c.build_resources() == {} and c.build_mounts(["/"]) == {} and c.build_ib() == {}


def test_file_systems_read_size_free_type_and_source() -> None:
    c = collector()
    base = {"instance": "cpu01:9100", "mountpoint": "/home", "device": "nfs01:/export/home", "fstype": "nfs4"}

    def fs(name: str, v: str, **labels: str) -> Sample:
        return Sample(metric={**base, "__name__": name, **labels}, value=(1.0, v))
    c.add("fs", "", [fs("node_filesystem_size_bytes", "1099511627776"), fs("node_filesystem_avail_bytes", "1e11"),
                     fs("node_filesystem_readonly", "0"), fs("node_filesystem_device_error", "0"),
                     fs("node_filesystem_size_bytes", "-1", mountpoint="/scratch", fstype="", device=""),
                     fs("node_filesystem_files", "7", mountpoint="/scratch"),  # not one of FS_GAUGES
                     fs("node_filesystem_readonly", "1", mountpoint=""),
                     fs("node_filesystem_readonly", "1", mountpoint="/stale", instance="gone01:9100")])
    c.add("node_time", "", [Sample(metric={"instance": "cpu01:9100"}, value=(1.0, "1773114089"))])
    out = c.build_mounts(["/home", "/scratch"])
    assert list(out) == ["cpu01"]
    home, scratch = out["cpu01"]
    assert (home.node, home.target, home.fstype, home.source, home.state) == (
        "cpu01", "/home", "nfs4", "nfs01:/export/home", MountState.OK)
    assert home.size_bytes == 1099511627776.0 and home.avail_bytes == 1e11 and home.detail is None
    # a size of -1 is N/A; no fstype/device labels: "?" and no source
    assert (scratch.fstype, scratch.source, scratch.size_bytes, scratch.state) == ("?", None, None, MountState.OK)
    assert c.dropped == 2 and any("node_filesystem_size_bytes=-1 on cpu01" in w for w in c.warnings())


def test_the_whole_answer_of_one_l4_fills_every_field_it_has() -> None:
    c = collector()
    answer(c, fixture_samples(L4))
    (g,) = c.build_gpus()["i-030791dc5a37cd257"]
    assert (g.node, g.index, g.pci_bus_id) == ("i-030791dc5a37cd257", 0, "00000000:31:00.0")
    assert (g.util_pct, g.mem_util_pct, g.temp_c, g.hbm_temp_c, g.sm_clock_mhz) == (0, 0, 31, 0, 210)
    assert (g.memory_used_mib, g.memory_total_mib) == (0, 22563 + 470)
    assert g.power_w == pytest.approx(16.365) and g.power_limit_w is None
    assert (g.pcie_replay_count, g.remapped_correctable, g.remapped_uncorrectable, g.remap_failure) == (0, 0, 0, False)
    # families this exporter does not export: N/A, never 0
    assert (g.remap_pending, g.ecc_corrected_volatile, g.ecc_uncorrected_aggregate, g.last_xid) == (None,) * 4
    assert (g.mig_mode_current, g.throttle_reasons, g.nvlink_bandwidth_rate) == (None, None, None)
    assert g.nvlink_errors == {} and g.retired_pages == {} and g.mig_instances == ()
    assert g.profiling == {"gr_engine_active": 0.0, "pipe_tensor_active": 0.0, "dram_active": 0.0,
                           "pcie_tx_bytes": 112603.0, "pcie_rx_bytes": 17544.0}


def test_error_counters_of_a_faulty_h100_are_read_under_their_names() -> None:
    # the real labels of H100 GPU 3; the counters dcgm-exporter's default-counters.csv exports, as
    # the "!= 0" queries answer them for a GPU with errors (present: the families exist)
    (base,) = [s for s in fixture_samples(H100) if s.metric["__name__"] == "DCGM_FI_DEV_GPU_TEMP"
               and s.metric["gpu"] == "3"]
    values = {"ecc_sbe_vol": "11", "ecc_dbe_vol": "1", "ecc_sbe_agg": "120", "ecc_dbe_agg": "2", "remap_corr": "5",
              "remap_unc": "1", "remap_pending": "1", "retired_sbe": "3", "retired_dbe": "4",
              "retired_pending": "1", "xid": "48", "pcie_replay": "17", "nvl_crc_flit": "6", "nvl_crc_data": "7",
              "nvl_replay": "8", "nvl_recovery": "9", "mig_mode": "0", "power_limit": "700", "throttle": "4"}
    c = collector()
    for fld, v in values.items():
        c.add("gpu", fld, [with_value(base, v)])
    c.add("gpu_rate", "nvl_bw", [with_value(base, "1.5e10")])
    (g,) = c.build_gpus()["gpu-node-1"]
    assert (g.index, g.temp_c) == (3, None)
    assert (g.ecc_corrected_volatile, g.ecc_uncorrected_volatile) == (11, 1)
    assert (g.ecc_corrected_aggregate, g.ecc_uncorrected_aggregate) == (120, 2)
    assert (g.remapped_correctable, g.remapped_uncorrectable, g.remap_pending, g.remap_failure) == (5, 1, True, None)
    assert g.retired_pages == {"sbe": 3, "dbe": 4, "pending": 1}
    assert g.nvlink_errors == {"crc_flit": 6, "crc_data": 7, "replay": 8, "recovery": 9}
    assert (g.last_xid, g.pcie_replay_count, g.mig_mode_current, g.power_limit_w) == (48, 17, False, 700)
    assert g.throttle_reasons == 4 and g.nvlink_bandwidth_rate == 1.5e10


def test_nvlink_rates_complete_gpus_but_never_make_one() -> None:
    samples = fixture_samples(MIG)
    (bw,) = family(samples, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL")
    c = collector()
    c.add("gpu", "temp", family(samples, "DCGM_FI_DEV_GPU_TEMP"))
    c.add("gpu_rate", "nvl_bw", [with_value(bw, "2.5e9"), with_value(bw, "1e9", gpu="1"),  # GPU 1: gone stale
                                 with_value(bw, "-5", Hostname="ub20-a100-k8s-2"), with_value(bw, "1", Hostname="")])
    gpus = c.build_gpus()
    assert list(gpus) == ["ub20-a100-k8s"] and [g.index for g in gpus["ub20-a100-k8s"]] == [0]
    assert gpus["ub20-a100-k8s"][0].nvlink_bandwidth_rate == 2.5e9
    assert c.dropped == 0  # the stale series is not worth a warning; the bad rate is:
    assert c.warnings() == ["1 implausible value(s) dropped, shown as N/A "
                            "(rate(DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL)=-5 on ub20-a100-k8s-2)"]


def test_mig_instances_memory_and_profile() -> None:
    samples = fixture_samples(MIG)
    (xid_gpu, xid_gi) = family(samples, "DCGM_FI_DEV_XID_ERRORS")
    assert "GPU_I_ID" in xid_gi.metric and "GPU_I_ID" not in xid_gpu.metric
    c = collector()
    c.add("gpu", "fb_used", [with_value(xid_gi, "1200"), with_value(xid_gi, "300", GPU_I_ID="5")])
    c.add("gpu", "fb_free", [with_value(xid_gi, "3600"), with_value(xid_gi, "4500", GPU_I_ID="5")])
    c.add("gpu_info", "", [xid_gi, with_value(xid_gi, "1", GPU_I_ID="5", GPU_I_PROFILE="")])
    c.add("gpu_prof", "", [with_value(xid_gi, "0.25", __name__="DCGM_FI_PROF_GR_ENGINE_ACTIVE")])
    (g,) = c.build_gpus()["ub20-a100-k8s"]
    a, b = g.mig_instances
    assert (a.gi_id, a.profile, a.memory_used_mib, a.memory_total_mib, a.engine_active) == (5, "?", 300, 4800, None)
    assert (b.gi_id, b.profile, b.memory_used_mib, b.memory_total_mib, b.engine_active) == (13, "1g.5gb", 1200, 4800, 0.25)
    # no whole-GPU memory series: the instances' sum; no whole-GPU UUID series: the first instance's
    assert (g.memory_used_mib, g.memory_total_mib, g.mig_mode_current) == (1500, 9600, True)
    assert g.uuid == xid_gi.metric["UUID"] and g.util_pct is None and g.mem_util_pct is None


def test_a_mig_gpu_with_whole_gpu_memory_keeps_it_and_one_unknown_instance_blanks_the_sum() -> None:
    samples = fixture_samples(MIG)
    c = collector()
    for fld, metric in (("fb_used", "DCGM_FI_DEV_FB_USED"), ("fb_free", "DCGM_FI_DEV_FB_FREE")):
        c.add("gpu", fld, family(samples, metric))
    gi = family(samples, "DCGM_FI_DEV_XID_ERRORS")[1]
    c.add("gpu", "xid", [gi])
    (g,) = c.build_gpus()["ub20-a100-k8s"]
    (used,), (free,) = family(samples, "DCGM_FI_DEV_FB_USED"), family(samples, "DCGM_FI_DEV_FB_FREE")
    assert g.memory_used_mib == float(used.value[1]) and g.memory_total_mib == float(used.value[1]) + float(free.value[1])  # type: ignore[index]
    assert g.mig_instances[0].memory_total_mib is None
    c = collector()
    c.add("gpu", "xid", [gi])
    (g,) = c.build_gpus()["ub20-a100-k8s"]
    assert (g.memory_used_mib, g.memory_total_mib) == (None, None)  # instances without memory: N/A, not 0


def test_profiling_fields_and_their_bounds() -> None:
    samples = fixture_samples(L4)
    prof = [s for s in samples if s.metric["__name__"].startswith("DCGM_FI_PROF_")]
    c = collector()
    c.add("gpu_prof", "", [*prof, with_value(prof[0], "0.5", __name__="DCGM_FI_PROF_GR_ENGINE_ACTIVE"),  # repeat
                           with_value(prof[0], "2e13", __name__="DCGM_FI_PROF_NVLINK_TX_BYTES"),
                           with_value(prof[0], "3", __name__="DCGM_FI_PROF_SM_ACTIVE"),
                           with_value(prof[0], "5e12", __name__="DCGM_FI_PROF_NVLINK_RX_BYTES"),
                           with_value(prof[0], "0.5", __name__="DCGM_FI_DEV_GPU_UTIL")])  # not a PROF family
    (g,) = c.build_gpus()["i-030791dc5a37cd257"]
    assert g.profiling == {"gr_engine_active": 0.0, "pipe_tensor_active": 0.0, "dram_active": 0.0,
                           "pcie_tx_bytes": 112603.0, "pcie_rx_bytes": 17544.0, "nvlink_rx_bytes": 5e12}
    assert c.duplicates == 1
    assert c.warnings()[-1] == ("2 implausible value(s) dropped, shown as N/A (DCGM_FI_PROF_NVLINK_TX_BYTES=2e+13 on "
                                "i-030791dc5a37cd257, DCGM_FI_PROF_SM_ACTIVE=3 on i-030791dc5a37cd257)")


def test_followup_names_a_family_each_gpu_without_identity_or_time_answered_in() -> None:
    t4 = fixture_samples(T4)
    c = collector()
    answer(c, t4, time_answered=False)
    c.add("gpu_time", "", [])
    assert c.followup_metrics() == ["DCGM_FI_DEV_FB_RESERVED"]  # the first gauge it answered in
    l4 = fixture_samples(L4)
    only_prof = collector()
    only_prof.add("gpu_prof", "", [s for s in l4 if s.metric["__name__"] == "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"])
    assert only_prof.followup_metrics() == ["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"]
    known = collector()  # identity known, but no sample time once gpu_time answered: the info families
    known.add("gpu_info", "", family(l4, "DCGM_FI_DEV_GPU_TEMP"))
    assert known.followup_metrics() == []
    known.add("gpu_time", "", [])
    assert known.followup_metrics() == sorted(INFO_METRICS)
    known.add("gpu_time", "", [with_value(family(l4, "DCGM_FI_DEV_GPU_TEMP")[0], "1773114089")])
    assert known.followup_metrics() == []


def test_the_followup_answer_gives_identity_and_time_only_where_missing() -> None:
    l4 = fixture_samples(L4)
    (temp,) = family(l4, "DCGM_FI_DEV_GPU_TEMP")
    c = collector()
    c.add("gpu", "power", family(l4, "DCGM_FI_DEV_POWER_USAGE"))
    c.add("gpu_time", "", [Sample(metric={"Hostname": "other"}, value=(1.0, "1773110000"))])
    c.add("gpu_ident", "", [with_value(temp, "1773114089"), with_value(temp, "1773114099", gpu="x"),
                            with_value(temp, "1e12", Hostname="bad-time", UUID="GPU-b"),
                            with_value(temp, "1773114000", Hostname="other", UUID="GPU-o")])
    (g,) = c.build_gpus()["i-030791dc5a37cd257"]
    assert g.uuid == temp.metric["UUID"] and g.model == "NVIDIA L4"
    # the newest sample per node where the refresh gave none; "other" keeps its own
    assert c.gpu_time == {"other": 1773110000.0, "i-030791dc5a37cd257": 1773114099.0}
    assert c.dropped == 1  # the series with gpu="x": no GPU to give the identity to
    assert any("timestamp()=1e+12 on bad-time" in w for w in c.warnings())


def test_infiniband_unknown_state_numbers_rates_and_data_counters() -> None:
    samples = fixture_samples(IB, {"instance": "ibnode:9100"})
    state = next(s for s in family(samples, "node_infiniband_state_id") if s.metric["device"] == "mlx4_0"
                 and s.metric["port"] == "1")
    c = collector()
    c.add("ib", "state", [with_value(state, "7"), with_value(state, "4", port="x")])
    c.add("ib", "phys", [with_value(state, "9")])
    c.add("ib", "rate", [with_value(state, "312500000"),  # 2.5 Gb/s: trained down to 1x SDR
                          with_value(state, "3", device="mlx5_9")])
    c.add("ib", "state", [with_value(state, "-1", device="mlx5_9")])
    data = [s for s in samples if s.metric["__name__"] in ("node_infiniband_port_data_received_bytes_total",
                                                           "node_infiniband_port_data_transmitted_bytes_total")
            and s.metric["device"] == state.metric["device"] and s.metric["port"] == state.metric["port"]]
    c.add("ib_counters", "", [*data, data[0], with_value(data[0], "1", __name__="node_infiniband_info")])
    ports = {(p.device, p.port): p for p in c.build_ib()["ibnode"]}
    p = ports[(state.metric["device"], int(state.metric["port"]))]
    assert (p.node, p.state, p.phys_state, p.rate_gbps) == ("ibnode", "7", "9", 2.5)
    rx = next(float(s.value[1]) for s in data if "received" in s.metric["__name__"])  # type: ignore[index]
    tx = next(float(s.value[1]) for s in data if "transmitted" in s.metric["__name__"])  # type: ignore[index]
    assert p.counters == {"port_rcv_data": int(rx) // 4, "port_xmit_data": int(tx) // 4}
    assert list(ports) == [(state.metric["device"], int(state.metric["port"]))]  # mlx5_9: rate and state implausible
    assert c.duplicates == 1 and c.dropped == 1
    line = next(w for w in c.warnings() if "implausible" in w)
    assert "node_infiniband_rate_bytes_per_second=3 on ibnode" in line and "node_infiniband_state_id=-1 on ibnode" in line
