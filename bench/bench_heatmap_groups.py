"""Heatmap grouping at 16,384 nodes: what grouping, problems-first and the colour-blind palette
add to a snapshot (re-arranging the node order) and to a frame (repaint of the visible lines).

Run: ``python bench/bench_heatmap_groups.py`` (from the repo root). Compare with the
``heatmap 16,384 nodes`` rows of ``bench/bench_ui.py`` (ungrouped).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "ui"))

from bench_ui import BenchApp, repaint, timed  # noqa: E402
from synth import snapshot  # noqa: E402

from hpctui.core.heatmap_settings import HeatmapSettings  # noqa: E402
from hpctui.findings.health import Thresholds  # noqa: E402
from hpctui.ui.widgets.heatmap import NodeHeatmap  # noqa: E402

N = 16384
CASES = {
    "none": HeatmapSettings(),
    "partition": HeatmapSettings(group_by="partition"),
    "model+problems_first": HeatmapSettings(group_by="model", problems_first=True),
    "rack (64 racks)": HeatmapSettings(group_by="rack", racks={
        f"r{i:02d}": f"n[{i * 256:05d}-{i * 256 + 255:05d}]" for i in range(64)}),
    "partition, colorblind": HeatmapSettings(group_by="partition", palette="colorblind"),
}


async def bench(label: str, settings: HeatmapSettings, rows: list[tuple[str, float, float, float]]) -> None:
    snap = snapshot(N)
    hm = NodeHeatmap(Thresholds(), settings=settings)
    app = BenchApp(hm)
    async with app.run_test(size=(160, 50)) as pilot:
        hm.update_snapshot(snap)
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        arrange = timed(lambda: hm._arrange(snap), 3)
        paint = timed(lambda: repaint(hm), 20)

        def move() -> None:
            hm.action_move(0, 1)
            hm.render_line(0)
        rows.append((label, arrange, paint, timed(move, 20)))


async def main() -> None:
    rows: list[tuple[str, float, float, float]] = []
    for label, settings in CASES.items():
        await bench(label, settings, rows)
    print(f"heatmap {N:,} nodes     arrange ms/snapshot  repaint ms/frame  cursor down ms/key")
    for label, a, p, m in rows:
        print(f"{label:<24} {a:10.2f} {p:17.2f} {m:17.2f}")


if __name__ == "__main__":
    asyncio.run(main())
