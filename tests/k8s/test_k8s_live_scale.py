"""10,000 real pods on the real API server: listed in pages, then kept current by watch
events that each touch one entry (no relist). Timings live in bench/bench_k8s.py."""

from __future__ import annotations

import pytest
from k8s_helpers import collect_until, make_source
from k8slab import K8sLab, create_pods

from hpctui.core.store import Store
from hpctui.model import Part
from hpctui.ui.widgets.tables import pod_trouble_first

pytestmark = pytest.mark.live
N = 10_000


async def test_ten_thousand_pods_load_and_update(lab: K8sLab) -> None:
    lab.make_node("n1")
    create_pods(lab, "hpc", N, "n1")
    src = make_source(lab, events=False, timeout_s=120.0)
    store = Store("lab")
    store.register_source(src.name, src.kind)
    try:
        res = await src.collect()
        assert res.pods is not None and len(res.pods) == N
        store.apply(res)
        again = await src.collect()
        assert again.pods is res.pods  # nothing changed: the same tuple, not a rebuild
        for i in range(100):
            lab.merge(f"/api/v1/namespaces/hpc/pods/bulk-{i:05d}/status", {"status": {
                "phase": "Failed", "reason": "Evicted", "message": "bulk update"}})
        res = await collect_until(src, "100 watched updates", lambda r: r.pods is not None and sum(
            p.phase == "Failed" for p in r.pods) == 100, timeout=180)
        store.apply(res)
        snap = store.snapshot()
        assert len(snap.pods) == N and snap.part_errors(Part.PODS) == []
        assert [p.phase for p in pod_trouble_first(snap.pods)[:100]] == ["Failed"] * 100
        stats = next(v for k, v in src.stats().items() if k.startswith("pods:"))
        assert stats["lists"] == 1 and stats["watch_events"] >= 100 and stats["items"] == N
    finally:
        await src.close()
        lab.http("DELETE", "/api/v1/namespaces/hpc/pods?gracePeriodSeconds=0")
