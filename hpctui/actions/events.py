"""Actions as timeline events: one :class:`Event` per action (live) or audit record (history),
so the Events view shows what was done next to what happened."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from hpctui.base.sanitize import clean_text
from hpctui.model import Event, Severity
from hpctui.model.action import JOB_ACTIONS, ActionKind, ActionResult
from hpctui.model.hostlist import collect
from hpctui.model.nodehistory import ORIGIN_AUDIT, NodeEvent


def _object(kind: str, targets: Sequence[str], params: Mapping[str, object]) -> str:
    try:
        is_job = ActionKind(kind) in JOB_ACTIONS
    except ValueError:
        is_job = False
    if is_job and not targets and params.get("on_nodes"):
        return f"node/{params['on_nodes']}"
    if is_job:
        return "job/" + ",".join(targets[:6]) + ("…" if len(targets) > 6 else "")
    return f"node/{collect(targets)}" if targets else f"action/{kind}"


def _event(time: float, user: str, kind: str, targets: Sequence[str], params: Mapping[str, object],
           refused: str | None, failed: Sequence[str]) -> Event:
    if refused:
        severity, outcome = Severity.WARNING, f"refused: {refused}"
    elif failed:
        severity, outcome = Severity.ERROR, f"failed on {len(failed)}: {failed[0]}"
    else:
        severity, outcome = Severity.INFO, "ok"
    reason = f" ({params['reason']})" if params.get("reason") else ""
    message = f"{user} {kind}{reason}: {outcome}"
    return Event(time=time, source="action", object=clean_text(_object(kind, targets, params)), severity=severity,
                 message=clean_text(message))


def action_event(result: ActionResult) -> Event:
    plan = result.plan
    failed = [f"{r.target}: {r.message}" for r in result.results if not r.ok]
    return _event(result.finished, result.user, plan.kind.value, plan.targets, plan.params, result.refused, failed)


def audit_events(records: Iterable[Mapping[str, object]], cluster: str, limit: int = 200) -> list[Event]:
    """The last ``limit`` audit records of ``cluster`` as events; unreadable records are skipped."""
    out: list[Event] = []
    for rec in records:
        try:
            if rec.get("cluster") != cluster:
                continue
            raw_targets = rec.get("targets") or []
            raw_results = rec.get("results") or []
            raw_params = rec.get("params") or {}
            if not isinstance(raw_targets, list) or not isinstance(raw_results, list) or not isinstance(raw_params, dict):
                continue
            targets = [str(t) for t in raw_targets]
            failed = [f"{r.get('target')}: {r.get('message')}" for r in raw_results
                      if isinstance(r, dict) and not r.get("ok")]
            refused = rec.get("refused")
            time = rec.get("finished") or rec.get("time")
            if not isinstance(time, (int, float)):
                continue
            out.append(_event(float(time), str(rec.get("user", "?")), str(rec.get("action", "?")), targets,
                              raw_params, str(refused) if refused else None, failed))
        except (AttributeError, TypeError, ValueError):
            continue
    return out[-limit:]


def audit_warning_events(warnings: Iterable[str], time: float) -> list[Event]:
    """What reading the audit trail met (``AuditRead.warnings``), as warning events: the Events
    view says so rather than silently showing less history."""
    return [Event(time=time, source="audit", object="action/audit-log", severity=Severity.WARNING,
                  message=clean_text(w)) for w in warnings]


# Actions that are node events in a node's history, and the kind each one is.
_NODE_EVENT_KINDS = {"drain": "drain", "resume": "resume", "reboot": "reboot", "cordon": "cordon",
                     "uncordon": "uncordon", "k8s_drain": "cordon"}


def audit_node_events(records: Iterable[Mapping[str, object]], cluster: str) -> list[NodeEvent]:
    """The audit outcome records of ``cluster`` that changed nodes (drain, resume, reboot, cordon,
    uncordon, k8s_drain), one :class:`NodeEvent` per node it succeeded on, with who ran it and its
    reason. A hybrid drain (a Slurm step and a cordon step) counts as one drain per node; refused
    actions and failed targets are left out; unreadable records are skipped."""
    from hpctui.model.hostlist import HostlistError, expand

    out: list[NodeEvent] = []
    for rec in records:
        try:
            if rec.get("cluster") != cluster or rec.get("refused") or rec.get("phase") not in (None, "outcome"):
                continue
            kind = _NODE_EVENT_KINDS.get(str(rec.get("action")))
            when = rec.get("finished") or rec.get("time")
            raw_results = rec.get("results") or []
            params = rec.get("params") or {}
            if kind is None or not isinstance(when, (int, float)) or not isinstance(raw_results, list):
                continue
            reason = params.get("reason") if isinstance(params, dict) else None
            for r in raw_results:
                if not isinstance(r, dict) or not r.get("ok"):
                    continue
                try:
                    names = expand(str(r.get("target")))
                except HostlistError:
                    continue
                for name in names:
                    out.append(NodeEvent(node=clean_text(name), kind=kind, time=float(when), origin=ORIGIN_AUDIT,
                                         user=clean_text(str(rec.get("user", "?"))),
                                         reason=clean_text(str(reason)) if reason else None))
        except (AttributeError, TypeError, ValueError):
            continue
    return out
