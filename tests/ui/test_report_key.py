"""The incident-report key: writes the report (and an SVG of the screen) for the marked nodes."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
from uikit import Clock, load

from hpctui.core.runtime import Runtime
from hpctui.ui.app import HpcApp


async def test_report_key_writes_report_for_marked_nodes(make_runtime: Callable[..., Runtime], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    rt = make_runtime(size=8, seed=1)
    rt.secrets = ("planted-secret-token-123",)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        await pilot.press("space", "right", "space", "E")
        await pilot.pause()
        await app.workers.wait_for_complete()  # the audit log is read in a worker thread
    [out] = list((tmp_path / "state" / "hpctui" / "reports").iterdir())
    assert {p.name for p in out.iterdir()} == {"report.json", "report.md", "report.html", "screen.svg"}
    assert {stat.S_IMODE(p.stat().st_mode) for p in out.iterdir()} == {0o600}  # they name users and reasons
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    assert (out / "screen.svg").read_text().startswith("<svg")
    doc = msgspec.json.decode((out / "report.json").read_bytes())
    assert doc["scope"]["nodes"] == list(app.dashboard.heatmap.marked_nodes) and len(doc["scope"]["nodes"]) == 2
    assert doc["generated_by"]["via"] == "hpctui app"
    assert "planted-secret-token-123" not in (out / "report.html").read_text()


async def test_report_key_works_in_read_only_mode(make_runtime: Callable[..., Runtime], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    app = HpcApp(make_runtime(size=8, seed=1, read_only=True), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        await pilot.press("E")
        await pilot.pause()
        await app.workers.wait_for_complete()
    [out] = list((tmp_path / "state" / "hpctui" / "reports").iterdir())
    assert (out / "report.html").exists()


async def test_read_only_app_refuses_every_action_kind(make_runtime: Callable[..., Runtime]) -> None:
    """The app's entry point (ActionRequested, as keys, marks and the palette send it) in read-only mode:
    no dialog opens and nothing reaches the audit trail, for every action kind."""
    from hpctui.model.action import ActionKind
    from hpctui.ui.messages import ActionRequested

    rt = make_runtime(size=8, seed=1, read_only=True)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        for kind in ActionKind:
            app.post_message(ActionRequested(kind, ("gpu0003",), {"reason": "r", "state": "DOWN", "duration": "60"}))
            await pilot.pause()
            assert type(app.screen).__name__ != "ActionDialog", kind
    assert rt.executor.available() == frozenset()
    assert rt.executor.audit is not None and rt.executor.audit.read() == []


async def test_report_key_charts_the_hot_gpu_of_the_session(make_runtime: Callable[..., Runtime], clock: Clock,
                                                             tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a few polls the app's report charts every GPU of the cursor node from the session's rings,
    in the HTML as inline SVG with the hot GPU highlighted (issue #22 §6); rendered off the UI thread."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    rt = make_runtime(size=64, seed=1)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        for _ in range(4):
            clock.t += 2.0
            await rt.collect_once()
        assert app.dashboard.heatmap.select("gpu0052")
        await pilot.press("E")
        await pilot.pause()
        await app.workers.wait_for_complete()
    [out] = list((tmp_path / "state" / "hpctui" / "reports").iterdir())
    doc = msgspec.json.decode((out / "report.json").read_bytes())
    assert doc["scope"]["nodes"] == ["gpu0052"]
    [temp] = [c for c in doc["charts"]["gpu0052"] if c["metric"] == "temp"]
    assert len(temp["series"]) == 8 and [s["label"] for s in temp["series"] if s["highlight"]] == ["GPU 6"]
    page = (out / "report.html").read_text()
    assert page.count("<svg") == len(doc["charts"]["gpu0052"]) and "GPU 6 (failing)" in page
