"""The pod-delete dialog (issue #19 §7): a namespace holding a ``/`` (and markup) is refused by name,
and the preview's request names only the valid pod, whole."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Button, Static

from hpctui.core.runtime import Runtime
from hpctui.model import K8sNodeInfo, Pod, SourceResult
from hpctui.model.action import ActionKind
from hpctui.sources.k8s.settings import K8sSettings
from hpctui.sources.k8s.source import K8sSource
from hpctui.ui.app import HpcApp
from hpctui.ui.screens.action_dialog import ActionDialog

HOSTILE_NS = "[@click=app.quit]CLICK[/]"
HOSTILE = f"{HOSTILE_NS}/train-0"


async def test_preview_refuses_the_hostile_namespace_and_names_the_right_pod(tmp_path: Path) -> None:
    src = K8sSource(K8sSettings())
    rt = Runtime("c", [src], audit_path=tmp_path / "audit.jsonl", clock=lambda: 100.0)
    rt.store.apply(SourceResult(source=src.name, time=100.0, k8s_nodes={"gpu01": K8sNodeInfo(name="gpu01")},
                                pods=(Pod(namespace=HOSTILE_NS, name="train-0", node="gpu01", owner_kind="Job"),
                                      Pod(namespace="hpc", name="good", node="gpu01", owner_kind="Job"))))
    app = HpcApp(rt, autostart=False)
    try:
        async with app.run_test(size=(160, 50)) as pilot:
            dialog = ActionDialog(rt, ActionKind.DELETE_PODS, (HOSTILE, "hpc/good"))
            await app.push_screen(dialog)
            await pilot.pause()
            preview = str(dialog.query_one("#plan", Static).render())
            assert "$ DELETE /api/v1/namespaces/hpc/pods/good\n" in preview
            assert "namespaces/[@click" not in preview and "/pods/]" not in preview
            assert f"Rejected: {HOSTILE}\n" in preview  # shown literally, no markup parsed
            assert "✗ refused pod 'train-0' (namespace '[@click=app.quit]CLICK[/]'): namespace" in preview
            assert dialog.query_one("#run", Button).disabled
    finally:
        await src.close()
