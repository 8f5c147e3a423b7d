"""The fabric a topology labeller wrote on the Kubernetes nodes (issue #27 §1): which leaf switch each
node hangs off, and which spine each leaf is under.

Label keys, first present wins, per tier (the defaults; ``topology_labels`` in the settings overrides
the leaf keys):

- NVIDIA Topograph: ``network.topology.nvidia.com/leaf`` / ``spine`` / ``core`` (its node-labels
  reference), the newer ``network.topology.nvidia.com/tier-0`` / ``tier-1`` (tier 0 is closest to the
  node) and v0.1's ``network.topology.nvidia.com/block`` / ``spine``;
- Topograph's first Kubernetes engine: ``topology.kubernetes.io/network-level-1`` / ``-2``;
- AWS: ``topology.k8s.aws/network-node-layer-3`` (the leaf) / ``-2``.

Pure functions of the node infos; node names are mapped (``name_of``) to the cluster's names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from hpctui.model import K8sNodeInfo
from hpctui.model.fabric import Fabric, FabricSwitch, build_fabric

LEAF_LABELS: tuple[str, ...] = (
    "network.topology.nvidia.com/leaf", "network.topology.nvidia.com/tier-0", "network.topology.nvidia.com/block",
    "topology.kubernetes.io/network-level-1", "topology.k8s.aws/network-node-layer-3",
)
SPINE_LABELS: tuple[str, ...] = (
    "network.topology.nvidia.com/spine", "network.topology.nvidia.com/tier-1",
    "topology.kubernetes.io/network-level-2", "topology.k8s.aws/network-node-layer-2",
)


def _first(labels: dict[str, str], keys: Sequence[str]) -> str | None:
    for key in keys:
        value = labels.get(key)
        if value:
            return value
    return None


def fabric_from_labels(nodes: Iterable[K8sNodeInfo], name_of: Callable[[str], str],
                       leaf_keys: Sequence[str] = LEAF_LABELS, spine_keys: Sequence[str] = SPINE_LABELS) -> Fabric | None:
    """Leaf switches (level 0) with their nodes and spines (level 1) with their leaves; None when no node
    carries a leaf label."""
    leaves: dict[str, list[str]] = {}
    spine_of: dict[str, str] = {}
    for info in nodes:
        leaf = _first(info.labels, leaf_keys)
        if leaf is None:
            continue
        leaves.setdefault(leaf, []).append(name_of(info.name))
        spine = _first(info.labels, spine_keys)
        if spine is not None and spine != leaf:
            spine_of.setdefault(leaf, spine)
    if not leaves:
        return None
    switches = [FabricSwitch(name=leaf, level=0, nodes=tuple(sorted(names))) for leaf, names in sorted(leaves.items())]
    spines: dict[str, list[str]] = {}
    for leaf, spine in spine_of.items():
        spines.setdefault(spine, []).append(leaf)
    switches.extend(FabricSwitch(name=s, level=1, switches=tuple(sorted(ls))) for s, ls in sorted(spines.items())
                    if s not in leaves)
    return build_fabric(switches, {}, "k8s-labels")
