"""Slurm's network topology: ``scontrol show topology`` with the topology/tree plugin.

One line per switch, ``SwitchName=<n> Level=<0..> LinkSpeed=<n> Nodes=<hostlist> Switches=<hostlist>``
(Nodes/Switches only when set; a higher-level switch lists every node below it). Level 0 switches
are the leaves. Other plugins print other records (topology/block: ``BlockName=``): those lines are
skipped, so the result is empty rather than wrong. Every string passes the sanitizer; a line whose
hostlist does not expand is dropped alone.
"""

from __future__ import annotations

from hpctui.model.fabric import Fabric, FabricSwitch, build_fabric
from hpctui.model.hostlist import HostlistError, expand
from hpctui.sources.slurm.parse.values import text, to_int


def _pairs(line: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for token in line.split():
        key, sep, value = token.partition("=")
        if sep:
            out[key] = value
    return out


def parse_scontrol_topology(output: str) -> Fabric:
    """``scontrol show topology`` → a :class:`Fabric` (no port links: Slurm does not know cables)."""
    switches: list[FabricSwitch] = []
    for line in output.splitlines():
        fields = _pairs(line.strip())
        name = text(fields.get("SwitchName"))
        if not name:
            continue
        try:
            nodes = tuple(expand(fields["Nodes"])) if fields.get("Nodes") else ()
            below = tuple(expand(fields["Switches"])) if fields.get("Switches") else ()
        except HostlistError:
            continue
        switches.append(FabricSwitch(
            name=name, level=to_int(fields.get("Level")) or 0,
            nodes=tuple(n for n in (text(x) for x in nodes) if n),
            switches=tuple(s for s in (text(x) for x in below) if s),
            link_speed=text(fields.get("LinkSpeed")),
        ))
    return build_fabric(switches, {}, "slurm")
