"""Issue #27 §1: Topograph's node labels on the real kube-apiserver become the cluster's fabric (leaf switch per
node, spine above), through the K8s source and the store; the same nodes without labels give none."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from k8s_helpers import collect_until, make_source
from k8slab import K8sLab

from hpctui.core.store import Store

pytestmark = pytest.mark.live
NODES = ("topo01", "topo02", "topo03")


def test_topograph_labels_give_the_fabric(k8s_lab: K8sLab) -> None:
    lab = k8s_lab
    try:
        for i, name in enumerate(NODES):
            lab.make_node(name, gpus=8, labels={"network.topology.nvidia.com/leaf": f"ibleaf{i // 2:02d}",
                                                "network.topology.nvidia.com/spine": "ibspine00",
                                                "network.topology.nvidia.com/accelerator": "nvl-1"})
        src = make_source(lab)
        store = Store("k8s")
        try:
            def ready(r: Any) -> bool:
                store.apply(r)
                return r.fabric is not None and set(NODES) <= set(r.fabric.leaf_of)

            asyncio.run(collect_until(src, "the labelled nodes' fabric", ready))
        finally:
            asyncio.run(src.close())
        fabric = store.snapshot().fabric
        assert fabric is not None and fabric.source == "k8s-labels"
        assert {n: fabric.leaf_of[n] for n in NODES} == {"topo01": "ibleaf00", "topo02": "ibleaf00", "topo03": "ibleaf01"}
        assert fabric.switches["ibspine00"].switches[:2] == ("ibleaf00", "ibleaf01")
        assert set(NODES[:2]) <= set(fabric.peers("topo01"))
    finally:
        for name in NODES:
            lab.http("DELETE", f"/api/v1/nodes/{name}")
