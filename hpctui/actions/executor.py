"""The one place actions run: plan → (preview, confirm in the UI) → execute → audit.

Read-only mode is enforced here, not only by hiding keys, so every entry point
(key binding, command palette, CLI) is covered.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Sequence

import msgspec

from hpctui.actions.audit import AuditLog, os_user, user_fields
from hpctui.actions.base import (
    JOB_ACTIONS,
    REQUIRED_PARAMS,
    ActionKind,
    ActionPlan,
    ActionResult,
    TargetResult,
    reason_problem,
    stored_reason,
)
from hpctui.correlate import workload_index
from hpctui.model import ClusterSnapshot
from hpctui.model.hostlist import HostlistError, expand
from hpctui.sanitize import clean_text, is_clean
from hpctui.sources.base import ActionBackend


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
    ) -> None:
        self.backends = list(backends)
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
        for required in REQUIRED_PARAMS.get(kind, ()):
            if not params.get(required, "").strip():
                errors.append(f"{kind.value} needs a {required}")
        if not clean:
            errors.append("no targets selected")
        backend = self.backend_for(kind)
        if backend is None:
            errors.append(f"no configured source can {kind.value}")
            return ActionPlan(kind=kind, source="-", targets=clean, params=params, errors=tuple(errors))
        plan = backend.plan(kind, clean, params, snapshot)
        if errors or notes:
            plan = msgspec.structs.replace(plan, errors=tuple(dict.fromkeys((*errors, *plan.errors))),
                                           notes=(*notes, *plan.notes))
        return plan

    async def execute(self, plan: ActionPlan, *, confirmation: str | bool) -> ActionResult:
        """Run ``plan`` if confirmed; always leaves an audit record, even when interrupted."""
        started = self.clock()
        refused = self._refusal(plan, confirmation)
        results: tuple[TargetResult, ...] = ()
        interrupted = False
        action_id = uuid.uuid4().hex
        try:
            if refused is None:
                backend = next((b for b in self.backends if b.name == plan.source), None)
                if backend is None:
                    refused = f"source {plan.source!r} is gone"
                else:
                    refused = self._intent(plan, action_id, started)
                if refused is None and backend is not None:
                    try:
                        results = await backend.execute(plan)
                    except asyncio.CancelledError:
                        interrupted = True
                        raise
                    except Exception as exc:  # a backend crash is a per-target failure, not ours
                        results = tuple(TargetResult(target=t, ok=False, message=f"{type(exc).__name__}: {exc}")
                                        for t in plan.targets)
        finally:
            if interrupted:  # the outcome per target is unknown: say so rather than stay silent
                results = tuple(TargetResult(target=t, ok=False, message="interrupted: outcome unknown, check the "
                                             "next refresh") for t in plan.targets)
            results = tuple(r if is_clean(r.message) else msgspec.structs.replace(r, message=clean_text(r.message))
                            for r in results)  # backends quote Slurm/K8s output: never raw to the screen
            result = ActionResult(plan=plan, user=self.user, started=started, finished=self.clock(),
                                  results=results, refused=refused)
            self._audit(result, action_id)
        return result

    def _intent(self, plan: ActionPlan, action_id: str, started: float) -> str | None:
        """Record (fsynced) what is about to run; an action that cannot be audited does not run."""
        if self.audit is None:
            return None
        try:
            self.audit.intent(plan, self.cluster, user=self.user, action_id=action_id, time=started,
                              extra=self.user_extra)
        except OSError as exc:
            self.audit_errors.append(f"audit log {self.audit.path}: {exc.strerror or exc}")
            return f"audit log {self.audit.path} unwritable ({exc.strerror or exc}): not run"
        return None

    def _audit(self, result: ActionResult, action_id: str | None = None) -> None:
        if self.audit is None:
            return
        try:
            self.audit.append(result, self.cluster, action_id=action_id, extra=self.user_extra)
        except OSError as exc:  # the action has run: report the lost record, never crash the UI
            self.audit_errors.append(f"audit log {self.audit.path}: {exc.strerror or exc}")

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
