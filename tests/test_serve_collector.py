"""One collector for many viewers (hpctui.core.collector_hub): the collector polls, every session
applies what it publishes and polls nothing; a slow or dead session never holds the others back;
a collector that goes away is a stale source in each session, which reconnects when it returns.

Real components throughout: the demo source, the real Poller/Store/Runtime, a real unix socket
under tmp_path. The end-to-end run of ``hpctui serve`` with a collector process is in
tests/test_serve.py (marked live); the slurmctld RPC count is tests/slurm/test_serve_rpcs.py.
"""

from __future__ import annotations

import asyncio
import os
import stat
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from hpctui.core import collector_hub as hub_mod
from hpctui.core.collector_hub import (
    CollectorFeed,
    CollectorHub,
    Failed,
    Hello,
    Landed,
    ProtocolError,
    check_socket,
    frame,
    private_socket_dir,
    read_message,
)
from hpctui.core.poller import Poller
from hpctui.core.runtime import Runtime
from hpctui.core.store import Store
from hpctui.model import SourceResult
from hpctui.model.action import ActionKind
from hpctui.sources.demo.source import DemoSource


class CountingSource:
    """The demo source, counting its collects (what a session must never do)."""

    def __init__(self, size: int = 8, name: str = "demo") -> None:
        self.inner = DemoSource(size=size, seed=0, name=name)
        self.name, self.kind, self.interval_s = name, "demo", 3600.0
        self.collects = 0

    async def collect(self) -> SourceResult:
        self.collects += 1
        return await self.inner.collect()

    async def close(self) -> None:
        await self.inner.close()

    def __getattr__(self, name: str) -> object:  # actions, capabilities: the demo's own
        return getattr(self.inner, name)


async def until(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        await asyncio.sleep(0.02)


def socket_in(tmp_path: Path) -> Path:
    directory = private_socket_dir(tmp_path)
    return directory / hub_mod.SOCKET_NAME


class Collector:
    """The collector's half, in this process: one source, one poller (not looping: the test polls)."""

    def __init__(self, path: Path, **hub_options: object) -> None:
        self.source = CountingSource()
        self.store = Store("demo")
        self.poller = Poller([self.source], self.store)
        self.hub = CollectorHub(self.poller, path, cluster="demo", **hub_options)  # type: ignore[arg-type]

    async def poll(self) -> float:
        assert await self.poller.poll_once(self.source)
        return self.store.health()["demo"].last_success or 0.0


def session(path: Path, tmp_path: Path, i: int, *, read_only: bool = True) -> tuple[Runtime, CountingSource]:
    source = CountingSource()
    runtime = Runtime("demo", [source], read_only=read_only, audit_path=tmp_path / f"audit-{i}.jsonl")
    runtime.subscribe(path)
    return runtime, source


@pytest.fixture
async def collector(tmp_path: Path) -> AsyncIterator[Collector]:
    c = Collector(socket_in(tmp_path))
    await c.hub.start()
    yield c
    await c.hub.stop()
    await c.poller.stop()


def last_success(runtime: Runtime) -> float | None:
    return runtime.store.health()["demo"].last_success


@pytest.mark.parametrize("sessions", [1, 6])
async def test_the_collector_polls_once_per_round_whatever_the_sessions(
        collector: Collector, tmp_path: Path, sessions: int) -> None:
    started = [session(collector.hub.path, tmp_path, i) for i in range(sessions)]
    for runtime, _ in started:
        runtime.start()
    try:
        rounds = 4
        for _ in range(rounds):
            at = await collector.poll()
            await until(lambda at=at: all(last_success(rt) == at for rt, _ in started))  # type: ignore[misc]
        assert collector.source.collects == rounds, "one collect per round, however many sessions listen"
        assert [source.collects for _, source in started] == [0] * sessions, "no session polls its own source"
        for runtime, _ in started:
            snapshot = runtime.store.snapshot()
            assert len(snapshot.gpus) == 8 and snapshot.nodes, "each session has the cluster, in its own store"
            assert runtime.frame().findings is not None
        assert len(collector.hub.subscribers) == sessions
    finally:
        for runtime, _ in started:
            await runtime.stop()


async def test_many_refresh_requests_are_one_collect(tmp_path: Path) -> None:
    frozen = 100.0
    c = Collector(socket_in(tmp_path), monotonic=lambda: frozen)
    await c.hub.start()
    c.poller.start()  # its loop: one collect at start, then one per refresh asked
    started = [session(c.hub.path, tmp_path, i) for i in range(5)]
    try:
        for runtime, _ in started:
            runtime.start()
        await until(lambda: all(rt.poller.feed.connected for rt, _ in started))  # type: ignore[union-attr]
        await until(lambda: all(last_success(rt) is not None for rt, _ in started))
        assert c.source.collects == 1
        for runtime, _ in started:
            runtime.refresh_now()  # five tabs press r within the same second (the hub's clock is frozen)
        await until(lambda: c.source.collects == 2)
        await asyncio.sleep(0.5)
        assert c.source.collects == 2, "five refresh requests in one second are one collect"
    finally:
        for runtime, _ in started:
            await runtime.stop()
        await c.hub.stop()
        await c.poller.stop()


async def test_a_late_session_starts_from_the_newest_result_and_error(collector: Collector, tmp_path: Path) -> None:
    at = await collector.poll()
    collector.poller._failed("demo", "squeue: timed out")
    runtime, source = session(collector.hub.path, tmp_path, 0)
    runtime.start()
    try:
        await until(lambda: runtime.store.health()["demo"].last_error is not None)
        health = runtime.store.health()["demo"]
        assert health.last_success == at and health.last_error == "squeue: timed out"
        assert len(runtime.store.snapshot().gpus) == 8, "the newest result came first"
        assert source.collects == 0
    finally:
        await runtime.stop()


async def test_a_slow_subscriber_is_dropped_and_never_holds_the_others(tmp_path: Path) -> None:
    c = Collector(socket_in(tmp_path), queue_frames=3, beat_s=3600.0)
    await c.hub.start()
    stalled_reader, stalled_writer = await asyncio.open_unix_connection(str(c.hub.path))  # connects, never reads
    runtime, _ = session(c.hub.path, tmp_path, 0)
    runtime.start()
    try:
        await until(lambda: len(c.hub.subscribers) == 2)
        for _ in range(12):  # ~0.2 MB a result: the stalled socket's buffers fill, then its queue
            at = await c.poll()
            await until(lambda at=at: last_success(runtime) == at)  # type: ignore[misc]
        assert c.hub.dropped == 1 and len(c.hub.subscribers) == 1, "the stalled one was dropped"
        assert last_success(runtime) == at, "the reading session got every result meanwhile"
    finally:
        stalled_writer.close()
        await runtime.stop()
        await c.hub.stop()
        await c.poller.stop()
    del stalled_reader


async def test_a_collector_gone_is_stale_data_then_a_reconnect(tmp_path: Path) -> None:
    path = socket_in(tmp_path)
    first = Collector(path)
    await first.hub.start()
    runtime, source = session(path, tmp_path, 0)
    changes: list[int] = []
    runtime.start(lambda: changes.append(runtime.store.version))
    feed = runtime.poller.feed
    assert isinstance(feed, CollectorFeed)
    try:
        at = await first.poll()
        await until(lambda: last_success(runtime) == at)
        await first.hub.stop()  # the collector goes away
        await until(lambda: runtime.store.health()["demo"].last_error is not None)
        health = runtime.store.health()["demo"]
        assert "reconnecting" in (health.last_error or "") and health.last_success == at, "stale, not empty"
        assert runtime.frame().snapshot.gpus, "the session still draws the last data"

        second = Collector(path)  # a new collector on the same socket (hpctui serve restarts it)
        await second.hub.start()
        again = await second.poll()
        await until(lambda: last_success(runtime) == again and runtime.store.health()["demo"].ok)
        assert feed.connects == 2 and source.collects == 0
        await second.hub.stop()
        await second.poller.stop()
    finally:
        await runtime.stop()
        await first.poller.stop()


async def test_a_reconnect_to_the_same_collector_counts_nothing_twice(tmp_path: Path) -> None:
    """Dropped by the collector (a slow session), the session reconnects and gets the newest result whole
    again: the source is fresh, and its events and history samples are not added a second time."""
    import msgspec

    from hpctui.model import Severity
    from hpctui.model.event import Event

    c = Collector(socket_in(tmp_path))
    inner_collect = c.source.collect

    async def with_an_event() -> SourceResult:
        result = await inner_collect()
        event = Event(time=result.time, source="demo", object="node/n1", severity=Severity.WARNING, message="once")
        return msgspec.structs.replace(result, events=(event,))

    c.source.collect = with_an_event  # type: ignore[method-assign]
    await c.hub.start()
    runtime, _ = session(c.hub.path, tmp_path, 0)
    runtime.start(lambda: None)
    feed = runtime.poller.feed
    assert isinstance(feed, CollectorFeed)
    try:
        at = await c.poll()
        await until(lambda: last_success(runtime) == at)

        def once() -> int:
            return sum(e.message == "once" for e in runtime.store.snapshot().events)

        node = next(iter(runtime.store.snapshot().gpus))
        samples = len(runtime.store.history.get(f"node:{node}:util"))
        assert once() == 1
        for sub in list(c.hub.subscribers):
            sub.drop("more than 1 frames behind")  # what the hub does to a session that falls behind
        await until(lambda: feed.connects == 2 and runtime.store.health()["demo"].ok)
        await asyncio.sleep(0.2)
        assert once() == 1, "the replayed result's event is not added again"
        assert len(runtime.store.history.get(f"node:{node}:util")) == samples, "nor its history samples"
        assert last_success(runtime) == at and runtime.frame().snapshot.gpus, "fresh, with the data it had"
        again = await c.poll()  # the next new result lands whole as usual
        await until(lambda: last_success(runtime) == again)
        assert once() == 2
    finally:
        await runtime.stop()
        await c.hub.stop()
        await c.poller.stop()


async def test_a_collector_silent_too_long_is_called_gone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A collector that is there but says nothing (stopped, hung): no beat within silent_after_s."""
    monkeypatch.setattr(hub_mod, "QUIET_S", 0.0)
    c = Collector(socket_in(tmp_path), beat_s=3600.0)
    await c.hub.start()
    store = Store("demo")
    poller = Poller([CountingSource()], store)
    poller.feed = CollectorFeed(c.hub.path, cluster="demo", silent_after_s=0.3)
    poller.start()
    try:
        await until(lambda: (store.health()["demo"].last_error or "").startswith("the collector sent nothing"))
    finally:
        await poller.stop()
        await c.hub.stop()


async def test_a_session_of_another_cluster_is_refused(collector: Collector) -> None:
    store = Store("prod")
    poller = Poller([CountingSource()], store)
    feed = CollectorFeed(collector.hub.path, cluster="prod")
    poller.feed = feed
    poller.start()
    try:
        await until(lambda: feed.problem is not None and "not 'prod'" in feed.problem)
        assert feed.connects == 0
    finally:
        await poller.stop()


async def test_actions_plan_and_run_in_the_session_with_its_audit(collector: Collector, tmp_path: Path) -> None:
    at = await collector.poll()
    runtime, source = session(collector.hub.path, tmp_path, 7, read_only=False)
    runtime.start()
    try:
        await until(lambda: last_success(runtime) == at)
        node = sorted(runtime.store.snapshot().nodes)[0]
        plan = runtime.plan_action(ActionKind.DRAIN_NODES, [node], {"reason": "served session"})
        result = await runtime.run_action(plan, confirmation=True)
        assert result.ok, result
        audit = (tmp_path / "audit-7.jsonl").read_text()
        assert node in audit and "served session" in audit, "audited by the session's own executor"
        assert source.collects == 0 and collector.source.collects == 1, "acting polled nothing"
    finally:
        await runtime.stop()


async def test_the_socket_is_private(collector: Collector, tmp_path: Path) -> None:
    path = collector.hub.path
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_ISSOCK(path.stat().st_mode)
    check_socket(path)
    path.parent.chmod(0o755)
    try:
        with pytest.raises(ProtocolError, match="mode 0700"):
            check_socket(path)
    finally:
        path.parent.chmod(0o700)
    plain = tmp_path / "plain"
    plain.mkdir(mode=0o700)
    (plain / "collector.sock").write_text("")
    with pytest.raises(ProtocolError, match="not a socket"):
        check_socket(plain / "collector.sock")


async def test_frames_are_typed_and_bounded() -> None:
    reader = asyncio.StreamReader()
    hello = Hello(hub_mod.PROTOCOL, "demo", (hub_mod.SourceInfo("demo", "demo", 2.0),))
    result = SourceResult(source="demo", time=5.0, warnings=("w",))
    for message in (hello, Landed(result, 0.5), Failed("demo", "boom", 6.0)):
        reader.feed_data(frame(message))
    assert await read_message(reader, silent_after_s=1) == hello
    assert await read_message(reader, silent_after_s=1) == Landed(result, 0.5)
    assert await read_message(reader, silent_after_s=1) == Failed("demo", "boom", 6.0)
    reader.feed_data(hub_mod.HEADER.pack(100) + b"x" * 100)
    with pytest.raises(ProtocolError, match="at most 10"):
        await read_message(reader, silent_after_s=1, limit=10)
    bad = asyncio.StreamReader()
    bad.feed_data(hub_mod.HEADER.pack(3) + b"\x93\x01\x02")
    with pytest.raises(ProtocolError, match="undecodable"):
        await read_message(bad, silent_after_s=1)
    with pytest.raises(TimeoutError):
        await read_message(asyncio.StreamReader(), silent_after_s=0.05)


def test_the_socket_directory_is_fresh_and_private(tmp_path: Path) -> None:
    one, two = private_socket_dir(tmp_path), private_socket_dir(tmp_path)
    assert one != two and one.parent == tmp_path
    assert stat.S_IMODE(one.stat().st_mode) == 0o700 and one.stat().st_uid == os.geteuid()


async def test_deltas_keep_what_the_source_reused_the_same_object(tmp_path: Path) -> None:
    """What the source reused (a node's unchanged Slurm state) is not sent again and stays the very same
    object in the session: its store takes no new sample of it and its findings skip the node, as in-process."""
    source = DemoSource(size=64, seed=0)
    first, second = await source.collect(), await source.collect()
    sent, keys, same = hub_mod.delta(first, second)
    assert second.slurm_nodes and sent.slurm_nodes is not None and len(sent.slurm_nodes) < len(second.slurm_nodes)
    assert len(hub_mod.frame(Landed(sent, 0.1, 2, 1, keys, same))) < len(hub_mod.frame(Landed(second, 0.1, 2)))
    rebuilt = hub_mod.undelta(first, sent, keys, same)
    assert rebuilt == second and list(rebuilt.slurm_nodes or {}) == list(second.slurm_nodes)
    reused = [n for n, v in second.slurm_nodes.items() if first.slurm_nodes and first.slurm_nodes.get(n) is v]
    assert reused and all((rebuilt.slurm_nodes or {})[n] is (first.slurm_nodes or {})[n] for n in reused)
    with pytest.raises(ProtocolError, match="names a node the base lacks"):
        hub_mod.undelta(SourceResult(source="demo", time=0.0, slurm_nodes={}), sent, {"slurm_nodes": keys["slurm_nodes"]}, ())
    with pytest.raises(ProtocolError, match="part 'fabric' the base lacks"):
        hub_mod.undelta(SourceResult(source="demo", time=0.0), sent, {}, ("fabric",))

    c = Collector(socket_in(tmp_path))
    c.source.inner = DemoSource(size=64, seed=0)
    await c.hub.start()
    runtime, _ = session(c.hub.path, tmp_path, 0)
    runtime.start()
    try:
        await until(lambda: c.hub.subscribers != set())
        at = await c.poll()
        await until(lambda: last_success(runtime) == at)
        before = runtime.frame()
        at = await c.poll()
        await until(lambda: last_success(runtime) == at)
        after = runtime.frame()
        kept = [n for n in after.snapshot.nodes
                if after.snapshot.nodes[n].slurm is before.snapshot.nodes[n].slurm]
        assert kept, "the nodes the source reused are the same objects in the session"
    finally:
        await runtime.stop()
        await c.hub.stop()
        await c.poller.stop()


def test_a_delta_against_a_result_the_session_lacks_is_refused() -> None:
    message = Landed(SourceResult(source="demo", time=1.0), 0.1, seq=5, base=4)
    with pytest.raises(ProtocolError, match="does not have"):
        CollectorFeed._rebuilt(message, {})
    with pytest.raises(ProtocolError, match="does not have"):
        CollectorFeed._rebuilt(message, {"demo": (3, SourceResult(source="demo", time=0.0))})


def test_a_switch_back_to_the_served_cluster_subscribes_again(tmp_path: Path) -> None:
    from hpctui.cli.main import served_by_collector
    from hpctui.core.clusters import ClusterSet

    path = tmp_path / "s" / "collector.sock"
    built = {name: Runtime(name, [CountingSource()], audit_path=tmp_path / f"{name}.jsonl") for name in ("lab", "prod")}
    clusters = ClusterSet(["lab", "prod"], built.__getitem__)
    clusters.prepare = served_by_collector("lab", path)
    assert clusters.build("lab").subscribed and not clusters.build("prod").subscribed


async def test_a_served_app_draws_the_collectors_data_and_r_asks_the_collector(tmp_path: Path) -> None:
    """The dashboard of a served tab (HpcApp, as `hpctui --collector SOCKET` runs it): drawn from the
    collector's first result, with no collect of its own; its `r` is one collect in the collector."""
    from hpctui.ui.app import HpcApp
    from hpctui.ui.widgets.node_heatmap import NodeHeatmap

    c = Collector(socket_in(tmp_path))
    await c.hub.start()
    c.poller.start()  # polls once now, then on a refresh asked (the interval is an hour)
    runtime, source = session(c.hub.path, tmp_path, 0)
    app = HpcApp(runtime, autostart=True)
    try:
        async with app.run_test(size=(160, 50)) as pilot:
            async def drawn() -> int:
                await pilot.pause(0.05)
                return len(app.screen.query_one(NodeHeatmap).names)

            deadline = time.monotonic() + 30
            while await drawn() == 0 and time.monotonic() < deadline:
                pass
            assert await drawn() == len(runtime.store.snapshot().nodes) > 0, "the heatmap shows the cluster"
            assert c.source.collects == 1 and source.collects == 0
            await pilot.press("r")
            deadline = time.monotonic() + 30
            while c.source.collects < 2 and time.monotonic() < deadline:
                await pilot.pause(0.05)
            assert c.source.collects == 2 and source.collects == 0, "r: one collect, in the collector"
    finally:
        await c.hub.stop()
        await c.poller.stop()
