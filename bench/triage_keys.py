"""Key presses from the first screen to each scripted demo incident (issue #11).

``hpctui --demo --seed 1`` at 200×60, frozen clock. For each incident the node must be
selected (heatmap cursor on it, node panel showing it).

- ``arrows``: the fewest presses using only the heatmap's own keys (arrows, page up/down,
  home/end), found by breadth-first search over the heatmap grid as laid out on screen —
  the only way there was before the problem list.
- ``triage``: the shortest sequence the triage keys allow (``n``/``N`` from any view; ``p``
  then the problem's number), driven through Pilot and checked to select the node.

Run: ``python bench/triage_keys.py [--markdown]`` (from the repo root); ``--markdown`` prints the
README's table (the numbers after ``p`` follow the problem list's order, so re-run it when that changes).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections import deque
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hpctui.core.runtime import demo_runtime  # noqa: E402
from hpctui.sim.incidents import Placement  # noqa: E402
from hpctui.ui.app import HpcApp  # noqa: E402

FIXED = 1_750_000_000.0
SIZE = (200, 60)
SEED = 1


def incidents(p: Placement) -> dict[str, str]:
    return {
        f"Xid 79 (GPU {p.xid_gpu})": p.xid_node,
        f"uncorrectable ECC (GPU {p.ecc_gpu})": p.ecc_node,
        f"thermal (GPU {p.thermal_gpu})": p.thermal_node,
        f"flapping IB ({p.flap_dev})": p.flap_node,
        "hung Lustre mount": p.hung_node,
        **({f"GPU {p.stray_gpu} busy without a job": p.stray_node} if getattr(p, "stray_node", "") else {}),
    }


def arrow_presses(n: int, cols: int, rows_visible: int, start: int, goal: int) -> int:
    """BFS over the heatmap's own key actions (see NodeHeatmap.action_*)."""
    page = max(1, rows_visible - 1) * cols

    def moves(i: int) -> list[int]:
        out = [i - 1, i + 1, i - cols, i + cols, i - page, i + page, 0, n - 1]
        return [max(0, min(n - 1, j)) for j in out]

    seen = {start: 0}
    queue = deque([start])
    while queue:
        i = queue.popleft()
        if i == goal:
            return seen[i]
        for j in moves(i):
            if j not in seen:
                seen[j] = seen[i] + 1
                queue.append(j)
    raise AssertionError("unreachable")


async def triage_presses(make_app: Any, node: str, candidates: list[tuple[str, ...]]) -> tuple[int, str]:
    """The shortest candidate key sequence that selects ``node`` from the first screen."""
    for keys in sorted(candidates, key=len):
        app = make_app()
        async with app.run_test(size=SIZE) as pilot:
            await app.runtime.collect_once()
            app.refresh_from_store()
            await pilot.pause()
            if keys:
                await pilot.press(*keys)
                await pilot.pause()
            if app.dashboard.selected == node and app.dashboard.heatmap.cursor_node == node:
                return len(keys), " ".join(keys)
    return -1, "not reachable"


def candidate_sequences(max_digit: int = 9) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = [()]
    out += [("n",) * k for k in (1, 2)] + [("N",) * k for k in (1, 2)]
    out += [("p", str(d)) for d in range(1, max_digit + 1)]
    return out


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        def make_app() -> HpcApp:
            runtime = demo_runtime(size=64, seed=SEED, clock=lambda: FIXED, start_time=FIXED,
                                   audit_path=Path(tmp) / "audit.jsonl")
            return HpcApp(runtime, autostart=False)

        app = make_app()
        async with app.run_test(size=SIZE) as pilot:
            await app.runtime.collect_once()
            app.refresh_from_store()
            await pilot.pause()
            heatmap = app.dashboard.heatmap
            names, cols = list(heatmap.names), heatmap.columns
            rows_visible = heatmap.scrollable_content_region.height
            start = heatmap.cursor
        source = app.runtime.sources[0]
        placement: Placement = source.sim.place  # type: ignore[attr-defined]
        has_triage = hasattr(HpcApp, "action_next_problem")
        markdown = "--markdown" in sys.argv[1:]
        if markdown:
            print("| incident | before | now |\n|---|---|---|")
        else:
            print(f"demo seed {SEED} at {SIZE[0]}x{SIZE[1]}: {len(names)} nodes, heatmap {cols} columns")
            print(f"{'incident':36} {'node':10} {'arrows':>6} {'triage':>6}  keys")
        for label, node in incidents(placement).items():
            arrows = arrow_presses(len(names), cols, rows_visible, start, names.index(node))
            if has_triage:
                count, keys = await triage_presses(make_app, node, candidate_sequences())
            else:
                count, keys = -1, "(no triage keys in this version)"
            if markdown:
                print(f"| {label} | {arrows} | {count} (`{keys}`) |")
            else:
                print(f"{label:36} {node:10} {arrows:>6} {count:>6}  {keys}")


if __name__ == "__main__":
    asyncio.run(main())
