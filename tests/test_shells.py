"""Shells as actions: planned by the ShellBackend, refused and audited by the one executor.

A recorder stands in for the UI's terminal runner (hpctui.ui.shell.AppTerminal); the argv comes
from fake sources with the shell abilities (the real builders are tested in test_shell_argv.py).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec
import pytest
from ptyrun import run_in_pty

from hpctui.actions.audit import AuditLog
from hpctui.actions.shells import ShellBackend, ShellSettings, describe_status, open_shell
from hpctui.core.runtime import Runtime, demo_runtime
from hpctui.model.action import ActionKind


class Recorder:
    """A TerminalRunner that records what it would run and answers a fixed exit status."""

    def __init__(self, status: int = 0, why_not: str | None = None, takes_s: float = 0.0) -> None:
        self.status, self.why_not, self.takes_s = status, why_not, takes_s
        self.ran: list[tuple[str, ...]] = []

    def unavailable(self) -> str | None:
        return self.why_not

    async def run(self, argv: Sequence[str]) -> int:
        self.ran.append(tuple(argv))
        await asyncio.sleep(self.takes_s)
        return self.status


class FakeSsh:
    name = "ssh"
    interval_s = 60.0

    def node_shell_argv(self, node: str, *, command: str | None = None, tty: bool = False,
                        program: str = "ssh") -> tuple[str, ...]:
        return (program, *(("-t",) if tty else ()), "--", node, *((command,) if command else ()))


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


async def _runtime(tmp_path: Path, *, read_only: bool = False, shells: ShellSettings | None = None) -> Runtime:
    rt = demo_runtime(size=32, seed=1, read_only=read_only, audit_path=tmp_path / "audit.jsonl")
    rt.sources += [FakeSsh(), FakeK8s(), FakeSlurm()]  # type: ignore[list-item]
    if shells is not None:
        rt.shells = shells
    await rt.collect_once()
    return rt


def _records(tmp_path: Path) -> list[dict[str, object]]:
    return AuditLog(tmp_path / "audit.jsonl").read(intents=True)


async def test_a_node_shell_runs_its_argv_and_is_audited_with_exit_status_and_duration(tmp_path: Path) -> None:
    rt = await _runtime(tmp_path)
    runner = Recorder(status=3, takes_s=0.05)
    result = await open_shell(rt.port, runner, ActionKind.SHELL_NODE, "gpu0003")
    assert runner.ran == [("ssh", "--", "gpu0003")]
    assert result.refused is None and not result.ok and result.results[0].message == "exit status 3"
    intent, outcome = _records(tmp_path)
    assert intent["phase"] == "intent" and intent["commands"] == ["ssh -- gpu0003"]
    assert outcome["phase"] == "outcome" and outcome["action"] == "shell_node" and outcome["source"] == "shell"
    assert outcome["user"] == rt.executor.user and outcome["cluster"] == "demo" and outcome["targets"] == ["gpu0003"]
    session = outcome["session"]
    assert isinstance(session, dict)
    assert session["exit_status"] == 3 and session["where"] == "gpu0003" and session["duration_s"] >= 0.05
    assert float(outcome["finished"]) - float(outcome["time"]) >= 0.05  # type: ignore[arg-type]


async def test_job_and_pod_shells(tmp_path: Path) -> None:
    rt = await _runtime(tmp_path)
    snap = rt.store.snapshot()
    job = next(j for j in snap.jobs if j.state == "RUNNING")
    runner = Recorder()
    result = await open_shell(rt.port, runner, ActionKind.SHELL_JOB, job.display_id)
    assert result.ok and runner.ran[-1][:4] == ("srun", f"--jobid={job.job_id}", "--overlap", "--pty")
    pod = next(p for p in snap.pods if p.phase == "Running" and len(p.containers) > 1)
    target = f"{pod.namespace}/{pod.name}"
    refused = await open_shell(rt.port, runner, ActionKind.SHELL_POD, target)
    assert refused.refused is not None and "choose one" in refused.refused
    result = await open_shell(rt.port, runner, ActionKind.SHELL_POD, target, {"container": pod.containers[1]})
    assert result.ok and runner.ran[-1][-2:] == ("-c", pod.containers[1])
    assert result.plan.params["container"] == pod.containers[1]
    bad = await open_shell(rt.port, runner, ActionKind.SHELL_POD, target, {"container": "nosuch"})
    assert bad.refused is not None and "no container" in bad.refused


async def test_a_job_shell_over_ssh_to_a_login_node(tmp_path: Path) -> None:
    rt = await _runtime(tmp_path, shells=ShellSettings(job_login_node="login01"))
    job = next(j for j in rt.store.snapshot().jobs if j.state == "RUNNING")
    runner = Recorder()
    result = await open_shell(rt.port, runner, ActionKind.SHELL_JOB, str(job.job_id))
    assert result.ok
    assert runner.ran == [("ssh", "-t", "--", "login01",
                           f'srun --jobid={job.job_id} --overlap --pty "${{SHELL:-/bin/sh}}"')]
    assert result.plan.params["where"] == f"job {job.job_id} via login01"


@pytest.mark.parametrize(("case", "why"), [
    ("read_only", "read-only mode"),
    ("disabled", "shells are disabled for this cluster"),
    ("no_terminal", "a browser session"),
    ("unknown_node", "unknown node"),
    ("pending_job", "not RUNNING"),
])
async def test_refusals_run_nothing_and_are_audited(tmp_path: Path, case: str, why: str) -> None:
    rt = await _runtime(tmp_path, read_only=case == "read_only",
                        shells=ShellSettings(enabled=case != "disabled"))
    runner = Recorder(why_not="a browser session (hpctui serve) has no terminal" if case == "no_terminal" else None)
    kind, target = ActionKind.SHELL_NODE, "gpu0001"
    if case == "unknown_node":
        target = "gpu9999"
    if case == "pending_job":
        kind = ActionKind.SHELL_JOB
        target = next(j for j in rt.store.snapshot().jobs if j.state == "PENDING").display_id
    result = await open_shell(rt.port, runner, kind, target)
    assert result.refused is not None and why in result.refused
    assert runner.ran == []
    [outcome] = _records(tmp_path)  # no intent: nothing started; the refusal is on record
    assert outcome["phase"] == "outcome" and why in str(outcome["refused"])
    assert outcome["session"] == {"where": "gpu0001" if case in ("read_only", "disabled", "no_terminal") else "",
                                  "duration_s": pytest.approx(0, abs=1), "exit_status": None}


async def test_read_only_allowed_explicitly(tmp_path: Path) -> None:
    rt = await _runtime(tmp_path, read_only=True, shells=ShellSettings(allow_read_only=True))
    result = await open_shell(rt.port, Recorder(), ActionKind.SHELL_NODE, "gpu0001")
    assert result.ok


def test_a_cluster_switch_overrides_the_default(tmp_path: Path) -> None:
    import tomllib

    from hpctui.core.config import parse_config
    from hpctui.core.runtime import runtime_from_config

    text = (f"audit_log = '{tmp_path / 'a.jsonl'}'\n[shells]\nkubectl = '/opt/kubectl'\n"
            "[clusters.on]\n[[clusters.on.sources]]\nkind = 'demo'\nsize = 4\n"
            "[clusters.off]\nshells = false\n[[clusters.off.sources]]\nkind = 'demo'\nsize = 4\n")
    config = parse_config(tomllib.loads(text))
    on, off = runtime_from_config(config, "on"), runtime_from_config(config, "off")
    assert on.port.shells.enabled and not off.port.shells.enabled
    assert off.port.shells.kubectl == "/opt/kubectl"
    assert ShellSettings().enabled and not ShellSettings().allow_read_only  # on by default, not read-only


def test_only_one_target_and_words_for_statuses() -> None:
    backend = ShellBackend(ShellSettings(), Recorder(), nodes=[FakeSsh()])
    from hpctui.model import ClusterSnapshot

    plan = backend.plan(ActionKind.SHELL_NODE, ("a", "b"), {}, msgspec.convert({"cluster": "x", "time": 0},
                                                                                ClusterSnapshot))
    assert "exactly one target" in " ".join(plan.errors)
    assert describe_status(-9) == "killed by signal 9" and describe_status(0) == "exit status 0"


# -- the terminal handover, on a real pseudo-terminal ------------------------------------------
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
HANDOVER = """
import asyncio, sys
from hpctui.actions.shells import run_in_foreground
rc = asyncio.run(run_in_foreground(sys.argv[1:]))
print("hpctui-rc", rc, flush=True)
"""


def test_the_session_gets_the_terminal_foreground_and_its_exit_status() -> None:
    """The child reads the terminal (it is the foreground group: no SIGTTIN), ctrl+c reaches it
    and not us, and its exit status comes back."""
    # READY2 is printed once SIGINT is at its default (dies of it): no race with a shell's own handling
    wait = "import signal, time; signal.signal(signal.SIGINT, signal.SIG_DFL); print('READY2', flush=True); time.sleep(30)"
    script = f'echo READY1; read line; echo got:$line; exec {sys.executable} -c "{wait}"'
    rc, out = run_in_pty([sys.executable, "-c", HANDOVER, "/bin/sh", "-c", script],
                         [(b"READY1", b"hello\n"), (b"READY2", b"\x03")], env=ENV)
    assert "got:hello" in out, out
    assert "hpctui-rc -2" in out, out  # killed by SIGINT (ctrl+c) — and we lived to say so
    assert rc == 0, out


def test_a_missing_program_is_127() -> None:
    rc, out = run_in_pty([sys.executable, "-c", HANDOVER, "/nonexistent/ssh"], env=ENV)
    assert "hpctui-rc 127" in out and rc == 0, out


def test_without_a_terminal_it_simply_runs(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", HANDOVER, "/bin/sh", "-c", "exit 5"], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=30,
                          env=ENV)
    assert "hpctui-rc 5" in done.stdout, done


def test_hpctui_act_offers_no_shells() -> None:
    """A shell needs the TUI's terminal: the headless entry point does not list the kinds."""
    import argparse

    from hpctui.cli.act import add_act_arguments

    parser = argparse.ArgumentParser()
    add_act_arguments(parser)
    for kind in ("shell_node", "shell_pod", "shell_job"):
        with pytest.raises(SystemExit):
            parser.parse_args([kind, "--targets", "gpu0001"])


def test_shell_settings_are_checked() -> None:
    for bad in ({"job_login_node": "login01; id"}, {"ssh": " "}, {"kubectl": ""}):
        with pytest.raises(msgspec.ValidationError):
            msgspec.convert(bad, ShellSettings)
    backend = ShellBackend(ShellSettings(ssh_source="other"), Recorder(), nodes=[FakeSsh()])
    assert backend.ssh() is None and "no SSH source named 'other'" in backend._no_ssh("x")
