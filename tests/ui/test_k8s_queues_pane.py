"""Kueue/Volcano queues are shown in the app (the pods pane's subtitle), not only by `snapshot`."""

from __future__ import annotations

from collections.abc import Callable

from uikit import load

from hpctui.core.runtime import Runtime
from hpctui.model import SourceResult
from hpctui.model.jobs import K8sQueueItem
from hpctui.ui.app import HpcApp
from hpctui.ui.fmt import k8s_queue_summary

QUEUES = (
    K8sQueueItem(kind="ClusterQueue", api="kueue.x-k8s.io/v1beta1", name="team-a-cq", state="Active",
                 pending=3, admitted=5),
    K8sQueueItem(kind="Queue", api="scheduling.volcano.sh/v1beta1", name="research", state="Open",
                 pending=None, admitted=2),
    K8sQueueItem(kind="Workload", api="kueue.x-k8s.io/v1beta1", name="job-sweep-1", namespace="team-a",
                 queue="team-a-lq", state="Pending", message="couldn't assign flavors"),
)


def test_summary_busiest_queue_first_unknown_counts_are_na() -> None:
    assert k8s_queue_summary(QUEUES) == ("ClusterQueue team-a-cq: 3 pending/5 admitted · "
                                         "Queue research: N/A pending/2 admitted · 1 workload(s) waiting")
    assert k8s_queue_summary(()) == ""
    many = tuple(K8sQueueItem(kind="LocalQueue", api="v", name=f"q{i}", pending=i) for i in range(6))
    assert k8s_queue_summary(many).endswith("+2 queues")


async def test_the_pods_pane_shows_the_queues(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await load(app, pilot)
        app.runtime.store.apply(SourceResult(source="k8s", time=app.runtime.clock(), k8s_queues=QUEUES))
        app.refresh_from_store()
        await pilot.pause()
        pane = app.dashboard.pods_pane
        assert "ClusterQueue team-a-cq: 3 pending/5 admitted" in str(pane.border_subtitle)
