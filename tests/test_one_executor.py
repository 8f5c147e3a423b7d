"""One executor runs every plan and writes every audit record (issue 20): a drain, a custom action
and a MIG plan on the demo cluster leave records written by one code path only; progress and
audit errors come back through the caller's callback and the result; the store's change event."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from hpctui.actions.audit import AuditLog
from hpctui.actions.custom import CustomActionSettings, new_run
from hpctui.actions.executor import ActionExecutor
from hpctui.actions.mig import MigWorkflow, Status
from hpctui.core.runtime import demo_runtime
from hpctui.core.store import Store
from hpctui.model import ClusterSnapshot, Node
from hpctui.model.action import ActionKind, ActionPlan, Progress, TargetResult
from hpctui.sources.demo.source import DemoSource

T0 = 1_750_000_000.0


def _spy_writers(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every AuditLog write, with the module of the code that called it."""
    writers: list[tuple[str, str]] = []
    for name in ("intent", "step", "append"):
        real = getattr(AuditLog, name)

        def spy(self: AuditLog, *args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> None:
            writers.append((_name, sys._getframe(1).f_globals["__name__"]))
            _real(self, *args, **kwargs)

        monkeypatch.setattr(AuditLog, name, spy)
    return writers


def test_a_drain_a_custom_action_and_a_mig_plan_are_audited_by_the_executor_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writers = _spy_writers(monkeypatch)
    rt = demo_runtime(size=64, seed=0, clock=lambda: T0, start_time=T0, audit_path=tmp_path / "audit.jsonl")
    rt.custom_actions = (CustomActionSettings(name="hello", command=["echo", "hi {node}"]),)
    src = rt.sources[0]
    assert isinstance(src, DemoSource)
    src.mig_delay_s = 0.0
    mig_node = next(n for n, v in src.sim.mig.items() if v[0] is not None)
    other = next(n for n in src.sim.mig if n != mig_node and n != src.sim.place.xid_node)

    async def go() -> None:
        await rt.collect_once()
        plan = rt.executor.plan(ActionKind.DRAIN_NODES, [other], {"reason": "one executor"}, rt.store.snapshot())
        drained = await rt.run_action(plan, plan.confirm_word or True)
        assert drained.ok and drained.steps  # the demo's hybrid drain: Slurm drain, then K8s cordon
        run = new_run(rt.port, "hello", [other], True)
        await run.start()
        assert run.result is not None and run.result.ok
        assert [o.output for o in run.result.outputs] == [f"hi {other}"]
        wf = MigWorkflow(rt.port, [mig_node], "all-1g", "0", poll_s=0.0)
        assert wf.prepare()
        assert await wf.run(wf.confirm_word), [(s.key, s.status, s.detail) for s in wf.steps]
        assert wf.step("verify").status is Status.OK

    asyncio.run(go())
    assert writers and {module for _, module in writers} == {"hpctui.actions.executor"}
    assert {name for name, _ in writers} == {"intent", "step", "append"}
    records = AuditLog(tmp_path / "audit.jsonl").read(intents=True)
    assert len(records) == len(writers)
    kinds = {(r["phase"], r["action"], r["source"]) for r in records}
    assert ("step", "drain", "demo") in kinds and ("outcome", "drain", "demo") in kinds
    assert ("intent", "custom", "custom:local") in kinds and ("outcome", "custom", "custom:local") in kinds
    assert ("outcome", "mig_reconfigure", "demo") in kinds and ("outcome", "mig_reconfigure", "mig-wizard") in kinds
    custom = next(r for r in records if r["phase"] == "outcome" and r["action"] == "custom")
    assert custom["custom"]["folds"][0]["output"] == f"hi {other}"  # the run's folds, in the executor's record
    wizard = [r for r in records if r.get("wizard")]
    assert {r["source"] for r in wizard} >= {"mig-wizard", "demo"}  # its steps and its actions name the run


def test_a_refused_custom_action_and_mig_plan_use_the_executors_rule(tmp_path: Path) -> None:
    rt = demo_runtime(size=16, read_only=True, audit_path=tmp_path / "audit.jsonl")
    rt.custom_actions = (CustomActionSettings(name="diag", command="true", read_only_ok=True),
                         CustomActionSettings(name="boom", command="true", read_only_ok=True, dangerous=True))

    async def go() -> tuple[str | None, str | None, bool]:
        await rt.collect_once()
        diag = new_run(rt.port, "diag", ["gpu0001"], True)
        boom = new_run(rt.port, "boom", ["gpu0001"], "boom-1")
        await diag.start()
        await boom.start()
        wf = MigWorkflow(rt.port, ["gpu0001"], "all-1g", poll_s=0.0)
        wf.prepare()
        return diag.refused, boom.refused, await wf.run(wf.confirm_word)

    diag, boom, mig_ok = asyncio.run(go())
    assert diag is None  # read_only_ok: allowed by the plan's own read_only_refusal
    assert boom == "read-only mode: boom is dangerous"
    assert not mig_ok
    refused = [r["refused"] for r in AuditLog(tmp_path / "audit.jsonl").read() if r["refused"]]
    assert refused == ["read-only mode: boom is dangerous", "read-only mode"]


class Reporting:
    """A backend that reports each target, from a worker thread (like the K8s drain)."""

    name = "rep"

    @property
    def action_kinds(self) -> frozenset[ActionKind]:
        return frozenset({ActionKind.RESUME_NODES})

    def plan(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str],
             snapshot: ClusterSnapshot) -> ActionPlan:
        return ActionPlan(kind=kind, source=self.name, targets=targets, params=params)

    async def execute(self, plan: ActionPlan) -> tuple[TargetResult, ...]:
        return tuple(TargetResult(target=t, ok=True) for t in plan.targets)

    async def execute_reporting(self, plan: ActionPlan, progress: Progress) -> tuple[TargetResult, ...]:
        def work() -> tuple[TargetResult, ...]:
            for t in plan.targets:
                progress(f"{t}: resumed on {threading.current_thread().name}")
            return tuple(TargetResult(target=t, ok=True) for t in plan.targets)

        return await asyncio.to_thread(work)


async def test_progress_reaches_the_callers_callback_not_a_shared_list(tmp_path: Path) -> None:
    ex = ActionExecutor([Reporting()], AuditLog(tmp_path / "audit.jsonl"), cluster="c", user="u")
    snap = ClusterSnapshot(cluster="c", time=0.0, nodes={n: Node(name=n) for n in ("a", "b")})
    plan = ex.plan(ActionKind.RESUME_NODES, ["a", "b"], {}, snap)
    heard: list[object] = []
    result = await ex.execute(plan, confirmation=True, progress=heard.append)
    assert result.ok and result.audit_errors == ()
    assert [str(h).split(" on ")[0] for h in heard] == ["a: resumed", "b: resumed"]
    quiet = await ex.execute(plan, confirmation=True)  # nobody listens: the plain execute
    assert quiet.ok


async def test_the_store_says_when_it_changed_from_any_thread() -> None:
    store = Store("c")
    assert await store.changed(timeout=0.01) is False
    waiter = asyncio.ensure_future(store.changed())
    await asyncio.sleep(0)
    await asyncio.to_thread(store.add_events, [])  # a big result is applied in a worker thread
    assert await asyncio.wait_for(waiter, 5) is True
    health_only = asyncio.ensure_future(store.changed(timeout=0.2))
    await asyncio.sleep(0)
    store.register_source("s", "demo")  # health, not data: a data waiter sleeps on
    assert await health_only is False
    assert not store._waiters  # no waiter left behind


def test_the_mig_run_is_one_plan_with_its_actions_as_steps(tmp_path: Path) -> None:
    rt = demo_runtime(size=64, seed=0, clock=lambda: T0, start_time=T0, audit_path=tmp_path / "audit.jsonl")
    src = rt.sources[0]
    assert isinstance(src, DemoSource)
    node = next(n for n, v in src.sim.mig.items() if v[0] is not None)

    async def go() -> MigWorkflow:
        await rt.collect_once()
        wf = MigWorkflow(rt.port, [node], "all-1g", "0", poll_s=0.0)
        assert wf.prepare()
        return wf

    wf = asyncio.run(go())
    plan = wf.gate()
    assert plan.runnable and plan.confirm_word == "mig-1" and plan.destructive
    assert [s.kind for s in plan.steps] == [ActionKind.DRAIN_NODES, ActionKind.CORDON_NODES,
                                            ActionKind.MIG_RECONFIGURE, ActionKind.RESUME_NODES,
                                            ActionKind.UNCORDON_NODES]
    apply = plan.steps[2]
    assert apply.targets == (node,) and any("nvidia-smi mig -i 0 -cgi" in c for c in apply.commands)
    assert rt.port.refusal(plan, "mig-1") is None and rt.port.refusal(plan, "yes") == "not confirmed (type 'mig-1')"
    assert AuditLog(tmp_path / "audit.jsonl").read()[-1]["params"]["step"] == "idle"  # planning ran nothing
