"""Recorded dcgm-exporter and node_exporter outputs (tests/fixtures/prometheus), served as they
are and scraped by a real Prometheus (Debian's, loopback), read by PrometheusSource: the queries of
issue #21 item 3 (any GPU series makes a GPU, identity from whatever series exist, 1.x names,
DCGM blanks, IB ports without PMA counters) against what a site's Prometheus really holds."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import pytest
from exporter import serve_files
from promlab import PromLab, prometheus_installed
from promtext import FIXTURES

from hpctui.model import SourceResult
from hpctui.sources.prometheus.settings import PrometheusSettings
from hpctui.sources.prometheus.source import PrometheusSource

pytestmark = pytest.mark.live
IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")  # as conftest.py (not importable by name here)

# path -> (fixtures served there, the instance label Prometheus gives the target; "" = its address)
JOBS: dict[str, tuple[tuple[str, ...], str]] = {
    "/l4": (("dcgm-exporter_metrics_l4_gpu-operator_drv580.105.08_no-xid.prom",), ""),
    "/t4": (("dcgm-exporter_metrics_t4_datadog-counters_no-fb-used-no-temp.prom",), ""),
    "/v1": (("dcgm-exporter-1.x_metrics_textfile_dcgm_gpu_temp.prom",), "dgx01:9100"),
    "/v1pods": (("pod-gpu-metrics-exporter-1.x_metrics_pod_name.prom",), "gpu07:9400"),
    "/blank": (("dcgm-exporter-2.0_metrics_memory_temp_int64_blank.prom",), "gpu01:9400"),
    "/ib": (("node-exporter_infiniband_e2e-fixture.prom", "node-exporter_load1_e2e-fixture.prom"), "ibnode:9100"),
}
JOB = """  - job_name: "{name}"
    honor_labels: true
    metrics_path: "{path}"
    scrape_interval: {{interval}}
    scrape_timeout: {{timeout}}
    static_configs:
      - targets: ["{{target}}"]
{labels}"""


def scrape_configs() -> str:
    out = []
    for path, (_files, instance) in JOBS.items():
        labels = f'        labels: {{{{instance: "{instance}"}}}}\n' if instance else ""
        out.append(JOB.format(name=path.strip("/"), path=path, labels=labels))
    return "".join(out)


@pytest.fixture(scope="module")
def recorded_lab() -> Iterator[PromLab]:
    why_not = prometheus_installed()
    if why_not:
        if IN_CI:
            pytest.fail(f"CI=true but the Prometheus test bed cannot run: {why_not}", pytrace=False)
        pytest.skip(why_not)
    files = {path: b"".join((FIXTURES / f).read_bytes() for f in names) for path, (names, _i) in JOBS.items()}
    server: ThreadingHTTPServer = serve_files(files)
    lab = PromLab(exporter_port=int(server.server_address[1]), scrape_interval_s=1.0, scrape_configs=scrape_configs())
    try:
        lab.start()
        lab.wait_scraped(3)
        print(f"\n[prometheus bed, recorded outputs] up in {lab.start_s:.2f}s at {lab.url}", file=sys.stderr)
        yield lab
    finally:
        lab.stop()
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def result(recorded_lab: PromLab) -> SourceResult:
    async def collect() -> SourceResult:
        src = PrometheusSource(PrometheusSettings(url=recorded_lab.url, scrape_interval_s=1.0, rate_window_s=5.0,
                                                  delta_window_s=10.0))
        try:
            return await src.collect()
        finally:
            await src.close()
    return asyncio.run(collect())


def test_every_query_is_valid_promql_on_a_real_prometheus(result: SourceResult) -> None:
    assert not [w for w in result.warnings if "failed" in w or "without node" in w], result.warnings


def test_an_exporter_without_xid_errors_keeps_its_gpu_and_its_sample_time(result: SourceResult) -> None:
    assert result.gpus is not None
    (gpu,) = result.gpus["i-030791dc5a37cd257"]
    assert gpu.uuid == "GPU-c2f76b33-7953-256e-8f33-1343419b1a1c" and gpu.model == "NVIDIA L4"
    assert gpu.temp_c == 31 and gpu.memory_used_mib == 0 and gpu.ecc_uncorrected_volatile is None
    assert abs(result.node_times["i-030791dc5a37cd257"] - time.time()) < 30  # timestamp() of FB_USED/GPU_TEMP


def test_identity_from_a_counters_file_without_fb_used_and_gpu_temp(result: SourceResult) -> None:
    assert result.gpus is not None
    (gpu,) = result.gpus["551bdf382151"]
    assert gpu.uuid == "GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5" and gpu.model == "Tesla T4"
    assert gpu.power_limit_w == 70.0 and gpu.throttle_reasons == 1
    assert abs(result.node_times["551bdf382151"] - time.time()) < 30  # from the follow-up's timestamp()


def test_dcgm_exporter_1x_names_labels_and_pods(result: SourceResult) -> None:
    assert result.gpus is not None
    (gpu,) = result.gpus["dgx01"]
    assert gpu.uuid == "GPU-8f640a3c-7e9a-608d-02a3-f4372d72b323"
    assert (gpu.temp_c, gpu.util_pct, gpu.power_w, gpu.sm_clock_mhz, gpu.last_xid) == (34, 0, 31.737, 135, None)
    pods = result.gpus["gpu07"]
    assert [g.temp_c for g in pods] == [33, 34]
    assert all([(p.pod, p.container) for p in g.processes] == [("default/pod1", "pod1-ctr")] for g in pods)


def test_int64_blank_reads_na(result: SourceResult) -> None:
    assert result.gpus is not None
    (gpu,) = result.gpus["gpu01"]
    assert gpu.hbm_temp_c is None and gpu.sm_clock_mhz == 139
    assert any("DCGM_FI_DEV_MEMORY_TEMP=9.22337e+18 on gpu01" in w for w in result.warnings)


def test_ports_without_pma_counters_read_na(result: SourceResult) -> None:
    assert result.ib is not None
    ports = {(p.device, p.port): p for p in result.ib["ibnode"]}
    assert ports[("i40iw0", 1)].counters == {} and ports[("i40iw0", 1)].deltas == {}
    assert ports[("mlx4_0", 2)].counters == {}  # 2 of the 8 families: which exist is not known, N/A
    assert ports[("mlx4_0", 1)].counters["port_rcv_errors"] == 0
