"""Time demo-cluster generation and ticks at 64, 4,096 and 16,384 GPU nodes.

Run: ``python bench/bench_sim.py [sizes...]``. Not a test: it prints a table.
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from hpctui.sim import SimCluster

T0 = 1_700_000_000.0
TICKS = 5


def bench(size: int) -> tuple[float, float, float, int, int]:
    gc.collect()
    t = time.perf_counter()
    sim = SimCluster(size=size, seed=0, start_time=T0)
    sim.to_result(T0)
    gen = time.perf_counter() - t
    times = []
    result = None
    for k in range(1, TICKS + 1):
        t = time.perf_counter()
        sim.advance(T0 + 2.0 * k)
        result = sim.to_result(T0 + 2.0 * k)
        times.append(time.perf_counter() - t)
    assert result is not None and result.slurm_jobs is not None
    return gen, sum(times) / len(times), max(times), len(sim.specs), len(result.slurm_jobs)


def main(argv: list[str]) -> None:
    sizes = [int(a) for a in argv] or [64, 4096, 16384]
    print(f"{'GPU nodes':>10} {'all nodes':>10} {'jobs':>7} {'generate s':>11} {'tick mean s':>12} {'tick max s':>11}")
    for size in sizes:
        gen, mean, worst, nodes, jobs = bench(size)
        print(f"{size:>10} {nodes:>10} {jobs:>7} {gen:>11.3f} {mean:>12.3f} {worst:>11.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
