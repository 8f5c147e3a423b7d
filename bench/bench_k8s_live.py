"""10,000 pods on the real kube-apiserver v1.20.2 test bed (tests/testbed/k8s; build it first
with .ci/k8s-deps.sh): time of the source's first collect (paginated list + convert) and how
long 100 status updates take to arrive by watch. Run: ``python bench/bench_k8s_live.py [N]``."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "testbed" / "k8s"))

from k8slab import K8sLab, create_pods  # noqa: E402

from hpctui.sources.k8s.settings import K8sSettings  # noqa: E402
from hpctui.sources.k8s.source import K8sSource  # noqa: E402


async def main(n: int) -> None:
    lab = K8sLab()
    lab.start()
    try:
        lab.ensure_namespace("hpc")
        lab.make_node("n1")
        t = time.perf_counter()
        create_pods(lab, "hpc", n, "n1")
        print(f"created {n} pods in {time.perf_counter() - t:.1f} s (set-up, not the source)")
        src = K8sSource(K8sSettings(kubeconfig=str(lab.kubeconfig()), events=False, queues=False, timeout_s=300))
        t = time.perf_counter()
        res = await src.collect()
        print(f"first collect: {len(res.pods or ())} pods in {time.perf_counter() - t:.2f} s "
              f"(list in pages of 500 + convert, in the worker thread)")
        t = time.perf_counter()
        for i in range(100):
            lab.merge(f"/api/v1/namespaces/hpc/pods/bulk-{i:05d}/status", {"status": {"phase": "Failed"}})
        patched = time.perf_counter() - t
        for _ in range(100_000):
            if sum(p.phase == "Failed" for p in (await src.collect()).pods or ()) >= 100:
                break
            await asyncio.sleep(0.05)
        print(f"100 status patches ({patched:.2f} s to send) all seen by watch after {time.perf_counter() - t:.2f} s")
        t = time.perf_counter()
        for _ in range(20):
            await src.collect()
        print(f"collect() with {n} pods, nothing new: {(time.perf_counter() - t) / 20 * 1000:.2f} ms")
        await src.close()
    finally:
        lab.stop()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000))
