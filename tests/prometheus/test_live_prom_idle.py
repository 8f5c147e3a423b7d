"""Idle and unowned GPUs through a real Prometheus (Debian's, on loopback) scraping the simulator
exporter: the simulator's idle 8-GPU job reports 0 % on all its GPUs, the Slurm side (jobs, nodes)
comes from the same simulator, and the tracker flags that job and only that one; the GPU a process
outside any job keeps busy (no process list through dcgm-exporter) is busy with no owner."""

from __future__ import annotations

from collections.abc import AsyncIterator

import msgspec
import pytest
from promkit import complete, wait_scrapes
from promlab import PromLab

from hpctui.core.store import Store
from hpctui.findings.correlate import workload_index
from hpctui.findings.idle import IdleSettings, IdleTracker
from hpctui.model import SourceResult
from hpctui.sources.prometheus.settings import PrometheusSettings
from hpctui.sources.prometheus.source import PrometheusSource

pytestmark = pytest.mark.live


@pytest.fixture
async def source(prom_lab: PromLab) -> AsyncIterator[PrometheusSource]:
    src = PrometheusSource(PrometheusSettings(url=prom_lab.url, scrape_interval_s=1.0, rate_window_s=5.0,
                                              delta_window_s=10.0))
    yield src
    await src.close()


async def test_idle_job_and_unowned_gpu_through_prometheus(prom_lab: PromLab, source: PrometheusSource) -> None:
    exporter = prom_lab.exporter
    assert exporter is not None
    place = exporter.sim.place
    assert place.idle_node and place.stray_node, "the lab's simulator has both incidents"
    wait_scrapes(prom_lab, 2)
    gpus: SourceResult = await complete(source, prom_lab)  # type: ignore[assignment]
    with exporter.lock:  # the scheduler's side, from the simulator the exporter serves
        sched = exporter.sim.to_result(exporter.sim.t, source="slurm")
    sched = msgspec.structs.replace(sched, gpus=None, ib=None, mounts=None, resources=None, events=None)
    store = Store("lab")
    store.apply(sched)
    store.apply(gpus)
    snap = store.snapshot()
    assert all(g.util_pct == 0.0 for g in snap.gpus[place.idle_node])  # through Prometheus
    report = IdleTracker(IdleSettings(after_s=0.0, grace_s=0.0)).update(snap, workload_index(snap))
    (alloc,) = report.allocations
    assert alloc.kind == "job" and alloc.gpu_text == f"{place.idle_node}:0-7" and alloc.count == 8
    assert "GiB held" in alloc.reason  # dcgm-exporter's FB_USED of the hung processes
    assert [f.code for f in report.findings[place.idle_node]] == ["gpu_idle"]
    unowned = report.findings.get(place.stray_node, ())
    assert [(f.code, f.object) for f in unowned] == [("gpu_busy_unowned", f"gpu/{place.stray_node}/{place.stray_gpu}")]
