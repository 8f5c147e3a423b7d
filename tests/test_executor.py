"""The action executor: read-only enforced, confirmation required, every attempt audited.

The backend here is a recording test double: the executor's own rules are under
test; real backends (demo, Slurm) have their own end-to-end tests.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hpctui.actions.audit import AuditLog
from hpctui.actions.executor import ActionExecutor
from hpctui.model import ClusterSnapshot
from hpctui.model.action import ActionKind, ActionPlan, TargetResult


class RecordingBackend:
    name = "rec"

    def __init__(self, fail_on: str | None = None, crash: bool = False) -> None:
        self.executed: list[ActionPlan] = []
        self.fail_on = fail_on
        self.crash = crash

    @property
    def action_kinds(self) -> frozenset[ActionKind]:
        return frozenset({ActionKind.DRAIN_NODES, ActionKind.RESUME_NODES, ActionKind.CANCEL_JOBS})

    def plan(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str],
             snapshot: ClusterSnapshot) -> ActionPlan:
        good = tuple(t for t in targets if t in snapshot.nodes or t.isdigit())
        bad = tuple(t for t in targets if t not in good)
        return ActionPlan(kind=kind, source=self.name, targets=good, params=params,
                          commands=(f"do {kind.value} {' '.join(good)}",), rejected_targets=bad,
                          errors=tuple(f"unknown target {t}" for t in bad))

    async def execute(self, plan: ActionPlan) -> tuple[TargetResult, ...]:
        if self.crash:
            raise RuntimeError("backend exploded")
        self.executed.append(plan)
        return tuple(TargetResult(target=t, ok=t != self.fail_on, message="failed" if t == self.fail_on else "")
                     for t in plan.targets)


def snapshot_with(*names: str) -> ClusterSnapshot:
    from hpctui.model import Node

    return ClusterSnapshot(cluster="c", time=0.0, nodes={n: Node(name=n) for n in names})


def make(tmp_path: Path, backend: RecordingBackend, read_only: bool = False) -> ActionExecutor:
    return ActionExecutor([backend], AuditLog(tmp_path / "audit.jsonl"), cluster="c", read_only=read_only,
                          user="alice", clock=lambda: 42.0)


async def test_single_target_needs_plain_confirmation_and_is_audited(tmp_path: Path) -> None:
    backend = RecordingBackend()
    ex = make(tmp_path, backend)
    plan = ex.plan(ActionKind.RESUME_NODES, ["n1"], {}, snapshot_with("n1"))
    assert plan.runnable and plan.confirm_word is None
    refused = await ex.execute(plan, confirmation=False)
    assert refused.refused == "not confirmed" and not backend.executed
    done = await ex.execute(plan, confirmation=True)
    assert done.ok and len(backend.executed) == 1
    records = AuditLog(tmp_path / "audit.jsonl").read()
    assert [r["refused"] for r in records] == ["not confirmed", None]
    assert records[1]["user"] == "alice" and records[1]["targets"] == ["n1"]
    assert records[1]["commands"] == ["do resume n1"]


async def test_bulk_destructive_action_needs_the_typed_word(tmp_path: Path) -> None:
    backend = RecordingBackend()
    ex = make(tmp_path, backend)
    plan = ex.plan(ActionKind.DRAIN_NODES, ["n1", "n2", "n1"], {"reason": "xid 79"}, snapshot_with("n1", "n2"))
    assert plan.targets == ("n1", "n2")  # de-duplicated
    assert plan.confirm_word == "drain-2"
    assert (await ex.execute(plan, confirmation=True)).refused == "not confirmed (type 'drain-2')"
    assert (await ex.execute(plan, confirmation="drain-2")).ok
    assert len(backend.executed) == 1


async def test_drain_without_reason_never_runs(tmp_path: Path) -> None:
    backend = RecordingBackend()
    ex = make(tmp_path, backend)
    plan = ex.plan(ActionKind.DRAIN_NODES, ["n1"], {"reason": "  "}, snapshot_with("n1"))
    assert not plan.runnable and "drain needs a reason" in plan.errors
    result = await ex.execute(plan, confirmation=True)
    assert result.refused and not backend.executed


async def test_invalid_targets_block_the_plan(tmp_path: Path) -> None:
    backend = RecordingBackend()
    ex = make(tmp_path, backend)
    plan = ex.plan(ActionKind.RESUME_NODES, ["n1", "ghost"], {}, snapshot_with("n1"))
    assert plan.rejected_targets == ("ghost",) and not plan.runnable
    assert (await ex.execute(plan, confirmation=True)).refused == "unknown target ghost"
    assert not backend.executed


async def test_read_only_is_enforced_in_the_executor(tmp_path: Path) -> None:
    backend = RecordingBackend()
    ex = make(tmp_path, backend, read_only=True)
    assert ex.available() == frozenset()
    plan = ex.plan(ActionKind.RESUME_NODES, ["n1"], {}, snapshot_with("n1"))
    assert "read-only mode: actions are disabled" in plan.errors
    # even a plan built elsewhere (e.g. before a switch to read-only) is refused
    forged = ActionPlan(kind=ActionKind.RESUME_NODES, source="rec", targets=("n1",))
    assert (await ex.execute(forged, confirmation=True)).refused == "read-only mode"
    assert not backend.executed


async def test_unsupported_kind_and_per_target_failures(tmp_path: Path) -> None:
    backend = RecordingBackend(fail_on="n2")
    ex = make(tmp_path, backend)
    plan = ex.plan(ActionKind.CORDON_NODES, ["n1"], {}, snapshot_with("n1"))
    assert "no configured source can cordon" in plan.errors
    plan = ex.plan(ActionKind.RESUME_NODES, ["n1", "n2"], {}, snapshot_with("n1", "n2"))
    result = await ex.execute(plan, confirmation=True)
    assert not result.ok and [r.ok for r in result.results] == [True, False]


async def test_backend_crash_becomes_per_target_errors(tmp_path: Path) -> None:
    ex = make(tmp_path, RecordingBackend(crash=True))
    plan = ex.plan(ActionKind.RESUME_NODES, ["n1"], {}, snapshot_with("n1"))
    result = await ex.execute(plan, confirmation=True)
    assert [r.message for r in result.results] == ["RuntimeError: backend exploded"]
    assert AuditLog(tmp_path / "audit.jsonl").read()[0]["results"][0]["ok"] is False


class SlowBackend(RecordingBackend):
    def __init__(self) -> None:
        super().__init__()
        self.started = asyncio.Event()

    async def execute(self, plan: ActionPlan) -> tuple[TargetResult, ...]:
        self.started.set()
        await asyncio.Event().wait()  # never finishes on its own
        return ()


async def test_interrupted_action_is_still_audited(tmp_path: Path) -> None:
    backend = SlowBackend()
    ex = make(tmp_path, backend)
    plan = ex.plan(ActionKind.RESUME_NODES, ["n1"], {}, snapshot_with("n1"))
    task = asyncio.create_task(ex.execute(plan, confirmation=True))
    async with asyncio.timeout(10):
        await backend.started.wait()  # the backend is running the action
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    records = AuditLog(tmp_path / "audit.jsonl").read()
    assert len(records) == 1
    assert records[0]["results"][0]["ok"] is False
    assert "interrupted" in records[0]["results"][0]["message"]


async def test_unwritable_audit_log_is_reported_not_raised_and_nothing_runs(tmp_path: Path) -> None:
    (tmp_path / "audit.jsonl").mkdir()  # a directory where the log file should be
    backend = RecordingBackend()
    ex = make(tmp_path, backend)
    plan = ex.plan(ActionKind.RESUME_NODES, ["n1"], {}, snapshot_with("n1"))
    result = await ex.execute(plan, confirmation=True)
    # issue #6: no intent record, no command (an unaudited action must not happen)
    assert not result.ok and not backend.executed and "unwritable" in (result.refused or "")
    assert ex.audit_errors and "audit.jsonl" in ex.audit_errors[0]


async def test_intent_is_recorded_before_the_command_runs(tmp_path: Path) -> None:
    seen: list[list[dict[str, object]]] = []

    class Peek(RecordingBackend):
        async def execute(self, plan: ActionPlan) -> tuple[TargetResult, ...]:
            seen.append(AuditLog(tmp_path / "audit.jsonl").read(intents=True))
            return await super().execute(plan)

    ex = make(tmp_path, Peek())
    plan = ex.plan(ActionKind.RESUME_NODES, ["n1"], {}, snapshot_with("n1"))
    assert (await ex.execute(plan, confirmation=True)).ok
    assert [r["phase"] for r in seen[0]] == ["intent"] and seen[0][0]["commands"] == ["do resume n1"]
    records = AuditLog(tmp_path / "audit.jsonl").read(intents=True)
    assert [r["phase"] for r in records] == ["intent", "outcome"] and records[0]["id"] == records[1]["id"]


async def test_audit_user_comes_from_the_os_not_the_environment(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import pwd

    monkeypatch.setenv("LOGNAME", "mallory")
    monkeypatch.setenv("USER", "mallory")
    monkeypatch.setenv("SUDO_USER", "bob")
    ex = ActionExecutor([RecordingBackend()], AuditLog(tmp_path / "audit.jsonl"), cluster="c", clock=lambda: 1.0)
    plan = ex.plan(ActionKind.RESUME_NODES, ["n1"], {}, snapshot_with("n1"))
    await ex.execute(plan, confirmation=True)
    rec = AuditLog(tmp_path / "audit.jsonl").read()[0]
    assert rec["user"] == pwd.getpwuid(os.getuid()).pw_name != "mallory"
    assert rec["logname"] == "mallory" and rec["sudo_user"] == "bob" and rec["uid"] == os.getuid()
