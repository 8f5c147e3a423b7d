"""Prometheus answers → model, on the real recordings (tests/fixtures/prometheus) and on bad input."""

from __future__ import annotations

import msgspec
import pytest
from promtext import FIXTURES, family, fixture_samples

from hpctui.model import MountState
from hpctui.model.names import NodeNameMap
from hpctui.sources.prometheus.client import PromError, Sample, decode_answer
from hpctui.sources.prometheus.parse import Collector, NodeNamer
from hpctui.sources.prometheus.queries import families, history_expr
from hpctui.sources.prometheus.settings import PrometheusSettings

H100 = "dcgm-exporter_metrics_8x-h100_gpu-operator_drv580.105.08_sampled.prom"
MIG = "dcgm-exporter_metrics_a100_mig-1g.5gb_GPU_I_PROFILE.prom"
IB = "node-exporter_infiniband_e2e-fixture.prom"
API = "prometheus-api-v1-query_DCGM_FI_DEV_GPU_UTIL_2x8-h100.json"


def collector(**kw: object) -> Collector:
    return Collector(NodeNamer(["Hostname", "instance"], r"^([^:]+)", r"\1", **kw))  # type: ignore[arg-type]


def test_real_api_answer_names_nodes_by_hostname_and_attributes_pods_but_not_the_exporter() -> None:
    result = decode_answer((FIXTURES / API).read_bytes())
    assert len(result.samples) == 16
    c = collector()
    c.add("gpu", "util", result.samples)
    c.add("gpu_info", "", result.samples)
    gpus = c.build_gpus()
    assert sorted(gpus) == ["gpu-node-1", "gpu-node-2"]
    assert [g.index for g in gpus["gpu-node-1"]] == list(range(8))
    g1 = gpus["gpu-node-1"][1]
    assert g1.uuid == "GPU-bc5610b9-79c8-fedd-8899-07539c7f868a" and g1.util_pct == 0.0
    assert g1.model == "NVIDIA H100 80GB HBM3" and g1.pci_bus_id == "00000000:64:00.0"
    # pod="nvidia-dcgm-exporter-…" on 15 series is the scrape target (the exporter), not a workload;
    # the 16th carries the workload's pod (the exporter's Kubernetes attribution)
    (proc,) = gpus["gpu-node-1"][0].processes
    assert proc.pod == "dynamo-workload/vllm-agg-0-vllmdecodeworker-s65j5" and proc.container == "main"
    assert [g for gs in gpus.values() for g in gs if g.processes] == [gpus["gpu-node-1"][0]]
    assert g1.temp_c is None  # not queried here: N/A, never 0


def test_real_dcgm_text_attributes_the_pod_holding_gpu0() -> None:
    samples = fixture_samples(H100)
    c = collector()
    for field, metric in (("temp", "DCGM_FI_DEV_GPU_TEMP"), ("power", "DCGM_FI_DEV_POWER_USAGE"),
                          ("util", "DCGM_FI_DEV_GPU_UTIL")):
        c.add("gpu", field, family(samples, metric))
    c.add("gpu_info", "", family(samples, "DCGM_FI_DEV_GPU_TEMP"))
    gpus = c.build_gpus()["gpu-node-1"]
    assert len(gpus) == 8
    assert gpus[0].temp_c == 30 and gpus[0].power_w == pytest.approx(113.611)
    (proc,) = gpus[0].processes
    assert proc.pod == "dynamo-workload/vllm-agg-0-vllmdecodeworker-s65j5" and proc.container == "main"
    assert proc.pid is None and proc.gpu_uuid == gpus[0].uuid and proc.gpu_index == 0
    assert all(not g.processes for g in gpus[1:])


def test_exported_pod_labels_win_over_target_labels() -> None:
    m = {"Hostname": "n1", "gpu": "0", "UUID": "GPU-1", "pod": "dcgm-exporter-abc", "namespace": "gpu-operator",
         "exported_pod": "train-0", "exported_namespace": "ml", "exported_container": "trainer"}
    c = collector()
    c.add("gpu_info", "", [Sample(metric=m, value=(1.0, "1"))])
    (proc,) = c.build_gpus()["n1"][0].processes
    assert (proc.pod, proc.container) == ("ml/train-0", "trainer")


def test_real_mig_text_gives_one_gpu_with_its_instance_and_no_utilisation() -> None:
    samples = fixture_samples(MIG)
    c = collector()
    c.add("gpu", "util", family(samples, "DCGM_FI_DEV_GPU_UTIL"))
    c.add("gpu", "temp", family(samples, "DCGM_FI_DEV_GPU_TEMP"))
    c.add("gpu", "power", family(samples, "DCGM_FI_DEV_POWER_USAGE"))
    c.add("gpu", "xid", family(samples, "DCGM_FI_DEV_XID_ERRORS"))
    c.add("gpu_prof", "", [s for s in samples if s.metric["__name__"].startswith("DCGM_FI_PROF_")])
    c.add("gpu_info", "", family(samples, "DCGM_FI_DEV_XID_ERRORS"))
    (gpu,) = c.build_gpus()["ub20-a100-k8s"]
    assert gpu.mig_mode_current is True and gpu.util_pct is None
    assert gpu.temp_c == 61 and gpu.power_w == pytest.approx(409.692)
    (inst,) = gpu.mig_instances
    assert inst.profile == "1g.5gb" and inst.gi_id == 13 and inst.engine_active == pytest.approx(0.995687)
    assert gpu.profiling["gr_engine_active"] == pytest.approx(0.99563)  # the whole GPU's, not the instance's
    assert gpu.last_xid is None  # 0 = no Xid


def test_mig_instances_repeating_device_values_are_deduplicated_by_uuid() -> None:
    base = {"gpu": "0", "UUID": "GPU-x", "Hostname": "n1"}
    gis = [dict(base, GPU_I_PROFILE=p, GPU_I_ID=i) for p, i in (("3g.40gb", "2"), ("1g.10gb", "9"))]
    c = collector()
    c.add("gpu", "power", [Sample(metric=m, value=(1.0, "321.5")) for m in gis])  # no whole-GPU series
    c.add("gpu", "fb_used", [Sample(metric=m, value=(1.0, v)) for m, v in zip(gis, ("1000", "200"), strict=True)])
    c.add("gpu_info", "", [Sample(metric=m, value=(1.0, "1")) for m in gis])
    # the same physical GPU reported again under another host name (two exporters): dropped
    c.add("gpu_info", "", [Sample(metric=dict(base, Hostname="n1-alias"), value=(1.0, "1"))])
    gpus = c.build_gpus()
    assert list(gpus) == ["n1"]
    (gpu,) = gpus["n1"]
    assert gpu.power_w == 321.5 and gpu.memory_used_mib == 1200.0
    assert [m.profile for m in gpu.mig_instances] == ["3g.40gb", "1g.10gb"]
    assert c.duplicates == 1 and "1 duplicate series ignored" in c.warnings()


def test_real_infiniband_text_builds_ports_with_states_rates_counters() -> None:
    samples = fixture_samples(IB, {"instance": "ibnode:9100"})
    c = collector()
    c.add("ib", "state", family(samples, "node_infiniband_state_id"))
    c.add("ib", "phys", family(samples, "node_infiniband_physical_state_id"))
    c.add("ib", "rate", family(samples, "node_infiniband_rate_bytes_per_second"))
    c.add("ib_counters", "", [s for s in samples if s.metric["__name__"].endswith("_total")])
    ports = {(p.device, p.port): p for p in c.build_ib()["ibnode"]}
    assert set(ports) == {("i40iw0", 1), ("mlx4_0", 1), ("mlx4_0", 2)}
    p = ports[("mlx4_0", 1)]
    assert p.state == "ACTIVE" and p.phys_state == "LinkUp" and p.rate_gbps == 40.0
    assert p.is_up and p.counters["link_downed"] == 0
    # node_exporter reports bytes; the model keeps sysfs' octets ÷ 4
    data = family(samples, "node_infiniband_port_data_received_bytes_total")
    raw = next(float(s.value[1]) for s in data if s.metric["device"] == "mlx4_0" and s.metric["port"] == "1")  # type: ignore[index]
    assert p.counters["port_rcv_data"] == int(raw) // 4


def test_nan_inf_missing_labels_and_escape_sequences() -> None:
    c = collector()
    c.add("gpu", "temp", [
        Sample(metric={"Hostname": "n1", "gpu": "0"}, value=(1.0, "NaN")),
        Sample(metric={"Hostname": "n1", "gpu": "1"}, value=(1.0, "+Inf")),
        Sample(metric={"Hostname": "n1", "gpu": "2"}, value=(1.0, "55")),
        Sample(metric={"Hostname": "n1"}, value=(1.0, "55")),  # no gpu label
        Sample(metric={"gpu": "0"}, value=(1.0, "55")),  # no node label
        Sample(metric={"Hostname": "n1", "gpu": "2"}, value=(1.0, "99")),  # duplicate
    ])
    c.add("gpu_info", "", [Sample(metric={"Hostname": "n1", "gpu": "2", "modelName": "H100\x1b]0;pwned\x07",
                                          "pod": "evil\x1b[2J", "namespace": "ns"}, value=(1.0, "1"))])
    c.add("gpu", "temp", [Sample(metric={"Hostname": "bad\x1b[31mnode", "gpu": "0"}, value=(1.0, "1"))])
    gpus = c.build_gpus()
    assert [g.temp_c for g in gpus["n1"]] == [None, None, 55.0]
    assert c.not_numbers == 2 and c.dropped == 2 and c.duplicates == 1
    g2 = gpus["n1"][2]
    assert "\x1b" not in (g2.model or "") and "\x1b" not in (g2.processes[0].pod or "")
    assert all("\x1b" not in n for n in gpus)


def test_node_names_rewrite_rule_then_cluster_map() -> None:
    namer = NodeNamer(["Hostname", "instance"], r"^([^.:]+)", r"\1",
                      NodeNameMap({"gpu-07": "g07"}).to_slurm)
    assert namer({"instance": "gpu-01.cluster.example:9100"}) == "gpu-01"
    assert namer({"Hostname": "gpu-07.cluster.example", "instance": "10.0.0.7:9400"}) == "g07"
    assert namer({"Hostname": "", "instance": "10.0.0.7:9400"}) == "10"
    assert namer({"job": "x"}) is None
    assert namer.origin["g07"] == {"Hostname": {"gpu-07.cluster.example"}}


def test_filesystems_for_configured_mount_points() -> None:
    c = collector()
    def fs(name: str, mp: str, v: str, node: str = "n1:9100") -> Sample:
        return Sample(metric={"__name__": name, "instance": node, "mountpoint": mp, "device": "srv:/x",
                              "fstype": "nfs4"}, value=(1.0, v))
    c.add("fs", "", [fs("node_filesystem_size_bytes", "/home", "1000"), fs("node_filesystem_avail_bytes", "/home", "250"),
                     fs("node_filesystem_readonly", "/home", "0"), fs("node_filesystem_device_error", "/home", "0"),
                     fs("node_filesystem_readonly", "/scratch", "1"), fs("node_filesystem_device_error", "/scratch", "0"),
                     fs("node_filesystem_device_error", "/lustre", "1")])
    mounts = {m.target: m for m in c.build_mounts(["/home", "/scratch", "/lustre", "/missing"])["n1"]}
    assert mounts["/home"].state is MountState.OK and mounts["/home"].avail_bytes == 250.0
    assert mounts["/scratch"].state is MountState.READ_ONLY
    assert mounts["/lustre"].state is MountState.DEGRADED
    assert mounts["/missing"].state is MountState.MISSING


def test_api_errors_and_warnings_decode() -> None:
    ok = msgspec.json.encode({"status": "success", "warnings": ["partial response"],
                              "data": {"resultType": "vector", "result": []}})
    assert decode_answer(ok).warnings == ["partial response"]
    bad = msgspec.json.encode({"status": "error", "errorType": "bad_data", "error": "parse error at char 3"})
    with pytest.raises(PromError, match="HTTP 400: bad_data: parse error at char 3"):
        decode_answer(bad, 400)
    with pytest.raises(PromError, match="HTTP 502: <html>bad gateway"):
        decode_answer(b"<html>bad gateway</html>", 502)


def test_one_query_per_family_never_per_node() -> None:
    s = PrometheusSettings(mounts=["/home", "/lustre/scratch"], dcgm_selector='job="dcgm"')
    fams = families(s)
    assert len(fams) < 60
    assert all("gpu0" not in f.expr for f in fams)
    assert any("DCGM_FI_DEV_CLOCKS_EVENT_REASONS|DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" in f.expr for f in fams)
    assert all('job="dcgm"' in f.expr for f in fams if "DCGM" in f.expr)
    fs = next(f for f in fams if f.target == "fs")
    assert 'mountpoint=~"^(/home|/lustre/scratch)$"' in fs.expr
    assert history_expr("DCGM_FI_DEV_GPU_UTIL", "Hostname", {'we"ird'}, 3, "") == \
        'avg(DCGM_FI_DEV_GPU_UTIL{Hostname="we\\"ird",gpu="3"})'


def test_settings_reject_bad_values() -> None:
    for bad in ({"url": "ftp://x"}, {"bearer_token_file": "a", "bearer_token_env": "B"}, {"node_labels": ["a-b"]},
                {"node_pattern": "("}, {"interval_s": 0}):
        with pytest.raises(msgspec.ValidationError):
            msgspec.convert(bad, PrometheusSettings)
