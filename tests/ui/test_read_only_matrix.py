"""Read-only mode refuses every action through every entry point.

One parametrized test walks ``ActionKind`` × entry point, so an action kind added later
(MIG, custom actions, ...) is covered without touching this file, or fails loudly here when
it has no target category (add it to NODE_ACTIONS / JOB_ACTIONS / NAME_ACTIONS, or below).

Entry points: the executor API (plan + execute with the right confirmation), ``hpctui act``
(``--yes``), ``hpctui act --dry-run``, read_only=true from the config file, and the app
(the ActionRequested message that keys, marks and the palette send, and a dialog opened
directly on a read-only runtime).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Button
from uikit import load

from hpctui.actions.audit import AuditLog
from hpctui.cli.act import run_act
from hpctui.core.runtime import Runtime
from hpctui.model import ClusterSnapshot
from hpctui.model.action import JOB_ACTIONS, NAME_ACTIONS, NODE_ACTIONS, ActionKind

ENTRY_POINTS = ("executor", "act", "act_dry_run", "config", "app")
PARAMS = {"reason": "r", "state": "DOWN", "duration": "60", "layout": "all-1g.10gb", "name": "diag"}
# A [[custom_actions]] entry for the CUSTOM kind: read_only_ok is not set, so read-only refuses it.
CUSTOM_TOML = "[[custom_actions]]\nname = 'diag'\nscope = 'nodes'\ncommand = ['echo', '{node}']\n"


def target_for(kind: ActionKind, snap: ClusterSnapshot) -> str:
    if kind in NODE_ACTIONS or kind is ActionKind.SHELL_NODE:
        return "gpu0003"
    if kind in JOB_ACTIONS or kind is ActionKind.SHELL_JOB:
        return next(j.display_id for j in snap.jobs if j.state == "RUNNING")
    if kind in (ActionKind.DELETE_PODS, ActionKind.SHELL_POD):
        return next(f"{p.namespace}/{p.name}" for p in snap.pods)
    if kind is ActionKind.CUSTOM:  # the runtimes below configure one (CUSTOM_ACTION, scope nodes)
        return "gpu0003"
    if kind in NAME_ACTIONS:
        return next(p for n in snap.nodes.values() if n.slurm for p in n.slurm.partitions)
    pytest.fail(f"action kind {kind.value!r} has no target category: add it to NODE_ACTIONS, JOB_ACTIONS or "
                "NAME_ACTIONS (hpctui/model/action.py) or to target_for() here")


def refusal(record: dict[str, object]) -> object:
    """The refusal of an audit record, up to its detail ("read-only mode: diag is not marked
    read_only_ok" is a read-only refusal too)."""
    refused = record.get("refused")
    return refused.partition(":")[0] if isinstance(refused, str) else refused


def state_of(rt: Runtime) -> tuple[object, ...]:
    """What an action would change. The config entry's demo runs on the real clock, where jobs
    may end on their own between two reads: there only the nodes' admin state is compared."""
    snap = rt.store.snapshot()
    nodes = tuple((n, x.slurm.flags if x.slurm else None, x.slurm.reason if x.slurm else None,
                   x.k8s.unschedulable if x.k8s else None) for n, x in snap.nodes.items())
    if rt.cluster != "demo":
        return nodes
    return (nodes, tuple((j.display_id, j.state, j.reason) for j in snap.jobs),
            tuple((p.namespace, p.name, p.phase) for p in snap.pods))


def config_runtime(tmp_path: Path) -> Runtime:
    import tomllib

    from hpctui.core.config import parse_config
    from hpctui.core.runtime import runtime_from_config

    text = (f"read_only = true\naudit_log = '{tmp_path / 'audit.jsonl'}'\n" + CUSTOM_TOML +
            "[clusters.d]\n[[clusters.d.sources]]\nkind = 'demo'\nsize = 8\nseed = 1\n")
    return runtime_from_config(parse_config(tomllib.loads(text)), "d")


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("kind", list(ActionKind), ids=lambda k: k.value)
async def test_read_only_refuses_every_action_through_every_entry_point(
        kind: ActionKind, entry: str, tmp_path: Path, make_runtime: Callable[..., Runtime]) -> None:
    rt = config_runtime(tmp_path) if entry == "config" else make_runtime(size=8, seed=1, read_only=True)
    if entry != "config":
        import tomllib

        from hpctui.core.config import parse_config

        rt.custom_actions = tuple(parse_config(tomllib.loads(CUSTOM_TOML)).custom_actions)
    if entry == "config":
        assert rt.read_only
    audit = AuditLog(tmp_path / "audit.jsonl")
    if entry == "app":
        from hpctui.ui.app import HpcApp
        from hpctui.ui.messages import ActionRequested
        from hpctui.ui.screens.action_dialog import ActionDialog

        app = HpcApp(rt, autostart=False)
        async with app.run_test(size=(160, 50)) as pilot:
            await load(app, pilot)
            before = state_of(rt)
            target = target_for(kind, rt.store.snapshot())
            app.post_message(ActionRequested(kind, (target,), dict(PARAMS)))
            await pilot.pause()
            assert not isinstance(app.screen, ActionDialog), "read-only: no dialog opens"
            # a dialog reached some other way still cannot run: its button is off and the executor refuses
            dialog = ActionDialog(rt, kind, (target,), dict(PARAMS))
            await app.push_screen(dialog)
            await pilot.pause()
            assert dialog.query_one("#run", Button).disabled
            assert "read-only mode: actions are disabled" in dialog.plan.errors
            dialog._start()
            for _ in range(40):
                if dialog.result is not None:
                    break
                await pilot.pause(0.05)
            assert dialog.result is not None and dialog.result.refused == "read-only mode"
            await load(app, pilot)
            assert state_of(rt) == before
        records = audit.read(intents=True)
        assert [(r["phase"], refusal(r)) for r in records] == [("outcome", "read-only mode")]
        return
    try:
        await rt.collect_once()
        before = state_of(rt)
        target = target_for(kind, rt.store.snapshot())
        out: list[str] = []
        if entry == "executor":
            plan = rt.executor.plan(kind, [target], dict(PARAMS), rt.store.snapshot())
            assert "read-only mode: actions are disabled" in plan.errors and not plan.runnable
            assert rt.executor.available() == frozenset()
            result = await rt.executor.execute(plan, confirmation=plan.confirm_word or True)
            assert result.refused == "read-only mode" and result.results == () and result.steps == ()
        else:
            rc = await run_act(rt, kind, [target], dict(PARAMS), dry_run=entry == "act_dry_run", yes=True,
                               as_json=False, interactive=False, out=out.append, err=out.append)
            assert rc == 2, out
            text = "".join(out)
            assert ("read-only mode" in text if entry == "act_dry_run" or kind is ActionKind.CUSTOM
                    else "refused: read-only mode" in text), text
        await rt.collect_once()
        assert state_of(rt) == before
        records = audit.read(intents=True)
        expected = [] if entry == "act_dry_run" else [("outcome", "read-only mode")]
        assert [(r["phase"], refusal(r)) for r in records] == expected
    finally:
        await rt.stop()
