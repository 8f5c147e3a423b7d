"""What a workflow (the MIG wizard, a custom action run) may ask of the running cluster.

Workflows never see the Runtime: they get a :class:`WorkflowPort`, implemented in the core
(:class:`hpctui.core.ports.RuntimePort`) and easy to fake in a test. Everything that runs goes
through the port's executor, so read-only mode, the confirmation rule and the audit trail are
the executor's, whatever the workflow.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from hpctui.actions.custom import CustomActionSettings
    from hpctui.actions.executor import AuditExtra
    from hpctui.actions.shells import ShellSettings
    from hpctui.model import ClusterSnapshot
    from hpctui.model.action import ActionKind, ActionPlan, ActionResult, Progress, TargetResult
    from hpctui.model.mig_layouts import MigLayoutSpec
    from hpctui.sources.base import ActionBackend

T = TypeVar("T")


class WorkflowPort(Protocol):
    """The narrow view of one cluster a workflow works through.

    Promises: :meth:`snapshot` is the store's latest joined view; :meth:`changed` returns once the
    cluster data changed (or after ``timeout``); :meth:`execute` and :meth:`start` run a plan through
    the one executor (refused and audited there) with ``progress`` hearing each step's backend;
    :meth:`record` keeps the outcome of something the workflow did itself, written by that executor;
    :meth:`capability` lists the sources with an ability (a ``runtime_checkable`` Protocol)."""

    @property
    def read_only(self) -> bool:
        """Actions are refused (a plan may still run read-only: see ActionPlan.read_only_refusal)."""
        ...

    @property
    def mig_layouts(self) -> Mapping[str, MigLayoutSpec]:
        """The named MIG layouts of the config."""
        ...

    @property
    def custom_actions(self) -> Sequence[CustomActionSettings]:
        """The ``[[custom_actions]]`` of the config."""
        ...

    @property
    def shells(self) -> ShellSettings:
        """The config's ``[shells]``, ``enabled`` as this cluster has it (``[clusters.NAME] shells``)."""
        ...

    @property
    def polling(self) -> bool:
        """The runtime's poller runs (the TUI): it collects, a workflow only waits for its changes."""
        ...

    def clock(self) -> float:
        """Now, on the runtime's clock (epoch seconds)."""
        ...

    def snapshot(self) -> ClusterSnapshot:
        """The latest joined view of the cluster."""
        ...

    async def changed(self, timeout: float | None = None) -> bool:
        """Wait for the next change of cluster data; False when ``timeout`` passed without one."""
        ...

    def refresh(self) -> None:
        """Ask the poller for new data now (it collects; :meth:`changed` says when it landed)."""
        ...

    async def collect(self, *, all_sources: bool) -> None:
        """Without a poller: collect every source (``all_sources``) or those whose interval has passed."""
        ...

    def capability(self, ability: type[T]) -> list[T]:
        """The sources that have ``ability`` (an ``isinstance`` check against a capability Protocol)."""
        ...

    def backend_for(self, kind: ActionKind) -> ActionBackend | None:
        """The configured backend that runs ``kind``, if any."""
        ...

    def plan(self, kind: ActionKind, targets: Sequence[str], params: dict[str, str] | None,
             snapshot: ClusterSnapshot, *, via: ActionBackend | None = None) -> ActionPlan:
        """The executor's plan: validated targets, exact commands, errors."""
        ...

    def refusal(self, plan: ActionPlan, confirmation: str | bool) -> str | None:
        """Why the executor would refuse ``plan`` with this confirmation (None: it would run it)."""
        ...

    async def execute(self, plan: ActionPlan, confirmation: str | bool, *, progress: Progress | None = None,
                      extra: AuditExtra | None = None, via: ActionBackend | None = None) -> ActionResult:
        """Run ``plan`` through the executor (refusal, audit); ``via``: a backend of the caller's own."""
        ...

    def start(self, plan: ActionPlan, confirmation: str | bool, *, progress: Progress | None = None,
              extra: AuditExtra | None = None, via: ActionBackend | None = None) -> asyncio.Task[ActionResult]:
        """:meth:`execute` as a task the runtime owns (closing a view never cancels it; the Events
        view gets its result)."""
        ...

    def record(self, plan: ActionPlan, results: Sequence[TargetResult], *, started: float,
               refused: str | None = None, extra: Mapping[str, Any] | None = None) -> ActionResult:
        """An outcome record of a workflow's own step, written by the executor; nothing runs."""
        ...
