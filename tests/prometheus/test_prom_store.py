"""Sources combine: per-part precedence when two sources deliver one node's part, and where each
value came from with its age (the store side of the node panel's provenance lines)."""

from __future__ import annotations

import pytest

from hpctui.core.config import ConfigError, parse_config
from hpctui.core.store import Store
from hpctui.model import Gpu, NodeResources, Part, SlurmNodeInfo, SourceResult


def gpus(node: str, util: float) -> dict[str, tuple[Gpu, ...]]:
    return {node: (Gpu(node=node, index=0, util_pct=util),)}


def test_precedence_per_part_decides_and_origin_says_who_won() -> None:
    store = Store("c", precedence={"gpus": ["prometheus", "ssh"], "resources": ["ssh", "prometheus"]})
    store.apply(SourceResult(source="slurm", time=100.0, slurm_nodes={
        "a": SlurmNodeInfo(base_state="IDLE"), "b": SlurmNodeInfo(base_state="IDLE"),
        "c": SlurmNodeInfo(base_state="IDLE")}))
    store.apply(SourceResult(source="prometheus", time=110.0, gpus={**gpus("a", 10.0), **gpus("b", 20.0)},
                             resources={"a": NodeResources(node="a", load1=1.0)},
                             node_times={"a": 108.0, "b": 60.0}, stale_after_s=45.0))
    store.apply(SourceResult(source="ssh", time=111.0, gpus={**gpus("a", 99.0), **gpus("c", 30.0)},
                             resources={"a": NodeResources(node="a", load1=2.0)}))
    snap = store.snapshot()
    assert snap.gpus["a"][0].util_pct == 10.0  # prometheus first for GPUs, although ssh answered later
    assert snap.gpus["c"][0].util_pct == 30.0  # only ssh knows c
    assert snap.resources["a"].load1 == 2.0  # ssh first for resources
    assert snap.origin(Part.GPUS, "a") == "prometheus" and snap.origin(Part.GPUS, "c") == "ssh"
    assert snap.origin(Part.RESOURCES, "a") == "ssh"
    assert snap.value_age(Part.GPUS, "a", 120.0) == ("prometheus", 12.0)  # the node's own sample time
    assert snap.value_age(Part.GPUS, "b", 120.0) == ("prometheus", 60.0)
    assert snap.value_age(Part.GPUS, "c", 120.0) == ("ssh", 9.0)  # the part's delivery time
    assert snap.value_age(Part.IB, "a", 120.0) is None
    assert snap.sources["prometheus"].stale_after_s == 45.0


def test_without_precedence_the_later_source_wins_as_before() -> None:
    store = Store("c")
    store.apply(SourceResult(source="one", time=1.0, gpus=gpus("a", 1.0)))
    store.apply(SourceResult(source="two", time=2.0, gpus=gpus("a", 2.0)))
    snap = store.snapshot()
    assert snap.gpus["a"][0].util_pct == 2.0 and snap.origin(Part.GPUS, "a") == "two"


def test_single_source_origin_only_for_nodes_it_has() -> None:
    store = Store("c")
    store.apply(SourceResult(source="prometheus", time=5.0, gpus=gpus("a", 1.0)))
    snap = store.snapshot()
    assert snap.origin(Part.GPUS, "a") == "prometheus" and snap.origin(Part.GPUS, "zz") is None
    assert snap.part_origins == {}  # nothing per node to keep with one source


def test_metrics_name_the_nodes_when_no_scheduler_source_is_configured() -> None:
    store = Store("c")
    store.apply(SourceResult(source="prometheus", time=5.0, gpus=gpus("g2", 1.0),
                             resources={"cpu1": NodeResources(node="cpu1")}))
    snap = store.snapshot()
    assert list(snap.nodes) == ["cpu1", "g2"]
    assert snap.nodes["g2"].slurm is None and snap.nodes["g2"].k8s is None


def test_precedence_config_is_validated() -> None:
    cfg = parse_config({"clusters": {"c": {"sources": [{"kind": "prometheus"}],
                                           "precedence": {"gpus": ["prometheus", "ssh"]}}}})
    assert cfg.clusters["c"].precedence == {"gpus": ["prometheus", "ssh"]}
    with pytest.raises(ConfigError, match=r"precedence.slurm_jobs: not a per-node part"):
        parse_config({"clusters": {"c": {"sources": [{"kind": "demo"}], "precedence": {"slurm_jobs": ["x"]}}}})
    with pytest.raises(ConfigError, match=r"sources\[0\].urll: unknown key"):
        parse_config({"clusters": {"c": {"sources": [{"kind": "prometheus", "urll": "x"}]}}})
