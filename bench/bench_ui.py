"""UI benchmarks against the bars in DESIGN.md.

Times (CPU, this process) for:
- heatmap: recompute per-node levels from a snapshot, and a full repaint of all
  visible lines (cache dropped first), at 4,096 and 16,384 nodes;
- virtual table at 100k jobs: load + first paint, sort, filter.

Run: ``python bench/bench_ui.py`` (from the repo root).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "ui"))

from synth import jobs, snapshot  # noqa: E402
from textual.app import App, ComposeResult  # noqa: E402

from hpctui.findings.health import Thresholds  # noqa: E402
from hpctui.ui.heat import Metric, compute_levels  # noqa: E402
from hpctui.ui.themes import DEFAULT_VARIABLES  # noqa: E402
from hpctui.ui.widgets.heatmap import NodeHeatmap  # noqa: E402
from hpctui.ui.widgets.tables import QueueTable  # noqa: E402

SIZE = (160, 50)
ROWS: list[tuple[str, float, str]] = []


def timed(fn: Callable[[], object], repeat: int = 5) -> float:
    """Median CPU milliseconds of ``fn`` on this (the UI) thread; worker threads excluded."""
    samples = []
    for _ in range(repeat):
        t = time.thread_time()
        fn()
        samples.append((time.thread_time() - t) * 1000)
    return statistics.median(samples)


class BenchApp(App[None]):
    def __init__(self, widget: NodeHeatmap | QueueTable) -> None:
        super().__init__()
        self.widget = widget

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(DEFAULT_VARIABLES)

    def compose(self) -> ComposeResult:
        yield self.widget


def repaint(widget: NodeHeatmap | QueueTable) -> None:
    """What a frame costs the widget: every visible line from a dropped cache."""
    widget._lines.clear()
    for y in range(widget.size.height):
        widget.render_line(y)


async def bench_heatmap(n: int) -> None:
    snap = snapshot(n)
    hm = NodeHeatmap(Thresholds())
    app = BenchApp(hm)
    async with app.run_test(size=SIZE) as pilot:
        hm.update_snapshot(snap)
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        for metric in (Metric.HEALTH, Metric.UTIL):
            ROWS.append((f"heatmap {n:,} nodes: levels ({metric.value})",
                         timed(lambda m=metric: compute_levels(snap, hm.names, m, hm.thresholds), 3),
                         "per snapshot, worker thread above 2,048 nodes"))
        ROWS.append((f"heatmap {n:,} nodes: repaint visible ({hm.size.height} lines)", timed(lambda: repaint(hm), 20),
                     "per frame"))

        def move() -> None:
            hm.action_move(1, 0)
            hm.render_line(0)
        ROWS.append((f"heatmap {n:,} nodes: cursor move", timed(move, 20), "per key"))


async def bench_table(n: int) -> None:
    rows = jobs(n)
    table = QueueTable()
    app = BenchApp(table)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()

        def load() -> None:
            table.sort_column = None
            table.set_rows(rows)
            repaint(table)
        ROWS.append((f"table {n:,} jobs: load + first paint", timed(load, 3), ""))

        def sort() -> None:
            table.sort_by("user", reverse=not table.sort_reverse)
            repaint(table)
        ROWS.append((f"table {n:,} jobs: sort by user + paint", timed(sort, 3), ""))

        def sort_id() -> None:
            table.sort_by("id", reverse=not table.sort_reverse)
            repaint(table)
        ROWS.append((f"table {n:,} jobs: sort by id + paint", timed(sort_id, 3), ""))

        def first_filter() -> None:
            table._haystack = None
            table.filter_text = ""
            table.set_filter("user7")
            repaint(table)
        ROWS.append((f"table {n:,} jobs: filter (first, builds index)", timed(first_filter, 3), ""))

        words = iter(["pend", "gpu", "job-12", "user1", "resources", "debug"] * 4)

        def refilter() -> None:
            table.set_filter(next(words))
            repaint(table)
        ROWS.append((f"table {n:,} jobs: filter (next keystroke)", timed(refilter, 5), ""))


async def bench_dashboard(size: int) -> None:
    """Everything one snapshot costs the UI thread: all panes updated + one paint."""
    import tempfile

    from hpctui.core.runtime import demo_runtime
    from hpctui.ui.app import HpcApp

    with tempfile.TemporaryDirectory() as tmp:
        fixed = 1_750_000_000.0
        runtime = demo_runtime(size=size, seed=1, clock=lambda: fixed, start_time=fixed,
                               audit_path=Path(tmp) / "audit.jsonl")
        app = HpcApp(runtime, autostart=False)
        async with app.run_test(size=SIZE) as pilot:
            await runtime.collect_once()
            snap = runtime.store.snapshot()
            app.refresh_from_store()
            await app.workers.wait_for_complete()
            await pilot.pause()
            ports = sum(len(v) for v in snap.ib.values())
            what = f"dashboard demo size={size} ({len(snap.nodes):,} nodes, {len(snap.jobs):,} jobs, {ports:,} IB ports)"
            ROWS.append((what + ": update all panes", timed(lambda: app.dashboard.update_snapshot(snap), 3),
                         "UI thread per snapshot"))


async def main() -> None:
    await bench_dashboard(4096)
    for n in (4096, 16384):
        await bench_heatmap(n)
    await bench_table(100_000)
    width = max(len(r[0]) for r in ROWS)
    print(f"{'what':<{width}}  {'CPU ms':>8}  note")
    print("-" * (width + 20))
    for what, ms, note in ROWS:
        print(f"{what:<{width}}  {ms:8.1f}  {note}")


if __name__ == "__main__":
    asyncio.run(main())
