"""The one place actions run: plan → (preview, confirm in the UI) → execute → audit.

Read-only mode, the confirmation rule and the audit trail exist here only: every entry point
(key binding, command palette, CLI, a custom action, each step of the MIG wizard) goes through
:class:`ActionExecutor`, and it is the only writer of audit records.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from hpctui.actions.audit import AuditLog, user_fields
from hpctui.actions.checks.gate import OVERRIDE, GateOutcome, gate_messages, node_names
from hpctui.actions.checks.settings import HealthCheckSettings
from hpctui.actions.plans import ActionSettings, Existing, compose, hybrid_plan, preview_warnings, prior_states
from hpctui.actions.silences import with_silences
from hpctui.base.identity import os_user
from hpctui.base.sanitize import clean_text, is_clean
from hpctui.findings.correlate import workload_index
from hpctui.model import ClusterSnapshot
from hpctui.model.action import (
    JOB_ACTIONS,
    REQUIRED_PARAMS,
    ActionKind,
    ActionPlan,
    ActionResult,
    Progress,
    StepResult,
    TargetResult,
    reason_problem,
    stored_reason,
)
from hpctui.model.hostlist import HostlistError, expand
from hpctui.sources.base import ActionBackend, ReportingBackend

if TYPE_CHECKING:
    from hpctui.actions.checks.ledger import CheckLedger
    from hpctui.findings.index import FindingsIndex

GATED = frozenset({ActionKind.RESUME_NODES, ActionKind.UNCORDON_NODES})  # the resume gate (hpctui.actions.checks)


# Extra fields for an action's outcome record: fixed, or computed from the result (a custom action's folds).
AuditExtra = Mapping[str, Any] | Callable[[ActionResult], Mapping[str, Any]]


class ActionExecutor:
    """Plans actions against a snapshot and runs confirmed plans on their backends.

    Promises: a plan runs only when :meth:`refusal` finds nothing (read-only mode, plan errors,
    the confirmation); an intent record is fsynced before anything runs (no record, no run); every
    attempt — refused, failed, interrupted — leaves an outcome record; a step of a multi-backend plan
    leaves a step record. It is the only writer of the audit log; what could not be written comes
    back in :attr:`ActionResult.audit_errors`, never as an exception.
    """

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
        checks: CheckLedger | None = None,
        health: HealthCheckSettings | None = None,
    ) -> None:
        self.backends = list(backends)
        self.settings = settings or ActionSettings()  # [actions]: where drain/resume act (hpctui.actions.plans)
        self.findings = findings  # the runtime's shared findings (preview warnings); None: default thresholds
        self.checks = checks  # health-check results and critical findings per node: the resume gate
        self.health = health or HealthCheckSettings()  # [health_checks]: the gate's rules
        self.audit = audit
        self.cluster = cluster
        self.read_only = read_only
        self.user = user or os_user()
        self.user_extra = user_fields()
        self.clock = clock
        # node -> what its history says against a resume/uncordon (hpctui.core.nodehistory); None: no history
        self.history_advice: Callable[[str], str | None] | None = None

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
        *,
        via: ActionBackend | None = None,
    ) -> ActionPlan:
        """The plan of ``kind`` on ``targets``: validated, with the exact commands, what it hits, what
        is already true, and every reason it must not run in ``errors``; no side effects. ``via``: a
        backend of the caller's own plans it (and runs it: :meth:`execute`)."""
        backend_for = self.backend_for if via is None else (lambda k: via if k in via.action_kinds else None)
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
        override = params.pop(OVERRIDE, "").strip() if kind in GATED else ""
        existing = Existing(kind, mode, prior_states(kind, clean, snapshot))
        for required in REQUIRED_PARAMS.get(kind, ()):
            if not params.get(required, "").strip() and not (required == "reason" and _all_kept(existing)):
                errors.append(f"{kind.value} needs a {required}")
        if not clean:
            errors.append("no targets selected")
        plan = hybrid_plan(kind, clean, params, snapshot, self.settings, backend_for, errors, notes, existing)
        if plan is None:
            backend = backend_for(kind)
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
        plan = with_silences(kind, plan, params, snapshot, self.settings, self.backend_for)
        said, mode_notes = existing.messages(snapshot.time)
        notes.extend(mode_notes)
        findings = self._findings(kind, snapshot)
        warnings = preview_warnings(kind, plan.targets, snapshot, findings, advice=self.history_advice)
        gate = GateOutcome()
        if kind in GATED and self.checks is not None:
            gate = gate_messages(plan.targets or clean, findings, self.checks, self.health, override, self.clock())
            errors.extend(gate.errors)
            warnings.extend(gate.warnings)
        elif kind is ActionKind.REBOOT_NODES and self.checks is not None and self.health.gate:
            held = [n for n in node_names(plan.targets) if self.checks.blocking(n, self.health)]
            if held:
                warnings.append(f"{', '.join(held[:8])}{' …' if len(held) > 8 else ''}: held by the health-check gate; "
                                "the reboot's nextstate=RESUME puts them back in service without a check "
                                "(run one as soon as they are up, or drain them again)")
        kept = {**({"reason_mode": mode} if mode else {}), **({OVERRIDE: override} if override else {})}
        plan = msgspec.structs.replace(plan, previous=existing.previous, params={**plan.params, **kept},
                                       held=tuple(gate.held))
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

    async def execute(self, plan: ActionPlan, *, confirmation: str | bool, progress: Progress | None = None,
                      extra: AuditExtra | None = None, via: ActionBackend | None = None) -> ActionResult:
        """Run ``plan`` if confirmed; always leaves an audit record, even when interrupted.

        ``progress`` hears what a reporting backend does while it runs (a K8s drain per pod, a
        custom action's output per node, an SSH MIG apply per command). ``extra`` adds fields to
        the records (a wizard run's id; a callable gets the result and adds to the outcome record
        only). ``via``: a backend of the caller's own that runs the plan (and its steps) instead of
        the configured ones (a MIG route's SSH applier)."""
        started = self.clock()
        refused = self.refusal(plan, confirmation)
        results: tuple[TargetResult, ...] = ()
        steps: list[StepResult] = []
        errors: list[str] = []
        fixed = dict(extra) if isinstance(extra, Mapping) else {}
        interrupted = False
        action_id = uuid.uuid4().hex
        try:
            if refused is None:
                gone = [s for s in (plan.steps or (plan,)) if self._backend(s.source, via) is None]
                refused = (f"source {gone[0].source!r} is gone" if gone
                           else self._intent(plan, action_id, started, fixed, errors))
                if refused is None:
                    try:
                        results = await (self._run_steps(plan, action_id, steps, progress, via, fixed, errors)
                                         if plan.steps else self._run_one(plan, progress, via))
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
            more = fixed if not callable(extra) else {**fixed, **_extra_of(extra, result)}
            self._audit(result, action_id, more, errors)
            result = msgspec.structs.replace(result, audit_errors=tuple(errors))
        return result

    def record(self, plan: ActionPlan, results: Sequence[TargetResult], *, started: float,
               refused: str | None = None, extra: Mapping[str, Any] | None = None) -> ActionResult:
        """Keep the outcome of something a workflow did itself (the MIG wizard's idle check, wait,
        verify): one outcome record, written like every action's; nothing runs."""
        result = ActionResult(plan=plan, user=self.user, started=started, finished=self.clock(),
                              results=_clean_results(results), refused=refused)
        errors: list[str] = []
        self._audit(result, uuid.uuid4().hex, dict(extra or {}), errors)
        return msgspec.structs.replace(result, audit_errors=tuple(errors))

    def _backend(self, name: str, via: ActionBackend | None = None) -> ActionBackend | None:
        if via is not None and via.name == name:
            return via
        return next((b for b in self.backends if b.name == name), None)

    async def _run_one(self, plan: ActionPlan, progress: Progress | None,
                       via: ActionBackend | None) -> tuple[TargetResult, ...]:
        backend = self._backend(plan.source, via)
        assert backend is not None
        try:
            if progress is not None and isinstance(backend, ReportingBackend):
                return _clean_results(await backend.execute_reporting(plan, progress))
            return _clean_results(await backend.execute(plan))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a backend crash is a per-target failure, not ours
            return tuple(TargetResult(target=t, ok=False, message=f"{type(exc).__name__}: {exc}")
                         for t in plan.targets)

    async def _run_steps(self, plan: ActionPlan, action_id: str, done: list[StepResult], progress: Progress | None,
                         via: ActionBackend | None, extra: dict[str, Any],
                         errors: list[str]) -> tuple[TargetResult, ...]:
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
                ran = await self._run_one(msgspec.structs.replace(step, targets=run), progress, via)
            by_target = {r.target: r for r in (*ran, *skipped)}
            results = tuple(by_target.get(t) or TargetResult(target=t, ok=False, message="no result from the backend")
                            for t in step.targets)
            outcome = StepResult(kind=step.kind, source=step.source, started=t0, finished=self.clock(),
                                 results=results)
            done.append(outcome)
            self._audit_step(plan, step, outcome, action_id, len(done) - 1, extra, errors)
            for r in ran:
                if not r.ok and not step.advisory:
                    failed.setdefault(r.target, step.label)
        merged: list[TargetResult] = []
        for t in plan.targets:
            mine = [(s, r) for s in done for r in s.results if r.target == t]
            merged.append(TargetResult(
                target=t, ok=bool(mine) and all(r.ok for _, r in mine),
                message="; ".join(f"{s.source} {s.kind.value}: {r.message}" for s, r in mine) or "no step ran"))
        return tuple(merged)

    def _write(self, what: str, write: Callable[[AuditLog], None], errors: list[str]) -> str | None:
        """Run one audit write (``what``: "intent", "step", "outcome"); None when the record is in
        the log, else why not (``exc.strerror``), and ``errors`` names the lost record. The writer's
        notices about a record it did write (a mode tightened, a torn line ended) land there too."""
        audit = self.audit
        if audit is None:
            return None
        try:
            write(audit)
        except OSError as exc:
            why = exc.strerror or str(exc)
            errors.append(f"audit log {audit.path}: {what} record not written ({why})")
            return why
        finally:
            errors.extend(audit.take_warnings())
        return None

    def _audit_step(self, plan: ActionPlan, step: ActionPlan, outcome: StepResult, action_id: str,
                    index: int, extra: dict[str, Any], errors: list[str]) -> None:
        """The step has run: a lost record is reported, never crashes the UI."""
        self._write("step", lambda audit: audit.step(plan, step, outcome, self.cluster, user=self.user,
                                                     action_id=action_id, index=index,
                                                     extra={**self.user_extra, **extra}), errors)

    def _intent(self, plan: ActionPlan, action_id: str, started: float, extra: dict[str, Any],
                errors: list[str]) -> str | None:
        """Record (fsynced) what is about to run; an action that cannot be audited does not run."""
        problem = self._write("intent", lambda audit: audit.intent(plan, self.cluster, user=self.user,
                                                                   action_id=action_id, time=started,
                                                                   extra={**self.user_extra, **extra}), errors)
        return None if problem is None or self.audit is None else \
            f"audit log {self.audit.path} unwritable ({problem}): not run"

    def _audit(self, result: ActionResult, action_id: str | None, extra: Mapping[str, Any],
               errors: list[str]) -> None:
        """The action has run (or was refused): a lost record is reported, never crashes the UI."""
        self._write("outcome", lambda audit: audit.append(result, self.cluster, action_id=action_id,
                                                          extra={**self.user_extra, **extra}), errors)

    def refusal(self, plan: ActionPlan, confirmation: str | bool) -> str | None:
        """Why ``plan`` must not run with this ``confirmation``, or None: the one rule for every
        plan. Read-only mode first (unless the plan may run read-only), then the plan's errors, then
        the typed word (the plan's own, or the bulk rule's) or a y/n."""
        if self.read_only and plan.read_only_refusal is not None:
            return plan.read_only_refusal
        if not plan.runnable:
            return "; ".join(plan.errors) or "nothing to do"
        word = plan.confirm_word
        if word is not None:
            if confirmation != word:
                return f"not confirmed (type {word!r})"
        elif confirmation is not True and confirmation != "y":
            return "not confirmed"
        return None


def _extra_of(extra: Callable[[ActionResult], Mapping[str, Any]], result: ActionResult) -> Mapping[str, Any]:
    """A caller's outcome fields; a crash there costs the fields, never the record."""
    try:
        return extra(result)
    except Exception as exc:
        return {"extra_error": f"{type(exc).__name__}: {exc}"}


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
