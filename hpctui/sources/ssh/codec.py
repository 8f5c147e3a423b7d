"""The real probe as the SSH transport runs it: hpctui.sources.ssh.probe' POSIX ``sh`` loop as the
remote command, its RecordSplitter per stream and parse_record per record.

A reading's ``None`` part means "not in this record" (a slow section, a late probe): the
node keeps its last value of that part, so the store sees the same object and takes no
new sample from it.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec

from hpctui.sources.ssh.probe.record import ProbeReading, ProbeState, RecordSplitter, parse_record
from hpctui.sources.ssh.probe.script import build_probe_script, remote_command
from hpctui.sources.ssh.settings import SshSettings

PARTS = ("gpus", "ib", "mounts", "services", "resources", "nvswitches")


class NodeView:
    """What a node shows now: its last value of each part, the last record's late probes and warnings."""

    __slots__ = ("events", "gpus", "ib", "late", "mounts", "nvswitches", "resources", "seq", "services", "warnings")

    def __init__(self) -> None:
        self.gpus: Any = None
        self.ib: Any = None
        self.mounts: Any = None
        self.services: Any = None
        self.resources: Any = None
        self.nvswitches: Any = None
        self.late: tuple[str, ...] = ()
        self.warnings: tuple[str, ...] = ()
        self.events: tuple[Any, ...] = ()
        self.seq = 0


class NodeProbeState:
    def __init__(self) -> None:
        self.parser = ProbeState()
        self.view = NodeView()


class ProbesCodec:
    def __init__(self, settings: SshSettings, *, one_shot: bool = False) -> None:
        opts = msgspec.structs.replace(settings.probe, interval_s=settings.interval_s)
        if one_shot:
            opts = msgspec.structs.replace(opts, max_records=1)
        self.options = opts
        self._command = remote_command(build_probe_script(options=opts))

    def command(self, node: str) -> str:
        return self._command  # the same text for every node: nothing node-specific reaches the shell

    def splitter(self) -> RecordSplitter:
        return RecordSplitter()

    def new_state(self, node: str) -> NodeProbeState:
        return NodeProbeState()

    def parse(self, node: str, record: str, state: NodeProbeState) -> NodeView:
        reading: ProbeReading = parse_record(node, record, state.parser, time.time())
        old = state.view
        view = NodeView()
        for part in PARTS:
            value = getattr(reading, part)
            setattr(view, part, value if value is not None else getattr(old, part))
        view.late = reading.late_probes
        view.warnings = reading.warnings
        view.events = reading.events
        view.seq = reading.seq
        state.view = view
        return view
