"""The InfiniBand topology read by the fabric tools over SSH (issue #27 §1), on a slow cadence.

Every ``fabric.interval_s`` (off by default: ``ibnetdiscover`` sends management datagrams to every
switch of the fabric) the SSH source runs ``ibnetdiscover`` (or ``iblinkinfo``) on one node — ``fabric.host``,
else the first reachable probed node with an InfiniBand port — in the background, parses it off the event
loop (:mod:`hpctui.sources.ibfabric`) and reports the :class:`~hpctui.model.fabric.Fabric` as its
``fabric`` part: which leaf switch each node hangs off and where each HCA port is cabled. One fabric
answers for the whole cluster, so one node asks.

Promises: ``collect`` never waits for it; a failed or unreadable run keeps the last good fabric and says
why among the source's warnings; the output is capped (``MAX_OUTPUT``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from hpctui.base.sanitize import clean_text
from hpctui.sources.ibfabric import parse_iblinkinfo, parse_ibnetdiscover

if TYPE_CHECKING:
    from hpctui.model import ClusterSnapshot
    from hpctui.model.fabric import Fabric
    from hpctui.model.output import NodeOutput
    from hpctui.sources.ssh.settings import FabricSettings

MAX_OUTPUT = 32 << 20  # ibnetdiscover of a ~10k-port fabric is a few MiB
COMMANDS = {"ibnetdiscover": "ibnetdiscover", "iblinkinfo": "iblinkinfo"}

ScriptRunner = Callable[[list[tuple[str, str]], float, int], Awaitable[list["NodeOutput"]]]
"""Runs (host, sh script) pairs and returns one output per run (SshSource.run_scripts)."""


def pick_host(snapshot: ClusterSnapshot | None, probed: list[str], settings: FabricSettings) -> str | None:
    """The node that asks: ``settings.host``, else the first probed node that is reachable and has an
    InfiniBand port in the snapshot (a node whose HCA answers can run the fabric tools)."""
    if settings.host:
        return settings.host
    if snapshot is None:
        return None
    for node in sorted(probed):
        status = snapshot.probes.get(node)
        if snapshot.ib.get(node) and (status is None or status.reachable):
            return node
    return None


def parse_fabric(tool: str, text: str) -> Fabric:
    """The tool's output as a Fabric (``iblinkinfo`` or ``ibnetdiscover``)."""
    return parse_iblinkinfo(text) if tool == "iblinkinfo" else parse_ibnetdiscover(text)


class FabricSweeper:
    """The background fabric read of one SSH source."""

    def __init__(self, settings: FabricSettings, run: ScriptRunner, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self._run = run
        self.clock = clock
        self.last_start: float | None = None
        self.task: asyncio.Task[None] | None = None
        self.fabric: Fabric | None = None  # the last good answer
        self.warning: str | None = None

    def maybe_start(self, snapshot: ClusterSnapshot | None, probed: list[str]) -> None:
        """Start a read when one is due and a node can ask."""
        now = self.clock()
        if self.settings.interval_s <= 0 or (self.task is not None and not self.task.done()):
            return
        if self.last_start is not None and now - self.last_start < self.settings.interval_s:
            return
        host = pick_host(snapshot, probed, self.settings)
        if host is None:
            return  # no node with an InfiniBand port known yet: asked again at the next refresh
        self.last_start = now
        self.task = asyncio.ensure_future(self._read(host))

    async def _read(self, host: str) -> None:
        tool = self.settings.tool
        out = (await self._run([(host, COMMANDS[tool] + " 2>&1")], self.settings.timeout_s, MAX_OUTPUT))[0]
        if out.error is not None or out.rc != 0:
            first = next((line for line in out.output.splitlines() if line.strip()), "")
            why = out.error or f"exit {out.rc}" + (f": {first}" if first else "")
            self.warning = clean_text(f"fabric: {tool} on {host} failed ({why})")[:240]
            return
        fabric = await asyncio.to_thread(parse_fabric, tool, out.output)
        if not fabric.switches:
            self.warning = clean_text(f"fabric: {tool} on {host} printed no switch")[:240]
            return
        self.fabric, self.warning = fabric, None

    async def close(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
            await asyncio.wait({self.task}, timeout=5.0)
