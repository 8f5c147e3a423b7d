"""Time demo-cluster generation and ticks at 64, 4,096 and 16,384 GPU nodes.

Run: ``python bench/bench_sim.py [--ticks N] [--root CHECKOUT] [sizes...]``. Not a test: it prints
a table. ``--root`` times another checkout's simulator (before/after comparisons in one run). Each size runs in
its own process (RSS is per process). Tick times are CPU time (``process_time``), so a busy
machine skews them less; "gc ms" is the part of a tick spent in Python's cyclic garbage collector
(the readings the simulator hands out are GC-tracked objects; see docs/architecture.md, "How it stays fast").
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TICKS = 16  # a full GC pass comes every few ticks at 16k: average over several

CHILD = """
import gc, sys, time
sys.path.insert(0, {root!r})
from hpctui.sim import SimCluster
T0 = 1_700_000_000.0
gc_time = [0.0, 0.0]
def on_gc(phase, info):
    if phase == "start":
        gc_time[1] = time.process_time()
    else:
        gc_time[0] += time.process_time() - gc_time[1]
t = time.perf_counter()
sim = SimCluster(size={size}, seed=0, start_time=T0)
sim.to_result(T0)
gen = time.perf_counter() - t
gc.callbacks.append(on_gc)
times = []
for k in range(1, {ticks} + 1):
    t = time.process_time()
    sim.advance(T0 + 2.0 * k)
    result = sim.to_result(T0 + 2.0 * k)
    times.append(time.process_time() - t)
rss = [int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmRSS:")][0] / 1024
print(len(sim.specs), len(result.slurm_jobs or ()), gen, sum(times) / len(times), max(times),
      gc_time[0] / len(times), rss)
"""


def bench(size: int, root: Path = ROOT, ticks: int = TICKS) -> list[str]:
    code = CHILD.format(root=str(root), size=size, ticks=ticks)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("sizes", type=int, nargs="*", default=[64, 4096, 16384])
    p.add_argument("--ticks", type=int, default=TICKS)
    p.add_argument("--root", type=Path, default=ROOT, help="checkout whose hpctui/sim to time")
    args = p.parse_args(argv)
    print(f"simulator of {args.root.resolve()}, {args.ticks} ticks")
    print(f"{'GPU nodes':>10} {'all nodes':>10} {'jobs':>7} {'generate s':>11} {'tick ms':>8} "
          f"{'max ms':>7} {'gc ms':>6} {'RSS MB':>7}")
    for size in args.sizes:
        nodes, jobs, gen, mean, worst, gc_s, rss = bench(size, args.root.resolve(), args.ticks)
        print(f"{size:>10} {nodes:>10} {jobs:>7} {float(gen):>11.2f} {1000 * float(mean):>8.1f} "
              f"{1000 * float(worst):>7.1f} {1000 * float(gc_s):>6.1f} {float(rss):>7.0f}")


if __name__ == "__main__":
    main(sys.argv[1:])
