"""The installed program against the real kube-apiserver: `hpctui snapshot` with a k8s
source, and the dashboard's cordon / uncordon / K8s drain keys acting on the real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from k8s_helpers import gfd_labels
from k8slab import K8sLab
from textual.widgets import Button, Input, Static

from hpctui.core.config import load_config
from hpctui.core.runtime import runtime_from_config
from hpctui.ui.app import HpcApp
from hpctui.ui.screens.action_dialog import ActionDialog
from hpctui.ui.widgets.node_heatmap import NodeHeatmap
from hpctui.ui.widgets.panes import TablePane

pytestmark = pytest.mark.live


def write_config(tmp_path: Path, lab: K8sLab, *, context: str = "admin") -> Path:
    kubeconfig = lab.kubeconfig()  # context "admin"
    text = f"""
audit_log = "{tmp_path / 'audit.jsonl'}"
[clusters.lab]
node_map = {{ strip_suffix = ".lab" }}
[[clusters.lab.sources]]
kind = "k8s"
kubeconfig = "{kubeconfig}"
context = "{context}"
interval_s = 0.5
drain_retry_s = 0.5
"""
    path = tmp_path / "k8s-lab.toml"
    path.write_text(text)
    return path


def _bed(lab: K8sLab) -> None:
    lab.make_node("gpu01.lab", labels=gfd_labels(), gpus=8)
    lab.make_node("gpu02.lab", gpus=8, ready="False")
    lab.make_pod("hpc", "train-0", "gpu01.lab", gpus=8, owner=("Job", "train"))
    lab.make_pod("gpu-operator", "nvidia-device-plugin-x", "gpu01.lab", owner=("DaemonSet", "nvidia-device-plugin"))


def test_headless_snapshot_shows_k8s_nodes_and_pods(lab: K8sLab, tmp_path: Path) -> None:
    _bed(lab)
    path = write_config(tmp_path, lab, context="nosuch")  # --context below overrides the file's
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    cmd = [sys.executable, "-m", "hpctui", "snapshot", "--config", str(path), "--context", "admin"]
    proc = subprocess.run([*cmd, "--format", "json"], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data["nodes"]) == {"gpu01", "gpu02"}  # K8s names joined through node_map.strip_suffix
    assert data["nodes"]["gpu01"]["k8s"]["gpu_capacity"] == 8
    assert data["nodes"]["gpu02"]["k8s"]["conditions"]["Ready"] == "False"
    assert {(p["namespace"], p["name"], p["node"]) for p in data["pods"]} == {
        ("hpc", "train-0", "gpu01"), ("gpu-operator", "nvidia-device-plugin-x", "gpu01")}
    table = subprocess.run([*cmd, "--format", "table"], capture_output=True, text=True, timeout=120, env=env)
    assert table.returncode == 0 and "pods 2" in table.stdout and "Ready=Fals" in table.stdout
    bad = subprocess.run([sys.executable, "-m", "hpctui", "snapshot", "--config", str(path)],
                         capture_output=True, text=True, timeout=120, env=env)
    assert bad.returncode == 1 and "nosuch" in bad.stdout  # the file's context does not exist: one line, no crash


async def _wait(pilot: object, pred: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.1)  # type: ignore[attr-defined]


async def _run(app: HpcApp, pilot: object, key: str, confirm: str | None = None) -> ActionDialog:
    await pilot.press(key)  # type: ignore[attr-defined]
    await _wait(pilot, lambda: isinstance(app.screen, ActionDialog), "the action dialog")
    dialog = app.screen
    assert isinstance(dialog, ActionDialog)
    if confirm is not None:
        dialog.query_one("#confirm", Input).value = confirm
        await pilot.pause()  # type: ignore[attr-defined]
    assert dialog.plan.runnable, dialog.plan.errors
    assert not dialog.query_one("#run", Button).disabled
    await pilot.click("#run")  # type: ignore[attr-defined]
    await _wait(pilot, lambda: dialog.result is not None, "the action result")
    return dialog


def _unschedulable(lab: K8sLab, name: str) -> bool:
    return bool(lab.ok("GET", f"/api/v1/nodes/{name}").get("spec", {}).get("unschedulable"))


async def test_cordon_uncordon_and_drain_keys_act_on_the_real_server(lab: K8sLab, tmp_path: Path) -> None:
    _bed(lab)
    runtime = runtime_from_config(load_config(write_config(tmp_path, lab)), "lab")
    app = HpcApp(runtime)
    async with app.run_test(size=(160, 50)) as pilot:
        heatmap = app.screen.query_one(NodeHeatmap)
        await _wait(pilot, lambda: heatmap.knows("gpu01"), "gpu01 in the heatmap")
        pods_pane = app.screen.query_one("#pods-pane", TablePane)
        await _wait(pilot, lambda: len(runtime.store.snapshot().pods) == 2, "pods in the store")
        assert pods_pane is not None
        assert heatmap.select("gpu01")
        heatmap.focus()

        dialog = await _run(app, pilot, "c")
        assert dialog.result is not None and dialog.result.ok, dialog.result
        assert dialog.plan.source == "k8s" and "kubectl cordon gpu01.lab" in dialog.plan.commands[0]
        await pilot.press("escape")
        assert _unschedulable(lab, "gpu01.lab")
        await _wait(pilot, lambda: (n := runtime.store.snapshot().nodes["gpu01"]).k8s is not None
                    and n.k8s.unschedulable, "the cordon seen by the watch")

        dialog = await _run(app, pilot, "C")
        assert dialog.result is not None and dialog.result.ok
        await pilot.press("escape")
        assert not _unschedulable(lab, "gpu01.lab")

        pdb = "/apis/policy/v1beta1/namespaces/hpc/poddisruptionbudgets"
        doc = lab.ok("POST", pdb, {"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
                                   "metadata": {"name": "train"},
                                   "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "w"}}}})

        def allow(n: int) -> None:
            lab.merge(f"{pdb}/train/status", {"status": {
                "observedGeneration": doc["metadata"].get("generation", 1), "disruptionsAllowed": n,
                "currentHealthy": 1, "desiredHealthy": 1 - n, "expectedPods": 1}})
        allow(0)
        await pilot.press("D")
        await _wait(pilot, lambda: isinstance(app.screen, ActionDialog), "the drain dialog")
        dialog = app.screen
        assert isinstance(dialog, ActionDialog) and dialog.plan.runnable
        await pilot.click("#run")
        result = dialog.query_one("#result", Static)
        await _wait(pilot, lambda: "hpc/train-0 blocked (429), retrying" in str(result.render()),
                    "per-pod progress in the dialog")
        allow(1)
        await _wait(pilot, lambda: dialog.result is not None, "the drain result")
        assert dialog.result is not None and dialog.result.ok, dialog.result
        assert "evict hpc/train-0 (Job/train), 8 GPU, Running on gpu01" in dialog.plan.affected
        assert any("DaemonSet pod" in a for a in dialog.plan.affected)
        await pilot.press("escape")
        assert _unschedulable(lab, "gpu01.lab")
    await runtime.stop()
    audit = [a for a in map(json.loads, (tmp_path / "audit.jsonl").read_text().splitlines())
             if a.get("phase") != "intent"]  # outcomes; each run also has an intent record before it
    assert [a["action"] for a in audit] == ["cordon", "uncordon", "k8s_drain"]


async def test_pod_keys_describe_logs_delete(lab: K8sLab, tmp_path: Path) -> None:
    from hpctui.ui.screens.pod_detail import PodDetailScreen
    from hpctui.ui.widgets.tables import PodTable

    _bed(lab)
    lab.ok("POST", "/api/v1/namespaces/hpc/events", {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "train-0.1"},
        "involvedObject": {"kind": "Pod", "name": "train-0", "namespace": "hpc"}, "type": "Warning",
        "reason": "BackOff", "message": "Back-off pulling image \x1b[31mbusybox", "count": 1,
        "lastTimestamp": "2024-05-01T10:00:00Z"})
    runtime = runtime_from_config(load_config(write_config(tmp_path, lab)), "lab")
    app = HpcApp(runtime)
    async with app.run_test(size=(160, 50)) as pilot:
        await _wait(pilot, lambda: len(runtime.store.snapshot().pods) == 2, "pods in the store")
        table = app.screen.query_one("#pods", PodTable)
        table.focus()
        table.set_filter("train-0")
        await _wait(pilot, lambda: table.cursor_key == "hpc/train-0", "train-0 under the cursor")

        await pilot.press("enter")
        await _wait(pilot, lambda: isinstance(app.screen, PodDetailScreen) and app.screen.text is not None,
                    "the description")
        screen = app.screen
        assert isinstance(screen, PodDetailScreen) and screen.text is not None
        assert "kind: Pod" in screen.text and "nvidia.com/gpu: '8'" in screen.text
        assert "WARNING  BackOff: Back-off pulling image" in screen.text and "\x1b" not in screen.text
        await pilot.press("escape")

        from hpctui.ui.screens.log_viewer import LogViewerScreen

        await pilot.press("L")  # the log viewer; no kubelet here: the server's refusal is its one status line
        await _wait(pilot, lambda: isinstance(app.screen, LogViewerScreen) and app.screen.loads >= 1,
                    "the logs answer")
        viewer = app.screen
        assert isinstance(viewer, LogViewerScreen) and not viewer.lines
        assert "no preferred addresses" in viewer.status or "pods/log" in viewer.status, viewer.status
        await pilot.press("escape")

        dialog = await _run(app, pilot, "ctrl+d")
        assert dialog.result is not None and dialog.result.ok, dialog.result
        assert dialog.plan.commands == ("DELETE /api/v1/namespaces/hpc/pods/train-0",)
        await pilot.press("escape")
        assert lab.http("GET", "/api/v1/namespaces/hpc/pods/train-0")[0] in (200, 404)
        doc = lab.http("GET", "/api/v1/namespaces/hpc/pods/train-0")[1]
        assert doc.get("code") == 404 or doc["metadata"].get("deletionTimestamp")  # gone or terminating
    await runtime.stop()
