"""Cyclic-GC settings for a long-running app holding a large, mostly immutable model.

Measured at 4,096 demo nodes: CPython's default thresholds ran a full (generation 2)
collection every few seconds, each walking ~420k tracked objects for ~150 ms on the UI's
thread: a frozen screen for that long, ~10% of a core, and the worst key latencies.
Three things fix that (``bench/bench_app.py`` measures the effect):

- the model's structs and the panes' rows are ``gc=False`` msgspec structs (immutable data
  cannot form cycles), so collections do not walk them at all;
- :func:`freeze_startup` moves everything alive once the first frame is drawn (modules,
  Textual's widgets, the first snapshot) to the permanent generation, never scanned again;
- a larger generation-0 threshold: fewer collections of the young generations, which at
  this heap size are what start the full ones.

Garbage without cycles is freed by reference counting as always; only cyclic garbage among
the objects frozen at startup (a widget removed later) is never collected: bounded, small.
"""

from __future__ import annotations

import gc

GEN0_THRESHOLD = 20_000  # CPython's default is 700 allocations
_frozen = False


def tune() -> None:
    """Raise the young generation's threshold (keeps the older generations' ratios)."""
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GEN0_THRESHOLD, gen1, gen2)


def freeze_startup() -> None:
    """Once: collect, then move every object alive now out of future collections."""
    global _frozen
    if _frozen:
        return
    _frozen = True
    gc.collect()
    gc.freeze()
