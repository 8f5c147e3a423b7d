"""The resume/uncordon gate: after a critical GPU or fabric finding, a passing check first.

:func:`gate_messages` is what the executor adds to a ``resume``/``uncordon`` plan. A node whose
remembered critical findings (:class:`~hpctui.actions.checks.ledger.CheckLedger`) no passing check of
their domain followed makes the plan an error naming the finding, when it was first seen and which
checks would clear it — unless the request carries ``override`` (a reason, validated like a drain
reason), which turns each into a warning; the plan's params keep the override, so the audit record
holds who overrode what and why. With ``gate = false`` the same lines are warnings only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from hpctui.model.action import reason_problem
from hpctui.model.common import age_text
from hpctui.model.hostlist import HostlistError, expand

if TYPE_CHECKING:
    from hpctui.actions.checks.ledger import CheckLedger
    from hpctui.actions.checks.settings import HealthCheckSettings
    from hpctui.findings.health import Finding

OVERRIDE = "override"


class GateOutcome:
    """What the gate says of one plan: errors (it must not run), warnings, and the nodes it holds."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.held: list[str] = []


def node_names(targets: Sequence[str]) -> list[str]:
    """The node names of hostlist targets (a token that is not a hostlist is left out)."""
    out: list[str] = []
    for t in targets:
        try:
            out.extend(expand(t))
        except HostlistError:
            continue
    return list(dict.fromkeys(out))


def gate_messages(targets: Sequence[str], findings: Iterable[Finding] | None, ledger: CheckLedger,
                  settings: HealthCheckSettings, override: str, now: float) -> GateOutcome:
    """The gate's word on resuming ``targets``: live ``findings`` are recorded first (a critical finding
    seen for the first time now is gated at once), then each node's uncleared marks are named."""
    outcome = GateOutcome()
    if findings is not None:
        problem = ledger.observe(findings, settings)
        if problem:
            outcome.warnings.append(problem)
    override = override.strip()
    if override:
        why = reason_problem(override)
        if why:
            outcome.errors.append(f"override: {why}")
    for node in node_names(targets):
        marks = ledger.blocking(node, settings)
        if not marks:
            continue
        outcome.held.append(node)
        first = marks[0]
        more = f" (+{len(marks) - 1} more)" if len(marks) > 1 else ""
        clears = sorted({c for m in marks for c in settings.cleared_by(m.domain)})
        seen = f"first seen {age_text(max(0.0, now - first.first_seen), words=True)} ago"
        text = (f"{node}: {first.message}{more} ({seen}); no passing "
                f"{'/'.join(sorted({m.domain.value for m in marks}))} check since")
        if not settings.gate:
            outcome.warnings.append(f"{text} (the resume gate is off)")
        elif override:
            outcome.warnings.append(f"{text}: resume gate overridden: {override}")
        else:
            outcome.errors.append(f"{text}: run {' or '.join(clears) or 'a clearing check'} first, or override "
                                  "with a reason (override=...)")
    return outcome
