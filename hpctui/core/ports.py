"""The core's side of the ports the layers above work through (:mod:`hpctui.actions.ports`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from hpctui.actions.custom import CustomActionSettings
    from hpctui.actions.executor import AuditExtra
    from hpctui.core.runtime import Runtime
    from hpctui.model import ClusterSnapshot
    from hpctui.model.action import ActionKind, ActionPlan, ActionResult, Progress, TargetResult
    from hpctui.model.mig_layouts import MigLayoutSpec
    from hpctui.sources.base import ActionBackend

T = TypeVar("T")


class RuntimePort:
    """:class:`~hpctui.actions.ports.WorkflowPort` over one :class:`Runtime`: every call goes to the
    runtime's store, poller and executor at call time (a test may patch them), nothing is cached
    but when each source was last collected for :meth:`collect`."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime
        self._collected: dict[str, float] = {}  # source -> when collect() last collected it (no poller)

    @property
    def read_only(self) -> bool:
        return self._rt.executor.read_only

    @property
    def mig_layouts(self) -> Mapping[str, MigLayoutSpec]:
        return self._rt.mig_layouts or {}

    @property
    def custom_actions(self) -> Sequence[CustomActionSettings]:
        return self._rt.custom_actions

    @property
    def polling(self) -> bool:
        return self._rt.poller.running

    def clock(self) -> float:
        return self._rt.clock()

    def snapshot(self) -> ClusterSnapshot:
        return self._rt.store.snapshot()

    async def changed(self, timeout: float | None = None) -> bool:
        return await self._rt.store.changed(timeout=timeout)

    def refresh(self) -> None:
        self._rt.refresh_now()

    async def collect(self, *, all_sources: bool) -> None:
        now = time.monotonic()
        due = [s for s in self._rt.sources if all_sources or s.name not in self._collected
               or now - self._collected[s.name] >= s.interval_s]
        for s in due:
            self._collected[s.name] = now
        if due:
            await asyncio.gather(*(self._rt.poller.poll_once(s) for s in due))

    def capability(self, ability: type[T]) -> list[T]:
        return [s for s in self._rt.sources if isinstance(s, ability)]

    def backend_for(self, kind: ActionKind) -> ActionBackend | None:
        return self._rt.executor.backend_for(kind)

    def plan(self, kind: ActionKind, targets: Sequence[str], params: dict[str, str] | None,
             snapshot: ClusterSnapshot, *, via: ActionBackend | None = None) -> ActionPlan:
        return self._rt.executor.plan(kind, targets, params, snapshot, via=via)

    def refusal(self, plan: ActionPlan, confirmation: str | bool) -> str | None:
        return self._rt.executor.refusal(plan, confirmation)

    async def execute(self, plan: ActionPlan, confirmation: str | bool, *, progress: Progress | None = None,
                      extra: AuditExtra | None = None, via: ActionBackend | None = None) -> ActionResult:
        return await self._rt.executor.execute(plan, confirmation=confirmation, progress=progress, extra=extra,
                                               via=via)

    def start(self, plan: ActionPlan, confirmation: str | bool, *, progress: Progress | None = None,
              extra: AuditExtra | None = None, via: ActionBackend | None = None) -> asyncio.Task[ActionResult]:
        return self._rt.run_action(plan, confirmation, progress=progress, extra=extra, via=via)

    def record(self, plan: ActionPlan, results: Sequence[TargetResult], *, started: float,
               refused: str | None = None, extra: Mapping[str, Any] | None = None) -> ActionResult:
        return self._rt.executor.record(plan, results, started=started, refused=refused, extra=extra)
