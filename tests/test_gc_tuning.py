"""The cyclic GC at scale (hpctui.core.gc_tuning): model structs and pane rows are not tracked, the
installed app raises the young threshold and freezes what is alive once its first data is drawn."""

from __future__ import annotations

import gc
import importlib
import inspect
import pkgutil
import subprocess
import sys
import textwrap

import msgspec
import pytest

import hpctui.model
from hpctui.ui.widgets.tables import LinkRow, MountRow


def _model_structs() -> list[type[msgspec.Struct]]:
    found: dict[str, type[msgspec.Struct]] = {}
    for info in pkgutil.iter_modules(hpctui.model.__path__, "hpctui.model."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, msgspec.Struct) and cls.__module__ == module.__name__:
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return list(found.values())


def test_every_model_struct_and_pane_row_is_untracked_by_the_gc() -> None:
    structs = _model_structs()
    assert len(structs) >= 20  # the model: nodes, GPUs, ports, mounts, jobs, pods, snapshots...
    tracked = [c.__qualname__ for c in [*structs, LinkRow, MountRow] if c.__struct_config__.gc]
    assert tracked == [], "immutable data cannot form cycles: declare these gc=False"
    from hpctui.model import Gpu, IbPort

    assert not gc.is_tracked(Gpu(node="n", index=0))
    assert not gc.is_tracked(IbPort(node="n", device="mlx5_0", port=1, counters={"symbol_error": 1}))


def test_the_app_freezes_after_its_first_frame_and_collects_after_drawing_data() -> None:
    code = textwrap.dedent("""
        import asyncio, gc
        from hpctui.core import gc_tuning
        from hpctui.core.runtime import demo_runtime
        from hpctui.ui.app import HpcApp

        async def main():
            gc_tuning.tune()
            gc_tuning.COLLECT_EVERY_S = 0.0  # (here: every draw of new data collects)
            app = HpcApp(demo_runtime(size=8, seed=1), autostart=False, freeze_gc=True)
            async with app.run_test(size=(120, 40)) as pilot:
                await pilot.pause()
                early = gc.get_freeze_count()  # not in the middle of the first frame
                await asyncio.sleep(0.8)
                frozen = gc.get_freeze_count()
                collections = gc_tuning.stats["collections"]
                await app.runtime.collect_once()
                app.refresh_from_store()
                for _ in range(5):
                    await pilot.pause()
                print(*gc.get_threshold(), early, frozen, collections, gc_tuning.stats["collections"])

        asyncio.run(main())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    gen0, _, gen2, early, frozen, before, after = map(int, out.stdout.split())
    from hpctui.core.gc_tuning import GEN0_THRESHOLD, OLD_GEN_THRESHOLD

    assert (gen0, gen2) == (GEN0_THRESHOLD, OLD_GEN_THRESHOLD)
    assert early == 0 and frozen > 10_000  # Textual and the widgets, soon after the first frame, before data
    assert before == 0 and after == 1  # the app's own full collection, once data was drawn


def test_collect_runs_when_due_and_later_on_a_heap_that_takes_long(monkeypatch: pytest.MonkeyPatch) -> None:
    from hpctui.core import gc_tuning

    monkeypatch.setattr(gc_tuning, "_next_collect", 0.0)
    monkeypatch.setattr(gc_tuning, "stats", {"collections": 0, "seconds": 0.0})
    took = iter([0.0, 0.01, 0.0, 0.01, 0.0, 1.0])  # perf_counter around each collection: 10 ms, 10 ms, 1 s
    monkeypatch.setattr(gc_tuning.time, "perf_counter", lambda: next(took))
    assert gc_tuning.collect(now=1000.0)
    assert not gc_tuning.collect(now=1000.0 + gc_tuning.COLLECT_EVERY_S / 2)
    assert gc_tuning.collect(now=1000.0 + gc_tuning.COLLECT_EVERY_S)
    assert gc_tuning.collect(now=2000.0)  # this one "took" 1 s: the next is due 40 s later, not 5
    assert not gc_tuning.collect(now=2030.0) and gc_tuning.stats["collections"] == 3
