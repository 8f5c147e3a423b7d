"""``detail = "aggregate"`` without an engine: the label matchers that restrict the detail queries,
the needs-detail query follows the thresholds, the heatmap and the store read node summaries, and
the runtime tells a DetailFocus source what was looked at."""

from __future__ import annotations

import re

import pytest

from hpctui.core.store import Store
from hpctui.findings.health import Thresholds
from hpctui.model import Gpu, GpuSummary, SourceResult
from hpctui.sources.capabilities import DetailFocus
from hpctui.sources.prometheus.aggregate import (
    LINK_ERROR_FAMILIES,
    needs_detail_expr,
    restricted_families,
    restriction,
    summary_families,
)
from hpctui.sources.prometheus.parse import NodeNamer
from hpctui.sources.prometheus.settings import PrometheusSettings
from hpctui.sources.prometheus.source import PrometheusSource
from hpctui.ui.heatmap_levels import Metric, compute_levels, node_gpu_value, node_names

LABELS = ["Hostname", "hostname", "instance"]


def test_restriction_selects_what_the_namer_reads() -> None:
    tuples = [("gpu01", None, "10.0.0.1:9400"), ("gpu02", "", None), (None, None, "gpu03:9100"),
              ("", "", 'we"ird.host:9100')]
    got = restriction(LABELS, tuples)
    assert got == ['Hostname=~"gpu01|gpu02"', 'Hostname="",hostname="",instance=~"gpu03:9100|we\\"ird\\\\.host:9100"']
    # the series each matcher selects are the ones NodeNamer names those nodes from
    namer = NodeNamer(LABELS, r"^([^:]+)", r"\1")
    assert namer({"Hostname": "gpu01", "instance": "x"}) == "gpu01"
    assert namer({"Hostname": "", "instance": "gpu03:9100"}) == "gpu03"
    assert restriction(LABELS, [(None, None, None)]) == []


def test_restricted_families_keep_the_cluster_wide_ones_out() -> None:
    s = PrometheusSettings(dcgm_selector='job="dcgm"', node_selector='job="node"', mounts=["/home"])
    fams = restricted_families(s, [("gpu01", None, None)], [(None, None, "gpu01:9100")])
    assert fams and not any(f.target in ("present", "gpu_time", "node_time") for f in fams)
    gpu = [f for f in fams if f.target.startswith("gpu")]
    node = [f for f in fams if f.target in ("ib", "ib_counters", "ib_have", "ib_delta", "res", "res_gauges",
                                             "res_dev", "fs")]
    assert gpu and node
    assert all('job="dcgm",Hostname=~"gpu01"' in f.expr for f in gpu)
    assert all('instance=~"gpu01:9100"' in f.expr and 'job="node"' in f.expr for f in node)
    assert not any('Hostname=~"gpu01"' in f.expr for f in node)


def test_needs_detail_follows_the_thresholds() -> None:
    s = PrometheusSettings(mounts=["/home", "/lustre"])
    expr = needs_detail_expr(s, Thresholds(gpu_temp_warn_c=71.0, gpu_temp_crit_c=80.0, hbm_temp_warn_c=77.0,
                                           ecc_corrected_warn=50))
    assert ">= 71" in expr and ">= 77" in expr and ">= 49.5" in expr
    assert "< 2" in expr  # a node with fewer of the watched mounts than asked for
    assert "port_transmit_wait" not in expr  # rises with any traffic: not a finding
    assert all(f"increase({m}" in expr for m in LINK_ERROR_FAMILIES)
    assert expr.count("group by (Hostname, hostname, instance) (") == expr.count(" or ") + 1
    assert needs_detail_expr(PrometheusSettings(gpus=False, ib=False), Thresholds()) == ""


def test_summary_families_one_series_per_node() -> None:
    fams = summary_families(PrometheusSettings())
    assert {f.field for f in fams} == {"util_pct", "temp_c", "memory_pct", "power_pct", "gpus"}
    for f in fams:  # the outermost aggregation keeps the node labels only
        assert re.search(r"(avg|max|sum|count) by \(Hostname, hostname, instance\) \(", f.expr), f.expr
    assert summary_families(PrometheusSettings(gpus=False)) == []


def test_settings_bounds() -> None:
    with pytest.raises(ValueError):
        PrometheusSettings(max_detail_nodes=0)
    with pytest.raises(ValueError):
        PrometheusSettings(detail_nodes=-1)


def test_want_detail_keeps_the_most_recent() -> None:
    src = PrometheusSource(PrometheusSettings(detail="aggregate", detail_nodes=2))
    assert isinstance(src, DetailFocus)
    for node in ("a", "b", "a", "c"):
        src.want_detail(node)
    assert list(src._focus) == ["a", "c"]


def _gpu(node: str, index: int, util: float, temp: float) -> Gpu:
    return Gpu(node=node, index=index, util_pct=util, temp_c=temp, memory_used_mib=10.0, memory_total_mib=100.0,
               power_w=100.0, power_limit_w=400.0)


def test_heatmap_and_store_read_summaries() -> None:
    store = Store("c")
    summary = GpuSummary(node="n2", gpus=8, util_pct=50.0, temp_c=86.0, memory_pct=10.0, power_pct=25.0)
    store.apply(SourceResult(source="prom", time=1.0, gpus={"n1": (_gpu("n1", 0, 50.0, 86.0),)},
                             gpu_summaries={"n1": GpuSummary(node="n1", gpus=1, util_pct=1.0), "n2": summary,
                                            "n3": GpuSummary(node="n3")}))
    snap = store.snapshot()
    assert list(snap.nodes) == ["n1", "n2", "n3"] and node_names(snap) == ["n1", "n2", "n3"]
    t = Thresholds()
    assert node_gpu_value(snap, "n1", Metric.UTIL) == 50.0  # the node's GPUs win over a summary
    assert node_gpu_value(snap, "n2", Metric.TEMP) == 86.0 and node_gpu_value(snap, "n2", Metric.POWER) == 25.0
    assert node_gpu_value(snap, "n3", Metric.MEMORY) is None
    for metric in (Metric.UTIL, Metric.TEMP, Metric.POWER, Metric.MEMORY):
        levels, _ = compute_levels(snap, ["n1", "n2", "n3"], metric, t)
        assert levels[0] == levels[1], metric  # the same numbers draw the same level, from GPUs or a summary
        assert levels[2] == 5  # N/A


def test_runtime_tells_the_source_what_was_looked_at(tmp_path: object) -> None:
    """What the UI watches (selected node, charts, a problem opened) reaches a DetailFocus source."""
    from hpctui.core.runtime import Runtime

    src = PrometheusSource(PrometheusSettings(detail="aggregate"))
    runtime = Runtime("c", [src], read_only=True)
    runtime.watch_series("gpu0042")
    assert list(src._focus) == ["gpu0042"]
