"""The MIG wizard against a real kube-apiserver (tests/testbed/k8s): cordon, the
``nvidia.com/mig.config`` label set on a real Node object, a fake MIG manager (this test) moving
``nvidia.com/mig.config.state`` pending → success and the node's MIG capacity, verify from the
node's reported MIG devices, uncordon — and a ``failed`` state leaving the node cordoned."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from k8s_helpers import gfd_labels, make_source, wait_for
from k8slab import K8sLab

from hpctui.actions.audit import AuditLog
from hpctui.actions.mig import MigWorkflow, Status
from hpctui.core.runtime import Runtime
from hpctui.model.names import NodeNameMap

pytestmark = pytest.mark.live
BALANCED = {"nvidia.com/mig-1g.10gb": "2", "nvidia.com/mig-2g.20gb": "1", "nvidia.com/mig-3g.40gb": "1"}
MERGE = "application/strategic-merge-patch+json"


def _node(lab: K8sLab, name: str) -> dict[str, object]:
    return dict(lab.ok("GET", f"/api/v1/nodes/{name}"))


def _labels(lab: K8sLab, name: str) -> dict[str, str]:
    return dict(_node(lab, name)["metadata"]["labels"])  # type: ignore[index]


async def _wizard(lab: K8sLab, tmp_path: Path, final: str) -> tuple[MigWorkflow, bool]:
    labels = gfd_labels()  # real GFD labels of a 1× H100 80GB node in mixed strategy, all-balanced
    labels["nvidia.com/mig.capable"] = "true"
    lab.make_node("gpu07.lab", labels=labels, gpus=0, extra=BALANCED)
    src = make_source(lab, name_map=NodeNameMap(strip_suffix=".lab"), events=False, mig_timeout_s=120.0)
    rt = Runtime("lab", [src], audit_path=tmp_path / "audit.jsonl", name_map=NodeNameMap(strip_suffix=".lab"))

    def mig_manager() -> None:  # plays the GPU Operator's MIG manager (and GFD / the device plugin)
        wait_for("the new mig.config", lambda: _labels(lab, "gpu07.lab").get("nvidia.com/mig.config") == "all-1g.10gb")
        lab.ok("PATCH", "/api/v1/nodes/gpu07.lab", {"metadata": {"labels": {"nvidia.com/mig.config.state": "pending"}}},
               content_type=MERGE)
        if final == "success":
            lab.ok("PATCH", "/api/v1/nodes/gpu07.lab/status", {"status": {
                "capacity": {"nvidia.com/mig-1g.10gb": "7", "nvidia.com/mig-2g.20gb": None,
                             "nvidia.com/mig-3g.40gb": None},
                "allocatable": {"nvidia.com/mig-1g.10gb": "7", "nvidia.com/mig-2g.20gb": None,
                                "nvidia.com/mig-3g.40gb": None}}}, content_type=MERGE)
            lab.ok("PATCH", "/api/v1/nodes/gpu07.lab", {"metadata": {"labels": {
                "nvidia.com/mig-1g.10gb.count": "7", "nvidia.com/mig-2g.20gb.count": None,
                "nvidia.com/mig-3g.40gb.count": None}}}, content_type=MERGE)
        lab.ok("PATCH", "/api/v1/nodes/gpu07.lab", {"metadata": {"labels": {"nvidia.com/mig.config.state": final}}},
               content_type=MERGE)

    helper = threading.Thread(target=mig_manager)
    helper.start()
    try:
        await rt.collect_once()
        wf = MigWorkflow(rt, ["gpu07"], "all-1g", poll_s=0.5, verify_timeout_s=60)
        assert wf.prepare(), wf.errors
        assert wf.routes[0].how == "k8s" and wf.routes[0].params() == {"layout": "all-1g.10gb"}
        ok = await wf.run(wf.confirm_word)
    finally:
        await asyncio.to_thread(helper.join)
        await rt.stop()
        await src.close()
    return wf, ok


async def test_wizard_follows_the_gpu_operator_to_success(lab: K8sLab, tmp_path: Path) -> None:
    wf, ok = await _wizard(lab, tmp_path, "success")
    assert ok, [(s.key, s.status, s.detail) for s in wf.steps]
    assert [s.status for s in wf.steps] == [Status.OK, Status.OK, Status.OK, Status.OK, Status.OK, Status.OK,
                                            Status.SKIPPED, Status.OK]
    assert any("nvidia.com/mig.config=all-1g.10gb: success → pending → success" in d for d in wf.step("apply").detail)
    assert "ok gpu07: 7×1g.10gb on 1 GPU(s)" in wf.step("verify").detail
    node = _node(lab, "gpu07.lab")
    assert not node.get("spec", {}).get("unschedulable")  # type: ignore[attr-defined]  # uncordoned
    assert node["metadata"]["labels"]["nvidia.com/mig.config"] == "all-1g.10gb"  # type: ignore[index]
    actions = [(r["action"], r["source"]) for r in AuditLog(tmp_path / "audit.jsonl").read()]
    assert ("cordon", "k8s") in actions and ("mig_reconfigure", "k8s") in actions and ("uncordon", "k8s") in actions


async def test_wizard_stops_on_failed_and_leaves_the_node_cordoned(lab: K8sLab, tmp_path: Path) -> None:
    wf, ok = await _wizard(lab, tmp_path, "failed")
    assert not ok and wf.step("apply").status is Status.FAILED
    assert wf.step("resume").status is Status.SKIPPED
    assert _node(lab, "gpu07.lab")["spec"]["unschedulable"] is True  # type: ignore[index]
    records = AuditLog(tmp_path / "audit.jsonl").read()
    assert any(r["source"] == "mig-wizard" and r["params"]["step"] == "apply"
               and r["results"][0]["message"] == "hpctui mig: apply failed" for r in records)
