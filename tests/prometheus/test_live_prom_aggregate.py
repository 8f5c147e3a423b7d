"""``detail = "aggregate"`` against the same data as ``series``, in both real engines (the bed's
Prometheus and VictoriaMetrics scraping the simulator exporter): both sources read the engine at
the same evaluation time, and the findings (problem list), the heatmap's values and levels and the
node list must be the same. Only the sick and the looked-at nodes are read in full."""

from __future__ import annotations

import math
import time

import pytest
from promkit import wait_scrapes
from promlab import PromLab

from hpctui.core.store import Store
from hpctui.findings.correlate import workload_index
from hpctui.findings.health import Thresholds, all_findings
from hpctui.findings.idle import IdleSettings, IdleTracker
from hpctui.model import ClusterSnapshot, SourceResult
from hpctui.sources.capabilities import DetailFocus
from hpctui.sources.prometheus.settings import PrometheusSettings
from hpctui.sources.prometheus.source import PrometheusSource
from hpctui.ui.heatmap_levels import METRIC_ORDER, Metric, compute_levels, node_gpu_value, node_names

pytestmark = pytest.mark.live
MOUNTS = ["/", "/home", "/lustre/scratch"]


def _settings(lab: PromLab, detail: str) -> PrometheusSettings:
    return PrometheusSettings(url=lab.url, scrape_interval_s=1.0, rate_window_s=5.0, delta_window_s=10.0,
                              mounts=MOUNTS, detail=detail)  # type: ignore[arg-type]


def _snapshot(result: SourceResult) -> ClusterSnapshot:
    store = Store("lab")
    store.apply(result)
    return store.snapshot()


def _findings(snap: ClusterSnapshot, t: Thresholds) -> list[tuple[int, str, str, str]]:
    return sorted((int(f.severity), f.object, f.code, f.message) for f in all_findings(snap, t))


async def _both(lab: PromLab, t: Thresholds, focus: tuple[str, ...] = ()) -> tuple[
        SourceResult, SourceResult, PrometheusSource]:
    at = time.time() - 1.5  # in the past: every sample of that instant is in the engine for both reads
    series = PrometheusSource(_settings(lab, "series"), clock=lambda: at, thresholds=t)
    agg = PrometheusSource(_settings(lab, "aggregate"), clock=lambda: at, thresholds=t)
    for node in focus:
        agg.want_detail(node)
    try:
        return await series.collect(), await agg.collect(), agg
    finally:
        await series.close()
        await agg.close()


@pytest.mark.parametrize("thresholds", [Thresholds(), Thresholds(gpu_temp_warn_c=60.0, gpu_temp_crit_c=70.0)],
                         ids=["default", "low-temp"])
async def test_aggregate_equals_series(prom_lab: PromLab, thresholds: Thresholds) -> None:
    assert prom_lab.exporter is not None
    wait_scrapes(prom_lab, 3)
    sim = prom_lab.exporter.sim
    looked_at = sim.topo.gpu_nodes[3].name
    series, agg, source = await _both(prom_lab, thresholds, focus=(looked_at,))
    s_snap, a_snap = _snapshot(series), _snapshot(agg)
    s_find, a_find = _findings(s_snap, thresholds), _findings(a_snap, thresholds)
    assert s_find, "the simulator always has something wrong: a test on no findings proves nothing"
    assert {f[2] for f in s_find} & {"temp", "ib_down", "ib_flap", "ib_errors", "mount_missing"} or any(
        f[2].startswith("xid") for f in s_find)
    assert a_find == s_find
    names = node_names(s_snap)
    assert node_names(a_snap) == names
    for metric in METRIC_ORDER:
        assert compute_levels(a_snap, names, metric, thresholds) == compute_levels(s_snap, names, metric, thresholds), metric
        if metric is Metric.HEALTH:
            continue
        for name in names:
            a, s = node_gpu_value(a_snap, name, metric), node_gpu_value(s_snap, name, metric)
            assert (a is None) == (s is None), (metric, name, a, s)
            assert a is None or s is None or math.isclose(a, s, rel_tol=1e-9, abs_tol=1e-9), (metric, name, a, s)
    # only the nodes with findings (and the looked-at one) were read in full, and read as series reads them
    detailed = set(agg.gpus or ())
    sick = {f[1].split("/")[1].split(":")[0] for f in s_find}
    assert looked_at in detailed
    mig = {n for n, gpus in (series.gpus or {}).items() if any(g.mig_mode_current for g in gpus)}
    sick_or_mig = sick | mig | {looked_at}
    assert detailed <= sick_or_mig, detailed - sick_or_mig  # no node read in full without a reason
    if thresholds == Thresholds():
        assert len(detailed) <= len(series.gpus or ()) // 2, "aggregate read most nodes in full: little was summed up"
    for node in detailed:
        assert (agg.gpus or {})[node] == (series.gpus or {})[node], node
    assert {n for n in sick if n in (series.gpus or {})} <= detailed
    assert set(agg.gpu_summaries or ()) >= set(series.gpus or ())
    assert isinstance(source, DetailFocus)


async def test_aggregate_names_a_new_problem(prom_lab: PromLab) -> None:
    """A node healthy a moment ago starts reporting an Xid: the aggregate refresh reads it in full and
    finds it, as series does."""
    exporter = prom_lab.exporter
    assert exporter is not None
    t = Thresholds()
    before, _agg, _ = await _both(prom_lab, t)
    healthy = next(n for n in sorted(before.gpus or ()) if not any(
        f.object.startswith((f"gpu/{n}/", f"ib/{n}/", f"mount/{n}:")) for f in all_findings(_snapshot(before), t)))
    with exporter.lock:
        exporter.xid[(healthy, 5)] = 48
    try:
        wait_scrapes(prom_lab, 3)
        series, agg, _ = await _both(prom_lab, t)
        found = [f for f in _findings(_snapshot(agg), t) if f[1] == f"gpu/{healthy}/5"]
        assert any(f[2] == "xid48" for f in found), found
        assert found == [f for f in _findings(_snapshot(series), t) if f[1] == f"gpu/{healthy}/5"]
        assert healthy in (agg.gpus or {})
    finally:
        with exporter.lock:
            exporter.xid.pop((healthy, 5), None)
        exporter.touch()


async def test_aggregate_equals_series_with_a_scheduler(prom_lab: PromLab) -> None:
    """With the simulator's own Slurm and Kubernetes view beside the engine (jobs holding GPUs, pods),
    the idle rules (gpu_idle, gpu_busy_unowned) find the same as with series: the aggregate source
    reads in full the nodes where a held GPU is nearly idle or a busy GPU may be held by no one."""
    exporter = prom_lab.exporter
    assert exporter is not None
    wait_scrapes(prom_lab, 3)
    with exporter.lock:
        full = exporter.sim.to_result(time.time(), source="sched")
    sched = SourceResult(source="sched", time=full.time, slurm_nodes=full.slurm_nodes, slurm_jobs=full.slurm_jobs,
                         k8s_nodes=full.k8s_nodes, pods=full.pods)
    view = Store("lab")
    view.apply(sched)
    t = Thresholds()
    idle = IdleSettings(after_s=0.0, grace_s=0.0)
    at = time.time() - 1.5
    series = PrometheusSource(_settings(prom_lab, "series"), clock=lambda: at, thresholds=t, idle=idle)
    agg = PrometheusSource(_settings(prom_lab, "aggregate"), clock=lambda: at, thresholds=t, idle=idle,
                           snapshot=view.snapshot)
    try:
        s_res, a_res = await series.collect(), await agg.collect()
    finally:
        await series.close()
        await agg.close()
    found = []
    for res in (s_res, a_res):
        store = Store("lab")
        store.apply(sched)
        store.apply(res)
        snap = store.snapshot()
        report = IdleTracker(idle).update(snap, workload_index(snap), now=at + 1.0)
        idle_found = sorted((f.object, f.code, f.message) for fs in report.findings.values() for f in fs)
        found.append((_findings(snap, t), idle_found, len(report.allocations)))
    assert found[0][1], "no idle finding at all: the comparison would prove nothing"
    assert found[1] == found[0]
    assert len(a_res.gpus or ()) < len(s_res.gpus or ())


async def test_auto_picks_by_the_node_count(prom_lab: PromLab) -> None:
    """``detail = "auto"`` (the default) reads a small cluster as series and a big one as aggregate."""
    for above, want_all in ((512, True), (10, False)):
        src = PrometheusSource(PrometheusSettings(url=prom_lab.url, scrape_interval_s=1.0, mounts=MOUNTS,
                                                  aggregate_above_nodes=above))
        try:
            result = await src.collect()
        finally:
            await src.close()
        assert src._nodes_seen is not None and src._nodes_seen >= 32
        assert (result.gpu_summaries is None) == want_all, above


async def test_aggregate_asks_which_families_exist_once_a_minute(prom_lab: PromLab) -> None:
    """The presence queries (count by __name__ over every GPU's counters) are asked on the first
    refresh and then every PRESENT_EVERY refreshes; in between the last answer stands (zeros stay zeros)."""
    from hpctui.sources.prometheus.source import PRESENT_EVERY

    src = PrometheusSource(_settings(prom_lab, "aggregate"))
    asked: list[str] = []
    raw = src.client.query_raw

    async def recording(expr: str, at: float | None = None) -> bytes:
        asked.append(expr)
        return await raw(expr, at)

    src.client.query_raw = recording  # type: ignore[method-assign]
    try:
        counts, zeros = [], []
        for _ in range(PRESENT_EVERY + 2):
            asked.clear()
            result = await src.collect()
            counts.append(sum(e.startswith("count by (__name__)") for e in asked))
            zeros.append(sorted((n, g.index) for n, gpus in (result.gpus or {}).items() for g in gpus
                                if g.ecc_corrected_volatile == 0))
    finally:
        await src.close()
    assert counts[0] == 2 and counts[1:PRESENT_EVERY + 1] == [0] * PRESENT_EVERY and counts[-1] == 2
    assert zeros[0] and all(z for z in zeros)  # sparse counters read 0, not N/A, in refreshes without the query
