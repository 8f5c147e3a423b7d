"""The ``ssh`` source: node probes streamed over pooled asyncssh connections.

``collect()`` never waits on the network (except, once, for the first records after
start): the node runners keep their streams alive in the background and ``collect()``
returns each node's latest reading plus one :class:`ProbeStatus` per node.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hpctui.base.sanitize import clean_text
from hpctui.model import SourceResult
from hpctui.model.probe import ProbeStatus
from hpctui.sources.ssh.pool import SshPool, raise_nofile_limit
from hpctui.sources.ssh.settings import SshSettings
from hpctui.sources.ssh.stream import NodeRunner, ProbeCodec
from hpctui.sources.ssh.targets import HostlistError, Resolver, select_nodes

if TYPE_CHECKING:
    from hpctui.sources.registry import SourceContext

INSECURE_WARNING = "SSH host key verification is OFF (insecure_skip_host_key_check = true)"


class SshSource:
    kind = "ssh"

    def __init__(self, settings: SshSettings, context: SourceContext | None = None, *,
                 codec: ProbeCodec | None = None, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.name = settings.name
        self.interval_s = settings.interval_s
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
        # ssh_config resolution reads files: off the event loop (~0.5 ms a node)
        targets = await asyncio.to_thread(lambda: {n: self.resolver.resolve(n) for n in new}) if new else {}
        for node in [n for n in self.runners if n not in wanted_set]:
            runner = self.runners.pop(node)
            task = asyncio.create_task(runner.stop())
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)
            self._sent.pop(node, None)
        for node in new:
            if node not in self.runners:
                runner = NodeRunner(targets[node], self.pool, self.codec, clock=self.clock)
                runner.on_reading = self._on_reading
                self.runners[node] = runner
                runner.start()

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
        return self._result(warnings)

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
        return SourceResult(source=self.name, time=now, gpus=gpus, ib=ib, mounts=mounts, services=services,
                            resources=resources, nvswitches=nvswitches, events=events, probes=probes,
                            warnings=tuple(warnings))

    async def close(self) -> None:
        runners, self.runners = list(self.runners.values()), {}
        await asyncio.gather(*(r.stop() for r in runners), return_exceptions=True)
        if self.pool is not None:
            await self.pool.close()
