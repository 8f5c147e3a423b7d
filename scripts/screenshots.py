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


# layout: the dashboard at each terminal size (issue #12), and the narrow layout's node tab.
LAYOUT_SIZES = ((80, 24), (120, 40), (200, 60), (300, 80))


async def layout_shots() -> list[Path]:
    shots = [await shoot(f"size-{w}x{h}", "dark", size=(w, h)) for w, h in LAYOUT_SIZES]
    shots.append(await shoot("size-80x24-node", "dark", size=(80, 24), keys=("right_square_bracket",)))
    shots.append(await shoot("size-120x40-light", "light", size=(120, 40)))
    return shots


def to_png(paths: list[Path]) -> None:
    """PNG copies next to the SVGs (for looking at them; needs cairosvg)."""
    import cairosvg  # type: ignore[import-untyped]

    for path in paths:
        cairosvg.svg2png(url=str(path), write_to=str(path.with_suffix(".png")))


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
    shots += await layout_shots()
    if "--png" in sys.argv:
        to_png(shots)
    for path in shots:
        print(path.relative_to(ROOT))


if __name__ == "__main__":
    asyncio.run(main())
