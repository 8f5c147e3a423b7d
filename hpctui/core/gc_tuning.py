"""Cyclic-GC settings for a long-running app holding a large, mostly immutable model.

Measured at 4,096 demo nodes: CPython's default thresholds ran a full (generation 2)
collection every few seconds, each walking ~420k tracked objects for ~150 ms on whichever
thread was allocating: a frozen screen for that long, ~10% of a core, and the worst key
latencies. What replaces that (``bench/bench_app.py`` measures the effect):

- the model's structs and the panes' rows are ``gc=False`` msgspec structs (immutable data
  cannot form cycles), so collections do not walk them at all;
- :func:`freeze_startup` moves everything alive once the dashboard's first frame is drawn
  (modules, Textual, the widgets) to the permanent generation, never scanned again. Not
  later: data alive then (the first snapshot, the demo's simulator) is replaced over time,
  and frozen garbage is never collected (at 16k nodes that cost ~150 MB);
- the automatic collections of the old generation are off (their threshold is huge), and
  the app runs :func:`collect` itself right after it has drawn a new snapshot, at most every
  COLLECT_EVERY_S: a full collection of what is not frozen, at a moment when nothing waits
  (~60 ms at 4,096 demo nodes, ~170 ms at 16,384, where it then runs every ~7 s), instead
  of one at a random moment, in the middle of a key press.

The explicit collection matters: garbage cycles (finished workers, tasks, their callbacks)
keep old snapshots alive until a full collection, and without one the heap grew by ~2 MB a
second at 4,096 nodes.
"""

from __future__ import annotations

import gc
import time

GEN0_THRESHOLD = 20_000  # CPython's default is 700 allocations
OLD_GEN_THRESHOLD = 1_000_000  # "never": collect() does the full collections
COLLECT_EVERY_S = 5.0
_frozen = False
_next_collect = 0.0
stats = {"collections": 0, "seconds": 0.0}  # the explicit ones (for tests and benchmarks)


def tune() -> None:
    """Fewer young collections; full collections only through :func:`collect`."""
    _, gen1, _ = gc.get_threshold()
    gc.set_threshold(GEN0_THRESHOLD, gen1, OLD_GEN_THRESHOLD)


def freeze_startup() -> None:
    """Once: collect, then move every object alive now out of future collections."""
    global _frozen, _next_collect
    if _frozen:
        return
    _frozen = True
    gc.collect()
    gc.freeze()
    _next_collect = time.monotonic() + COLLECT_EVERY_S  # that was one: the next when due


def collect(now: float | None = None) -> bool:
    """A full collection of the unfrozen heap, when due; True if run. Due every COLLECT_EVERY_S,
    or later on a heap so big that one takes long (never more than ~2.5% of the time)."""
    global _next_collect
    t = time.monotonic() if now is None else now
    if t < _next_collect:
        return False
    start = time.perf_counter()
    gc.collect()
    took = time.perf_counter() - start
    _next_collect = t + max(COLLECT_EVERY_S, took * 40)
    stats["collections"] += 1
    stats["seconds"] += took
    return True
