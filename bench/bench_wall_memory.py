"""The wall display over two hours of the demo cluster, accelerated: memory must stay flat.

3,600 polls 2 s apart on a fake clock (the demo simulator, the store and the wall screen with
its rotation, drawn by Textual headless at 200×60); Python's allocated blocks and the RSS are
sampled every simulated 2 minutes. Writes bench/results/wall-memory.md (the curve) and exits 1
if the growth after a 15-minute warm-up exceeds the bound the test also uses.

Run: ``python bench/bench_wall_memory.py [--ticks N] [--size N]`` (from the repo root).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "ui"))

from wallsoak import growth_after_warmup, soak  # noqa: E402

WARMUP_S = 15 * 60
BOUND = 0.05  # at most 5 % more Python memory blocks from 15 min to the end


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ticks", type=int, default=3600)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "wall-memory.md")
    args = parser.parse_args()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        samples, views = asyncio.run(soak(Path(tmp), ticks=args.ticks, size=args.size))
    took = time.perf_counter() - t0
    blocks, rss = growth_after_warmup(samples, WARMUP_S)
    lines = [
        f"# Wall display soak: {args.ticks} polls × 2 s = {args.ticks * 2 / 3600:.1f} h simulated, "
        f"{args.size}-node demo, 200×60",
        "",
        f"Ran in {took:.0f} s ({1000 * took / args.ticks:.0f} ms per poll incl. drawing) on this machine. "
        f"Views shown: {', '.join(sorted(views))}.",
        f"Growth after the {WARMUP_S // 60}-min warm-up: Python blocks {blocks:+.2%}, RSS {rss:+.2%} "
        f"(bound: blocks ≤ {BOUND:.0%}).",
        "",
        "| sim time | polls | Python blocks | RSS MiB | view |",
        "|---:|---:|---:|---:|---|",
        *[f"| {s.sim_s / 60:.0f} min | {s.tick} | {s.blocks:,} | {s.rss_kib / 1024:.1f} | {s.view} |" for s in samples],
        "",
    ]
    args.out.write_text("\n".join(lines))
    print("\n".join(lines[:5]))
    return 0 if blocks <= BOUND else 1


if __name__ == "__main__":
    raise SystemExit(main())
