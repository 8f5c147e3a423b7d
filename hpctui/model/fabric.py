"""InfiniBand fabric topology: which leaf switch each node hangs off, and where each HCA port is cabled.

Read from Slurm's topology/tree plugin (``scontrol show topology``) or from the fabric itself
(``ibnetdiscover`` / ``iblinkinfo``); several sources merge with :func:`merge_fabrics`. The model
is what the heatmap groups by, what the switch correlation counts under, and what the drain and
reboot previews name as the blast radius.
"""

from __future__ import annotations

import msgspec


class SwitchPort(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The far end of a node's HCA port: a switch and (when the source says) its port number."""

    switch: str
    port: int | None = None


class FabricSwitch(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One switch: the hosts cabled to it (a leaf has some) and the switches below/beside it."""

    name: str
    level: int = 0  # Slurm's Level (0 = leaf); fabric-discovered switches: 0 if hosts hang off it, else 1
    nodes: tuple[str, ...] = ()
    switches: tuple[str, ...] = ()
    link_speed: str | None = None  # Slurm's LinkSpeed, as written in topology.conf

    @property
    def is_leaf(self) -> bool:
        return self.level == 0 and bool(self.nodes)


class Fabric(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The topology of one cluster.

    ``leaf_of`` maps a node to the (first) leaf switch it is cabled to; ``links`` maps
    ``"node/device/port"`` (``"gpu01/mlx5_0/1"``) to the switch port at the other end.
    """

    switches: dict[str, FabricSwitch] = msgspec.field(default_factory=dict)
    leaf_of: dict[str, str] = msgspec.field(default_factory=dict)
    links: dict[str, SwitchPort] = msgspec.field(default_factory=dict)
    source: str = ""  # "slurm", "ibnetdiscover", "iblinkinfo" (merged: joined with "+")

    def peers(self, node: str) -> tuple[str, ...]:
        """The nodes under ``node``'s leaf switch, itself included; () when its leaf is unknown."""
        leaf = self.leaf_of.get(node)
        sw = self.switches.get(leaf) if leaf else None
        return sw.nodes if sw is not None else ()

    def remote(self, node: str, device: str, port: int) -> SwitchPort | None:
        """Where ``node``'s ``device`` port ``port`` is cabled, when the fabric was discovered."""
        return self.links.get(f"{node}/{device}/{port}")


def link_key(node: str, device: str, port: int) -> str:
    """The key of :attr:`Fabric.links` for one HCA port."""
    return f"{node}/{device}/{port}"


def build_fabric(switches: list[FabricSwitch], links: dict[str, SwitchPort], source: str) -> Fabric:
    """A :class:`Fabric` from its switches: ``leaf_of`` is derived from the lowest-level switch listing
    a node (Slurm's spines list every node below them too); among equals the first wins."""
    by_name: dict[str, FabricSwitch] = {}
    leaf_of: dict[str, str] = {}
    for sw in sorted(switches, key=lambda s: s.level):
        by_name.setdefault(sw.name, sw)
        for node in sw.nodes:
            leaf_of.setdefault(node, sw.name)
    return Fabric(switches=by_name, leaf_of=leaf_of, links=dict(links), source=source)


def merge_fabrics(fabrics: list[Fabric]) -> Fabric | None:
    """Several sources' topologies as one: the first source's switch and leaf of a node win,
    links are united (only the fabric tools know them). ``None`` when there is none."""
    if not fabrics:
        return None
    if len(fabrics) == 1:
        return fabrics[0]
    switches: dict[str, FabricSwitch] = {}
    leaf_of: dict[str, str] = {}
    links: dict[str, SwitchPort] = {}
    for fab in fabrics:
        for name, sw in fab.switches.items():
            switches.setdefault(name, sw)
        for node, leaf in fab.leaf_of.items():
            leaf_of.setdefault(node, leaf)
        for key, far in fab.links.items():
            links.setdefault(key, far)
    return Fabric(switches=switches, leaf_of=leaf_of, links=links, source="+".join(f.source for f in fabrics))
