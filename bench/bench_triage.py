"""Per-tick cost of the triage path at 4,096 and 16,384 demo nodes: the shared findings
(incremental), the problem list's bookkeeping (flap memory, order, rows: ``ProblemsPane._apply``)
and the event timeline's rows (``EventsPane._rows``, where repeats are coalesced).

Run: ``python bench/bench_triage.py [--ticks N] [--root CHECKOUT] [sizes...]``. Not a test: it
prints a table. ``--root`` times another checkout (before/after in one run); each size runs in
its own process. Times are CPU time (``process_time``) per tick, mean over the ticks after two
warm-up ticks, so a busy machine skews them less.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TICKS = 8

CHILD = """
import asyncio, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, {root!r})
from textual.app import App
from hpctui.findings.index import findings_for
from hpctui.core.runtime import demo_runtime
from hpctui.ui.widgets.events import EventsPane
from hpctui.ui.widgets.problems import ProblemsPane, problem_groups

T0 = 1_750_000_000.0
now = [T0]
tmp = tempfile.mkdtemp()
runtime = demo_runtime(size={size}, seed=1, clock=lambda: now[0], start_time=T0, audit_path=Path(tmp) / "a.jsonl")

class Bench(App):
    def compose(self):
        self.problems = ProblemsPane(runtime.thresholds)
        self.events = EventsPane(())
        yield self.problems
        yield self.events

async def main():
    app = Bench()
    times = {{"findings": [], "problems": [], "events": []}}
    async with app.run_test(size=(200, 60)) as pilot:
        for k in range({ticks} + 2):
            now[0] = T0 + 2.0 * k
            await runtime.collect_once()
            snap = runtime.store.snapshot()
            t = time.process_time()
            groups = problem_groups(findings_for(snap, runtime.thresholds))
            t1 = time.process_time()
            app.problems._request += 1
            app.problems._apply(snap, groups, app.problems._request)
            t2 = time.process_time()
            app.events._rows(snap, None)
            t3 = time.process_time()
            if k >= 2:
                times["findings"].append(t1 - t)
                times["problems"].append(t2 - t1)
                times["events"].append(t3 - t2)
            await pilot.pause()
        rows = len(app.problems.problems.view)
        nodes = len(app.problems.nodes)
        events = len(app.events._rows(snap, None))
    ms = {{k: 1000 * sum(v) / len(v) for k, v in times.items()}}
    print(nodes, rows, events, ms["findings"], ms["problems"], ms["events"])

asyncio.run(main())
"""


def bench(size: int, root: Path = ROOT, ticks: int = TICKS) -> list[str]:
    code = CHILD.format(root=str(root), size=size, ticks=ticks)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("sizes", type=int, nargs="*", default=[4096, 16384])
    p.add_argument("--ticks", type=int, default=TICKS)
    p.add_argument("--root", type=Path, default=ROOT, help="checkout to time")
    args = p.parse_args(argv)
    print(f"triage path of {args.root.resolve()}, {args.ticks} ticks (CPU ms per tick)")
    print("| nodes | problem nodes | problem rows | event rows | findings ms | problem list ms | events ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for size in args.sizes:
        nodes, rows, events, f, pr, ev = bench(size, args.root, args.ticks)
        print(f"| {size} | {nodes} | {rows} | {events} | {float(f):.1f} | {float(pr):.1f} | {float(ev):.1f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
