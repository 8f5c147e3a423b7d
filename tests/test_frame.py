"""The runtime's frame: one frozen view per store version, its findings computed once, and the
UI port answering the screens' requests through the sources' capabilities."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hpctui.core.frame import Frame
from hpctui.core.runtime import Runtime, demo_runtime
from hpctui.findings.health import Thresholds
from hpctui.findings.index import FindingsIndex
from hpctui.model.accounting import AccountingInfo

T0 = 1_750_000_000.0


def _runtime(tmp_path: Path) -> Runtime:
    runtime = demo_runtime(size=32, seed=3, clock=lambda: T0, start_time=T0, audit_path=tmp_path / "audit.jsonl")
    asyncio.run(runtime.collect_once())
    return runtime


def test_one_frame_per_version_with_its_findings(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path)
    frame = runtime.frame()
    assert runtime.frame() is frame  # same version: the same object for every reader
    assert frame.version == runtime.store.version and frame.data_version == runtime.store.data_version
    assert frame.snapshot is runtime.store.snapshot()
    assert runtime.findings() is frame.findings and runtime.findings(frame.snapshot) is frame.findings
    assert frame.findings.by_node == Frame.of(frame.snapshot, runtime.thresholds, idle=frame.idle).findings.by_node
    assert frame.health is frame.snapshot.sources
    with pytest.raises(AttributeError):
        frame.version = 99  # type: ignore[misc]  # frozen


def test_a_health_change_keeps_the_findings_a_data_change_recomputes(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = _runtime(tmp_path)
    frame = runtime.frame()
    computed: list[object] = []
    original = runtime._findings.index

    def counting(snapshot: object, thresholds: Thresholds) -> FindingsIndex:
        computed.append(snapshot)
        return original(snapshot, thresholds)  # type: ignore[arg-type]

    monkeypatch.setattr(runtime._findings, "index", counting)
    runtime.store.record_error("demo", "controller unreachable")
    health = runtime.frame()
    assert health is not frame and health.version > frame.version and health.data_version == frame.data_version
    assert health.findings is frame.findings and health.workload is frame.workload and not computed
    assert health.health["demo"].last_error == "controller unreachable"
    runtime.store.add_events(())
    data = runtime.frame()
    assert data.data_version > frame.data_version and len(computed) == 1


def test_the_poller_builds_the_frame_before_the_ui_hears(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path)
    seen: list[Frame | None] = []
    runtime.poller.on_change = lambda: seen.append(runtime._frame)
    asyncio.run(runtime.collect_once())
    assert seen and seen[-1] is not None and seen[-1].version == runtime.store.version


def test_the_port_finds_abilities_by_capability(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path)  # the demo source: accounting, no history, no pods to inspect

    async def ask() -> tuple[object, ...]:
        return (await runtime.history("gpu0001"), await runtime.describe_pod("ns", "p"),
                await runtime.pod_logs("ns", "p"), await runtime.accounting("alice", None))

    history, described, logs, accounting = asyncio.run(ask())
    assert runtime.history_source is None and history is None and described is None and logs is None
    assert isinstance(accounting, AccountingInfo)
    assert set(runtime.poll_intervals()) == {s.name for s in runtime.sources}
    runtime.watch_series("gpu0002")
    assert runtime.series.node("gpu0002") is not None or runtime.store.series.tracks("gpu0002")
