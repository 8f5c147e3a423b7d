"""The ``ssh`` source: node probes streamed over pooled asyncssh connections.

``collect()`` never waits on the network (except, once, for the first records after
start): the node runners keep their streams alive in the background and ``collect()``
returns each node's latest reading plus one :class:`ProbeStatus` per node.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from hpctui.base.sanitize import clean_text
from hpctui.model import SourceResult
from hpctui.model.action import CommandRun
from hpctui.model.logs import MAX_LOG_BYTES, LogChunk
from hpctui.model.output import NodeOutput
from hpctui.model.probe import ProbeStatus
from hpctui.sources.ssh.fabric import FabricSweeper
from hpctui.sources.ssh.pool import SshPool, raise_nofile_limit
from hpctui.sources.ssh.quotas import HostAsk, QuotaSweeper
from hpctui.sources.ssh.settings import SshSettings
from hpctui.sources.ssh.stream import NodeRunner, ProbeCodec
from hpctui.sources.ssh.targets import HostlistError, Resolver, Target, select_nodes

if TYPE_CHECKING:
    from hpctui.sources.registry import SourceContext
    from hpctui.sources.ssh.commands import SshCommandRunner
    from hpctui.sources.ssh.mig import SshMigBackend

INSECURE_WARNING = "SSH host key verification is OFF (insecure_skip_host_key_check = true)"


class SshSource:
    kind = "ssh"

    def __init__(self, settings: SshSettings, context: SourceContext | None = None, *,
                 codec: ProbeCodec | None = None, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.name = settings.name
        self.interval_s = settings.interval_s
        self.log_host = settings.log_host  # NodeLogReader: where job output files are read
        # the poller's bound on one collect(): the first one may wait for the first records
        self.timeout_s = settings.connect_timeout_s + settings.interval_s + settings.probe.probe_timeout_s + 5
        self.context = context
        self.clock = clock
        if codec is None:
            from hpctui.sources.ssh.codec import ProbesCodec

            codec = ProbesCodec(settings)
        self.codec = codec
        self.resolver = Resolver(settings)
        self.pool: SshPool | None = None
        self.runners: dict[str, NodeRunner] = {}
        self.nofile: tuple[int, int] | None = None
        self._first = True
        self._pending_events: list[Any] = []
        self._stopping: set[asyncio.Task[None]] = set()
        self._sent: dict[str, Any] = {}  # node -> reading last returned (reuse its tuples when unchanged)
        self.quota_sweeper = QuotaSweeper(settings.quotas, self._run_quota_sweep, clock=clock)
        self.fabric_sweeper = FabricSweeper(settings.fabric, self.run_scripts, clock=clock)

    # -- abilities beyond collect (hpctui.sources.capabilities) ---------------------------------

    def command_runner(self) -> SshCommandRunner:
        """CommandRunner: a fresh batch of connections with this source's settings (custom actions)."""
        from hpctui.sources.ssh.commands import SshCommandRunner

        return SshCommandRunner(self.settings)

    def mig_backend(self) -> SshMigBackend:
        """MigApplier: nvidia-smi over this source's connections (the MIG plan's SSH route)."""
        from hpctui.sources.ssh.mig import SshMigBackend

        return SshMigBackend(self)

    def node_shell_argv(self, node: str, *, command: str | None = None, tty: bool = False,
                   program: str = "ssh") -> tuple[str, ...]:
        """NodeShell: the system ``ssh`` argv to ``node`` with this source's settings (ssh_config,
        jump host, known_hosts and host-key policy, user, keys); ValueError for a node it would not
        dial (an invalid name, a bad template, a broken ssh_config). Reads ssh_config: not on the loop."""
        from hpctui.sources.ssh.shell import resolve_jumps, ssh_argv

        target = self.resolver.resolve(node)
        if target.error is not None:
            raise ValueError(f"{node}: {target.error}")
        alias = self.settings.host.format(node=node) if self.settings.host else node
        jumps = resolve_jumps(self.resolver, target.proxy_jump)
        return ssh_argv(self.settings, target, alias=alias, jumps=jumps, command=command, tty=tty, program=program)

    async def read_file(self, host: str, path: str, offset: int | None = None,
                        max_bytes: int = MAX_LOG_BYTES) -> LogChunk:
        """NodeLogReader: ``path``'s tail on ``host`` over a fresh connection (a job's output file)."""
        from hpctui.sources.ssh import logs

        runner = self.command_runner()
        try:
            argv = logs.wrap_preamble(logs.tail_argv(path, offset, max_bytes), self._preamble())
            out = await runner.run(logs.runs([host], argv)[0], logs.READ_TIMEOUT_S, max_bytes + 4096)
        finally:
            await runner.close()
        return logs.parse_tail(out, f"{host}:{clean_text(path)}", offset)

    async def journal(self, hosts: Sequence[str], since: float, until: float, *, kernel: bool = True,
                      units: Sequence[str] = (), max_lines: int = 2000) -> list[NodeOutput]:
        """NodeLogReader: ``journalctl`` of the window on each host, at most 32 at a time."""
        from hpctui.sources.ssh import logs

        argv = logs.wrap_preamble(logs.journal_argv(since, until, kernel=kernel, units=units, max_lines=max_lines),
                                  self._preamble())
        runner = self.command_runner()
        gate = asyncio.Semaphore(32)

        async def one(run: CommandRun) -> NodeOutput:
            async with gate:
                return logs.oldest_first(await runner.run(run, logs.READ_TIMEOUT_S, MAX_LOG_BYTES))

        try:
            await runner.resolve(hosts)
            return list(await asyncio.gather(*(one(r) for r in logs.runs(hosts, argv))))
        finally:
            await runner.close()

    def _preamble(self) -> str:
        from hpctui.sources.ssh.mig import _preamble

        return _preamble(self)

    # -- node set -------------------------------------------------------------------------------

    def _known_nodes(self) -> list[str]:
        if self.context is None or not self.settings.from_snapshot:
            return []
        snap = self.context.snapshot()
        if snap is None:
            return []
        # nodes a scheduler knows (not the ones only this source put into the snapshot)
        return [name for name, node in snap.nodes.items() if node.slurm is not None or node.k8s is not None]

    async def _sync_nodes(self) -> None:
        assert self.pool is not None
        wanted = select_nodes(self.settings, self._known_nodes())
        wanted_set = set(wanted)
        new = [n for n in wanted if n not in self.runners]
        for node in [n for n in self.runners if n not in wanted_set]:
            runner = self.runners.pop(node)
            task = asyncio.create_task(runner.stop())
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)
            self._sent.pop(node, None)
        # ssh_config resolution reads files: off the event loop (~0.3-0.6 ms a node), one batch of
        # max_handshakes at a time, each batch connecting while the next one is resolved
        batch = self.settings.max_handshakes
        for i in range(0, len(new), batch):
            chunk = new[i:i + batch]
            targets = await asyncio.to_thread(self._resolve_all, chunk)
            for node in chunk:
                if node not in self.runners:
                    runner = NodeRunner(targets[node], self.pool, self.codec, clock=self.clock)
                    runner.on_reading = self._on_reading
                    self.runners[node] = runner
                    runner.start()

    def _resolve_all(self, nodes: list[str]) -> dict[str, Target]:
        return {n: self.resolver.resolve(n) for n in nodes}

    def _on_reading(self, runner: NodeRunner, reading: Any) -> None:
        events = getattr(reading, "events", None)
        if events:
            self._pending_events.extend(events)

    # -- Source protocol ----------------------------------------------------------------------------

    async def collect(self) -> SourceResult:
        warnings: list[str] = []
        if self.settings.insecure_skip_host_key_check:
            warnings.append(INSECURE_WARNING)
        if self.pool is None:
            self.nofile = raise_nofile_limit()
            self.pool = SshPool(self.settings, self.resolver)
        try:
            await self._sync_nodes()
        except HostlistError as exc:
            raise ValueError(f"ssh source {self.name}: {exc}") from exc
        if self._first and self.runners:
            self._first = False
            first_wait = min(self.settings.connect_timeout_s + self.settings.interval_s + 1, self.timeout_s - 2)
            waits = [asyncio.create_task(r.settled.wait()) for r in self.runners.values()]
            _done, pending = await asyncio.wait(waits, timeout=first_wait)
            for t in pending:
                t.cancel()
        if self.context is not None:  # in the background: collect never waits for them
            snapshot = self.context.snapshot()
            self.quota_sweeper.maybe_start(snapshot)
            self.fabric_sweeper.maybe_start(snapshot, list(self.runners))
        return self._result(warnings)

    async def run_scripts(self, runs: list[tuple[str, str]], timeout_s: float, max_output: int) -> list[NodeOutput]:
        """Each (host, sh script) over a fresh batch of connections (with the probe's PATH/shim preamble), at
        most 16 hosts at once; one output per run, in order. The background sweeps (quotas, fabric) use it."""
        from hpctui.sources.ssh import logs

        runner = self.command_runner()
        gate = asyncio.Semaphore(16)

        async def one(host: str, script: str) -> NodeOutput:
            argv = logs.wrap_preamble(["sh", "-c", script], self._preamble())
            async with gate:
                return await runner.run(CommandRun(label=host, host=host, argv=tuple(argv)), timeout_s, max_output)

        try:
            await runner.resolve(list(dict.fromkeys(h for h, _ in runs)))
            return list(await asyncio.gather(*(one(h, sc) for h, sc in runs)))
        finally:
            await runner.close()

    async def _run_quota_sweep(self, asks: list[HostAsk], nonce: str) -> list[NodeOutput]:
        from hpctui.sources.ssh.quotas import MAX_OUTPUT, sweep_script

        return await self.run_scripts([(a.host, sweep_script(a, nonce)) for a in asks], self.settings.quotas.timeout_s,
                                      MAX_OUTPUT)

    def _result(self, warnings: list[str]) -> SourceResult:
        now = self.clock()
        fresh_within = self.settings.stale_after
        gpus: dict[str, Any] = {}
        ib: dict[str, Any] = {}
        mounts: dict[str, Any] = {}
        services: dict[str, Any] = {}
        resources: dict[str, Any] = {}
        nvswitches: dict[str, Any] = {}
        probes: dict[str, ProbeStatus] = {}
        bad = 0
        for node, r in self.runners.items():
            reading = r.latest
            fresh = reading is not None and r.latest_time is not None and now - r.latest_time <= fresh_within
            late: tuple[str, ...] = ()
            if fresh:
                late = tuple(clean_text(str(x)) for x in (getattr(reading, "late", None) or ()))
                for part, out in (("gpus", gpus), ("ib", ib), ("mounts", mounts), ("services", services),
                                  ("resources", resources), ("nvswitches", nvswitches)):
                    value = getattr(reading, part, None)
                    if value is not None:
                        out[node] = value
                for w in getattr(reading, "warnings", None) or ():
                    if len(warnings) < 20:
                        warnings.append(f"{node}: {clean_text(str(w))}")
            bad += r.bad_records - r.bad_reported
            r.bad_reported = r.bad_records
            if not r.settled.is_set() and reading is None:  # not yet known either way
                probes[clean_text(node)] = ProbeStatus(node=clean_text(node), reachable=False,
                                                       error="connecting (no record yet)")
                continue
            probes[clean_text(node)] = ProbeStatus(
                node=clean_text(node),
                reachable=bool(fresh),
                error=None if fresh and r.error is None else (r.error or "no fresh probe record"),
                last_ok=r.latest_time,
                next_retry=r.next_retry if not fresh else None,
                late_probes=late,
            )
        if bad:
            last = next((r.last_drop for r in self.runners.values() if r.last_drop), None)
            warnings.append(f"{bad} unreadable probe record(s) dropped" + (f" (last: {last})" if last else ""))
        events, self._pending_events = tuple(self._pending_events), []
        warnings.extend(self.quota_sweeper.warnings[:5])
        if self.fabric_sweeper.warning:
            warnings.append(self.fabric_sweeper.warning)
        return SourceResult(source=self.name, time=now, gpus=gpus, ib=ib, mounts=mounts, services=services,
                            resources=resources, nvswitches=nvswitches, events=events, probes=probes,
                            quotas=self.quota_sweeper.result(), fabric=self.fabric_sweeper.fabric,
                            warnings=tuple(warnings))

    async def close(self) -> None:
        await self.quota_sweeper.close()
        await self.fabric_sweeper.close()
        runners, self.runners = list(self.runners.values()), {}
        await asyncio.gather(*(r.stop() for r in runners), return_exceptions=True)
        if self.pool is not None:
            await self.pool.close()
