"""Commands on nodes over SSH, with an SSH source's connection settings (ssh_config, keys,
known_hosts, jump host): the runner behind custom actions with ``run = "ssh"``.

One fresh pool per batch; a node that cannot be reached, does not log in or does not answer in
time costs that node's run, never the batch. Output is captured up to a limit and sanitised
(:func:`hpctui.model.output.clean_output`).
"""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hpctui.base.sanitize import clean_text
from hpctui.model.output import NodeOutput, clean_output, read_capped
from hpctui.sources.ssh.pool import SshPool, describe_error
from hpctui.sources.ssh.targets import Resolver

if TYPE_CHECKING:
    from hpctui.model.action import CommandRun
    from hpctui.sources.ssh.settings import SshSettings
    from hpctui.sources.ssh.targets import Target


def remote_line(argv: Sequence[str]) -> str:
    """The remote command line: every element quoted for the remote shell."""
    return " ".join(shlex.quote(a) for a in argv)


class SshCommandRunner:
    """Runs one remote command per node over a fresh pool (the ssh source's settings): a
    :class:`~hpctui.sources.capabilities.RemoteCommands` batch. Every argv element is quoted for the
    remote shell (``shlex.quote``): the far side sees each as one literal word, whatever it holds."""

    def __init__(self, settings: SshSettings) -> None:
        self.settings = settings
        self.resolver = Resolver(settings)
        self.pool = SshPool(settings, self.resolver)
        self.targets: dict[str, Target] = {}

    async def resolve(self, hosts: Sequence[str]) -> None:
        """Every node's endpoint through ssh_config, in one thread, one after another (the resolver
        writes one scratch file per config: parallel calls would read each other's)."""
        self.targets = await asyncio.to_thread(lambda: {h: self.resolver.resolve(h) for h in hosts})

    async def run(self, inv: CommandRun, timeout_s: float, limit: int) -> NodeOutput:
        import asyncssh

        assert inv.host is not None
        started = time.monotonic()
        target = self.targets.get(inv.host)
        if target is None:  # not resolved up front (resolve() shares scratch files: one thread at a time)
            target = await asyncio.to_thread(self.resolver.resolve, inv.host)
        if target.error:
            return NodeOutput(label=inv.label, error=clean_text(target.error))
        try:
            conn = await self.pool.connect(target)
        except Exception as exc:
            return NodeOutput(label=inv.label, error=clean_text(describe_error(exc, self.settings.connect_timeout_s)),
                              duration_s=time.monotonic() - started)
        proc: Any = None
        try:
            async def go() -> tuple[bytes, int | None, str | None]:
                nonlocal proc
                proc = await conn.create_process(remote_line(inv.argv), encoding=None, stdin=asyncssh.DEVNULL,
                                                 stderr=asyncssh.STDOUT)
                out = await read_capped(proc.stdout, limit)
                done = await proc.wait(check=False)
                signal = f"killed by signal {done.exit_signal[0]}" if done.exit_signal else None
                return out, done.exit_status, signal

            try:
                out, rc, killed = await asyncio.wait_for(go(), timeout=timeout_s)
            except TimeoutError:
                if proc is not None:
                    # OpenSSH kills the remote process group on this request, except for root logins
                    # (no privilege-separated session: "session signalling requires privilege
                    # separation"); then the command lives on until it writes to the closed channel.
                    try:
                        proc.send_signal("KILL")
                    except Exception:
                        pass
                return NodeOutput(label=inv.label, error=f"timed out after {timeout_s:g} s",
                                  duration_s=time.monotonic() - started)
            except (asyncssh.Error, OSError) as exc:
                return NodeOutput(label=inv.label, error=clean_text(describe_error(exc)),
                                  duration_s=time.monotonic() - started)
            if killed is not None and (rc is None or rc < 0):
                return NodeOutput(label=inv.label, output=clean_output(out, limit), error=killed,
                                  duration_s=time.monotonic() - started)
            return NodeOutput(label=inv.label, output=clean_output(out, limit), rc=rc if rc is not None else -1,
                              duration_s=time.monotonic() - started)
        finally:
            conn.close()

    async def close(self) -> None:
        await self.pool.close()
