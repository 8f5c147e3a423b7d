"""The TUI stays responsive while slurmrestd sends 50 MB of garbage (issue #19 §5).

A fake slurmrestd (tests/fakehttp.py, in a process of its own, as a real one is) answers
every read with 50 MB of garbage (the diag with HTTP 500). The app runs with the demo source
and that Slurm source, its poller live; keys move the heatmap cursor and each key's time to
the screen is measured. Old code spent seconds per refresh on the event loop (a whole-text
repair of the garbage, a split of the 500 body) and keys waited that long.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fakehttp import RssPeak

from hpctui.core.runtime import Runtime
from hpctui.sources.demo.source import DemoSource
from hpctui.sources.slurm.settings import SlurmSettings
from hpctui.sources.slurm.source import SlurmSource
from hpctui.ui.app import HpcApp
from hpctui.ui.widgets.heatmap import NodeHeatmap

FAKE = Path(__file__).resolve().parents[1] / "fakehttp.py"


@pytest.fixture
def garbage_slurmrestd(tmp_path: Path) -> Iterator[str]:
    """A fake slurmrestd process on 127.0.0.1 answering 50 MiB of garbage; stopped by its pid."""
    env = dict(os.environ, HOME=str(tmp_path), XDG_STATE_HOME=str(tmp_path / "state"),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    proc = subprocess.Popen([sys.executable, str(FAKE), "slurm-garbage", "50"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env=env, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait(10)


async def _poll(cond: Callable[[], bool], timeout: float, step: float = 0.05) -> None:
    """Return once ``cond()`` holds (or after ``timeout``): a bound, not a timing assertion."""
    for _ in range(int(timeout / step)):
        if cond():
            return
        await asyncio.sleep(step)


@pytest.mark.live
async def test_keys_answer_while_slurmrestd_sends_50_mb_of_garbage(tmp_path: Path, garbage_slurmrestd: str) -> None:
    slurm = SlurmSource(SlurmSettings(name="slurm", backend="rest", rest_url=garbage_slurmrestd,
                                      rest_version="v0.0.38", interval_s=0.5, timeout_s=20.0))
    runtime = Runtime("t", [DemoSource(size=64, seed=1, interval_s=2.0), slurm], audit_path=tmp_path / "a.jsonl")
    app = HpcApp(runtime)
    latencies: list[float] = []
    try:
        async with app.run_test(size=(160, 50)) as pilot:
            heat = app.dashboard.query_one(NodeHeatmap)
            await _poll(lambda: bool(slurm.calls), 60.0)  # the garbage is flowing
            with RssPeak() as rss:
                end, key = time.monotonic() + 8.0, "l"
                while time.monotonic() < end:
                    before = heat.cursor
                    t0 = time.perf_counter()
                    await pilot.press(key)
                    await _poll(lambda: heat.cursor != before, 20.0, step=0.001)  # noqa: B023  (read at once)
                    await pilot.pause()  # drawn
                    latencies.append(time.perf_counter() - t0)
                    key = "h" if key == "l" else "l"
                    await asyncio.sleep(0.05)
            health = runtime.store.snapshot().sources.get("slurm")
            refreshes = health.consecutive_errors if health is not None else 0
    finally:
        await runtime.stop()
    p90 = statistics.quantiles(latencies, n=10)[-1]
    worst = max(latencies)
    print(f"{len(latencies)} keys, p50 {statistics.median(latencies) * 1000:.0f} ms, p90 {p90 * 1000:.0f} ms, "
          f"max {worst * 1000:.0f} ms; {refreshes} refreshes of 4 x 50 MiB garbage; RSS +{rss.growth_mib:.0f} MiB")
    # generous for a loaded 2-core machine: the old code's keys waited seconds
    # Generous bounds (a shared 2-core CI machine; measured here p90 0.2–0.4 s quiet, 1.6 s at load 10):
    # the old code, which read and repaired the garbage whole, answered keys after up to 40 s.
    assert p90 < 3.0 and worst < 8.0, (p90, worst)
    # nodes and jobs (JSON-looking garbage) are read whole, each once more while joined: ~200 MiB;
    # the old code peaked at ~930 MB
    assert rss.growth_mib < 400, f"RSS grew {rss.growth_mib:.0f} MiB"
    assert refreshes >= 2, f"only {refreshes} refreshes read the garbage during the test"
    assert health is not None and health.last_error is not None, health
    assert "invalid JSON" in health.last_error and "unreachable" not in health.last_error, health.last_error
