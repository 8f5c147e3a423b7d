"""Cost of the idle-GPU tracker (hpctui.findings.idle) per frame on the demo cluster.

    PYTHONPATH=. python bench/bench_idle.py [--nodes 4096] [--frames 20]

Prints the median and worst CPU time (process_time) of one ``IdleTracker.update`` (every running job's allocated GPUs
checked, every GPU checked for "busy with no owner") over successive demo frames.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from hpctui.core.runtime import demo_runtime
from hpctui.findings.correlate import workload_index
from hpctui.findings.idle import IdleSettings, IdleTracker


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=4096)
    ap.add_argument("--frames", type=int, default=20)
    args = ap.parse_args()
    runtime = demo_runtime(args.nodes, 0)
    tracker = IdleTracker(IdleSettings(after_s=0.0))
    times: list[float] = []
    gpus = 0
    for _ in range(args.frames):
        asyncio.run(runtime.collect_once())
        snapshot = runtime.store.snapshot()
        workload = workload_index(snapshot)
        gpus = sum(len(g) for g in snapshot.gpus.values())
        t0 = time.process_time()
        report = tracker.update(snapshot, workload)
        times.append(time.process_time() - t0)
    print(f"{args.nodes} nodes, {gpus} GPUs, {len(runtime.store.snapshot().jobs)} jobs: IdleTracker.update "
          f"median {1000 * statistics.median(times):.2f} ms, max {1000 * max(times):.2f} ms "
          f"over {len(times)} frames; idle now {report.gpus_now} GPUs")


if __name__ == "__main__":
    main()
