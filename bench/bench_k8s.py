"""Time the Kubernetes source's hot paths at 10,000 pods, without a server.

A stand-in client replays a paginated list of N pod objects (the JSON the API server
sends, decoded) and then M watch events; the real source code converts and applies them.
Prints: list+convert time, cost per watch event, collect() (the copy handed to the store),
Store.apply + snapshot, and the pods pane's ordering. Run: ``python bench/bench_k8s.py [N] [M]``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hpctui.core.store import Store
from hpctui.sources.k8s.settings import K8sSettings
from hpctui.sources.k8s.source import K8sSource, Stream
from hpctui.ui.widgets.tables import pod_trouble_first


def pod(i: int, phase: str = "Running") -> dict[str, Any]:
    return {"metadata": {"name": f"train-{i:05d}", "namespace": "hpc", "uid": f"u{i}",
                         "creationTimestamp": "2024-05-01T10:00:00Z", "labels": {"app": "train"},
                         "ownerReferences": [{"kind": "Job", "name": "train", "controller": True}]},
            "spec": {"nodeName": f"gpu{i % 512:03d}", "schedulerName": "default-scheduler",
                     "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
            "status": {"phase": phase, "startTime": "2024-05-01T10:00:05Z",
                       "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [{"name": "c", "restartCount": 0, "state": {"running": {}}}]}}


class FakeClient:
    def __init__(self, n: int, m: int) -> None:
        self.items = [pod(i) for i in range(n)]
        self.events = [{"type": "MODIFIED", "object": {**pod(i % n, "Failed"),
                                                       "metadata": {**pod(i % n)["metadata"],
                                                                    "resourceVersion": str(1000 + i)}}}
                       for i in range(m)]
        self.closed = False

    def list_all(self, path: str, **_kw: Any) -> tuple[list[Any], str]:
        return self.items, "999"

    def watch(self, path: str, **_kw: Any) -> Any:
        yield from self.events

    def close(self) -> None:
        self.closed = True


async def main(n: int, m: int) -> None:
    src = K8sSource(K8sSettings(events=False))
    fake = FakeClient(n, m)
    src.client = fake  # type: ignore[assignment]
    stream: Stream = next(s for s in src.streams if s.resource == "pods")
    t = time.perf_counter()
    src._list(stream)
    t_list = time.perf_counter() - t
    store = Store("bench")
    store.register_source(src.name, src.kind)
    t = time.perf_counter()
    res = src._result()
    t_collect = time.perf_counter() - t
    t = time.perf_counter()
    store.apply(res)
    snap = store.snapshot()
    t_store = time.perf_counter() - t
    t = time.perf_counter()
    src._watch(stream)
    t_watch = time.perf_counter() - t
    t = time.perf_counter()
    res = src._result()
    t_collect2 = time.perf_counter() - t
    t = time.perf_counter()
    store.apply(res)
    snap = store.snapshot()
    t_store2 = time.perf_counter() - t
    t = time.perf_counter()
    rows = pod_trouble_first(snap.pods)
    t_sort = time.perf_counter() - t
    assert len(rows) == n
    print(f"pods={n} watch_events={m}")
    print(f"  list + convert          {t_list * 1000:8.1f} ms  ({t_list / n * 1e6:.1f} µs/pod)")
    print(f"  watch events applied    {t_watch * 1000:8.1f} ms  ({t_watch / max(m, 1) * 1e6:.1f} µs/event, one entry each)")
    print(f"  collect() after list    {t_collect * 1000:8.2f} ms")
    print(f"  collect() after events  {t_collect2 * 1000:8.2f} ms")
    print(f"  Store.apply+snapshot    {t_store * 1000:8.2f} ms / {t_store2 * 1000:.2f} ms")
    print(f"  pods pane ordering      {t_sort * 1000:8.2f} ms")
    await src.close()


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    asyncio.run(main(args[0] if args else 10_000, args[1] if len(args) > 1 else 1_000))
