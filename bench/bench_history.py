"""Per-GPU / per-port history rings (hpctui.core.series_history): cost per poll in Store.apply and memory.

Run: ``python bench/bench_history.py`` (from the repo root).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "ui"))

from synth import snapshot  # noqa: E402

from hpctui.core.series_history import SeriesHistory  # noqa: E402
from hpctui.model import IbPort  # noqa: E402


def ports(node: str, k: int) -> tuple[IbPort, ...]:
    return tuple(IbPort(node=node, device=f"mlx5_{d}", port=1,
                        counters={"port_rcv_data": k * 1_000_000 + d, "port_xmit_data": k * 2_000_000 + d},
                        deltas={"symbol_error": 0}) for d in range(8))


def run(n: int, polls: int = 20, watched: int = 0) -> tuple[float, int, int]:
    snap = snapshot(n)
    hist = SeriesHistory()
    for i in range(watched):
        hist.watch(f"n{i:05d}")
    ibs = [{name: ports(name, k) for name in snap.gpus} for k in range(2)]
    times = []
    for k in range(polls):
        t0 = time.process_time()
        hist.add_gpus(2.0 * k, snap.gpus, ibs[k % 2])
        times.append(time.process_time() - t0)
    return 1000 * sorted(times)[len(times) // 2], hist.nbytes, hist.bound_bytes()


def main() -> None:
    print(f"{'case':<40} {'ms/poll':>8} {'MB now':>8} {'MB bound':>9}")
    for label, n, watched in (("64 nodes × 8 GPUs + 8 ports", 64, 0), ("512 nodes (all kept)", 512, 0),
                              ("16,384 nodes, 0 watched", 16384, 0), ("16,384 nodes, 50 watched", 16384, 50)):
        ms, now, bound = run(n, watched=watched)
        print(f"{label:<40} {ms:8.2f} {now / 1e6:8.1f} {bound / 1e6:9.1f}")


if __name__ == "__main__":
    main()
