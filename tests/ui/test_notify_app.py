"""The app tells about new problems (#25 §3): the terminal gets BEL + OSC 9/777 through the driver (captured
here), the wall flashes them, ``:mute`` silences the session; problems already there at start are not news."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hpctui.core.runtime import demo_runtime
from hpctui.findings.health import Finding
from hpctui.model import Severity
from hpctui.ui.app import HpcApp


class Capture:
    """The app's driver, with what is written to the terminal kept (everything else is the real driver's)."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        self.out: list[str] = []

    def write(self, text: str) -> None:
        if text.startswith("\a") or "\x1b]9;" in text:  # notifications; frames go on to the terminal
            self.out.append(text)
        else:
            self.driver.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.driver, name)


def _frame(*findings: Finding) -> Any:
    return SimpleNamespace(findings=list(findings))


XID = Finding(severity=Severity.CRITICAL, object="gpu/gpu0003/1", code="xid79", message="GPU 1 Xid 79 \x1b[2J")
OLD = Finding(severity=Severity.CRITICAL, object="node/gpu0002", code="slurm_down", message="down")


async def test_a_new_critical_problem_rings_and_flashes_once(monkeypatch: Any) -> None:
    app = HpcApp(demo_runtime(size=8, seed=1), wall=True, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        capture = Capture(app._driver)
        monkeypatch.setattr(type(app), "is_headless", property(lambda _self: False))
        monkeypatch.setattr(app, "_driver", capture)
        app._announce(_frame(OLD))  # already wrong at start: the baseline, not news
        assert capture.out == []
        app._announce(_frame(OLD, XID))
        await pilot.pause()
        (seq,) = capture.out
        assert seq.startswith("\a\x1b]9;hpctui: CRITICAL gpu0003: GPU 1 Xid 79")
        assert "\x1b[2J" not in seq  # the finding's text is sanitised before it reaches the terminal
        assert any("Xid 79" in str(n.message) for n in app._notifications)  # the wall flashes it
        app._announce(_frame(OLD, XID))  # the next refresh: nothing new
        assert len(capture.out) == 1
        await app.run_command("mute")
        app._announce(_frame(OLD, XID, Finding(severity=Severity.CRITICAL, object="node/gpu0004",
                                               code="slurm_down", message="down")))
        assert len(capture.out) == 1 and app.runtime.notifier.muted
        monkeypatch.undo()
