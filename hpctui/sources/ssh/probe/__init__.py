"""Transport-independent node probe: the remote ``sh`` loop and the parser of its records.

* :func:`hpctui.sources.ssh.probe.script.build_probe_script` builds the POSIX ``sh`` loop sent as the
  remote command (no agent on the node). It prints one delimited record per interval.
* :class:`hpctui.sources.ssh.probe.record.RecordSplitter` turns a byte stream into complete records.
* :func:`hpctui.sources.ssh.probe.record.parse_record` turns one record into a :class:`ProbeReading`
  of model objects, keeping per-node counters in a :class:`ProbeState`.

The SSH source streams the loop's stdout into the splitter; tests run the same loop with a
local ``sh`` against the shims in ``tests/testbed/nodeshims``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hpctui.sources.ssh.probe.record import ProbeReading, ProbeState, RecordSplitter, parse_record
    from hpctui.sources.ssh.probe.script import ProbeOptions, build_probe_script, remote_command

# Imported on first use (PEP 562): the config loader needs only ProbeOptions, and the
# parsers cost ~50 ms of start-up that the first frame should not wait for.
_WHERE = {
    "ProbeReading": "record", "ProbeState": "record", "RecordSplitter": "record", "parse_record": "record",
    "ProbeOptions": "script", "build_probe_script": "script", "remote_command": "script",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"hpctui.sources.ssh.probe.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'hpctui.sources.ssh.probe' has no attribute {name!r}")


__all__ = [
    "ProbeOptions",
    "ProbeReading",
    "ProbeState",
    "RecordSplitter",
    "build_probe_script",
    "parse_record",
    "remote_command",
]
