"""Hostile numbers and node names from the Kubernetes API (issue #19 item 4): a node whose name
Slurm/SSH would refuse is a malformed object (dropped, with the source's warning), as is a pod bound
to one; a negative or 300-digit GPU quantity is N/A with one source warning naming the field and the
object, kept while the object stays so; the other values stay."""

from __future__ import annotations

from typing import Any

import pytest

from hpctui.model.validate import Drops
from hpctui.sources.k8s import convert
from hpctui.sources.k8s.settings import K8sSettings
from hpctui.sources.k8s.source import K8sSource


def node(name: str, gpus: object = "8") -> dict[str, object]:
    return {"metadata": {"name": name}, "status": {"capacity": {"nvidia.com/gpu": gpus, "nvidia.com/mig-1g.10gb": "-1"},
                                                   "allocatable": {"nvidia.com/gpu": "1" + "0" * 300}}}


def test_invalid_node_names_make_the_object_malformed() -> None:
    for bad in ("[bold red]x", "-oProxyCommand=x", "a b", "x" * 300):
        with pytest.raises(convert.BadObject, match="invalid node name"):
            convert.node_info(node(bad))
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "[bold red]x"}}
    with pytest.raises(convert.BadObject, match="invalid node name"):
        convert.pod(pod)
    assert convert.pod({"metadata": {"name": "p"}, "spec": {"nodeName": "gpu-01.example"}}).node == "gpu-01.example"


def test_implausible_quantities_are_na_and_the_rest_intact() -> None:
    info = convert.node_info(node("gpu01", gpus=-1))
    assert (info.gpu_capacity, info.gpu_allocatable, info.mig_capacity) == (None, None, {})
    assert convert.node_info(node("gpu01")).gpu_capacity == 8
    assert convert.parse_quantity_int("1" + "0" * 5000) is None


def test_implausible_quantities_are_recorded_naming_field_and_object() -> None:
    drops = Drops()
    info = convert.node_info(node("gpu01", gpus="-1"), drops)
    assert info.gpu_capacity is None and info.gpu_allocatable is None and info.mig_capacity == {}
    assert drops.values == 3
    assert drops.warnings() == ["3 implausible value(s) dropped, shown as N/A (capacity nvidia.com/mig-1g.10gb='-1' "
                                "on node gpu01, capacity nvidia.com/gpu='-1' on node gpu01, allocatable "
                                f"nvidia.com/gpu='{'1' + '0' * 39}…' on node gpu01)"]
    drops = Drops()
    pod = {"metadata": {"name": "p", "namespace": "ns"},
           "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1" + "0" * 40}}},
                                   {"resources": {"requests": {"nvidia.com/mig-1g.10gb": "2"}}}]},
           "status": {"containerStatuses": [{"restartCount": -4}]}}
    p = convert.pod(pod, drops)
    assert (p.gpus_requested, p.restarts) == (2, 0)  # the plausible request counts, the absurd one is N/A
    assert drops.warnings()[0].startswith("2 implausible value(s) dropped, shown as N/A (restartCount=-4 on pod ns/p, "
                                          "resources nvidia.com/gpu='1000")
    drops = Drops()
    convert.node_info(node("gpu02", gpus="8") | {"status": {"capacity": {"nvidia.com/gpu": "8"}}}, drops)
    assert not drops  # plausible: nothing recorded


class _Client:
    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def list_all(self, path: str, **_kw: Any) -> tuple[list[Any], str]:
        return self.items, "5"

    def close(self) -> None:
        return None


async def test_the_source_warns_once_while_the_object_stays_implausible() -> None:
    src = K8sSource(K8sSettings(events=False))
    bad = node("gpu01", gpus="-1")
    src.client = _Client([bad, {"metadata": {"name": "gpu02"}, "status": {"capacity": {"nvidia.com/gpu": "8"}}}])  # type: ignore[assignment]
    nodes = next(s for s in src.streams if s.resource == "nodes")
    src._list(nodes)
    next(s for s in src.streams if s.resource == "pods").synced = True
    res = src._result()
    assert res.k8s_nodes is not None and res.k8s_nodes["gpu01"].gpu_capacity is None
    assert res.k8s_nodes["gpu02"].gpu_capacity == 8
    lines = [w for w in res.warnings if "implausible" in w]
    assert len(lines) == 1 and lines[0].startswith("3 implausible value(s) dropped") and "on node gpu01" in lines[0]
    assert [w for w in src._result().warnings if "implausible" in w] == lines  # still bad: still warned
    src._convert(nodes, {"metadata": {"name": "gpu01"}, "status": {"capacity": {"nvidia.com/gpu": "8"}}})  # fixed
    assert not [w for w in src._result().warnings if "implausible" in w]
    await src.close()
