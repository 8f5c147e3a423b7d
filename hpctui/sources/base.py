"""The contract every data source fulfils.

A source is a small class with an async ``collect()`` returning a typed
:class:`~hpctui.model.SourceResult`. Blocking libraries run in threads *inside*
the source; everything above it only sees async. Sources that can act on the
cluster also implement :class:`ActionBackend` and declare which action kinds
they support.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from hpctui.model import SourceResult

if TYPE_CHECKING:
    from hpctui.model import ClusterSnapshot
    from hpctui.model.action import ActionKind, ActionPlan, TargetResult


class SourceError(Exception):
    """A collection or action failed in a way worth one line in the status bar."""


@runtime_checkable
class Source(Protocol):
    name: str  # unique within a cluster, e.g. "slurm" or "demo"
    kind: str  # "demo", "slurm", "k8s", "ssh", "prometheus", "nvml"
    interval_s: float

    async def collect(self) -> SourceResult:
        """One collection. Raise on failure; never block the event loop."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class ActionBackend(Protocol):
    """A source that can carry out actions (drain, requeue, cordon, ...)."""

    name: str

    @property
    def action_kinds(self) -> frozenset[ActionKind]: ...

    def plan(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str],
             snapshot: ClusterSnapshot) -> ActionPlan:
        """Validate targets and build the exact commands/requests; no side effects."""
        ...

    async def execute(self, plan: ActionPlan) -> tuple[TargetResult, ...]:
        """Run a confirmed plan; one result per target, with the backend's own error text."""
        ...
