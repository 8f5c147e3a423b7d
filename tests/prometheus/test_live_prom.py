"""Through a real Prometheus (Debian's, on loopback) scraping the simulator exporter:
values land in the model, MIG GPUs are handled, pod labels attribute GPUs, an Xid appears
as an event once, a node Slurm knows but Prometheus does not shows "no data"."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from promkit import complete, wait_scrapes
from promlab import PromLab

from hpctui.core.store import Store
from hpctui.findings.health import Thresholds
from hpctui.model import MountState, Part, SlurmNodeInfo, SourceResult
from hpctui.sim.topology import MIG_BALANCED
from hpctui.sources.prometheus.settings import PrometheusSettings
from hpctui.sources.prometheus.source import PrometheusSource
from hpctui.ui.widgets.gpu_panel import node_detail

pytestmark = pytest.mark.live
MOUNTS = ["/", "/home", "/lustre/scratch"]


def settings(lab: PromLab, **kw: object) -> PrometheusSettings:
    opts: dict[str, object] = {"url": lab.url, "scrape_interval_s": 1.0, "rate_window_s": 5.0,
                               "delta_window_s": 10.0, "mounts": MOUNTS, **kw}
    return PrometheusSettings(**opts)  # type: ignore[arg-type]


@pytest.fixture
async def source(prom_lab: PromLab) -> AsyncIterator[PrometheusSource]:
    src = PrometheusSource(settings(prom_lab))
    yield src
    await src.close()


async def test_values_land_in_the_model(prom_lab: PromLab, source: PrometheusSource) -> None:
    assert prom_lab.exporter is not None
    sim = prom_lab.exporter.sim
    wait_scrapes(prom_lab, 4)  # a few flaps of the flapping link inside delta_window_s
    result: SourceResult = await complete(source, prom_lab)  # type: ignore[assignment]
    assert result.gpus is not None and result.ib is not None and result.resources is not None
    assert result.mounts is not None
    gpu_nodes = list(sim.topo.gpu_nodes)
    assert sorted(result.gpus) == sorted(s.name for s in gpu_nodes)
    for spec in gpu_nodes:
        gpus = result.gpus[spec.name]
        assert [g.index for g in gpus] == list(range(8)), spec.name
        lost = {g.index for g in gpus if g.last_xid == 79}
        for g in gpus:
            if g.index in lost:
                continue
            assert g.uuid == spec.gpu_uuids[g.index] and g.model == spec.gpu_model
            assert g.temp_c is not None and 20 < g.temp_c < 100
            assert g.memory_total_mib is not None and abs(g.memory_total_mib - spec.gpu_mem_mib) < 1
            assert g.throttle_reasons is not None  # CLOCK_THROTTLE_REASONS (H100) or CLOCKS_EVENT_REASONS (H200)
    everyone = [s.name for s in sim.specs]
    assert sorted(result.resources) == sorted(everyone) and sorted(result.ib) == sorted(everyone)
    r = result.resources[gpu_nodes[0].name]
    assert r.cpu_count == 8 and r.mem_total_mib == 2_000_000 and r.load1 is not None and r.nic_rx_bps
    port = result.ib[gpu_nodes[0].name][0]
    assert port.state == "ACTIVE" and port.phys_state == "LinkUp" and port.rate_gbps == 400.0
    assert port.counters["link_downed"] == 0 and port.deltas["link_downed"] == 0  # sparse: present, zero
    flap = {p.device: p for p in result.ib[sim.place.flap_node]}[sim.place.flap_dev]
    assert flap.counters["link_downed"] >= 4 and flap.counters["link_error_recovery"] >= 9
    assert flap.deltas["link_downed"] > 0 and flap.link_errors_rising  # increase() over delta_window_s
    degraded = sim.place.degraded_node
    assert any(p.rate_gbps == 200.0 for p in result.ib[degraded])
    hung = {m.target: m for m in result.mounts[sim.place.hung_node]}
    assert hung["/lustre/scratch"].state is MountState.DEGRADED and hung["/home"].state is MountState.OK
    assert result.node_times and result.stale_after_s == 3.0
    assert not [w for w in result.warnings if "failed" in w or "dropped" in w], result.warnings


async def test_mig_gpus_once_each_with_their_instances(prom_lab: PromLab, source: PrometheusSource) -> None:
    assert prom_lab.exporter is not None
    sim = prom_lab.exporter.sim
    result: SourceResult = await complete(source, prom_lab)  # type: ignore[assignment]
    assert result.gpus is not None
    mig_nodes = [s for s in sim.topo.gpu_nodes if s.mig]
    assert len(mig_nodes) == 2
    for spec in mig_nodes:
        gpus = result.gpus[spec.name]
        assert len(gpus) == 8 and len({g.uuid for g in gpus}) == 8
        for g in gpus:
            assert g.mig_mode_current is True and g.util_pct is None
            assert [m.profile for m in g.mig_instances] == [p for p, _ in MIG_BALANCED[spec.gpu_model or ""]]
            assert g.memory_used_mib == pytest.approx(sum(m.memory_used_mib or 0 for m in g.mig_instances))
            assert g.power_w is not None  # the device value, not one per instance


async def test_pod_labels_attribute_gpus_to_pods(prom_lab: PromLab, source: PrometheusSource) -> None:
    assert prom_lab.exporter is not None
    result: SourceResult = await complete(source, prom_lab)  # type: ignore[assignment]
    assert result.gpus is not None
    expected = prom_lab.exporter._pod_of
    assert expected
    for (node, index), (ns, pod) in expected.items():
        (proc,) = result.gpus[node][index].processes
        assert proc.pod == f"{ns}/{pod}" and proc.container == "main" and proc.pid is None
    attributed = {(g.node, g.index) for gs in result.gpus.values() for g in gs if g.processes}
    assert attributed == set(expected)


async def test_an_xid_appears_as_an_event_once(prom_lab: PromLab, source: PrometheusSource) -> None:
    exporter = prom_lab.exporter
    assert exporter is not None
    node = exporter.sim.topo.gpu_nodes[0].name
    first = await source.collect()
    assert all(not e.object.startswith(f"gpu/{node}/0") for e in first.events or ())
    exporter.xid[(node, 0)] = 48
    try:
        wait_scrapes(prom_lab)
        events = []
        for _ in range(3):
            r = await source.collect()
            events += [e for e in r.events or () if e.object == f"gpu/{node}/0"]
            wait_scrapes(prom_lab, 1)
        assert [e.message for e in events] == ["Xid 48: double-bit ECC error (reset GPU) (DCGM_FI_DEV_XID_ERRORS)"]
    finally:
        exporter.xid.pop((node, 0), None)
        wait_scrapes(prom_lab)


async def test_node_in_slurm_but_not_in_prometheus_shows_no_data(prom_lab: PromLab) -> None:
    exporter = prom_lab.exporter
    assert exporter is not None
    gone = exporter.sim.topo.gpu_nodes[5].name
    src = PrometheusSource(settings(prom_lab, keep_stale_s=0.0))
    store = Store("lab")
    slurm = {s.name: SlurmNodeInfo(base_state="IDLE") for s in exporter.sim.specs}
    slurm["gpu9999"] = SlurmNodeInfo(base_state="IDLE")  # Slurm knows it, no exporter ever did
    exporter.absent.add(gone)
    try:
        # past stale_after_s (3 scrapes): VictoriaMetrics still answers the gone node's last sample
        wait_scrapes(prom_lab, 5)
        store.apply(SourceResult(source="slurm", time=src.clock(), slurm_nodes=slurm))
        store.apply(await src.collect())
        snap = store.snapshot()
        for node in ("gpu9999", gone):
            assert node not in snap.gpus and node not in snap.resources and node not in snap.ib
            text = node_detail(snap, node, Thresholds()).plain
            assert "GPUs: N/A (no GPU data for this node)" in text
            assert "GPUs no data" in text and "host no data" in text
        present = exporter.sim.topo.gpu_nodes[0].name
        text = node_detail(snap, present, Thresholds()).plain
        assert "Data GPUs prometheus" in text and "Host load" in text
        assert snap.value_age(Part.GPUS, present, src.clock()) is not None
    finally:
        exporter.absent.discard(gone)
        wait_scrapes(prom_lab)
        await src.close()


async def test_history_range_query_through_the_api(prom_lab: PromLab, source: PrometheusSource) -> None:
    assert prom_lab.exporter is not None
    await source.collect()
    node = prom_lab.exporter.sim.topo.gpu_nodes[0].name
    hist = await source.history(node, "temp", window_s=60)
    assert hist.points and all(20 < v < 100 for _, v in hist.points)
    assert hist.window_text == "temp, last 1m (step 1s) from prometheus"
    gpu_hist = await source.history(node, "power", gpu=2, window_s=30)
    assert gpu_hist.points and gpu_hist.window_text.startswith("GPU 2 power, last 0.5m")


async def test_exporter_down_goes_stale_then_recovers(prom_lab: PromLab) -> None:
    exporter = prom_lab.exporter
    assert exporter is not None
    src = PrometheusSource(settings(prom_lab, scrape_interval_s=1.0, keep_stale_s=600.0))
    store = Store("lab")
    try:
        store.apply(await src.collect())
        exporter.fail = True  # scrapes fail: Prometheus marks every series stale
        for _ in range(30):  # past scrape interval × 3, whatever the machine's load
            await asyncio.sleep(0.5)
            result = await src.collect()
            if any("stale" in w for w in result.warnings):
                break
        store.apply(result)
        assert any("stale" in w for w in result.warnings), result.warnings
        snap = store.snapshot()
        node = exporter.sim.topo.gpu_nodes[0].name
        seen = snap.value_age(Part.GPUS, node, src.clock())
        assert seen is not None and seen[1] is not None and seen[1] > 3.0  # last values, with their age
        assert snap.gpus[node][0].uuid is not None
    finally:
        exporter.fail = False
    wait_scrapes(prom_lab)
    result = await src.collect()
    assert not any("stale" in w for w in result.warnings)
    await src.close()


def test_snapshot_command_with_prometheus_config(prom_lab: PromLab, tmp_path: Path) -> None:
    config = tmp_path / "prom-lab.toml"
    config.write_text(f'''
[clusters.lab]
[[clusters.lab.sources]]
kind = "prometheus"
url = "{prom_lab.url}"
scrape_interval_s = 1
mounts = ["/home", "/lustre/scratch"]
''')
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    proc = subprocess.run([sys.executable, "-m", "hpctui", "snapshot", "--config", str(config)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "source prometheus (prometheus): ok" in proc.stdout
    assert prom_lab.exporter is not None
    first = prom_lab.exporter.sim.topo.gpu_nodes[0].name
    row = next(line for line in proc.stdout.splitlines() if line.startswith(first + " "))
    assert row.split()[3] == "8"  # 8 GPUs
    out = subprocess.run([sys.executable, "-m", "hpctui", "snapshot", "--config", str(config), "--format", "json"],
                         capture_output=True, text=True, timeout=120, env=env)
    data = json.loads(out.stdout)
    assert len(data["gpus"][first]) == 8 and data["sources"]["prometheus"]["stale_after_s"] == 3.0


async def test_sources_combine_with_precedence_through_the_config(prom_lab: PromLab, tmp_path: Path) -> None:
    """The demo cluster (same seed and size as the bed: same node names) owns Slurm/K8s and also has
    GPUs; Prometheus wins the GPUs by the configured precedence, the node panel says so."""
    from hpctui.core.config import parse_config
    from hpctui.core.runtime import runtime_from_config

    config = parse_config({"audit_log": str(tmp_path / "audit.jsonl"), "clusters": {"lab": {
        "sources": [{"kind": "demo", "size": 32, "seed": 0},
                    {"kind": "prometheus", "url": prom_lab.url, "scrape_interval_s": 1}],
        "precedence": {"gpus": ["prometheus", "demo"]}}}})
    runtime = runtime_from_config(config, "lab")
    try:
        await runtime.collect_once()
        snap = runtime.store.snapshot()
        node = "gpu0001"
        assert snap.nodes[node].slurm is not None  # from the demo's Slurm
        assert snap.origin(Part.GPUS, node) == "prometheus" and snap.origin(Part.IB, node) == "prometheus"
        assert snap.origin(Part.MOUNTS, node) == "demo"  # prometheus has no mounts configured here
        assert snap.gpus[node][0].profiling  # DCGM_FI_PROF_* only come from Prometheus
        text = node_detail(snap, node, Thresholds()).plain
        assert "Data GPUs prometheus" in text and "mounts demo" in text
    finally:
        await runtime.stop()


async def test_bad_series_through_a_real_server(prom_lab: PromLab, source: PrometheusSource) -> None:
    """Duplicate series (a second scrape path), series without the gpu label, NaN/+Inf values."""
    exporter = prom_lab.exporter
    assert exporter is not None
    dup, unlabelled, nan = (s.name for s in exporter.sim.topo.gpu_nodes[10:13])
    exporter.duplicate_nodes.add(dup)
    exporter.unlabelled_nodes.add(unlabelled)
    exporter.nan_nodes.add(nan)
    try:
        wait_scrapes(prom_lab, 4)  # VictoriaMetrics answers a vanished series for 3 scrapes (the bed's lookback)
        result = await source.collect()
        for _ in range(10):  # VictoriaMetrics makes a new series searchable a few seconds after its first sample
            if any("dropped" in w for w in result.warnings) and any("duplicate" in w for w in result.warnings):
                break
            wait_scrapes(prom_lab, 1)
            result = await source.collect()
        assert result.gpus is not None
        assert [g.index for g in result.gpus[dup]] == list(range(8))  # once each
        assert unlabelled not in result.gpus  # no gpu label: dropped, counted
        assert all(g.temp_c is None and g.power_w is None for g in result.gpus[nan])  # NaN/+Inf: N/A
        assert all(g.hbm_temp_c is not None for g in result.gpus[nan])
        assert any("duplicate series ignored" in w for w in result.warnings), result.warnings
        assert any("without node/gpu/device labels dropped" in w for w in result.warnings)
        assert any("NaN/Inf values shown as N/A" in w for w in result.warnings)
    finally:
        exporter.duplicate_nodes.discard(dup)
        exporter.unlabelled_nodes.discard(unlabelled)
        exporter.nan_nodes.discard(nan)
        wait_scrapes(prom_lab, 4)  # the bad series go stale before the next test
