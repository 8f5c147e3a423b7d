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


async def wall_shots() -> list[Path]:
    """The wall display (--wall) at 200×60 and 300×80: its first view (heatmap, worst node, problems)
    and, at 200×60, the next view after one rotation (the clock moved by rotate_s)."""
    from hpctui.ui.screens.wall import WallScreen

    paths = []
    for size, rotations in (((200, 60), (0, 1)), ((300, 80), (0,))):
        for rotation in rotations:
            with tempfile.TemporaryDirectory() as tmp:
                now = [FIXED]
                runtime = demo_runtime(size=64, seed=SEED, clock=lambda now=now: now[0], start_time=FIXED,
                                       audit_path=Path(tmp) / "audit.jsonl")
                app = HpcApp(runtime, wall=True, autostart=False)
                async with app.run_test(size=size) as pilot:
                    await runtime.collect_once()
                    app.refresh_from_store()
                    await pilot.pause()
                    wall = app.screen
                    assert isinstance(wall, WallScreen)
                    for _ in range(rotation):
                        now[0] += wall.settings.rotate_s
                        await runtime.collect_once()  # fresh data at the new time: not shown as stale
                        app.refresh_from_store()
                        wall.tick()
                        await pilot.pause()
                    name = f"wall-{size[0]}x{size[1]}" + (f"-{wall.view}" if rotation else "")
                    paths.append(Path(app.save_screenshot(f"{name}.svg", str(OUT))))
    return paths


async def main() -> None:
    if sys.argv[1:] == ["wall"]:  # only the wall display's shots
        for path in await wall_shots():
            print(path.relative_to(ROOT))
        return
    OUT.mkdir(exist_ok=True)
    shots = [
        await shoot("dashboard-dark", "dark"),
        await shoot("dashboard-light", "light"),
        await shoot("dashboard-wall", "wall"),  # the dashboard in the wall theme (--wall: wall_shots)
        await shoot("dashboard-incident", "dark", worst_node=True),
        await shoot("triage-problems", "dark", keys=("p", "4"), seed=1, size=(200, 60)),
        await shoot("triage-events", "dark", keys=("n", "e"), seed=1, size=(200, 60)),
        await shoot("triage-wall", "wall", seed=1, size=(200, 60), keys=("n",)),
        await shoot("triage-filter", "dark", seed=1, size=(200, 60), keys=("j", "slash", *"gpu0003", "enter")),
        await shoot("triage-goto", "light", seed=1, size=(120, 40), keys=("g", *"gpu[0010-0012]")),
        *await wall_shots(),
    ]
    for path in shots:
        print(path.relative_to(ROOT))


if __name__ == "__main__":
    asyncio.run(main())
