"""The wall display's soak run: hours of the demo cluster through the wall screen, on a fake clock.

Shared by the test (tests/ui/test_wall.py) and the benchmark (bench/bench_wall_memory.py): every
tick advances the clock by the poll interval, polls the demo source into the store and lets the
app draw it on the wall screen (rotation included), as the poller would. Memory is sampled as
Python's allocated blocks (``sys.getallocatedblocks``: cheap, no tracing) and the process RSS.
"""

from __future__ import annotations

import gc
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from uikit import FIXED, Clock

from hpctui.core.runtime import demo_runtime
from hpctui.ui.app import HpcApp
from hpctui.ui.screens.wall import WallScreen


@dataclass(frozen=True)
class Sample:
    tick: int
    sim_s: float
    blocks: int  # Python objects' memory blocks (sys.getallocatedblocks) after a full gc
    rss_kib: int
    view: str


def rss_kib() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    except OSError:
        return 0


def sample(tick: int, sim_s: float, view: str) -> Sample:
    gc.collect()
    return Sample(tick, sim_s, sys.getallocatedblocks(), rss_kib(), view)


async def soak(tmp: Path, *, ticks: int = 3600, step_s: float = 2.0, size: int = 64, every: int = 60,
               draw_every: int = 5) -> tuple[list[Sample], set[str]]:
    """Run ``ticks`` polls ``step_s`` apart; a sample every ``every`` ticks. Returns the samples and
    the set of views the wall showed (rotation must have happened)."""
    clock = Clock(FIXED)
    runtime = demo_runtime(size=size, seed=7, clock=clock, start_time=FIXED, audit_path=tmp / "audit.jsonl")
    app = HpcApp(runtime, wall=True, autostart=False)
    samples: list[Sample] = []
    views: set[str] = set()
    async with app.run_test(size=(200, 60)) as pilot:
        wall = app.screen
        assert isinstance(wall, WallScreen)
        for tick in range(ticks + 1):
            if tick:
                clock.t += step_s
            await runtime.collect_once()
            app.refresh_from_store()
            wall.tick()
            views.add(wall.view)
            if tick % draw_every == 0:
                await pilot.pause()  # let Textual draw (and run its timers), as a live app would
            if tick % every == 0:
                samples.append(sample(tick, clock.t - FIXED, wall.view))
    return samples, views


def growth_after_warmup(samples: list[Sample], warmup_s: float) -> tuple[float, float]:
    """(blocks growth, RSS growth) from the first sample after ``warmup_s`` to the last, as fractions."""
    base = next(s for s in samples if s.sim_s >= warmup_s)
    last = samples[-1]
    return (last.blocks - base.blocks) / base.blocks, (last.rss_kib - base.rss_kib) / max(1, base.rss_kib)
