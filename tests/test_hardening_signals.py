"""Issue #6 §3: signals leave no orphan and no unaudited action (real processes, real signals).

Fake Slurm tools (shell scripts via ``bin_dir``) hang or run slowly; the real ``hpctui``
command (TUI in a pseudo-terminal, and ``hpctui snapshot``) gets SIGHUP/SIGTERM/SIGINT, or
an action runner gets ``kill -9``.
"""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hpctui.actions.audit import AuditLog
from hpctui.core.runtime import Runtime
from hpctui.model.action import ActionKind, ActionPlan, TargetResult

FIX = Path(__file__).parent / "fixtures" / "slurm"


def _tool(bin_dir: Path, name: str, script: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(0o755)


def _wait_for(cond: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _group_members(pgid: int) -> list[int]:
    """Pids still alive (not zombies) whose process group is ``pgid``."""
    out = []
    for path in Path("/proc").iterdir():
        entry = path.name
        if not entry.isdigit():
            continue
        try:
            stat = (path / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(entry))
    return out


def _lab(tmp_path: Path, *, hang: str = "") -> Path:
    """A config whose Slurm tools answer from fixtures; ``hang``: the tool that hangs instead
    (writes its pid, which is its process group, to ``<tool>.pid`` first)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    answers = {"sinfo": FIX / "cli_sinfo.json", "squeue": FIX / "cli_squeue.json", "sdiag": FIX / "cli_sdiag.txt"}
    for name, fixture in answers.items():
        if name == hang:
            _tool(bin_dir, name, f'echo $$ > "{tmp_path}/{name}.pid"\nsleep 600\necho never')
        else:
            _tool(bin_dir, name, f'cat "{fixture}"')
    # scontrol answers the refresh's partition and reservation reads, refuses its other reads (topology);
    # an action (scontrol update …) hangs
    _tool(bin_dir, "scontrol", f'case "$*" in *"show partition"*) cat "{FIX / "cli_scontrol_show_partition_oneliner.txt"}"; '
                               f'exit 0;; *"show reservation"*) cat "{FIX / "cli_25.11_scontrol_show_reservation.json"}"; '
                               f'exit 0;; *update*) ;; *) echo "scontrol: error: not in this lab" >&2; exit 1;; esac\n'
                               f'echo $$ > "{tmp_path}/scontrol.pid"\nsleep 600')
    cfg = tmp_path / "lab.toml"
    cfg.write_text(textwrap.dedent(f"""
        audit_log = "{tmp_path / 'audit.jsonl'}"
        [clusters.lab]
        sources = [{{ kind = "slurm", backend = "cli", bin_dir = "{bin_dir}", interval_s = 1, timeout_s = 120 }}]
    """))
    return cfg


def _hpctui() -> list[str]:
    return [sys.executable, "-m", "hpctui.cli.main"]


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM, signal.SIGINT])
def test_snapshot_killed_during_a_hung_sinfo_leaves_no_child(tmp_path: Path, sig: signal.Signals) -> None:
    cfg = _lab(tmp_path, hang="sinfo")
    proc = subprocess.Popen([*_hpctui(), "--config", str(cfg), "snapshot"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    pid_file = tmp_path / "sinfo.pid"
    try:
        _wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), 30, "the hung sinfo")
        pgid = int(pid_file.read_text())
        assert _group_members(pgid)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 128 + sig, err
        assert err.decode().strip() == f"hpctui: interrupted by {sig.name}"
        _wait_for(lambda: not _group_members(pgid), 5, "the sinfo group to go")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM, signal.SIGINT])
def test_tui_killed_during_a_hung_sinfo_leaves_no_child(tmp_path: Path, sig: signal.Signals) -> None:
    """The dashboard in a real pseudo-terminal; SIGHUP is what an SSH drop sends."""
    cfg = _lab(tmp_path, hang="sinfo")
    master, slave = pty.openpty()
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="120", LINES="40")
    proc = subprocess.Popen([*_hpctui(), "--config", str(cfg)], stdin=slave, stdout=slave, stderr=slave,
                            start_new_session=True, env=env)
    os.close(slave)
    pid_file = tmp_path / "sinfo.pid"
    try:
        _wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), 60, "the hung sinfo")
        pgid = int(pid_file.read_text())
        proc.send_signal(sig)
        assert proc.wait(timeout=120) == 128 + sig
        _wait_for(lambda: not _group_members(pgid), 5, "the sinfo group to go")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


ACT = """
import asyncio, sys
from hpctui.model.action import ActionKind
from hpctui.core.config import load_config
from hpctui.core.runtime import runtime_from_config

async def main() -> None:
    rt = runtime_from_config(load_config(__import__("pathlib").Path(sys.argv[1])), "lab")
    await rt.collect_once()
    snap = rt.store.snapshot()
    plan = rt.executor.plan(ActionKind.DRAIN_NODES, ["gpu01"], {"reason": "xid 79", "reason_mode": "replace"}, snap)
    assert plan.runnable, plan.errors
    await rt.executor.execute(plan, confirmation=True)

asyncio.run(main())
"""


def test_kill_9_during_an_action_still_leaves_the_intent_record(tmp_path: Path) -> None:
    cfg = _lab(tmp_path)  # scontrol is slow: the action is in flight when we kill
    proc = subprocess.Popen([sys.executable, "-c", ACT, str(cfg)], stderr=subprocess.PIPE)
    pid_file = tmp_path / "scontrol.pid"
    try:
        _wait_for(lambda: (pid_file.exists() and pid_file.read_text().strip()) or proc.poll() is not None, 60,
                  "scontrol to start")
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if pid_file.exists():  # kill -9 cannot clean up: the test does (the wrapper has its own session)
            try:
                os.killpg(int(pid_file.read_text()), signal.SIGKILL)
            except ProcessLookupError:
                pass
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [r["phase"] for r in records] == ["intent"]
    assert records[0]["action"] == "drain" and records[0]["targets"] == ["gpu01"]
    assert records[0]["commands"] == ["scontrol update NodeName=gpu01 State=DRAIN 'Reason=xid 79'"]


class _SlowBackend:
    name = "slow"

    def __init__(self) -> None:
        self.done = False

    @property
    def action_kinds(self) -> frozenset[ActionKind]:
        return frozenset({ActionKind.RESUME_NODES})

    def plan(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str], snapshot: object) -> ActionPlan:
        return ActionPlan(kind=kind, source=self.name, targets=targets, params=params, commands=("slow resume",))

    async def execute(self, plan: ActionPlan) -> tuple[TargetResult, ...]:
        import asyncio

        await asyncio.sleep(0.5)
        self.done = True
        return tuple(TargetResult(target=t, ok=True, message="done") for t in plan.targets)


async def test_exit_signal_lets_the_in_flight_action_finish_and_be_audited(tmp_path: Path) -> None:
    from hpctui.model import ClusterSnapshot
    from hpctui.ui.app import HpcApp

    backend = _SlowBackend()
    runtime = Runtime("c", [], audit_path=tmp_path / "audit.jsonl")
    runtime.executor.backends = [backend]  # type: ignore[list-item]
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(100, 30)) as pilot:
        plan = runtime.executor.plan(ActionKind.RESUME_NODES, ["n1"], {}, ClusterSnapshot(cluster="c", time=0))
        runtime.run_action(plan, True)
        await pilot.pause()
        app._on_exit_signal(signal.SIGHUP)  # what the loop's SIGHUP handler calls
    assert app.return_code == 128 + signal.SIGHUP
    assert backend.done
    records = AuditLog(tmp_path / "audit.jsonl").read(intents=True)
    assert [r["phase"] for r in records] == ["intent", "outcome"]
    assert records[1]["results"][0]["ok"] is True


def test_exit_deadline_ends_a_process_whose_shutdown_hangs() -> None:
    """After an exit signal the TUI arms a deadline: if Textual's shutdown then blocks for good
    (seen when the terminal went away: its writer queue full, nobody draining it), the process
    still ends, with 128+signal, instead of staying behind its closed SSH session."""
    code = ("import time\nfrom hpctui.core.signals import arm_exit_deadline\n"
            "arm_exit_deadline(129, deadline_s=0.5)\ntime.sleep(120)  # a shutdown that never finishes\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert proc.returncode == 129
    assert b"ending now" in proc.stderr


def test_exit_deadline_ends_the_process_when_its_terminal_is_gone() -> None:
    """The deadline's last words go to stderr: on a terminal that hung up that write fails
    (EIO), and it used to end the watchdog thread instead of the process."""
    master, slave = pty.openpty()
    code = ("import os, time\nfrom hpctui.core.signals import arm_exit_deadline\n"
            "time.sleep(0.5)  # the terminal goes away meanwhile\n"
            "arm_exit_deadline(129, deadline_s=0.2)\ntime.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                            start_new_session=True)
    os.close(slave)
    os.close(master)  # hang up: writes to the slave now fail
    try:
        assert proc.wait(timeout=60) == 129
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _controlling_tty() -> None:  # in the child: the pty is its terminal, as under ssh or tmux
    import fcntl
    import termios

    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def test_a_tui_whose_terminal_closes_while_starting_ends_by_itself(tmp_path: Path) -> None:
    """The terminal closing during the first second (``tmux kill-server``, an SSH drop): the
    app gets SIGHUP and EOF while starting, and Textual's shutdown can then block writing to the
    dead terminal, with the event loop (and so the SIGHUP handler) stuck behind it. The exit
    deadline, armed at the start of every shutdown, still ends the process; so does its own
    last message failing with EIO (both used to leave the process behind for good)."""
    code = ("import sys, hpctui.core.signals as s\ns.EXIT_DEADLINE_S = 2.0\nimport hpctui.cli.main as c\n"
            "sys.exit(c.main(['--demo', '--demo-size', '16']))\n")
    ended = []
    for delay in (0.3, 0.45, 0.6, 0.75, 0.9):
        master, slave = pty.openpty()
        proc = subprocess.Popen([sys.executable, "-c", code], stdin=slave, stdout=slave, stderr=slave,
                                env=dict(os.environ, TERM="xterm", XDG_CONFIG_HOME=str(tmp_path),
                                         XDG_STATE_HOME=str(tmp_path)),
                                start_new_session=True, preexec_fn=_controlling_tty)
        os.close(slave)
        time.sleep(delay)
        os.close(master)  # the terminal goes away
        try:
            ended.append(proc.wait(timeout=60))
        except subprocess.TimeoutExpired:
            ended.append(None)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert None not in ended, ended


def test_exit_deadline_leaves_in_flight_actions_their_grace() -> None:
    from hpctui.core.runtime import ACTION_GRACE_S
    from hpctui.core.signals import EXIT_DEADLINE_S

    assert EXIT_DEADLINE_S > ACTION_GRACE_S + 5
