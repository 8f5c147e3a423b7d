"""Regenerate screenshots/*.svg: the dashboard in each built-in theme at 160×50, plus
one with the worst node (most severe findings) selected.

Deterministic: seeded demo cluster and a frozen clock, so the SVGs only change
when the UI does. Run from the repo root: ``python scripts/screenshots.py``.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hpctui.health import node_findings  # noqa: E402
from hpctui.runtime import demo_runtime  # noqa: E402
from hpctui.ui.app import HpcApp  # noqa: E402

FIXED = 1_750_000_000.0
SEED = 7
SIZE = (160, 50)
OUT = ROOT / "screenshots"


async def shoot(name: str, theme: str, *, wall: bool = False, worst_node: bool = False,
                keys: tuple[str, ...] = (), seed: int = SEED, size: tuple[int, int] = SIZE) -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        runtime = demo_runtime(size=64, seed=seed, clock=lambda: FIXED, start_time=FIXED,
                               audit_path=Path(tmp) / "audit.jsonl", theme=theme)
        app = HpcApp(runtime, theme=theme, wall=wall, autostart=False)
        async with app.run_test(size=size) as pilot:
            for _ in range(2 if keys else 1):  # triage shots: a second tick, so the flapping port has flapped
                await runtime.collect_once()
                app.refresh_from_store()
                await pilot.pause()
            if worst_node:
                snap = runtime.store.snapshot()

                def badness(n: str) -> tuple[int, int]:
                    findings = node_findings(snap, n, runtime.thresholds)
                    return (max((int(f.severity) for f in findings), default=0), len(findings))
                node = max(snap.nodes, key=badness)
                app.dashboard.heatmap.select(node)
                await pilot.pause()
            if keys:
                await pilot.press(*keys)
                await pilot.pause()
            path = Path(app.save_screenshot(f"{name}.svg", str(OUT)))
    return path


class _Clock:
    def __init__(self) -> None:
        self.t = FIXED

    def __call__(self) -> float:
        return self.t


async def shoot_visuals(name: str, *, keys: tuple[str, ...] = (), polls: int = 1, size: tuple[int, int] = (160, 50),
                        heatmap: dict[str, object] | None = None, nodes: int = 64, seed: int = 1,
                        theme: str = "dark", gpus_view: bool = False) -> Path:
    """Charts, the GPU table and the grouped heatmap (visuals): ``polls`` demo ticks 5 s apart
    (a history to chart), ``heatmap`` the [heatmap] config table."""
    import msgspec

    from hpctui.ui.heatmap_settings import HeatmapSettings

    clock = _Clock()
    with tempfile.TemporaryDirectory() as tmp:
        runtime = demo_runtime(size=nodes, seed=seed, clock=clock, start_time=FIXED,
                               audit_path=Path(tmp) / "audit.jsonl", theme=theme)
        runtime.heatmap = msgspec.convert(heatmap or {}, HeatmapSettings)
        app = HpcApp(runtime, theme=theme, autostart=False)
        async with app.run_test(size=size) as pilot:
            for _ in range(polls):
                await runtime.collect_once()
                clock.t += 5.0
            app.refresh_from_store()
            await pilot.pause()
            if gpus_view:  # what `:gpus` opens
                from hpctui.ui.screens.gpus import GpusScreen

                await app.push_screen(GpusScreen(runtime))
                await pilot.pause()
            if keys:
                await pilot.press(*keys)
                await pilot.pause()
            await pilot.pause()
            path = Path(app.save_screenshot(f"{name}.svg", str(OUT)))
    return path


async def main_visuals() -> None:
    OUT.mkdir(exist_ok=True)
    racks = {f"r{i + 1:02d}": f"gpu[{i * 16 + 1:04d}-{i * 16 + 16:04d}]" for i in range(4)}
    shots = [
        await shoot_visuals("charts-gpu", keys=("v",), polls=70),
        await shoot_visuals("charts-gpu-light", keys=("v",), polls=70, theme="light", size=(120, 40)),
        await shoot_visuals("heatmap-grouped-rack", heatmap={"group_by": "rack", "racks": racks,
                                                             "problems_first": True}),
        await shoot_visuals("heatmap-grouped-colorblind", heatmap={"group_by": "partition", "palette": "colorblind"}),
        await shoot_visuals("heatmap-util", keys=("m",), heatmap={"group_by": "model"}, polls=2),
        await shoot_visuals("gpus-table", gpus_view=True, polls=2),
    ]
    for path in shots:
        print(path.relative_to(ROOT))


async def main() -> None:
    OUT.mkdir(exist_ok=True)
    shots = [
        await shoot("dashboard-dark", "dark"),
        await shoot("dashboard-light", "light"),
        await shoot("dashboard-wall", "wall", wall=True),
        await shoot("dashboard-incident", "dark", worst_node=True),
        await shoot("triage-problems", "dark", keys=("p", "4"), seed=1, size=(200, 60)),
        await shoot("triage-events", "dark", keys=("n", "e"), seed=1, size=(200, 60)),
        await shoot("triage-wall", "wall", wall=True, seed=1, size=(200, 60), keys=("n",)),
        await shoot("triage-filter", "dark", seed=1, size=(200, 60), keys=("j", "slash", *"gpu0003", "enter")),
        await shoot("triage-goto", "light", seed=1, size=(120, 40), keys=("g", *"gpu[0010-0012]")),
    ]
    for path in shots:
        print(path.relative_to(ROOT))


if __name__ == "__main__":
    if sys.argv[1:] == ["visuals"]:  # only the chart / GPU table / grouped heatmap shots
        asyncio.run(main_visuals())
    else:
        asyncio.run(main())
