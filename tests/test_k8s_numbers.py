"""Hostile numbers and node names from the Kubernetes API (issue #19 item 4): a node whose name
Slurm/SSH would refuse is a malformed object (dropped, with the source's warning), as is a pod bound
to one; a negative or 300-digit GPU quantity is N/A; the other values stay."""

from __future__ import annotations

import pytest

from hpctui.sources.k8s import convert


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
