"""Everything one cluster needs at run time, built from config: sources, store,
poller, action executor. UI-free: the headless ``snapshot`` command and the
Textual app both build one of these.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hpctui.actions.audit import AuditLog
from hpctui.actions.executor import ActionExecutor
from hpctui.actions.plans import ActionSettings
from hpctui.core.config import AppConfig, default_state_dir, source_settings
from hpctui.core.heatmap_settings import HeatmapSettings
from hpctui.core.poller import Poller
from hpctui.core.store import NodeNameMap, Store
from hpctui.core.wall_settings import WallSettings
from hpctui.findings.health import Thresholds
from hpctui.findings.index import FindingsIndex, findings_for
from hpctui.model import ClusterSnapshot, Event
from hpctui.model.action import ActionPlan, ActionResult
from hpctui.sources.base import ActionBackend, Source
from hpctui.sources.registry import SourceContext, build_source

if TYPE_CHECKING:
    from hpctui.actions.custom import CustomActionSettings
    from hpctui.model.accounting import AccountingInfo


ACTION_GRACE_S = 30.0


class Runtime:
    def __init__(
        self,
        cluster: str,
        sources: Sequence[Source],
        *,
        thresholds: Thresholds | None = None,
        read_only: bool = False,
        audit_path: Path | None = None,
        name_map: NodeNameMap | None = None,
        clock: Callable[[], float] = time.time,
        theme: str = "dark",
        precedence: dict[str, list[str]] | None = None,
        actions: ActionSettings | None = None,
    ) -> None:
        self.cluster = cluster
        self.sources = list(sources)
        self.thresholds = thresholds or Thresholds()
        self.read_only = read_only
        self.theme = theme
        self.clock = clock
        self.store = Store(cluster, name_map=name_map, clock=clock, precedence=precedence)
        self.poller = Poller(self.sources, self.store)
        self.poller.prepare = self._prepare  # findings once per change, in the data layer
        backends = [s for s in self.sources if isinstance(s, ActionBackend)]
        audit = AuditLog(audit_path or default_state_dir() / "audit.jsonl")
        self.executor = ActionExecutor(backends, audit, cluster=cluster, read_only=read_only, clock=clock,
                                       settings=actions, findings=self.findings)
        self._actions: set[asyncio.Task[ActionResult]] = set()
        self.heatmap = HeatmapSettings()  # [heatmap] of the config: grouping, racks, palette
        # The first collect is CPU work in this process (a big demo cluster), not waiting on a
        # daemon: the UI draws its first frame before it starts (HpcApp.on_mount).
        self.first_collect_heavy = False
        self.secrets: tuple[str, ...] = ()  # config values (tokens, passwords, key paths) reports must redact
        self.custom_actions: tuple[CustomActionSettings, ...] = ()  # [[custom_actions]] (hpctui.actions.custom)
        self.mig_layouts: dict[str, Any] = {}  # named MIG layouts from config (the MIG wizard)
        self.wall_settings = WallSettings()  # the config's [wall] table (the --wall display)

    def run_action(self, plan: ActionPlan, confirmation: str | bool) -> asyncio.Task[ActionResult]:
        """Run an action as a task owned by the runtime, not by a dialog: closing the dialog
        (or a second key press) cannot cancel it halfway, and ``stop()`` waits for it."""
        task = asyncio.create_task(self.executor.execute(plan, confirmation=confirmation), name=f"action:{plan.kind}")
        self._actions.add(task)
        task.add_done_callback(self._actions.discard)
        task.add_done_callback(self._record_action)
        return task

    def track_action(self, coro: Coroutine[Any, Any, ActionResult]) -> asyncio.Task[ActionResult]:
        """Run an action coroutine of its own (a custom action) as a task the runtime owns, like
        :meth:`run_action`: ``stop()`` waits for it and its result lands in the Events view."""
        task = asyncio.create_task(coro, name="action:custom")
        self._actions.add(task)
        task.add_done_callback(self._actions.discard)
        task.add_done_callback(self._record_action)
        return task
    @property
    def actions_running(self) -> int:
        """Actions started and not finished yet (``q`` asks first, ``:cluster`` waits for them)."""
        return sum(1 for task in self._actions if not task.done())

    def _record_action(self, task: asyncio.Task[ActionResult]) -> None:
        """Every action also lands in the store's event timeline (the Events view)."""
        if task.cancelled() or task.exception() is not None:
            return
        from hpctui.actions.events import action_event

        self.store.add_events([action_event(task.result())])

    def audit_history(self, limit: int = 200) -> list[Event]:
        """Earlier actions on this cluster from the audit trail's tail, as events, plus one
        warning event per problem met (lines skipped, the log unreadable). Never raises; blocking
        file I/O: the UI calls it in a worker thread."""
        from hpctui.actions.events import audit_events, audit_warning_events

        audit = self.executor.audit
        if audit is None:
            return []
        got = audit.tail(intents=False)
        return [*audit_events(got.records, self.cluster, limit), *audit_warning_events(got.warnings, self.clock())]

    def findings(self, snapshot: ClusterSnapshot | None = None) -> FindingsIndex:
        """The shared findings of ``snapshot`` (default: the store's latest)."""
        return findings_for(snapshot if snapshot is not None else self.store.snapshot(), self.thresholds)

    def _prepare(self, snapshot: ClusterSnapshot) -> None:
        """What every reader of a new snapshot shares, computed by the poller (in a thread for
        big clusters) before the UI hears of the change: findings and the jobs-on-nodes index."""
        from hpctui.findings.correlate import workload_index

        self.findings(snapshot)
        workload_index(snapshot)

    def start(self, on_change: Callable[[], None] | None = None, after: asyncio.Event | None = None) -> None:
        self.poller.on_change = on_change
        self.poller.start(after)

    async def collect_once(self) -> None:
        await self.poller.poll_all_once()

    def refresh_now(self) -> None:
        self.poller.refresh_now()

    async def stop(self) -> None:
        if self._actions:  # let running actions finish (and be audited) before we go
            await asyncio.wait(set(self._actions), timeout=ACTION_GRACE_S)
        await self.poller.stop()
        from hpctui.sources.slurm.runner import reap_killed

        await reap_killed()  # children killed while they were being spawned: reaped before the loop closes

    async def accounting(self, user: str | None, account: str | None) -> AccountingInfo | None:
        """Fair-share/QoS of the first source that can tell (a Slurm source); None if none can."""
        for source in sorted(self.sources, key=lambda s: s.kind != "slurm"):  # a real Slurm first
            query = getattr(source, "accounting", None)
            if query is not None and inspect.iscoroutinefunction(query):
                info: AccountingInfo = await query(user=user, account=account)
                return info
        return None


def runtime_from_config(config: AppConfig, cluster: str, *, read_only: bool | None = None,
                        theme: str | None = None) -> Runtime:
    cc = config.clusters[cluster]
    name_map = NodeNameMap(cc.node_map.explicit, cc.node_map.strip_suffix)
    context = SourceContext(cluster=cluster, name_map=name_map)
    sources = [build_source(source_settings(config, cluster, i), context) for i in range(len(cc.sources))]
    ro = read_only if read_only is not None else (cc.read_only if cc.read_only is not None else config.read_only)
    runtime = Runtime(
        cluster,
        sources,
        thresholds=config.thresholds,
        read_only=ro,
        audit_path=Path(config.audit_log).expanduser() if config.audit_log else None,
        name_map=name_map,
        theme=theme or config.theme,
        precedence=cc.precedence,
        actions=config.actions,
    )
    runtime.heatmap = config.heatmap
    if runtime.executor.audit is not None:  # [top level] audit_max_bytes, audit_keep, audit_tail_bytes
        audit = runtime.executor.audit
        audit.max_bytes, audit.keep, audit.tail_bytes = config.audit_max_bytes, config.audit_keep, config.audit_tail_bytes
    context.snapshot = runtime.store.snapshot  # late-bound: sources read it at collect time
    from hpctui.base.secrets import secrets_of

    runtime.secrets = secrets_of(config)
    runtime.custom_actions = tuple(config.custom_actions)
    runtime.mig_layouts = dict(config.mig_layouts)
    runtime.wall_settings = config.wall
    return runtime


HEAVY_DEMO_NODES = 1024  # a bigger simulator takes ~0.3 s and more to build: after the first frame


def demo_runtime(size: int = 64, seed: int = 0, *, clock: Callable[[], float] = time.time,
                 start_time: float | None = None, read_only: bool = False, audit_path: Path | None = None,
                 thresholds: Thresholds | None = None, theme: str = "dark", interval_s: float = 2.0) -> Runtime:
    """The built-in demo cluster; with a frozen ``clock`` and ``seed`` it is fully deterministic."""
    from hpctui.sources.demo.source import DemoSource

    source = DemoSource(size=size, seed=seed, interval_s=interval_s, clock=clock, start_time=start_time)
    runtime = Runtime("demo", [source], thresholds=thresholds, read_only=read_only, audit_path=audit_path,
                      clock=clock, theme=theme)
    runtime.first_collect_heavy = size > HEAVY_DEMO_NODES
    return runtime
