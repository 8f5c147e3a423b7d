"""Parsers of the InfiniBand fabric tools: ``ibnetdiscover`` and ``iblinkinfo`` (infiniband-diags).

Formats (rdma-core ``ibnetdiscover.c`` / ``iblinkinfo.c``; real outputs in tests/fixtures/ib):

* ``ibnetdiscover``: a ``Switch <nports> "S-<guid>" # "<desc>" ... lid <n>`` or ``Ca <nports> "H-<guid>"
  # "<desc>"`` header per node, then one ``[<port>] "<peer id>"[<peer port>]... # "<peer desc>" ...``
  line per cabled port (a CA's port line has ``[<port>](<portguid>)`` and the peer's description
  after ``lid <lid> lmc <lmc>``).
* ``iblinkinfo``: ``CA: <desc>:`` / ``Switch: 0x<guid> <desc>:`` headers, then per port
  ``[<guid>] <lid> <port>[<ext>] ==( <width> <speed> Gbps <state>/ <phys>)==> <rlid> <rport>[<ext>] "<rdesc>" ( )``;
  a port with nothing at the far end shows ``==>             [  ] "" ( )``.

A CA's node description is ``<hostname> <device>`` (rdma-ndd's default, e.g. ``gpu01 mlx5_0``); a
switch's is a name: ``MF0;<name>:<model>/U1`` on managed Mellanox/NVIDIA switches gives ``<name>``,
and an unnamed switch (``SwitchIB Mellanox Technologies``) is named by its GUID. Every string passes
the sanitizer; one bad line costs that line.
"""

from __future__ import annotations

import re

from hpctui.base.sanitize import clean_text
from hpctui.model.fabric import Fabric, FabricSwitch, SwitchPort, build_fabric, link_key

_ND_NODE = re.compile(r'^(Switch|Ca|Rt)\s+\d+\s+"([SHR])-([0-9a-fA-F]+)"\s*#\s*"([^"]*)"')
_ND_PORT = re.compile(r'^\[(\d+)\](?:\([0-9a-fA-F]+\))?\s+"([SHR])-([0-9a-fA-F]+)"\[(\d+)\][^#]*#\s*(.*)$')
_ND_DESC = re.compile(r'"([^"]*)"')
_LI_CA = re.compile(r"^CA:\s+(.*):\s*$")
_LI_SWITCH = re.compile(r"^Switch:\s+0x([0-9a-fA-F]+)\s+(.*):\s*$")
_LI_PORT = re.compile(
    r'^\s*(?:0x[0-9a-fA-F]+\s+)?(?:"[^"]*"\s+)?\d+\s+(\d+)\[[^\]]*\]\s+==\((.*?)\)==>\s*(?:(\d+)\s+(\d+))?\s*\[[^\]]*\]\s+"([^"]*)"')
_MF0 = re.compile(r"^MF0;([^:]+):")
_SWITCHY = re.compile(r"^MF0;|Switch|Quantum|Infiniscale|Mellanox Technologies|ISR\d", re.IGNORECASE)


def switch_name(desc: str, guid: str) -> str:
    """A switch's display name: the ``MF0;<name>:`` part of a managed switch's description, else its GUID."""
    m = _MF0.match(desc)
    if m and m.group(1).strip():
        return clean_text(m.group(1).strip())
    return f"0x{guid.lower().lstrip('0') or '0'}"


def host_of(desc: str) -> tuple[str, str] | None:
    """``"gpu01 mlx5_0"`` → ``("gpu01", "mlx5_0")``; None for a description without a device part."""
    parts = desc.split()
    if len(parts) < 2:
        return None
    return clean_text(parts[0]), clean_text(parts[1])


class _Switches:
    """Switch records being built: hosts and neighbour switches per switch id."""

    def __init__(self, guid_keys: bool = False) -> None:
        self.guid_keys = guid_keys  # keys are GUIDs (ibnetdiscover): an unseen one is named by its GUID
        self.names: dict[str, str] = {}
        self.hosts: dict[str, list[str]] = {}
        self.neighbours: dict[str, list[str]] = {}

    def add(self, key: str, name: str) -> None:
        self.names.setdefault(key, name)
        self.hosts.setdefault(key, [])
        self.neighbours.setdefault(key, [])

    def name(self, key: str) -> str:
        """The display name of a switch key, also of a switch outside the output (a GUID then)."""
        known = self.names.get(key)
        if known is not None or not self.guid_keys:
            return known or key
        return f"0x{key.lstrip('0') or '0'}"

    def fabric(self, links: dict[str, SwitchPort], source: str) -> Fabric:
        out = []
        for key, name in self.names.items():
            hosts = tuple(dict.fromkeys(self.hosts[key]))
            nbrs = tuple(dict.fromkeys(self.name(n) for n in self.neighbours[key]))
            out.append(FabricSwitch(name=name, level=0 if hosts else 1, nodes=hosts, switches=nbrs))
        return build_fabric(out, links, source)


def parse_ibnetdiscover(text: str) -> Fabric:
    """``ibnetdiscover`` output → the switches, the hosts cabled to each, and each host port's switch port."""
    switches = _Switches(guid_keys=True)
    links: dict[str, SwitchPort] = {}
    pending: list[tuple[str, str, str]] = []  # (host, device/port key, switch guid/port) before the switch is named
    kind = ""
    here = ""
    host: tuple[str, str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        node = _ND_NODE.match(line)
        if node:
            kind, here = node.group(1), node.group(3).lower()
            desc = node.group(4)
            if kind == "Switch":
                switches.add(here, switch_name(desc, here))
            host = host_of(desc) if kind == "Ca" else None
            continue
        port = _ND_PORT.match(line)
        if not port or not here:
            continue
        num, peer_kind, peer, peer_port = int(port.group(1)), port.group(2), port.group(3).lower(), int(port.group(4))
        descs = _ND_DESC.findall(port.group(5))
        if kind == "Switch":
            if peer_kind == "S":
                switches.neighbours[here].append(peer)
            elif peer_kind == "H" and descs:
                peer_host = host_of(descs[-1])
                if peer_host is not None:
                    switches.hosts[here].append(peer_host[0])
                    links.setdefault(link_key(peer_host[0], peer_host[1], peer_port),
                                     SwitchPort(switch=here, port=num))
        elif kind == "Ca" and host is not None and peer_kind == "S":
            pending.append((host[0], link_key(host[0], host[1], num), f"{peer}/{peer_port}"))
    for hostname, key, far in pending:  # a CA record names its switch by GUID: it may come before the switch's
        guid, _, p = far.partition("/")
        links.setdefault(key, SwitchPort(switch=guid, port=int(p)))
        if guid in switches.names:
            switches.hosts[guid].append(hostname)
    named = {k: SwitchPort(switch=switches.name(v.switch), port=v.port) for k, v in links.items()}
    return switches.fabric(named, "ibnetdiscover")


def parse_iblinkinfo(text: str) -> Fabric:
    """``iblinkinfo`` output → switches with their cabled hosts, and each host port's switch port.

    Ports whose far end is empty (``Down/ Polling``) add no link. A CA section names its switch by
    description only, so the switch key there is its name; the switch section's hosts are its peers.
    """
    switches = _Switches()
    links: dict[str, SwitchPort] = {}
    here_switch: str | None = None
    host: tuple[str, str] | None = None
    for raw in text.splitlines():
        ca = _LI_CA.match(raw)
        if ca:
            host, here_switch = host_of(ca.group(1)), None
            continue
        sw = _LI_SWITCH.match(raw)
        if sw:
            name = switch_name(sw.group(2).strip(), sw.group(1))
            here_switch, host = name, None
            switches.add(name, name)
            continue
        port = _LI_PORT.match(raw)
        if not port or port.group(4) is None:
            continue
        num, peer_port, peer_desc = int(port.group(1)), int(port.group(4)), port.group(5)
        if host is not None:
            name = switch_name(peer_desc, peer_desc)
            links.setdefault(link_key(host[0], host[1], num), SwitchPort(switch=name, port=peer_port))
        elif here_switch is not None:
            peer_host = host_of(peer_desc)
            if peer_host is not None and not _SWITCHY.search(peer_desc):
                switches.hosts[here_switch].append(peer_host[0])
                links.setdefault(link_key(peer_host[0], peer_host[1], peer_port),
                                 SwitchPort(switch=here_switch, port=num))
            else:
                switches.neighbours[here_switch].append(switch_name(peer_desc, peer_desc))
    for key, far in links.items():  # hosts seen only from their own CA section
        switches.add(far.switch, far.switch)
        hostname = key.split("/", 1)[0]
        if hostname not in switches.hosts[far.switch]:
            switches.hosts[far.switch].append(hostname)
    return switches.fabric(links, "iblinkinfo")
