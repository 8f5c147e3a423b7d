"""The one place actions run: plan → (preview, confirm in the UI) → execute → audit.

Read-only mode is enforced here, not only by hiding keys, so every entry point
(key binding, command palette, CLI) is covered.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import msgspec

from hpctui.actions.audit import AuditLog, os_user, user_fields
from hpctui.actions.plans import ActionSettings, Existing, compose, hybrid_plan, preview_warnings, prior_states
from hpctui.base.sanitize import clean_text, is_clean
from hpctui.findings.correlate import workload_index
from hpctui.model import ClusterSnapshot
from hpctui.model.action import (
    JOB_ACTIONS,
    REQUIRED_PARAMS,
    ActionKind,
    ActionPlan,
    ActionResult,
    StepResult,
    TargetResult,
    reason_problem,
    stored_reason,
)
from hpctui.model.hostlist import HostlistError, expand
from hpctui.sources.base import ActionBackend

if TYPE_CHECKING:
    from hpctui.findings.index import FindingsIndex


class ActionExecutor:
    def __init__(
        self,
        backends: Sequence[ActionBackend],
        audit: AuditLog | None,
        *,
        cluster: str,
        read_only: bool = False,
        user: str | None = None,
        clock: Callable[[], float] = time.time,
        settings: ActionSettings | None = None,
        findings: Callable[[ClusterSnapshot], FindingsIndex] | None = None,
    ) -> None:
        self.backends = list(backends)
        self.settings = settings or ActionSettings()  # [actions]: where drain/resume act (hpctui.actions.plans)
        self.findings = findings  # the runtime's shared findings (preview warnings); None: default thresholds
        self.audit = audit
        self.cluster = cluster
        self.read_only = read_only
        self.user = user or os_user()
        self.user_extra = user_fields()
        self.clock = clock
        self.audit_errors: list[str] = []

    def backend_for(self, kind: ActionKind) -> ActionBackend | None:
        for backend in self.backends:
            if kind in backend.action_kinds:
                return backend
        return None

    def available(self) -> frozenset[ActionKind]:
        if self.read_only:
            return frozenset()
        kinds: set[ActionKind] = set()
        for backend in self.backends:
            kinds |= backend.action_kinds
        return frozenset(kinds)

    def plan(
        self,
        kind: ActionKind,
        targets: Sequence[str],
        params: dict[str, str] | None,
        snapshot: ClusterSnapshot,
    ) -> ActionPlan:
        params = dict(params or {})
        clean = tuple(dict.fromkeys(t.strip() for t in targets if t.strip()))
        errors: list[str] = []
        notes: list[str] = []
        if "reason" in params:  # one validation and one stored form for every backend
            raw = params["reason"]
            params["reason"] = stored_reason(raw)
            problem = reason_problem(params["reason"])
            if problem:
                errors.append(problem)
            elif params["reason"] != raw.strip():
                notes.append(f"reason as Slurm stores it: {params['reason']}")
        on_nodes = params.pop("on_nodes", "").strip() if kind in JOB_ACTIONS else ""
        if on_nodes:
            found, problem = _jobs_on_nodes(snapshot, on_nodes)
            if problem:
                errors.append(problem)
            clean = tuple(dict.fromkeys((*clean, *found)))
            notes.append(f"targets: the {len(found)} job(s) running on {on_nodes}")
        if self.read_only:
            errors.append("read-only mode: actions are disabled")
        mode = params.pop("reason_mode", "").strip().lower()
        existing = Existing(kind, mode, prior_states(kind, clean, snapshot))
        for required in REQUIRED_PARAMS.get(kind, ()):
            if not params.get(required, "").strip() and not (required == "reason" and _all_kept(existing)):
                errors.append(f"{kind.value} needs a {required}")
        if not clean:
            errors.append("no targets selected")
        plan = hybrid_plan(kind, clean, params, snapshot, self.settings, self.backend_for, errors, notes, existing)
        if plan is None:
            backend = self.backend_for(kind)
            if backend is None:
                errors.append(f"no configured source can {kind.value}")
                return ActionPlan(kind=kind, source="-", targets=clean, params=params, errors=tuple(errors),
                                  previous=existing.previous)
            groups = existing.split(kind, clean, params)
            if not groups:  # every target kept as it is
                plan = ActionPlan(kind=kind, source=backend.name, targets=(), params=params)
            elif len(groups) == 1:
                plan = backend.plan(kind, groups[0][0], groups[0][1], snapshot)
            else:  # reason_mode=append on nodes with different reasons: one command per resulting reason
                plan = compose(kind, params, [backend.plan(kind, g, p, snapshot) for g, p in groups],
                               continue_on_failure=True)
        errors.extend(existing.problems())
        if existing.kept and not plan.targets:
            errors.append(f"nothing to change: {', '.join(dict.fromkeys(existing.kept))} already "
                          f"{'held' if kind in JOB_ACTIONS else 'set'}, kept as it is (reason_mode=keep)")
        said, mode_notes = existing.messages(snapshot.time)
        notes.extend(mode_notes)
        warnings = preview_warnings(kind, plan.targets, snapshot, self._findings(kind, snapshot))
        plan = msgspec.structs.replace(plan, previous=existing.previous,
                                       params={**plan.params, "reason_mode": mode} if mode else plan.params)
        if errors or notes or warnings or said:  # what is already true first: it decides the rest
            plan = msgspec.structs.replace(plan, errors=tuple(dict.fromkeys((*errors, *plan.errors))),
                                           notes=tuple(dict.fromkeys((*notes, *plan.notes))),
                                           warnings=tuple(dict.fromkeys((*said, *plan.warnings, *warnings))))
        return plan

    def _findings(self, kind: ActionKind, snapshot: ClusterSnapshot) -> FindingsIndex | None:
        if kind not in (ActionKind.RESUME_NODES, ActionKind.UNCORDON_NODES):
            return None  # only these warn from findings: don't compute them for nothing
        if self.findings is not None:
            return self.findings(snapshot)
        from hpctui.findings.health import Thresholds
        from hpctui.findings.index import findings_for

        return findings_for(snapshot, Thresholds())

    async def execute(self, plan: ActionPlan, *, confirmation: str | bool) -> ActionResult:
        """Run ``plan`` if confirmed; always leaves an audit record, even when interrupted."""
        started = self.clock()
        refused = self._refusal(plan, confirmation)
        results: tuple[TargetResult, ...] = ()
        steps: list[StepResult] = []
        interrupted = False
        action_id = uuid.uuid4().hex
        try:
            if refused is None:
                gone = [s for s in (plan.steps or (plan,)) if self._backend(s.source) is None]
                refused = f"source {gone[0].source!r} is gone" if gone else self._intent(plan, action_id, started)
                if refused is None:
                    try:
                        results = await (self._run_steps(plan, action_id, steps) if plan.steps
                                         else self._run_one(plan))
                    except asyncio.CancelledError:
                        interrupted = True
                        raise
        finally:
            if interrupted:  # the outcome per target is unknown: say so rather than stay silent
                results = tuple(TargetResult(target=t, ok=False, message="interrupted: outcome unknown, check the "
                                             "next refresh") for t in plan.targets)
            results = _clean_results(results)
            result = ActionResult(plan=plan, user=self.user, started=started, finished=self.clock(),
                                  results=results, refused=refused, steps=tuple(steps))
            self._audit(result, action_id)
        return result

    def _backend(self, name: str) -> ActionBackend | None:
        return next((b for b in self.backends if b.name == name), None)

    async def _run_one(self, plan: ActionPlan) -> tuple[TargetResult, ...]:
        backend = self._backend(plan.source)
        assert backend is not None
        try:
            return _clean_results(await backend.execute(plan))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a backend crash is a per-target failure, not ours
            return tuple(TargetResult(target=t, ok=False, message=f"{type(exc).__name__}: {exc}")
                         for t in plan.targets)

    async def _run_steps(self, plan: ActionPlan, action_id: str, done: list[StepResult]) -> tuple[TargetResult, ...]:
        """Each step on its own backend, in order; each leaves its own audit record. Without
        ``continue_on_failure`` a target an earlier step failed on is not touched again (a node is
        not cordoned when its Slurm drain failed). Returns one result per target, merged."""
        failed: dict[str, str] = {}
        for step in plan.steps:
            t0 = self.clock()
            run = step.targets if plan.continue_on_failure else tuple(t for t in step.targets if t not in failed)
            skipped = [TargetResult(target=t, ok=False, message=f"not run: {failed[t]} failed")
                       for t in step.targets if t not in run]
            ran: tuple[TargetResult, ...] = ()
            if run:
                ran = await self._run_one(msgspec.structs.replace(step, targets=run))
            by_target = {r.target: r for r in (*ran, *skipped)}
            results = tuple(by_target.get(t) or TargetResult(target=t, ok=False, message="no result from the backend")
                            for t in step.targets)
            outcome = StepResult(kind=step.kind, source=step.source, started=t0, finished=self.clock(),
                                 results=results)
            done.append(outcome)
            self._audit_step(plan, step, outcome, action_id, len(done) - 1)
            for r in ran:
                if not r.ok:
                    failed.setdefault(r.target, step.label)
        merged: list[TargetResult] = []
        for t in plan.targets:
            mine = [(s, r) for s in done for r in s.results if r.target == t]
            merged.append(TargetResult(
                target=t, ok=bool(mine) and all(r.ok for _, r in mine),
                message="; ".join(f"{s.source} {s.kind.value}: {r.message}" for s, r in mine) or "no step ran"))
        return tuple(merged)

    def record_audit(self, what: str, write: Callable[[], None]) -> str | None:
        """Run one audit write (``what``: "intent", "step", "outcome"); None when the record is
        in the log, else why not (``exc.strerror``), and ``audit_errors`` names the lost record.
        The writer's notices about a record it did write (a mode tightened, a torn line ended)
        land in ``audit_errors`` too."""
        if self.audit is None:
            return None
        try:
            write()
        except OSError as exc:
            why = exc.strerror or str(exc)
            self.audit_errors.append(f"audit log {self.audit.path}: {what} record not written ({why})")
            return why
        finally:
            self.audit_errors.extend(self.audit.take_warnings())
        return None

    def _audit_step(self, plan: ActionPlan, step: ActionPlan, outcome: StepResult, action_id: str,
                    index: int) -> None:
        audit = self.audit
        if audit is not None:  # the step has run: a lost record is reported, never crashes the UI
            self.record_audit("step", lambda: audit.step(plan, step, outcome, self.cluster, user=self.user,
                                                         action_id=action_id, index=index, extra=self.user_extra))

    def _intent(self, plan: ActionPlan, action_id: str, started: float) -> str | None:
        """Record (fsynced) what is about to run; an action that cannot be audited does not run."""
        audit = self.audit
        if audit is None:
            return None
        problem = self.record_audit("intent", lambda: audit.intent(plan, self.cluster, user=self.user,
                                                                   action_id=action_id, time=started,
                                                                   extra=self.user_extra))
        return None if problem is None else f"audit log {audit.path} unwritable ({problem}): not run"

    def _audit(self, result: ActionResult, action_id: str | None = None) -> None:
        audit = self.audit
        if audit is not None:  # the action has run: a lost record is reported, never crashes the UI
            self.record_audit("outcome", lambda: audit.append(result, self.cluster, action_id=action_id,
                                                              extra=self.user_extra))

    def _refusal(self, plan: ActionPlan, confirmation: str | bool) -> str | None:
        if self.read_only:
            return "read-only mode"
        if not plan.runnable:
            return "; ".join(plan.errors) or "nothing to do"
        word = plan.confirm_word
        if word is not None:
            if confirmation != word:
                return f"not confirmed (type {word!r})"
        elif confirmation is not True and confirmation != "y":
            return "not confirmed"
        return None


def _all_kept(existing: Existing) -> bool:
    """reason_mode=keep and every Slurm target already drained: no new reason is needed."""
    slurm = [p for p in existing.previous if p.scheduler == "slurm"]
    return existing.mode == "keep" and bool(slurm) and all(p.set for p in slurm)


def _clean_results(results: Sequence[TargetResult]) -> tuple[TargetResult, ...]:
    """Backends quote Slurm/K8s output: never raw to the screen."""
    return tuple(r if is_clean(r.message) else msgspec.structs.replace(r, message=clean_text(r.message))
                 for r in results)


def _jobs_on_nodes(snapshot: ClusterSnapshot, expr: str) -> tuple[list[str], str | None]:
    """Job targets for "all jobs on these nodes"; the second value is a validation error."""
    try:
        nodes = set(expand(expr))
    except HostlistError as exc:
        return [], f"on_nodes: {exc}"
    unknown = sorted(nodes - snapshot.nodes.keys())
    if unknown:
        return [], f"on_nodes: unknown node(s) {', '.join(unknown[:5])}"
    jobs = workload_index(snapshot).jobs_on_any(nodes)
    if not jobs:
        return [], f"no running jobs on {expr}"
    return [j.display_id for j in jobs], None
