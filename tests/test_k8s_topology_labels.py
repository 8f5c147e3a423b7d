"""Issue #27 §1: the fabric a topology labeller (NVIDIA Topograph, AWS) wrote on the Kubernetes nodes. Label
keys as Topograph's node-labels reference (NVIDIA/topograph docs/reference/node-labels.md), its v0.1 k8s engine
docs and AWS's node labels name them."""

from __future__ import annotations

from hpctui.model import K8sNodeInfo
from hpctui.sources.k8s.topology import fabric_from_labels


def test_topograph_leaf_and_spine_labels() -> None:
    nodes = [K8sNodeInfo(name=f"gpu{i:02d}", labels={"network.topology.nvidia.com/leaf": f"leaf{(i - 1) // 2}",
                                                      "network.topology.nvidia.com/spine": "spine0",
                                                      "network.topology.nvidia.com/accelerator": "nvl1"})
             for i in range(1, 5)]
    nodes.append(K8sNodeInfo(name="cpu01", labels={"kubernetes.io/hostname": "cpu01"}))  # no fabric label
    fabric = fabric_from_labels(nodes, lambda n: n.upper())
    assert fabric is not None and fabric.source == "k8s-labels"
    assert fabric.leaf_of == {"GPU01": "leaf0", "GPU02": "leaf0", "GPU03": "leaf1", "GPU04": "leaf1"}
    assert fabric.switches["leaf0"].is_leaf and fabric.switches["leaf0"].nodes == ("GPU01", "GPU02")
    assert fabric.switches["spine0"].level == 1 and fabric.switches["spine0"].switches == ("leaf0", "leaf1")
    assert fabric.peers("GPU03") == ("GPU03", "GPU04")


def test_older_and_other_label_schemes_and_none() -> None:
    v01 = [K8sNodeInfo(name="n1", labels={"network.topology.nvidia.com/block": "s1",
                                          "network.topology.nvidia.com/spine": "s2"})]
    level = [K8sNodeInfo(name="n2", labels={"topology.kubernetes.io/network-level-1": "S1",
                                            "topology.kubernetes.io/network-level-2": "S2"})]
    tier = [K8sNodeInfo(name="n3", labels={"network.topology.nvidia.com/tier-0": "t0",
                                           "network.topology.nvidia.com/tier-1": "t1"})]
    aws = [K8sNodeInfo(name="n4", labels={"topology.k8s.aws/network-node-layer-3": "nn-leaf",
                                          "topology.k8s.aws/network-node-layer-2": "nn-agg",
                                          "topology.k8s.aws/network-node-layer-1": "nn-spine"})]
    for nodes, leaf, spine in ((v01, "s1", "s2"), (level, "S1", "S2"), (tier, "t0", "t1"), (aws, "nn-leaf", "nn-agg")):
        fabric = fabric_from_labels(nodes, str)
        assert fabric is not None and fabric.leaf_of == {nodes[0].name: leaf}
        assert fabric.switches[spine].switches == (leaf,)
    assert fabric_from_labels([K8sNodeInfo(name="x")], str) is None
    custom = [K8sNodeInfo(name="n5", labels={"example.com/tor": "tor7"})]
    assert fabric_from_labels(custom, str) is None
    chosen = fabric_from_labels(custom, str, ("example.com/tor",))
    assert chosen is not None and chosen.leaf_of == {"n5": "tor7"}
