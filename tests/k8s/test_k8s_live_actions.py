"""Live actions against a real kube-apiserver v1.20.2 through the action layer
(plan → preview → confirm → execute → audit): cordon/uncordon, drain through the
policy/v1beta1 Eviction API with a PodDisruptionBudget (429, then 201), DaemonSet and
mirror pods skipped, and the MIG label workflow followed to success and to failed."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest
from k8s_helpers import gfd_labels, make_source, wait_for
from k8slab import K8sLab

from hpctui.core.runtime import Runtime
from hpctui.model.action import ActionKind, ActionResult
from hpctui.model.names import NodeNameMap
from hpctui.sources.k8s.source import K8sSource

pytestmark = pytest.mark.live
PDB = "/apis/policy/v1beta1/namespaces/hpc/poddisruptionbudgets"


def runtime(lab: K8sLab, tmp_path: Path, **kw: object) -> tuple[Runtime, K8sSource]:
    src = make_source(lab, name_map=NodeNameMap(strip_suffix=".lab"), events=False, **kw)  # type: ignore[arg-type]
    return Runtime("lab", [src], audit_path=tmp_path / "audit.jsonl", name_map=NodeNameMap(strip_suffix=".lab")), src


async def act(rt: Runtime, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str] | None = None,
              confirm: str | bool = True) -> ActionResult:
    await rt.collect_once()
    plan = rt.executor.plan(kind, targets, params, rt.store.snapshot())
    assert plan.runnable, plan.errors
    return await rt.run_action(plan, confirm)


def node(lab: K8sLab, name: str) -> dict[str, object]:
    return dict(lab.ok("GET", f"/api/v1/nodes/{name}"))


async def test_cordon_uncordon_through_the_action_layer(lab: K8sLab, tmp_path: Path) -> None:
    lab.make_node("gpu01.lab", gpus=8)
    lab.make_pod("hpc", "p0", "gpu01.lab")
    rt, _src = runtime(lab, tmp_path)
    try:
        await rt.collect_once()
        plan = rt.executor.plan(ActionKind.CORDON_NODES, ("gpu01",), {}, rt.store.snapshot())
        assert plan.source == "k8s" and plan.targets == ("gpu01",)
        assert "kubectl cordon gpu01.lab" in plan.commands[0]
        result = await rt.run_action(plan, True)
        assert result.ok, result.results
        assert node(lab, "gpu01.lab")["spec"]["unschedulable"] is True  # type: ignore[index]
        result = await act(rt, ActionKind.UNCORDON_NODES, ("gpu01",))
        assert result.ok and not node(lab, "gpu01.lab").get("spec", {}).get("unschedulable")  # type: ignore[attr-defined]
        bad = rt.executor.plan(ActionKind.CORDON_NODES, ("nosuch",), {}, rt.store.snapshot())
        assert not bad.runnable and "unknown node 'nosuch'" in bad.errors[0]
    finally:
        await rt.stop()
        await _src.close()
    audit = [a for a in map(json.loads, (tmp_path / "audit.jsonl").read_text().splitlines())
             if a.get("phase") != "intent"]  # outcomes; each run also has an intent record before it
    assert [(a["action"], a["source"], a["targets"]) for a in audit] == [
        ("cordon", "k8s", ["gpu01"]), ("uncordon", "k8s", ["gpu01"])]
    assert all(r["ok"] for a in audit for r in a["results"])


def _pdb(lab: K8sLab, allowed: int) -> None:
    doc = lab.ok("GET", f"{PDB}/guard")
    lab.merge(f"{PDB}/guard/status", {"status": {
        "observedGeneration": doc["metadata"].get("generation", 1), "disruptionsAllowed": allowed,
        "currentHealthy": 1, "desiredHealthy": 1 - allowed, "expectedPods": 1}})


def _drain_bed(lab: K8sLab) -> None:
    lab.make_node("gpu02.lab", gpus=8)
    lab.make_pod("hpc", "guarded", "gpu02.lab", labels={"app": "guarded"}, owner=("ReplicaSet", "g-1"), gpus=8)
    lab.make_pod("hpc", "free", "gpu02.lab", labels={"app": "free"}, owner=("ReplicaSet", "f-1"))
    lab.make_pod("gpu-operator", "nvidia-dcgm-exporter-x", "gpu02.lab", owner=("DaemonSet", "nvidia-dcgm-exporter"))
    lab.make_pod("hpc", "static-gpu02", "gpu02.lab", annotations={"kubernetes.io/config.mirror": "abc"})
    lab.ok("POST", PDB, {"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget", "metadata": {"name": "guard"},
                         "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}}})
    _pdb(lab, 0)


async def test_drain_pdb_429_then_201(lab: K8sLab, tmp_path: Path) -> None:
    _drain_bed(lab)
    rt, src = runtime(lab, tmp_path, drain_retry_s=0.5, drain_timeout_s=120.0)
    try:
        await rt.collect_once()
        plan = rt.executor.plan(ActionKind.K8S_DRAIN_NODES, ("gpu02",), {"grace_period_s": "0"},
                                rt.store.snapshot())
        assert plan.runnable, plan.errors
        assert sorted(plan.affected) == [
            "evict hpc/free (ReplicaSet/f-1), Running on gpu02",
            "evict hpc/guarded (ReplicaSet/g-1), 8 GPU, Running on gpu02",
            "skip gpu-operator/nvidia-dcgm-exporter-x on gpu02: DaemonSet pod",
            "skip hpc/static-gpu02 on gpu02: mirror (static) pod",
        ]

        def release_pdb() -> None:  # the test plays the disruption controller: allow one disruption
            wait_for("a 429 on the guarded pod", lambda: any("guarded blocked (429)" in p for p in src.progress))
            _pdb(lab, 1)
        helper = threading.Thread(target=release_pdb)
        helper.start()
        result = await rt.run_action(plan, True)
        await asyncio.to_thread(helper.join)
        assert result.ok, result.results
        msg = result.results[0].message
        assert "evicted 2 pod(s) via policy/v1beta1" in msg and "skipped 2" in msg
        assert src.eviction_version() == "policy/v1beta1"  # 1.20 serves no policy/v1 (discovery)
        assert node(lab, "gpu02.lab")["spec"]["unschedulable"] is True  # type: ignore[index]
        left = {p["metadata"]["name"] for ns in ("hpc", "gpu-operator")
                for p in lab.ok("GET", f"/api/v1/namespaces/{ns}/pods")["items"]}
        assert left == {"nvidia-dcgm-exporter-x", "static-gpu02"}  # grace 0: evicted pods are gone
    finally:
        await rt.stop()
        await src.close()


async def test_drain_gives_up_and_reports_the_blocked_pod(lab: K8sLab, tmp_path: Path) -> None:
    _drain_bed(lab)
    rt, src = runtime(lab, tmp_path, drain_retry_s=0.3, drain_timeout_s=2.0)
    try:
        result = await act(rt, ActionKind.K8S_DRAIN_NODES, ("gpu02",), {"grace_period_s": "0"})
        assert not result.ok
        msg = result.results[0].message
        assert "evicted 1 pod(s)" in msg and "could not evict: hpc/guarded: 429" in msg
        assert "disruption budget" in msg
    finally:
        await rt.stop()
        await src.close()


async def _mig(lab: K8sLab, tmp_path: Path, final: str) -> ActionResult:
    labels = gfd_labels()
    labels["nvidia.com/mig.capable"] = "true"
    lab.make_node("gpu03.lab", labels=labels, gpus=0)
    rt, src = runtime(lab, tmp_path, mig_timeout_s=120.0)

    def mig_manager() -> None:  # the test plays the GPU Operator's MIG manager
        wait_for("the new mig.config", lambda: node(lab, "gpu03.lab")["metadata"]["labels"].get(  # type: ignore[index]
            "nvidia.com/mig.config") == "all-1g.10gb")
        for state in ("pending", final):
            lab.ok("PATCH", "/api/v1/nodes/gpu03.lab", {"metadata": {"labels": {"nvidia.com/mig.config.state": state}}},
                   content_type="application/strategic-merge-patch+json")
    helper = threading.Thread(target=mig_manager)
    helper.start()
    try:
        result = await act(rt, ActionKind.MIG_RECONFIGURE, ("gpu03",), {"layout": "all-1g.10gb"})
    finally:
        await asyncio.to_thread(helper.join)
        await rt.stop()
        await src.close()
    return result


async def test_mig_label_followed_to_success(lab: K8sLab, tmp_path: Path) -> None:
    result = await _mig(lab, tmp_path, "success")
    assert result.ok, result.results
    assert result.results[0].message == "nvidia.com/mig.config=all-1g.10gb: success → pending → success"


async def test_mig_label_followed_to_failed(lab: K8sLab, tmp_path: Path) -> None:
    result = await _mig(lab, tmp_path, "failed")
    assert not result.ok and result.results[0].message.endswith("success → pending → failed")


async def test_mig_refused_on_a_node_without_the_gpu_operator(lab: K8sLab, tmp_path: Path) -> None:
    lab.make_node("cpu01.lab")
    rt, src = runtime(lab, tmp_path)
    try:
        await rt.collect_once()
        plan = rt.executor.plan(ActionKind.MIG_RECONFIGURE, ("cpu01",), {"layout": "all-1g.10gb"},
                                rt.store.snapshot())
        assert not plan.runnable and "not a MIG-capable GPU Operator node" in plan.errors[0]
    finally:
        await rt.stop()
        await src.close()
