"""Frames down, requests through the port: the app pushes the runtime's frame to every FrameView
(never a method found by name), SnapshotChanged carries the newest frame, and the dashboard's
widgets draw that frame's findings instead of running the health rules again."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.screen import Screen
from uikit import load

from hpctui.core.frame import Frame
from hpctui.core.runtime import Runtime
from hpctui.findings import index as index_module
from hpctui.ui.app import HpcApp
from hpctui.ui.frame_view import FrameView
from hpctui.ui.messages import SnapshotChanged


class Follower(Screen[None]):
    def __init__(self) -> None:
        super().__init__()
        self.frames: list[Frame] = []

    def show_frame(self, frame: Frame) -> None:
        self.frames.append(frame)


class NotAView(Screen[None]):
    """Has the old method name only: the app must not look it up."""

    def __init__(self) -> None:
        super().__init__()
        self.called = 0

    def update_snapshot(self, snapshot: object) -> None:
        self.called += 1


async def test_frames_reach_frame_views_only(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await load(app, pilot)
        other, follower = NotAView(), Follower()
        assert isinstance(follower, FrameView) and not isinstance(other, FrameView)
        await app.push_screen(other)
        await app.push_screen(follower)
        app.runtime.store.add_events(())
        app._on_store_change()
        pending = app._pending
        assert isinstance(pending, SnapshotChanged) and pending.frame is app.runtime.frame()
        app.runtime.store.add_events(())
        app._on_store_change()  # a change while pending: the same message, the newer frame
        assert app._pending is pending and pending.frame is app.runtime.frame()
        await pilot.pause()
        assert follower.frames == [app.runtime.frame()] and other.called == 0
        assert app.dashboard.frame is app.runtime.frame()


async def test_the_dashboard_draws_the_frames_findings(make_runtime: Callable[..., Runtime],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the runtime built the frame, drawing it runs no health rule anywhere in the UI."""
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.runtime.collect_once()
        frame = app.runtime.frame()
        ran: list[str] = []
        real = index_module._Incremental.compute

        def spy(self: object, snapshot: object, thresholds: object) -> object:
            ran.append("rules")
            return real(self, snapshot, thresholds)  # type: ignore[arg-type]

        monkeypatch.setattr(index_module._Incremental, "compute", spy)
        assert app.show_frame(frame)
        await pilot.pause()
        await pilot.pause()
        assert not ran, "a widget recomputed findings"
        assert app.dashboard.problems_pane.findings is frame.findings
        assert app.dashboard.heatmap._findings is frame.findings


async def test_heatmap_cursor_and_metric_are_validated_reactives() -> None:
    from synth import snapshot
    from textual.app import App, ComposeResult
    from textual.message import Message

    from hpctui.findings.health import Thresholds
    from hpctui.ui.heatmap_levels import Metric
    from hpctui.ui.themes import DEFAULT_VARIABLES
    from hpctui.ui.widgets.node_heatmap import NodeHeatmap

    seen: list[Message] = []

    class One(App[None]):
        def get_theme_variable_defaults(self) -> dict[str, str]:
            return dict(DEFAULT_VARIABLES)

        def compose(self) -> ComposeResult:
            yield NodeHeatmap(Thresholds(), id="hm")

        def on_node_heatmap_highlighted(self, event: NodeHeatmap.Highlighted) -> None:
            seen.append(event)

        def on_node_heatmap_metric_changed(self, event: NodeHeatmap.MetricChanged) -> None:
            seen.append(event)

    app = One()
    async with app.run_test(size=(60, 20)) as pilot:
        hm = app.query_one(NodeHeatmap)
        hm.update_snapshot(snapshot(40, gpus_per_node=1))
        await pilot.pause()
        seen.clear()
        hm.cursor = 1000  # clamped to the last node, and the screen hears of it
        await pilot.pause()
        assert hm.cursor == 39 and hm.cursor_node == "n00039"
        assert [e.node for e in seen if isinstance(e, NodeHeatmap.Highlighted)] == ["n00039"]
        hm.cursor = 39  # no change: no message
        hm.metric = Metric.UTIL
        await pilot.pause()
        assert [e.metric for e in seen if isinstance(e, NodeHeatmap.MetricChanged)] == [Metric.UTIL]
        assert len([e for e in seen if isinstance(e, NodeHeatmap.Highlighted)]) == 1
