"""The Alertmanager silence as a step of maintenance plans (#25 §2).

With an Alertmanager source (a backend for ``silence``), a drain, reboot or maintenance reservation first
silences the nodes' alerts — an *advisory* step: shown in the preview, audited, and its failure stops nothing —
and a resume expires the silences those actions set (``createdBy`` ``"<user> (hpctui drain)"``), never a silence
someone set by hand. ``[actions] silence_with`` names the actions; ``[]`` turns it off.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from hpctui.actions.plans import ActionSettings, compose
from hpctui.model.action import ActionKind, ActionPlan
from hpctui.model.hostlist import HostlistError, expand

if TYPE_CHECKING:
    from hpctui.model import ClusterSnapshot
    from hpctui.sources.base import ActionBackend

MAINTENANCE = frozenset({ActionKind.DRAIN_NODES, ActionKind.REBOOT_NODES, ActionKind.RESERVE_MAINT})
RELEASE = frozenset({ActionKind.RESUME_NODES})


def maintenance_marker(kind: ActionKind) -> str:
    """What ``createdBy`` of a silence set for ``kind`` ends with (how resume finds the ones to expire)."""
    return f"(hpctui {kind.value})"


def _nodes(targets: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    for t in targets:
        try:
            out.extend(expand(t))
        except HostlistError:
            out.append(t)
    return tuple(dict.fromkeys(out))


def _hours(kind: ActionKind, params: dict[str, str], settings: ActionSettings) -> float | None:
    """How long the silence lasts; None: no silence now (a reservation that starts later)."""
    if kind is not ActionKind.RESERVE_MAINT:
        return settings.silence_hours
    if params.get("start", "now").strip().lower() not in ("", "now"):
        return None
    from hpctui.sources.slurm.parse.values import parse_duration_min

    minutes = parse_duration_min(params.get("duration") or None)
    return min(720.0, minutes / 60) if minutes else settings.silence_hours


def with_silences(kind: ActionKind, plan: ActionPlan, params: dict[str, str], snapshot: ClusterSnapshot,
                  settings: ActionSettings, backend_for: Callable[[ActionKind], ActionBackend | None]) -> ActionPlan:
    """``plan`` with the silence step in front (maintenance) or the expire step behind (resume); unchanged when
    there is no Alertmanager, the action is not in ``silence_with``, or nothing is to be silenced or expired."""
    wanted = set(settings.silence_with)
    releases = kind in RELEASE and bool(wanted)
    if not plan.targets or plan.errors or not ((kind.value in wanted and kind in MAINTENANCE) or releases):
        return plan
    alerts = backend_for(ActionKind.SILENCE_NODES)
    if alerts is None:
        return plan
    nodes = _nodes(plan.targets)
    steps = plan.steps or (plan,)
    if kind in MAINTENANCE:
        hours = _hours(kind, params, settings)
        if hours is None:
            return msgspec.structs.replace(plan, notes=(*plan.notes, "no Alertmanager silence: the reservation "
                                                        "starts later (silence it then: the silence action)"))
        reason = params.get("reason", "").strip() or kind.value
        step = alerts.plan(ActionKind.SILENCE_NODES, plan.targets,
                           {"reason": f"{kind.value}: {reason}", "hours": f"{hours:g}", "for": kind.value}, snapshot)
        steps = (msgspec.structs.replace(step, advisory=True), *steps)
    else:
        markers = tuple(maintenance_marker(k) for k in MAINTENANCE)
        mine = {n: [s.id for s in snapshot.silences if n in s.nodes and s.created_by.endswith(markers)] for n in nodes}
        mine = {n: ids for n, ids in mine.items() if ids}
        if not mine:
            return plan
        step = alerts.plan(ActionKind.EXPIRE_SILENCES, plan.targets,
                           {"silences": ";".join(f"{n}={','.join(ids)}" for n, ids in mine.items())}, snapshot)
        steps = (*steps, msgspec.structs.replace(step, advisory=True))
    combined = compose(kind, plan.params, steps, continue_on_failure=plan.continue_on_failure)
    return msgspec.structs.replace(combined, previous=plan.previous)
