"""Store merging and the poll loop: a hung or failing source costs a stale marker, not the UI."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from hpctui.core.poller import Poller, backoff_delay
from hpctui.core.store import NodeNameMap, Store
from hpctui.model import Gpu, K8sNodeInfo, Part, Pod, SlurmNodeInfo, SourceResult


class Clock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_store_joins_slurm_and_k8s_by_mapped_name_and_tracks_part_ages() -> None:
    clock = Clock()
    store = Store("c1", name_map=NodeNameMap({"special-k8s": "gpu02"}, strip_suffix=".cluster.local"), clock=clock)
    store.apply(SourceResult(source="slurm", time=990.0, slurm_nodes={
        "gpu01": SlurmNodeInfo(base_state="IDLE"), "gpu02": SlurmNodeInfo(base_state="MIXED")}))
    store.apply(SourceResult(source="k8s", time=995.0,
                             k8s_nodes={"gpu01.cluster.local": K8sNodeInfo(name="gpu01.cluster.local",
                                                                           conditions={"Ready": "True"}),
                                        "special-k8s": K8sNodeInfo(name="special-k8s"),
                                        "k8s-only": K8sNodeInfo(name="k8s-only")},
                             pods=(Pod(namespace="ns", name="p", node="gpu01.cluster.local"),)))
    snap = store.snapshot()
    assert list(snap.nodes) == ["gpu01", "gpu02", "k8s-only"]
    assert snap.nodes["gpu01"].slurm is not None and snap.nodes["gpu01"].k8s is not None
    assert snap.nodes["gpu02"].k8s is not None and snap.nodes["gpu02"].k8s.ready == "Unknown"
    assert snap.pods[0].node == "gpu01"
    assert snap.part_age(Part.SLURM_NODES, now=1000.0) == 10.0
    assert snap.part_age(Part.K8S_NODES, now=1000.0) == 5.0
    assert snap.part_age(Part.GPUS, now=1000.0) is None


def test_store_caches_snapshot_until_change_and_keeps_history() -> None:
    store = Store("c1", history_length=3)
    store.apply(SourceResult(source="s", time=1.0, gpus={"n1": (Gpu(node="n1", index=0, util_pct=10.0),)}))
    first = store.snapshot()
    assert store.snapshot() is first
    version = store.version
    for t in (2.0, 3.0, 4.0):
        store.apply(SourceResult(source="s", time=t, gpus={"n1": (Gpu(node="n1", index=0, util_pct=t * 10),)}))
    assert store.version == version + 3
    assert store.snapshot() is not first
    assert [v for _, v in store.history.get("node:n1:util")] == [20.0, 30.0, 40.0]
    assert [t for t, _ in store.history.get("node:n1:util")] == [2.0, 3.0, 4.0]


def test_history_is_a_node_mean_and_skips_reused_readings() -> None:
    store = Store("c1")
    gpus = (Gpu(node="n1", index=0, util_pct=10.0, temp_c=50.0), Gpu(node="n1", index=1, util_pct=None, temp_c=70.0))
    store.apply(SourceResult(source="s", time=1.0, gpus={"n1": gpus}))
    store.apply(SourceResult(source="s", time=2.0, gpus={"n1": gpus}))  # same objects: not a new sample
    assert store.history.get("node:n1:util") == [(1.0, 10.0)]  # N/A GPUs do not drag the mean to 0
    assert store.history.get("node:n1:temp") == [(1.0, 60.0)]
    assert store.history.get("node:n1:power") == []


def test_errors_keep_old_data_and_count_up() -> None:
    clock = Clock(100.0)
    store = Store("c1", clock=clock)
    store.register_source("slurm", "slurm")
    store.apply(SourceResult(source="slurm", time=100.0, slurm_nodes={"n1": SlurmNodeInfo(base_state="IDLE")}))
    clock.t = 150.0
    store.record_error("slurm", "slurmctld unreachable")
    store.record_error("slurm", "slurmctld unreachable")
    snap = store.snapshot()
    health = snap.sources["slurm"]
    assert health.kind == "slurm"
    assert not health.ok and health.consecutive_errors == 2
    assert health.age(150.0) == 50.0
    assert "n1" in snap.nodes  # old data stays, with its age


def test_backoff_grows_and_caps() -> None:
    assert backoff_delay(2.0, 0) == 2.0
    assert backoff_delay(2.0, 1) == 4.0
    assert backoff_delay(2.0, 3) == 16.0
    assert backoff_delay(2.0, 30) == 60.0


class FakeSource:
    """A source whose collect() can be made to hang or fail."""

    def __init__(self, name: str, mode: str = "ok", interval_s: float = 0.05) -> None:
        self.name = name
        self.kind = "fake"
        self.interval_s = interval_s
        self.timeout_s = 0.2
        self.mode = mode
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0

    async def collect(self) -> SourceResult:
        self.calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.mode == "hang":
                await asyncio.sleep(3600)
            if self.mode == "fail":
                raise ConnectionError("controller unreachable\nsecond line is dropped")
            await asyncio.sleep(0.01)
            return SourceResult(source=self.name, time=float(self.calls),
                                slurm_nodes={f"{self.name}-n": SlurmNodeInfo(base_state="IDLE")})
        finally:
            self.in_flight -= 1

    async def close(self) -> None:
        return None


class Polls:
    """The poller's on_change hook as an event: wait for a condition on what was polled, no sleeps."""

    def __init__(self) -> None:
        self.count = 0
        self._event = asyncio.Event()

    def __call__(self) -> None:
        self.count += 1
        self._event.set()

    async def until(self, predicate: Callable[[], bool]) -> None:
        async with asyncio.timeout(10):  # a guard against a hang, not a measurement
            while not predicate():
                self._event.clear()
                await self._event.wait()


async def test_hung_source_times_out_while_others_keep_refreshing() -> None:
    store = Store("c1")
    hung, good = FakeSource("hung", "hang"), FakeSource("good")
    polls = Polls()
    poller = Poller([hung, good], store, on_change=polls)
    poller.start()
    try:
        await polls.until(lambda: "timed out" in (store.health()["hung"].last_error or ""))  # the hung poll ended ...
        good_before = good.calls
        assert good_before >= 1, "the healthy source polled while the other one hung"
        await polls.until(lambda: good.calls >= good_before + 3)  # ... and the healthy one keeps going
    finally:
        await poller.stop()
    health = store.health()
    assert health["good"].ok
    assert not health["hung"].ok and "timed out" in (health["hung"].last_error or "")
    assert hung.calls >= 1 and good.max_in_flight == 1 and hung.max_in_flight == 1, "polls never overlap"
    assert polls.count >= good.calls


async def test_failing_source_reports_first_line_and_backs_off(monkeypatch: pytest.MonkeyPatch) -> None:
    import hpctui.core.poller as poller_module

    waits: list[tuple[float, int]] = []

    def recording_backoff(interval_s: float, errors: int) -> float:
        waits.append((interval_s, errors))
        return 0.0  # no real waiting: the loop's arguments are what is under test

    monkeypatch.setattr(poller_module, "backoff_delay", recording_backoff)
    store = Store("c1")
    bad = FakeSource("bad", "fail", interval_s=0.05)
    polls = Polls()
    poller = Poller([bad], store, on_change=polls)
    poller.start()
    try:
        await polls.until(lambda: len(waits) >= 4)
    finally:
        await poller.stop()
    health = store.health()["bad"]
    assert health.last_error == "ConnectionError: controller unreachable"
    assert waits[:4] == [(0.05, 1), (0.05, 2), (0.05, 3), (0.05, 4)], "each failure doubles the next wait"
    assert [backoff_delay(0.05, e) for _, e in waits[:4]] == pytest.approx([0.1, 0.2, 0.4, 0.8])


async def test_refresh_now_wakes_the_loop() -> None:
    store = Store("c1")
    src = FakeSource("s", interval_s=3600.0)  # without the wake-up, no second poll for an hour
    polls = Polls()
    poller = Poller([src], store, on_change=polls)
    poller.start()
    try:
        await polls.until(lambda: polls.count == 1)
        assert src.calls == 1
        poller.refresh_now()
        await polls.until(lambda: polls.count == 2)
    finally:
        await poller.stop()
    assert src.calls == 2


async def test_first_polls_wait_for_the_first_frame_then_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """``start(after=...)``: the polls begin when the event is set (the UI's first frame), and
    without it at most FIRST_POLL_WAIT_S later; ``stop`` cancels tasks that are still waiting."""
    import hpctui.core.poller as poller_module

    store = Store("c1")
    src = FakeSource("s", interval_s=3600.0)
    painted = asyncio.Event()
    poller = Poller([src], store)
    poller.start(painted)
    await asyncio.sleep(0.1)
    assert src.calls == 0 and poller.running  # waiting for the frame
    painted.set()
    await asyncio.sleep(0.1)
    assert src.calls == 1
    await poller.stop()

    monkeypatch.setattr(poller_module, "FIRST_POLL_WAIT_S", 0.05)
    late = Poller([src], store)
    late.start(asyncio.Event())  # never set: the wait is bounded
    await asyncio.sleep(0.3)
    assert src.calls == 2
    await late.stop()

    never = Poller([src], store)
    monkeypatch.setattr(poller_module, "FIRST_POLL_WAIT_S", 3600.0)
    never.start(asyncio.Event())
    await never.stop()  # a task still waiting is cancelled: nothing left behind
    assert not never.running and src.calls == 2


@pytest.mark.parametrize("n", [1, 3])
async def test_poll_all_once(n: int) -> None:
    store = Store("c1")
    sources = [FakeSource(f"s{i}") for i in range(n)]
    await Poller(sources, store).poll_all_once()
    assert len(store.snapshot().nodes) == n


def test_source_warnings_reach_health_and_clear_on_a_clean_refresh() -> None:
    store = Store("c1")
    store.apply(SourceResult(source="slurm", time=1.0, warnings=("sinfo --json unreadable; used scontrol text",)))
    assert store.health()["slurm"].warnings == ("sinfo --json unreadable; used scontrol text",)
    store.record_error("slurm", "boom")
    assert store.health()["slurm"].warnings, "an error keeps the last warnings"
    store.apply(SourceResult(source="slurm", time=2.0))
    assert store.health()["slurm"].warnings == ()


def test_a_snapshot_built_while_a_change_lands_is_not_kept() -> None:
    """The poller applies big results in a worker thread: a view built on the loop meanwhile may
    mix old and new parts, so it serves that one draw but is not cached for the next."""
    from hpctui.core import store as store_module

    store = Store("c")
    store.register_source("s", "demo")
    store.apply(SourceResult(source="s", time=1.0, slurm_nodes={"a": SlurmNodeInfo(base_state="IDLE")}))
    real_union = store_module._union
    calls = []

    def union_with_a_change_landing(parts):  # type: ignore[no-untyped-def]
        if not calls:
            calls.append(1)
            store.apply(SourceResult(source="s", time=2.0,
                                     slurm_nodes={"b": SlurmNodeInfo(base_state="IDLE")}))
        return real_union(parts)

    store_module._union = union_with_a_change_landing
    try:
        store._cached = None
        store.snapshot()
    finally:
        store_module._union = real_union
    assert store._cached is None  # not kept
    assert list(store.snapshot().nodes) == ["b"]  # the next read builds the settled view
