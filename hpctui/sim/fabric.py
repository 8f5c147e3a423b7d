"""The demo cluster's InfiniBand fabric: leaf switches of 8 GPU nodes (one for the CPU nodes) under one spine.

Every HCA port of a node is cabled to its leaf (port numbers in node order). The leaf of the
flapping node is the demo's faulty switch: its first port on each of its nodes flaps too, so the
problem list shows one "suspect leaf switch" finding for 8 nodes.
"""

from __future__ import annotations

from hpctui.model.fabric import Fabric, FabricSwitch, SwitchPort, build_fabric, link_key
from hpctui.sim.topology import NodeSpec, Topology

NODES_PER_LEAF = 8
SPINE = "ibspine1"


def leaf_name(k: int) -> str:
    return f"ibleaf{k + 1:02d}"


def build_sim_fabric(topo: Topology) -> Fabric:
    """Leaves over consecutive groups of :data:`NODES_PER_LEAF` GPU nodes, one leaf for the CPU nodes."""
    groups: list[tuple[str, tuple[NodeSpec, ...]]] = []
    gpu = topo.gpu_nodes
    for k in range(0, len(gpu), NODES_PER_LEAF):
        groups.append((leaf_name(k // NODES_PER_LEAF), gpu[k:k + NODES_PER_LEAF]))
    if topo.cpu_nodes:
        groups.append(("ibleaf-cpu", topo.cpu_nodes))
    switches: list[FabricSwitch] = []
    links: dict[str, SwitchPort] = {}
    for name, members in groups:
        port = 0
        for spec in members:
            for dev in spec.ib_devices:
                port += 1
                links[link_key(spec.name, dev, 1)] = SwitchPort(switch=name, port=port)
        switches.append(FabricSwitch(name=name, level=0, nodes=tuple(s.name for s in members),
                                     switches=(SPINE,), link_speed="400"))
    switches.append(FabricSwitch(name=SPINE, level=1, switches=tuple(n for n, _ in groups)))
    return build_fabric(switches, links, "demo")
