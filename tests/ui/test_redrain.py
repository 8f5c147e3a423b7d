"""Issue #22 §1: another admin's state is never overwritten silently. Draining an already-drained
node, cordoning a cordoned one, holding a held job: the dialog says what is already true (who,
when, why), offers keep / append / replace (keep by default, replace only when chosen), and the
audit record keeps the previous state; ``hpctui act`` refuses without ``reason_mode``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from test_action_dialog import open_dialog, text_of, wait_result
from textual.widgets import Button, Input, RadioButton, RadioSet, Static
from uikit import load

from hpctui.core.runtime import Runtime
from hpctui.model.action import ActionKind
from hpctui.ui.app import HpcApp
from hpctui.ui.screens.action_dialog import ActionDialog

DRAINED = "gpu0007"  # demo seed 1 (64 nodes): DRAINED by root, "xid 79 gpu3 - RMA ticket 4411"
OLD_REASON = "xid 79 gpu3 - RMA ticket 4411"
HELD_JOB = "1054"  # demo seed 1: PENDING (JobHeldUser), user ivan


def audit_records(rt: Runtime) -> list[dict[str, Any]]:
    assert rt.executor.audit is not None
    return rt.executor.audit.read(intents=True)


def previous_of(record: dict[str, Any], target: str, scheduler: str) -> dict[str, Any]:
    return next(p for p in record["previous"] if p["target"] == target and p["scheduler"] == scheduler)


async def choose(dialog: ActionDialog, pilot: Any, mode: str) -> None:
    """Pick ``mode`` in the dialog's keep/append/replace choice with the keyboard."""
    radio = dialog.query_one("#reason-mode", RadioSet)
    assert dialog.focused is radio, "the choice is the first thing the dialog asks"
    for _ in range(len(dialog.modes)):
        if radio._selected is not None and dialog.modes[radio._selected] == mode:
            break
        await pilot.press("down")
    await pilot.press("enter")
    await pilot.pause()
    assert dialog.params["reason_mode"] == mode


async def test_redrain_says_who_when_why_and_keeps_by_default(make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime(seed=1)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await load(app, pilot)
        dialog = await open_dialog(app, pilot, ActionKind.DRAIN_NODES, (DRAINED,))
        already = text_of(dialog.query_one("#already", Static))
        assert f"{DRAINED} is already drained by root" in already and "min ago" in already
        assert OLD_REASON in already
        assert [str(b.label).split(":")[0] for b in dialog.query(RadioButton)] == ["Keep", "Append", "Replace"]
        assert dialog.query_one("#mode-keep", RadioButton).value, "keep is the default"
        assert not dialog.query_one("#mode-replace", RadioButton).value
        # keep: Slurm is not touched (only the K8s cordon of the hybrid drain is left), no reason needed
        assert dialog.plan.params["reason_mode"] == "keep"
        assert [s.kind for s in dialog.plan.steps] == [ActionKind.CORDON_NODES]
        assert not any("State=DRAIN" in c for c in dialog.plan.commands)
        assert dialog.plan.runnable
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ActionDialog)
        assert rt.store.snapshot().nodes[DRAINED].slurm.reason == OLD_REASON  # type: ignore[union-attr]


async def test_redrain_replace_is_explicit_and_audited(make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime(seed=1)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await load(app, pilot)
        dialog = await open_dialog(app, pilot, ActionKind.DRAIN_NODES, (DRAINED,))
        await choose(dialog, pilot, "replace")
        reason = dialog.query_one("#param-reason", Input)
        assert reason.value == OLD_REASON  # replacing starts from the current reason, to edit
        reason.value = "RMA done, burn-in"
        await pilot.pause()
        assert any('Reason="RMA done, burn-in"' in c for c in dialog.plan.commands)
        dialog.query_one("#run", Button).press()
        await wait_result(dialog, pilot)
        assert dialog.result is not None and dialog.result.ok, dialog.result
        await load(app, pilot)
        assert rt.store.snapshot().nodes[DRAINED].slurm.reason == "RMA done, burn-in"  # type: ignore[union-attr]
    records = audit_records(rt)
    for phase in ("intent", "outcome"):
        rec = next(r for r in records if r.get("phase") == phase and r["action"] == "drain")
        before = previous_of(rec, DRAINED, "slurm")
        assert before["set"] is True and before["reason"] == OLD_REASON and before["user"] == "root"
        assert before["state"].startswith("DRAINED") and isinstance(before["time"], float)
        assert rec["params"]["reason_mode"] == "replace"


async def test_redrain_append_keeps_the_old_reason(make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime(seed=1)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await load(app, pilot)
        dialog = await open_dialog(app, pilot, ActionKind.DRAIN_NODES, (DRAINED,))
        await choose(dialog, pilot, "append")
        dialog.query_one("#param-reason", Input).value = "PSU too"
        await pilot.pause()
        dialog.query_one("#run", Button).press()
        await wait_result(dialog, pilot)
        assert dialog.result is not None and dialog.result.ok
        await load(app, pilot)
        assert rt.store.snapshot().nodes[DRAINED].slurm.reason == f"{OLD_REASON}; PSU too"  # type: ignore[union-attr]


async def test_recordon_and_rehold_offer_keep_or_replace(make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime(seed=1)
    app = HpcApp(rt, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await load(app, pilot)
        node = "gpu0003"
        first = rt.executor.plan(ActionKind.CORDON_NODES, [node], {}, rt.store.snapshot())
        assert not first.already and (await rt.executor.execute(first, confirmation=True)).ok
        await load(app, pilot)
        dialog = await open_dialog(app, pilot, ActionKind.CORDON_NODES, (node,))
        assert f"{node} is already cordoned" in text_of(dialog.query_one("#already", Static))
        assert dialog.modes == ("keep", "replace")  # nothing to append to
        assert not dialog.plan.runnable and "nothing to change" in text_of(dialog.query_one("#plan", Static))
        await choose(dialog, pilot, "replace")
        assert dialog.plan.runnable
        dialog.query_one("#run", Button).press()
        await wait_result(dialog, pilot)
        assert dialog.result is not None and dialog.result.ok
        await pilot.press("escape")
        await pilot.pause()
        rec = [r for r in audit_records(rt) if r.get("phase") == "outcome" and r["action"] == "cordon"][-1]
        assert previous_of(rec, node, "k8s") | {"time": None} == {
            "target": node, "scheduler": "k8s", "state": "cordoned", "set": True, "time": None}

        dialog = await open_dialog(app, pilot, ActionKind.HOLD_JOBS, (HELD_JOB,))
        assert f"job {HELD_JOB} is already held by its user" in text_of(dialog.query_one("#already", Static))
        assert dialog.modes == ("keep", "replace") and dialog.params["reason_mode"] == "keep"
        assert not dialog.plan.runnable  # keep: nothing left to send
        await choose(dialog, pilot, "replace")
        assert dialog.plan.runnable and dialog.plan.commands


def act(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "XDG_STATE_HOME": str(tmp_path / "state")}
    return subprocess.run([sys.executable, "-m", "hpctui", "act", *args, "--demo", "--seed", "1"],
                          capture_output=True, text=True, timeout=120, env=env)


def test_act_refuses_to_overwrite_without_reason_mode(tmp_path: Path) -> None:
    refused = act(tmp_path, "drain", "--targets", DRAINED, "--reason", "mine now", "--yes")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert f"{DRAINED} is already drained by root" in refused.stdout and OLD_REASON in refused.stdout
    assert "reason_mode=keep|append|replace" in refused.stdout
    held = act(tmp_path, "hold", "--targets", HELD_JOB, "--yes")
    assert held.returncode == 2 and "reason_mode=keep|replace" in held.stdout, held.stdout
    done = act(tmp_path, "drain", "--targets", DRAINED, "--reason", "mine now", "--param", "reason_mode=replace",
               "--param", "drain_in=slurm", "--yes", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["ok"] is True
    lines = (tmp_path / "state" / "hpctui" / "audit.jsonl").read_text().splitlines()
    outcome = [r for r in map(json.loads, lines) if r.get("phase") == "outcome"][-1]
    assert outcome["refused"] is None
    before = previous_of(outcome, DRAINED, "slurm")
    assert (before["reason"], before["user"], before["set"]) == (OLD_REASON, "root", True)
