"""What a failed check offers next: the drain of its failed nodes, with the failure as the reason.

One drain per distinct reason (nodes that failed the same way are drained together); the offer is
only a plan's parameters — the drain itself goes through the executor's preview and confirmation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hpctui.actions.fold import label_set
from hpctui.model.action import ActionKind, ActionResult
from hpctui.model.checks import CheckStatus

if TYPE_CHECKING:
    from hpctui.actions.checks.ledger import CheckLedger


def drain_offers(ledger: CheckLedger, result: ActionResult) -> list[tuple[str, str]]:
    """(hostlist, reason) per distinct failure of a ``check`` action's failed nodes (not the ones that
    could not run: an unreachable node proves nothing about its GPUs)."""
    if result.plan.kind is not ActionKind.HEALTH_CHECK or result.refused is not None:
        return []
    check = result.plan.params.get("check", "")
    groups: dict[str, list[str]] = {}
    for r in result.results:
        if r.ok:
            continue
        latest = next((c for c in ledger.results(r.target) if c.check == check), None)
        if latest is None or latest.status is not CheckStatus.FAILED or latest.time < result.started:
            continue
        groups.setdefault(latest.failure_reason(), []).append(r.target)
    return [(label_set(nodes), reason) for reason, nodes in groups.items()]
