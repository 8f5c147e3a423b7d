"""Every reader of the audit log in the app (issue #19 §2): the dashboard's Events history, the
``E`` report and ``:audit`` read a bounded tail in a worker thread, never on the UI thread, and a
torn line costs that line (counted, shown), never the earlier history."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from uikit import FIXED, load

from hpctui.actions.audit import AuditLog
from hpctui.core.runtime import Runtime
from hpctui.ui.app import HpcApp
from hpctui.ui.screens.audit import AuditScreen
from hpctui.ui.widgets.events import EventsPane


def _record(user: str, t: float) -> str:
    return json.dumps({"phase": "outcome", "id": f"id-{user}", "time": t, "finished": t + 1, "cluster": "demo",
                       "user": user, "action": "resume", "source": "demo", "targets": ["gpu0003"], "params": {},
                       "commands": [], "refused": None,
                       "results": [{"target": "gpu0003", "ok": True, "message": ""}]})


def _torn_log(path: Path) -> None:
    """Two records with a torn line between them (a crash mid-write) and a torn last line."""
    path.write_text(_record("alice", FIXED - 90) + "\n{\"phase\": \"intent\", \"id\": \"x\", \"ti\n"
                    + _record("bob", FIXED - 50) + "\n{\"phase\":")


@pytest.fixture
def reader_threads(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """True for each audit read made on the main (UI) thread, False for one made in a worker."""
    seen: list[bool] = []
    real_tail, real_read = getattr(AuditLog, "tail", None), AuditLog.read  # (no tail() before issue #19)

    def tail(self: AuditLog, **kw: Any) -> Any:
        seen.append(threading.current_thread() is threading.main_thread())
        assert real_tail is not None
        return real_tail(self, **kw)

    def read(self: AuditLog, **kw: Any) -> Any:
        seen.append(threading.current_thread() is threading.main_thread())
        return real_read(self, **kw)

    monkeypatch.setattr(AuditLog, "tail", tail, raising=False)
    monkeypatch.setattr(AuditLog, "read", read)
    return seen


async def test_events_history_is_read_in_a_worker_and_survives_torn_lines(
        make_runtime: Callable[..., Runtime], tmp_path: Path, reader_threads: list[bool]) -> None:
    _torn_log(tmp_path / "audit.jsonl")
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        await app.workers.wait_for_complete()
        await pilot.pause()
        pane = app.screen.query_one(EventsPane)
        actions = [e.message for e in pane.history if e.source == "action"]
        assert actions == ["alice resume: ok", "bob resume: ok"]  # the history before the torn line kept
        assert [e.message for e in pane.history if e.source == "audit"] == [
            "audit log: 2 unreadable line(s) skipped"]
        app.dashboard.show_view("events")
        await pilot.pause()
        shown = [e.message for e in pane.table.view]
        assert "alice resume: ok" in shown and "audit log: 2 unreadable line(s) skipped" in shown
    assert reader_threads and not any(reader_threads), "the audit log was read on the UI thread"


async def test_the_report_key_reads_the_audit_log_in_a_worker(
        make_runtime: Callable[..., Runtime], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        reader_threads: list[bool]) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    _torn_log(tmp_path / "audit.jsonl")
    app = HpcApp(make_runtime(size=8, seed=1), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        await app.workers.wait_for_complete()
        reader_threads.clear()  # (the Events history's read, checked above)
        await pilot.press("E")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        notes = [str(n.message) for n in app._notifications]
    [out] = list((tmp_path / "state" / "hpctui" / "reports").iterdir())
    assert (out / "report.json").exists()
    assert reader_threads and not any(reader_threads), "E read the audit log on the UI thread"
    assert "audit log: 2 unreadable line(s) skipped" in notes


async def test_the_audit_view_counts_the_lines_it_skipped(make_runtime: Callable[..., Runtime],
                                                          tmp_path: Path) -> None:
    _torn_log(tmp_path / "audit.jsonl")
    runtime = make_runtime()
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await load(app, pilot)
        screen = AuditScreen(runtime)
        await app.push_screen(screen)
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert [e.user for e in screen.entries] == ["bob", "alice"]
        assert "audit log: 2 unreadable line(s) skipped" in screen.info_text
