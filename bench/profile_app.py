"""In-process CPU profile of the demo app: where the app's own time goes per refresh and per key.

Usage: python bench/profile_app.py [--size 4096] [--ticks 6] [--keys 10] [--top 25]
                                   [--phase all|idle|right|tab] [--pstats FILE]

Runs ``HpcApp`` on a deterministic demo runtime (seeded, a settable clock) under Textual's
``run_test`` (headless, 200×60), and measures with ``time.process_time`` (the whole process's CPU,
every thread), so a busy shared machine does not inflate the figures as wall time would:

- per refresh tick (the clock moves 2 s): the simulator (``DemoSource._collect``, excluded from the
  app's share as bench_app.py does), the store merge + frame build (findings, workload, idle: the
  poller's thread in the real app) and the UI's redraw of that frame (``show_frame`` until the
  screen is idle), plus one status-line tick per second as the app's 1 s clock does;
- per key: ``right`` in the heatmap, and ``tab`` / ``shift+tab`` between panes, until idle.

Each phase is profiled with cProfile (main thread; wall time, or its CPU time with --cpu-timer) and its top functions by cumulative time are
printed. Headless Textual composes every frame but does not encode it for a terminal, so the real
app pays a little more per frame (the tmux bench, bench_app.py, includes that).

XDG_* and HOME point at a temporary directory: nothing is read from or written to the real home.
``PYTHONPATH=DIR`` profiles DIR's hpctui (e.g. a ``git archive`` of the code before a change).
Not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXED = 1_750_000_000.0


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class _Off:
    """A profiler that records nothing (--no-profile: timings without cProfile's overhead)."""

    def enable(self) -> None: ...

    def disable(self) -> None: ...


def _profiler(args: argparse.Namespace) -> cProfile.Profile | _Off:
    # wall time by default (waits show up as epoll's poll); --cpu-timer: the main thread's CPU time
    return _Off() if args.no_profile else cProfile.Profile(time.thread_time) if args.cpu_timer else cProfile.Profile()


def _report(label: str, prof: cProfile.Profile | _Off, per: int, unit: str, top: int) -> None:
    if isinstance(prof, _Off):
        return
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("cumulative").print_stats(top)
    print(f"\n=== {label}: cProfile top {top} by cumulative time (totals over {per} {unit}) ===")
    text = out.getvalue()
    start = text.find("   ncalls")
    print(text[start:] if start >= 0 else text)


async def main(args: argparse.Namespace) -> None:
    from hpctui.core import gc_tuning
    from hpctui.core import poller as poller_mod
    from hpctui.core.runtime import demo_runtime
    from hpctui.sources.demo.source import DemoSource
    from hpctui.ui.app import FREEZE_AFTER_S, HpcApp

    tmp = Path(os.environ["HOME"])
    clock = Clock(FIXED)
    runtime = demo_runtime(size=args.size, seed=7, clock=clock, start_time=FIXED, audit_path=tmp / "audit.jsonl")
    sim_cpu = [0.0]
    orig = DemoSource._collect

    def timed_collect(self: DemoSource, t: float):  # type: ignore[no-untyped-def]
        c = time.thread_time()
        try:
            return orig(self, t)
        finally:
            sim_cpu[0] += time.thread_time() - c
            if os.environ.get("PROFILE_APP_DEBUG"):
                print("sim tick ms", round(1000 * (time.thread_time() - c)))

    DemoSource._collect = timed_collect  # type: ignore[method-assign]
    # the store merge and frame build in this thread, so cProfile sees them (the app runs them in one)
    poller_mod.PREPARE_IN_THREAD_ABOVE = 10**9
    gc_tuning.tune()  # as the installed command runs (hpctui.cli.main): the startup heap frozen, no auto full GC
    app = HpcApp(runtime, autostart=False, freeze_gc=True)
    async with app.run_test(size=(200, 60)) as pilot:
        await runtime.collect_once()
        app.refresh_from_store()
        for _ in range(4):
            await pilot.pause()
        await asyncio.sleep(FREEZE_AFTER_S + 0.2)  # gc_tuning.freeze_startup has run
        await pilot.pause()
        # the app's full collection after a redraw, at most every COLLECT_EVERY_S (gc_tuning.collect)
        c0 = time.process_time()
        gc.collect()
        gc_ms = 1000 * (time.process_time() - c0)
        gc_tuning._next_collect = float("inf")  # not at random moments of the phases below
        print(f"size {args.size}: one full GC of the unfrozen heap {gc_ms:.1f} ms CPU "
              f"(the app runs one every {gc_tuning.COLLECT_EVERY_S:.0f} s: "
              f"{gc_ms / gc_tuning.COLLECT_EVERY_S / 10:.2f}% of a core, not in the figures below)")
        # -- idle refresh ticks ---------------------------------------------------------------
        if args.phase in ("all", "idle"):
            prof_frame, prof_ui = _profiler(args), _profiler(args)
            frame_s = ui_s = status_s = 0.0
            sim_cpu[0] = 0.0  # (the first collect's, building the simulator, is not a tick's)
            for _ in range(args.ticks):
                clock.t += 2.0
                s0, c0 = sim_cpu[0], time.process_time()
                prof_frame.enable()
                await runtime.collect_once()  # sim (timed apart) + store merge + frame/findings
                runtime.frame()
                prof_frame.disable()
                frame_s += time.process_time() - c0 - (sim_cpu[0] - s0)
                c0 = time.process_time()
                prof_ui.enable()
                app.refresh_from_store()
                await pilot.pause()
                await pilot.pause()
                prof_ui.disable()
                ui_s += time.process_time() - c0
                c0 = time.process_time()
                for _ in range(2):  # the app's 1 s clock: two status ticks per 2 s refresh
                    prof_ui.enable()
                    app.dashboard.update_status()
                    await pilot.pause()
                    prof_ui.disable()
                status_s += time.process_time() - c0
            n = args.ticks
            print(f"size {args.size}: per 2 s refresh, CPU ms: sim {1000 * sim_cpu[0] / max(1, n):.1f} (excluded), "
                  f"merge+frame {1000 * frame_s / n:.1f}, UI redraw {1000 * ui_s / n:.1f}, "
                  f"2 status ticks {1000 * status_s / n:.1f}; app share "
                  f"{100 * (frame_s + ui_s + status_s) / n / 2.0:.2f}% of a core")
            _report("merge + frame build", prof_frame, n, "ticks", args.top)
            _report("UI redraw + status ticks", prof_ui, n, "ticks", args.top)
            if args.pstats and not args.no_profile:
                prof_ui.dump_stats(f"{args.pstats}.ui")  # type: ignore[union-attr]
                prof_frame.dump_stats(f"{args.pstats}.frame")  # type: ignore[union-attr]
        # -- keys -----------------------------------------------------------------------------
        for phase, keys in (("right", ["right"]), ("tab", ["tab", "shift+tab"])):
            if args.phase not in ("all", phase):
                continue
            app.dashboard.heatmap.focus()
            await pilot.pause()
            prof = _profiler(args)
            took: list[float] = []
            for i in range(args.keys):
                key = keys[i % len(keys)]
                c0 = time.process_time()
                prof.enable()
                await pilot.press(key)
                await pilot.pause()
                await pilot.pause()
                prof.disable()
                took.append(time.process_time() - c0)
            took.sort()
            print(f"\nsize {args.size}: {'/'.join(keys)} CPU ms per press: p50 {1000 * took[len(took) // 2]:.1f}, "
                  f"p90 {1000 * took[min(len(took) - 1, int(0.9 * len(took)))]:.1f}, max {1000 * took[-1]:.1f}")
            _report(f"{'/'.join(keys)} presses", prof, args.keys, "presses", args.top)
            if args.pstats and not args.no_profile:
                prof.dump_stats(f"{args.pstats}.{phase}")  # type: ignore[union-attr]


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--ticks", type=int, default=6)
    p.add_argument("--keys", type=int, default=10)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--phase", default="all", choices=["all", "idle", "right", "tab"])
    p.add_argument("--cpu-timer", action="store_true",
                   help="profile the main thread's CPU time (time.thread_time: a system call per event, so "
                        "~3-8x slower and skewed to small functions) instead of wall time")
    p.add_argument("--no-profile", action="store_true", help="timings only, without cProfile's overhead")
    p.add_argument("--pstats", help="also dump the raw profiles to FILE.{ui,frame,right,tab}")
    cli = p.parse_args()
    home = tempfile.mkdtemp(prefix="hpctui-profile-")
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "HOME"):
        os.environ[var] = home
    if not os.environ.get("PYTHONPATH"):  # PYTHONPATH=OTHER_CHECKOUT profiles that code (before/after)
        sys.path.insert(0, str(ROOT))
    asyncio.run(main(cli))
