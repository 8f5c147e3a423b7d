"""dcgm-exporter and node_exporter as sites run them (issue #21 item 3), on real recordings
(tests/fixtures/prometheus/README.md): a counters file without XID_ERRORS or FB_USED/GPU_TEMP,
1.x metric names, DCGM's INT64 blank, HCA ports without (some) PMA counters.

Each answer is what Prometheus would return for the recorded exposition: the samples of the
families a refresh asks for (``answer``), keyed as the Collector's handlers expect."""

from __future__ import annotations

import pytest
from promtext import fixture_samples

from hpctui.sources.prometheus.client import Sample
from hpctui.sources.prometheus.parse import Collector, NodeNamer
from hpctui.sources.prometheus.queries import (
    GPU_GAUGES,
    GPU_SPARSE,
    IB_ERROR_COUNTERS,
    INFO_METRICS,
    THROTTLE_NAMES,
    V1_NAMES,
    identity_family,
)
from hpctui.sources.prometheus.settings import PrometheusSettings

L4_NO_XID = "dcgm-exporter_metrics_l4_gpu-operator_drv580.105.08_no-xid.prom"
T4_TRIMMED = "dcgm-exporter_metrics_t4_datadog-counters_no-fb-used-no-temp.prom"
V1_TEXTFILE = "dcgm-exporter-1.x_metrics_textfile_dcgm_gpu_temp.prom"
V1_PODS = "pod-gpu-metrics-exporter-1.x_metrics_pod_name.prom"
BLANK = "dcgm-exporter-2.0_metrics_memory_temp_int64_blank.prom"
IB = "node-exporter_infiniband_e2e-fixture.prom"


def collector() -> Collector:
    return Collector(NodeNamer(["Hostname", "instance"], r"^([^:]+)", r"\1"))


def names(metric: str) -> set[str]:
    return {metric, V1_NAMES.get(metric, metric)}


def answer(c: Collector, samples: list[Sample], time_answered: bool = True) -> None:
    """Fold ``samples`` as one refresh's instant queries would return them (sparse families:
    non-zero only; ``present``: the families that exist; gpu_time: the sample time of
    XID_ERRORS, FB_USED and GPU_TEMP)."""
    def of(wanted: set[str]) -> list[Sample]:
        return [s for s in samples if s.metric["__name__"] in wanted]

    for field, metric in GPU_GAUGES:
        c.add("gpu", field, of(names(metric)))
    for field, metric in GPU_SPARSE:
        c.add("gpu", field, [s for s in of(names(metric)) if s.value[1] != "0"])  # type: ignore[index]
    sparse = {n for _, m in GPU_SPARSE for n in names(m)}
    c.add("present", "", [Sample(metric={"__name__": n}, value=(1.0, "1")) for n in sorted(sparse)
                          if any(s.metric["__name__"] == n for s in samples)])
    c.add("gpu", "throttle", of(set(THROTTLE_NAMES.split("|"))))
    c.add("gpu_prof", "", [s for s in samples if s.metric["__name__"].upper().startswith("DCGM_FI_PROF_")])
    c.add("gpu_info", "", of({n for m in INFO_METRICS for n in names(m)}))
    if time_answered:  # (the real query takes the max per node; the handler does too)
        c.add("gpu_time", "", [Sample(metric=s.metric, value=(1.0, "1773114089"))
                               for m in ("DCGM_FI_DEV_XID_ERRORS", *INFO_METRICS) for s in of(names(m))])


def followup(c: Collector, samples: list[Sample]) -> None:
    """The follow-up query the source sends when ``followup_metrics()`` names families."""
    wanted = {n for m in c.followup_metrics() for n in names(m)}
    c.add("gpu_ident", "", [Sample(metric=s.metric, value=(1.0, "1773114089")) for s in samples
                            if s.metric["__name__"] in wanted])


def test_a_gpu_operator_exporter_without_xid_errors_keeps_its_gpu() -> None:
    # the real /metrics of an L4 under the GPU Operator (driver 580.105.08) has no XID_ERRORS
    samples = fixture_samples(L4_NO_XID)
    assert not [s for s in samples if "XID" in s.metric["__name__"]]
    c = collector()
    answer(c, samples)
    (gpu,) = c.build_gpus()["i-030791dc5a37cd257"]
    assert gpu.uuid == "GPU-c2f76b33-7953-256e-8f33-1343419b1a1c" and gpu.model == "NVIDIA L4"
    assert gpu.temp_c == 31 and gpu.power_w == pytest.approx(16.365) and gpu.memory_total_mib == 22563 + 470
    assert gpu.remapped_uncorrectable == 0 and gpu.last_xid is None  # XID: N/A (not exported), not a fault
    assert gpu.ecc_uncorrected_volatile is None  # the family is not in this counters file: N/A, not 0
    # (current exporters omit XID_ERRORS on a GPU that never had one): the sample time comes from
    # the identity families, no follow-up query
    assert c.gpu_time == {"i-030791dc5a37cd257": 1773114089.0} and not c.followup_metrics()


def test_identity_comes_from_whatever_series_the_exporter_has() -> None:
    # a counters file (Datadog's recommended one) without FB_USED and GPU_TEMP: every series
    # still carries UUID and modelName
    samples = fixture_samples(T4_TRIMMED)
    c = collector()
    answer(c, samples)
    (gpu,) = c.build_gpus()["551bdf382151"]
    assert gpu.uuid is None and not c.gpu_time  # what a refresh without the follow-up knows
    assert c.followup_metrics() == ["DCGM_FI_DEV_FB_RESERVED"]
    followup(c, samples)
    (gpu,) = c.build_gpus()["551bdf382151"]
    assert gpu.uuid == "GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5" and gpu.model == "Tesla T4"
    assert gpu.power_limit_w == 70.0 and gpu.throttle_reasons == 1 and gpu.temp_c is None
    assert c.gpu_time == {"551bdf382151": 1773114089.0} and not c.followup_metrics()


def test_the_followup_query_names_the_families_under_both_names() -> None:
    fam = identity_family(PrometheusSettings(dcgm_selector='job="dcgm"'), ["DCGM_FI_DEV_GPU_UTIL"])
    assert fam.target == "gpu_ident"
    assert ('timestamp(DCGM_FI_DEV_GPU_UTIL{job="dcgm"}) or timestamp(dcgm_gpu_utilization{job="dcgm"})'
            in fam.expr)
    assert "UUID, uuid," in fam.expr and fam.expr.startswith("max by (Hostname, hostname, instance, gpu, GPU_I_ID, ")


def test_dcgm_exporter_1x_names_are_read() -> None:
    # dcgm-exporter 1.x through node_exporter's textfile collector: dcgm_* names, a lowercase
    # uuid label, the node from node_exporter's instance
    samples = fixture_samples(V1_TEXTFILE, {"instance": "dgx01:9100"})
    c = collector()
    answer(c, samples)
    (gpu,) = c.build_gpus()["dgx01"]
    assert gpu.uuid == "GPU-8f640a3c-7e9a-608d-02a3-f4372d72b323"
    assert (gpu.temp_c, gpu.util_pct, gpu.power_w, gpu.sm_clock_mhz, gpu.last_xid) == (34, 0, 31.737, 135, None)
    assert c.gpu_time == {"dgx01": 1773114089.0}  # dcgm_xid_errors gives the sample time


def test_dcgm_exporter_1x_pod_labels_attribute_the_gpus() -> None:
    samples = fixture_samples(V1_PODS, {"instance": "gpu07:9400"})
    c = collector()
    answer(c, samples)
    assert not c.followup_metrics()  # identity and time came with dcgm_gpu_temp
    followup(c, samples)
    gpus = c.build_gpus()["gpu07"]
    assert [g.uuid for g in gpus] == ["GPU-2b399198-c670-a848-173b-d3400051a200", "GPU-9567a9e7-341e-bb7e-fcf5-788d8caa50f9"]
    assert [g.temp_c for g in gpus] == [33, 34]
    assert all([(p.pod, p.container) for p in g.processes] == [("default/pod1", "pod1-ctr")] for g in gpus)


def test_an_int64_blank_is_na_with_the_warning_and_never_0() -> None:
    # dcgm-exporter 2.0's README: MEMORY_TEMP 9223372036854775794 (DCGM_INT64_BLANK + 2, "not supported")
    samples = fixture_samples(BLANK, {"instance": "gpu01:9400"})
    c = collector()
    answer(c, samples, time_answered=False)  # (no XID_ERRORS here: presence is the test above)
    (gpu,) = c.build_gpus()["gpu01"]
    assert gpu.hbm_temp_c is None and gpu.sm_clock_mhz == 139
    assert any("DCGM_FI_DEV_MEMORY_TEMP=9.22337e+18 on gpu01" in w for w in c.warnings())
    # the same placeholder on a counter family queried with "!= 0" (present elsewhere, so a GPU
    # it does not answer for reads 0): N/A, never the 0 of an absent answer
    blank = [Sample(metric={**s.metric, "__name__": "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"}, value=s.value)
             for s in samples if s.metric["__name__"] == "DCGM_FI_DEV_MEMORY_TEMP"]
    c = collector()
    answer(c, samples + blank, time_answered=False)
    (gpu,) = c.build_gpus()["gpu01"]
    assert gpu.ecc_uncorrected_volatile is None and gpu.ecc_corrected_volatile is None


def test_nan_on_a_sparse_counter_is_na_not_0() -> None:
    c = collector()
    c.add("present", "", [Sample(metric={"__name__": "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"}, value=(1.0, "2"))])
    c.add("gpu", "ecc_dbe_vol", [Sample(metric={"Hostname": "n1", "gpu": "0"}, value=(1.0, "NaN"))])
    c.add("gpu", "temp", [Sample(metric={"Hostname": "n1", "gpu": str(i)}, value=(1.0, "40")) for i in (0, 1)])
    a, b = c.build_gpus()["n1"]
    assert a.ecc_uncorrected_volatile is None and b.ecc_uncorrected_volatile == 0


def test_ib_ports_without_pma_counters_read_na_not_0() -> None:
    # node_exporter's own fixture: i40iw0 port 1 has no error counters at all (sysfs "N/A (no PMA)"),
    # mlx4_0 port 2 only link_downed and link_error_recovery (both 0)
    samples = fixture_samples(IB, {"instance": "ibnode:9100"})
    errors = [s for s in samples if s.metric["__name__"] in IB_ERROR_COUNTERS]
    c = collector()
    c.add("ib", "state", [s for s in samples if s.metric["__name__"] == "node_infiniband_state_id"])
    c.add("present", "", [Sample(metric={"__name__": m}, value=(1.0, "1")) for m in sorted({s.metric["__name__"] for s in errors})])
    c.add("ib_counters", "", [s for s in errors if s.value[1] != "0"])  # type: ignore[index]
    have: dict[tuple[str, str], int] = {}
    for s in errors:  # what count by (instance, device, port) answers
        have[(s.metric["device"], s.metric["port"])] = have.get((s.metric["device"], s.metric["port"]), 0) + 1
    assert have == {("mlx4_0", "1"): 8, ("mlx4_0", "2"): 2}
    c.add("ib_have", "", [Sample(metric={"instance": "ibnode:9100", "device": d, "port": p}, value=(1.0, str(n)))
                          for (d, p), n in have.items()])  # (i40iw0 has none: not in the answer)
    by = {(p.device, p.port): p for p in c.build_ib()["ibnode"]}
    assert by[("i40iw0", 1)].counters == {} and by[("i40iw0", 1)].deltas == {}
    assert by[("mlx4_0", 2)].counters == {} and by[("mlx4_0", 2)].deltas == {}  # which exist is unknown: N/A
    p1 = by[("mlx4_0", 1)]
    assert p1.counters["port_rcv_errors"] == 0 and p1.counters["link_downed"] == 0
    assert p1.counters["port_xmit_wait"] == 4294967295 and p1.deltas["port_xmit_wait"] == 0


def test_default_node_labels_read_the_renamed_hostname_label() -> None:
    """dcgm-exporter renamed ``Hostname`` to ``hostname`` (NVIDIA/dcgm-exporter#655, merged 2026-05):
    with the default labels a new exporter's series is named by that label, not by ``instance``
    (under the GPU Operator the exporter pod's ip:port)."""
    from hpctui.sources.prometheus.settings import PrometheusSettings

    s = PrometheusSettings(url="http://127.0.0.1:9090")
    namer = NodeNamer(s.node_labels, s.node_pattern, s.node_replace)
    assert namer({"hostname": "gpu0042", "instance": "10.0.3.7:9400", "gpu": "0"}) == "gpu0042"
    assert namer({"Hostname": "gpu0043", "instance": "10.0.3.8:9400", "gpu": "0"}) == "gpu0043"
