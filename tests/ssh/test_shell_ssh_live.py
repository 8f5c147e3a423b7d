"""Node shells against the real sshd bed: the argv built from the SSH source's settings, run by
the system ``ssh`` on a pseudo-terminal — connect, a remote pty, the exit status, through a jump
host, a changed host key refused — and the whole path through the executor and its audit record.

The bed's sshd refuses ptys (``PermitTTY no``, right for the probes); this file's bed allows them,
as a site's sshd does for people.
"""

from __future__ import annotations

import asyncio
import atexit
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from ptyrun import run_in_pty
from sshbed import SshBed, sshd_missing

from hpctui.actions.audit import AuditLog
from hpctui.actions.shells import open_shell
from hpctui.core.runtime import demo_runtime
from hpctui.model.action import ActionKind
from hpctui.sources.ssh.settings import SshSettings
from hpctui.sources.ssh.source import SshSource

pytestmark = pytest.mark.live


class TtyBed(SshBed):
    """The SSH bed with ptys allowed (a login shell's ``tty`` answers /dev/pts/N)."""

    def _sshd_config(self, index: int, addrs: list[str], port: int, *, bastion: bool = False) -> Path:
        path = super()._sshd_config(index, addrs, port, bastion=bastion)
        path.write_text(path.read_text().replace("PermitTTY no", "PermitTTY yes"))
        return path


@pytest.fixture(scope="module")
def tty_bed() -> Iterator[TtyBed]:
    why_not = sshd_missing()
    if why_not:
        pytest.skip(why_not)
    bed = TtyBed(n_nodes=3, prefix="gpu", faults={"gpu0003": "hostkey_changed"})  # demo names: gpu0001...
    atexit.register(bed.stop)
    try:
        bed.start()
        yield bed
    finally:
        bed.stop()


def _settings(bed: SshBed, config: Path | None = None) -> SshSettings:
    return SshSettings(ssh_config=[str(config or bed.ssh_config)], known_hosts=[str(bed.known_hosts)],
                       connect_timeout_s=5.0, keepalive_s=0, from_snapshot=False)


def test_a_command_runs_and_its_exit_status_comes_back(tty_bed: TtyBed) -> None:
    argv = SshSource(_settings(tty_bed)).node_shell_argv("gpu0001", command="echo ok-$((40+2)); exit 3")
    status, out = run_in_pty(argv)
    assert status == 3, out
    assert "ok-42" in out


def test_an_interactive_login_shell_gets_a_remote_pty(tty_bed: TtyBed) -> None:
    argv = SshSource(_settings(tty_bed)).node_shell_argv("gpu0002")
    # typed ahead: the terminal's line discipline keeps it until the remote shell reads it
    status, out = run_in_pty(argv, [(b"", b"echo tty=$(tty) host=$SSH_CONNECTION; exit 4\n")])
    assert status == 4, out
    assert "tty=/dev/pts/" in out, out  # a real remote pseudo-terminal: a shell a person can use
    assert tty_bed.node("gpu0002").address in out  # on the node's address, as the probes dial it


def test_through_the_jump_host(tty_bed: TtyBed) -> None:
    config = tty_bed.write_ssh_config(proxy_jump=True, path=tty_bed.dir / "ssh_config.jump")
    settings = _settings(tty_bed, config)
    argv = SshSource(settings).node_shell_argv("gpu0001", command="echo from=${SSH_CONNECTION%% *}; exit 5")
    assert any(a.startswith("ProxyCommand=") for a in argv)
    status, out = run_in_pty(argv)
    assert status == 5, out
    assert "from=127.0.0.1" in out, out  # the session came in from the bastion, not from us directly


def test_a_changed_host_key_is_refused(tty_bed: TtyBed) -> None:
    argv = SshSource(_settings(tty_bed)).node_shell_argv("gpu0003", command="echo should-not-run")
    status, out = run_in_pty(argv)
    assert status == 255, out
    assert "should-not-run" not in out.replace("echo should-not-run", "")
    assert "IDENTIFICATION HAS CHANGED" in out or "verification failed" in out, out


class PtyTerminal:
    """A TerminalRunner that runs the session on a fresh pty (in a thread) and types ``keys``."""

    def __init__(self, keys: bytes) -> None:
        self.keys = keys
        self.out = ""

    def unavailable(self) -> str | None:
        return None

    async def run(self, argv: Sequence[str]) -> int:
        status, self.out = await asyncio.to_thread(run_in_pty, argv, [(b"", self.keys)])
        return status


async def test_the_executor_runs_it_and_audits_exit_status_and_duration(tty_bed: TtyBed, tmp_path: Path) -> None:
    rt = demo_runtime(size=32, seed=1, audit_path=tmp_path / "audit.jsonl")
    rt.sources.append(SshSource(_settings(tty_bed)))  # the cluster's SSH source: the shell uses its settings
    await rt.collect_once()
    terminal = PtyTerminal(b"sleep 0.3; echo in-shell; exit 7\n")
    result = await open_shell(rt.port, terminal, ActionKind.SHELL_NODE, "gpu0001")
    assert result.refused is None and result.results[0].message == "exit status 7", terminal.out
    assert "in-shell" in terminal.out
    [outcome] = AuditLog(tmp_path / "audit.jsonl").read()
    assert outcome["session"]["exit_status"] == 7 and outcome["session"]["duration_s"] >= 0.3
    assert outcome["commands"][0].startswith("ssh -F ") and outcome["commands"][0].endswith("-- gpu0001")
    await rt.stop()


@pytest.mark.parametrize("session_s", [0, 20], ids=["short", "long"])
def test_the_installed_app_suspends_into_ssh_and_resumes(tty_bed: TtyBed, tmp_path: Path, session_s: int) -> None:
    """End to end on a real terminal: ``hpctui`` with the bed as the cluster's SSH source, on a
    node (the heatmap's first), ``s``: the app leaves the screen, ssh runs the session, exits 3, the app comes back
    (``q`` still answers), and the audit record says who, where, how long, exit status 3. The long
    session outlasts several polls and clock ticks of the suspended app (it must not draw meanwhile:
    its output queue is bounded and nobody reads it while suspended)."""
    import os
    import sys

    audit = tmp_path / "audit.jsonl"
    config = tmp_path / "config.toml"
    config.write_text(
        f"audit_log = '{audit}'\n[clusters.lab]\n[[clusters.lab.sources]]\nkind = 'demo'\nsize = 32\nseed = 1\n"
        "interval_s = 0.5\n"
        f"[[clusters.lab.sources]]\nkind = 'ssh'\nssh_config = ['{tty_bed.ssh_config}']\n"
        f"known_hosts = ['{tty_bed.known_hosts}']\nfrom_snapshot = false\n")  # probes nothing; shells only
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "XDG_STATE_HOME": str(tmp_path / "state"), "TERM": "xterm-256color",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    steps = [
        ("▸ gpu0001".encode(), b"s"),  # the breadcrumb names the cursor node (the first): s on the heatmap
        (b"\x1b[?1049l", f"sleep {session_s}; echo in-node-$((6*7)); exit 3\n".encode()),  # the app left the screen
        (b"in-node-42", b""),
        (b"\x1b[?1049h", b""),  # and came back to it
        (b"Help", b"q"),
    ]
    status, out = run_in_pty([sys.executable, "-m", "hpctui", "--config", str(config), "--cluster", "lab"], steps,
                             timeout=60, env=env)
    assert "in-node-42" in out, (AuditLog(audit).read(), out[-1500:])
    assert status == 0, out[-3000:]
    [outcome] = AuditLog(audit).read()
    assert outcome["action"] == "shell_node" and outcome["targets"] == ["gpu0001"]
    assert outcome["session"]["exit_status"] == 3 and outcome["session"]["where"] == "gpu0001"
    assert outcome["results"] == [{"target": "gpu0001", "ok": False, "message": "exit status 3"}]
