"""Shells in the app (Pilot): ``s`` suspends the app, runs the session on the terminal, resumes;
refused (and audited) where no terminal can be handed over; refused in read-only and on the wall;
the container picker for a pod with several containers.

Pilot's headless driver cannot suspend: the tests that run a session let it (``can_suspend``),
record the ``App.suspend()`` calls and stand a recorder in for the process run on the terminal
(the real handover on a pseudo-terminal is tests/test_shells.py's, the real sshd tests/ssh's).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from uikit import load

from hpctui.actions.shells import ShellSettings
from hpctui.core.runtime import Runtime
from hpctui.model.action import ActionKind
from hpctui.ui import shell as ui_shell
from hpctui.ui.app import HpcApp
from hpctui.ui.messages import ShellRequested
from hpctui.ui.shell import AppTerminal, ContainerPicker


class FakeSsh:
    name = "ssh"
    interval_s = 60.0

    def node_shell_argv(self, node: str, *, command: str | None = None, tty: bool = False,
                        program: str = "ssh") -> tuple[str, ...]:
        return (program, "--", node)


class FakeK8s:
    name = "k8s"
    interval_s = 60.0

    def pod_shell_argv(self, namespace: str, pod: str, container: str | None, *,
                       kubectl: str = "kubectl") -> tuple[str, ...]:
        return (kubectl, "exec", "-it", "-n", namespace, pod, *(("-c", container) if container else ()))


class FakeSlurm:
    name = "slurm"
    interval_s = 60.0

    def job_shell_argv(self, job_id: str, shell: str) -> tuple[str, ...]:
        return ("srun", f"--jobid={job_id}", "--overlap", "--pty", shell)


class Terminal:
    """Records App.suspend() and what ran while suspended."""

    def __init__(self, status: int = 0) -> None:
        self.status = status
        self.events: list[str] = []
        self.ran: list[tuple[str, ...]] = []

    @contextlib.contextmanager
    def suspend(self) -> Iterator[None]:
        self.events.append("suspend")
        yield
        self.events.append("resume")

    async def run(self, argv: Sequence[str]) -> int:
        self.events.append("run")
        self.ran.append(tuple(argv))
        return self.status


def _runtime(make_runtime: Callable[..., Runtime], **kw: Any) -> Runtime:
    rt = make_runtime(size=32, seed=1, **kw)
    rt.sources += [FakeSsh(), FakeK8s(), FakeSlurm()]  # type: ignore[list-item]
    return rt


def _suspendable(app: HpcApp, terminal: Terminal, monkeypatch: pytest.MonkeyPatch) -> None:
    """Let the headless driver suspend, record the suspensions, run the session in the recorder."""
    assert app._driver is not None
    monkeypatch.setattr(type(app._driver), "can_suspend", property(lambda _self: True))
    monkeypatch.setattr(app, "suspend", terminal.suspend)
    monkeypatch.setattr(ui_shell, "run_in_foreground", terminal.run)


async def _until(pilot: Any, done: Callable[[], bool]) -> None:
    for _ in range(100):  # bounded wait for the worker, not a timed assertion
        if done():
            return
        await pilot.pause(0.02)
    raise AssertionError("never happened")


def _outcomes(rt: Runtime) -> list[dict[str, Any]]:
    assert rt.executor.audit is not None
    return rt.executor.audit.read()


async def test_s_on_the_heatmap_suspends_runs_the_session_and_resumes(
        make_runtime: Callable[..., Runtime], monkeypatch: pytest.MonkeyPatch) -> None:
    rt = _runtime(make_runtime)
    app = HpcApp(rt, autostart=False)
    terminal = Terminal(status=3)
    refreshed: list[bool] = []
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        _suspendable(app, terminal, monkeypatch)
        monkeypatch.setattr(rt, "refresh_now", lambda: refreshed.append(True))
        app.dashboard.heatmap.focus()
        node = app.dashboard.heatmap.cursor_node
        await pilot.press("s")
        await _until(pilot, lambda: bool(_outcomes(rt)))
    assert terminal.events == ["suspend", "run", "resume"]
    assert terminal.ran == [("ssh", "--", node)]
    [outcome] = _outcomes(rt)
    assert outcome["action"] == "shell_node" and outcome["targets"] == [node]
    assert outcome["session"]["exit_status"] == 3 and outcome["session"]["where"] == node
    assert refreshed  # polled again after the session


async def test_s_on_the_queue_opens_srun_in_the_cursor_job(
        make_runtime: Callable[..., Runtime], monkeypatch: pytest.MonkeyPatch) -> None:
    rt = _runtime(make_runtime)
    app = HpcApp(rt, autostart=False)
    terminal = Terminal()
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        _suspendable(app, terminal, monkeypatch)
        table = app.dashboard.queue_pane.table
        table.focus()
        job = table.cursor_row
        assert job is not None
        await pilot.press("s")
        await _until(pilot, lambda: bool(_outcomes(rt)))
    [outcome] = _outcomes(rt)
    if job.state == "RUNNING":
        assert terminal.ran[0][:2] == ("srun", f"--jobid={job.job_id}")
    else:  # the cursor job is not running: refused, said why
        assert terminal.ran == [] and "not RUNNING" in outcome["refused"]


async def test_a_pod_with_several_containers_asks_which(
        make_runtime: Callable[..., Runtime], monkeypatch: pytest.MonkeyPatch) -> None:
    rt = _runtime(make_runtime)
    app = HpcApp(rt, autostart=False)
    terminal = Terminal()
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        _suspendable(app, terminal, monkeypatch)
        pod = next(p for p in rt.store.snapshot().pods if len(p.containers) > 1 and p.phase == "Running")
        app.post_message(ShellRequested(ActionKind.SHELL_POD, f"{pod.namespace}/{pod.name}", pod.containers))
        await pilot.pause()
        assert isinstance(app.screen, ContainerPicker)
        await pilot.press("down", "enter")  # the second container
        await _until(pilot, lambda: bool(_outcomes(rt)))
    assert terminal.ran == [("kubectl", "exec", "-it", "-n", pod.namespace, pod.name, "-c", pod.containers[1])]
    assert _outcomes(rt)[0]["params"]["container"] == pod.containers[1]


async def test_an_action_request_for_a_pod_finds_its_containers(make_runtime: Callable[..., Runtime]) -> None:
    """The palette's and a message's way in (ActionRequested, no container list): the picker still asks."""
    from hpctui.ui.messages import ActionRequested

    rt = _runtime(make_runtime)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        pod = next(p for p in rt.store.snapshot().pods if len(p.containers) > 1 and p.phase == "Running")
        app.post_message(ActionRequested(ActionKind.SHELL_POD, (f"{pod.namespace}/{pod.name}",)))
        await pilot.pause()
        assert isinstance(app.screen, ContainerPicker) and app.screen.containers == pod.containers
        await pilot.press("escape")  # cancelled: nothing runs, nothing is recorded
        await pilot.pause()
    assert _outcomes(rt) == []


async def test_no_suspend_no_shell_refused_and_audited(make_runtime: Callable[..., Runtime]) -> None:
    """Pilot's own driver cannot suspend: as on any terminal that cannot, the shell is refused,
    said so, and the refusal is on record."""
    rt = _runtime(make_runtime)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        app.dashboard.heatmap.focus()
        await pilot.press("s")
        await _until(pilot, lambda: bool(_outcomes(rt)))
        shown = [n.message for n in app._notifications]
    [outcome] = _outcomes(rt)
    assert "cannot be handed over" in outcome["refused"]
    assert any("cannot be handed over" in m for m in shown)


async def test_read_only_refuses_without_running_or_asking(
        make_runtime: Callable[..., Runtime], monkeypatch: pytest.MonkeyPatch) -> None:
    rt = _runtime(make_runtime, read_only=True)
    app = HpcApp(rt, autostart=False)
    terminal = Terminal()
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        _suspendable(app, terminal, monkeypatch)
        app.dashboard.heatmap.focus()
        await pilot.press("s")
        await pilot.pause()
        shown = [n.message for n in app._notifications]
    assert terminal.events == [] and _outcomes(rt) == []
    assert any("read-only mode" in m for m in shown)


async def test_read_only_with_allow_read_only_opens_it(
        make_runtime: Callable[..., Runtime], monkeypatch: pytest.MonkeyPatch) -> None:
    rt = _runtime(make_runtime, read_only=True)
    rt.shells = ShellSettings(allow_read_only=True)
    app = HpcApp(rt, autostart=False)
    terminal = Terminal()
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        _suspendable(app, terminal, monkeypatch)
        app.dashboard.heatmap.focus()
        await pilot.press("s")
        await _until(pilot, lambda: bool(_outcomes(rt)))
    assert terminal.events == ["suspend", "run", "resume"]


async def test_wall_and_browser_have_no_terminal_to_hand_over(
        make_runtime: Callable[..., Runtime], monkeypatch: pytest.MonkeyPatch) -> None:
    rt = _runtime(make_runtime)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        assert app._driver is not None
        monkeypatch.setattr(type(app._driver), "can_suspend", property(lambda _self: True))
        assert AppTerminal(app).unavailable() is None
        assert AppTerminal(app, wall=True).unavailable() == "the wall display opens no shells"
        monkeypatch.setattr(HpcApp, "is_web", property(lambda _self: True))  # hpctui serve's driver
        why = AppTerminal(app).unavailable()
        assert why is not None and "browser" in why
        app.post_message(ShellRequested(ActionKind.SHELL_NODE, "gpu0001"))
        await _until(pilot, lambda: bool(_outcomes(rt)))
    assert "browser" in _outcomes(rt)[0]["refused"]


async def test_the_wall_does_not_answer_s(make_runtime: Callable[..., Runtime],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    rt = _runtime(make_runtime)
    app = HpcApp(rt, autostart=False, wall=True)
    terminal = Terminal()
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        _suspendable(app, terminal, monkeypatch)
        await pilot.press("s")
        await pilot.pause()
        app.post_message(ShellRequested(ActionKind.SHELL_NODE, "gpu0001"))  # even if it got there
        await pilot.pause()
    assert terminal.events == [] and _outcomes(rt) == []
