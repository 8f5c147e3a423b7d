"""The dashboard (Textual Pilot) with the Prometheus source against the live test bed: every
node's GPUs, IB, mounts and host resources, where they came from, and the history window."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from promkit import complete
from promlab import PromLab

from hpctui.core.config import parse_config
from hpctui.core.runtime import runtime_from_config
from hpctui.ui.app import HpcApp
from hpctui.ui.widgets.gpu_panel import GpuPanel
from hpctui.ui.widgets.heatmap import NodeHeatmap
from hpctui.ui.widgets.status import StatusLine

pytestmark = pytest.mark.live


async def test_dashboard_with_prometheus_source(prom_lab: PromLab, tmp_path: Path) -> None:
    config = parse_config({"audit_log": str(tmp_path / "audit.jsonl"), "clusters": {"lab": {"sources": [{
        "kind": "prometheus", "url": prom_lab.url, "scrape_interval_s": 1, "mounts": ["/home", "/lustre/scratch"],
        "history_window_s": 60}]}}})
    runtime = runtime_from_config(config, "lab")
    app = HpcApp(runtime, autostart=False)
    assert prom_lab.exporter is not None
    sim = prom_lab.exporter.sim
    async with app.run_test(size=(160, 50)) as pilot:
        await complete(runtime.sources[0], prom_lab)  # a full scrape is in Prometheus
        await runtime.collect_once()
        app.refresh_from_store()
        await pilot.pause()
        heatmap = app.screen.query_one(NodeHeatmap)
        assert sorted(heatmap.names) == sorted(s.name for s in sim.specs)  # Prometheus alone names the nodes
        assert "prometheus ✓" in str(app.screen.query_one(StatusLine).render())
        panel = app.screen.query_one(GpuPanel)
        assert heatmap.select(sim.topo.gpu_nodes[0].name)
        await pilot.pause()
        body = panel.body_text
        assert "Data GPUs prometheus" in body and "IB prometheus" in body and "host prometheus" in body
        assert "Host load" in body and "MODEL" in body and "H100 80GB" in body
        for _ in range(50):  # the range query runs in a worker
            if "util, last 1m" in str(panel.border_subtitle):
                break
            await asyncio.sleep(0.1)
        assert str(panel.border_subtitle) == "util, last 1m (step 1s) from prometheus"
        assert app.screen.query_one("#ib").display and app.screen.query_one("#mounts").display
    await runtime.stop()
