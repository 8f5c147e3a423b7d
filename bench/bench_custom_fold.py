"""Folding custom-action output of many nodes (``clush -b`` style): time to fold and render.

    python bench/bench_custom_fold.py [NODES]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hpctui.actions.fold import NodeOutput, render


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 16384
    text = "Driver Version: {v}\nDeployment .......... Pass\nIntegration ......... Pass (8 GPUs)"
    outs = [NodeOutput(label=f"gpu{i:05d}", output=text.format(v="550.54.15" if i % 7 else "535.161.08"),
                       rc=0 if i % 97 else 1) if i % 211 else NodeOutput(label=f"gpu{i:05d}", error="connection refused")
            for i in range(1, n + 1)]
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        out = render(outs)
        best = min(best, time.perf_counter() - t)
    print(f"{n} nodes: fold+render {best * 1000:.1f} ms (best of 5), {len(out.splitlines())} lines")


if __name__ == "__main__":
    main()
