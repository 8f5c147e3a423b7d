"""Everything one cluster needs at run time, built from config: sources, store,
poller, action executor. UI-free: the headless ``snapshot`` command and the
Textual app both build one of these.

The runtime is what the UI's port (:class:`hpctui.core.ports.UiPort`) is implemented by: it
builds one :class:`~hpctui.core.frame.Frame` per store change (findings computed once, by its own
:class:`~hpctui.findings.index.FindingsCache`) and answers the screens' few requests by finding
the source with the ability (:mod:`hpctui.sources.capabilities`).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hpctui.actions.audit import AuditLog
from hpctui.actions.custom import CustomBackend
from hpctui.actions.executor import ActionExecutor, AuditExtra
from hpctui.actions.plans import ActionSettings
from hpctui.core.config import AppConfig, default_state_dir, source_settings
from hpctui.core.frame import Frame
from hpctui.core.heatmap_settings import HeatmapSettings
from hpctui.core.notify import Notice, Notifier, NotifySettings, WebhookSender
from hpctui.core.poller import Poller
from hpctui.core.ports import RuntimePort
from hpctui.core.store import NodeNameMap, Store
from hpctui.core.wall_settings import WallSettings
from hpctui.findings.correlate import workload_index
from hpctui.findings.health import Thresholds
from hpctui.findings.index import FindingsCache, FindingsIndex
from hpctui.model import ClusterSnapshot, Event
from hpctui.model.action import ActionKind, ActionPlan, ActionResult, Progress
from hpctui.sources.base import ActionBackend, Source
from hpctui.sources.capabilities import AccountingProvider, CommandRunner, HistoryProvider, PodInspector
from hpctui.sources.registry import SourceContext, build_source

if TYPE_CHECKING:
    from hpctui.actions.audit import AuditLog
    from hpctui.actions.custom import CustomActionSettings
    from hpctui.core.series_history import SeriesHistory
    from hpctui.model.accounting import AccountingInfo
    from hpctui.model.history import MetricHistory


ACTION_GRACE_S = 30.0


class Runtime:
    """One cluster at run time: its sources, store, poller and executor, and the UI's port.

    Promises: :meth:`frame` is the one view every reader draws (one per store version, its
    findings computed once); actions started through it finish (and are audited) before
    :meth:`stop` returns, whoever started them.
    """

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
        self._findings = FindingsCache()  # owned here: computed once per store change, for every reader
        self._frame: Frame | None = None
        self._frame_lock = threading.Lock()  # the poller's worker thread and the UI thread both ask
        self.poller = Poller(self.sources, self.store)
        self.poller.prepare = self._prepare  # findings once per change, in the data layer
        backends: list[ActionBackend] = [s for s in self.sources if isinstance(s, ActionBackend)]
        runners = [s for s in self.sources if isinstance(s, CommandRunner)]  # [[custom_actions]] run = "ssh"
        backends += [CustomBackend(lambda: self.custom_actions, remote=False),
                     CustomBackend(lambda: self.custom_actions, remote=True, runners=runners)]
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
        self.notify_settings = NotifySettings()  # [notify] of the config: who is told about new problems
        self.notifier = Notifier(self.notify_settings, cluster, clock)
        self._webhook: WebhookSender | None = None
        self.port = RuntimePort(self)  # what workflows (MIG wizard, custom actions) see of this runtime

    def run_action(self, plan: ActionPlan, confirmation: str | bool, *, progress: Progress | None = None,
                   extra: AuditExtra | None = None, via: ActionBackend | None = None) -> asyncio.Task[ActionResult]:
        """Run an action as a task owned by the runtime, not by a dialog: closing the dialog
        (or a second key press) cannot cancel it halfway, and ``stop()`` waits for it. The
        arguments after ``confirmation`` are the executor's (:meth:`ActionExecutor.execute`)."""
        task = asyncio.create_task(self.executor.execute(plan, confirmation=confirmation, progress=progress,
                                                         extra=extra, via=via), name=f"action:{plan.kind}")
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
        """The shared findings of ``snapshot`` (default: the store's latest, the current frame's)."""
        if snapshot is None:
            return self.frame().findings
        frame = self._frame
        if frame is not None and frame.snapshot is snapshot:
            return frame.findings
        return self._findings.index(snapshot, self.thresholds)

    def frame(self) -> Frame:
        """The frame of the store's current version: built on the first ask after a change
        (findings incrementally; a change of source health only keeps the last frame's findings
        and workload index), then the same object for every reader until the next change."""
        with self._frame_lock:
            store = self.store
            version, data_version = store.version, store.data_version  # read before the snapshot: never newer
            old = self._frame
            if old is not None and old.version == version:
                return old
            snapshot = store.snapshot()
            if old is not None and old.data_version == data_version:  # only health moved: same data
                findings, workload = old.findings, old.workload
            else:
                findings = self._findings.index(snapshot, self.thresholds)
                workload = workload_index(snapshot)
            frame = Frame(version=version, data_version=data_version, snapshot=snapshot, findings=findings,
                          workload=workload)
            self._frame = frame
            return frame

    def _prepare(self, snapshot: ClusterSnapshot) -> None:
        """The poller's hook after a change (in a thread for big clusters), before the UI hears
        of it: the new frame is built there, off the UI's event loop."""
        self.frame()

    def start(self, on_change: Callable[[], None] | None = None, after: asyncio.Event | None = None) -> None:
        self.poller.on_change = on_change
        self.poller.start(after)

    async def collect_once(self) -> None:
        await self.poller.poll_all_once()

    def refresh_now(self) -> None:
        self.poller.refresh_now()

    def announce(self, frame: Frame) -> list[Notice]:
        """The new problems of ``frame`` worth telling someone (:mod:`hpctui.core.notify`): handed to the
        webhook here (queued, never blocking; call on the event loop), returned for the terminal."""
        notices = self.notifier.observe(frame.findings)
        if notices and self.notify_settings.webhook_url:
            if self._webhook is None:
                self._webhook = WebhookSender(self.notify_settings)
            for notice in notices:
                self._webhook.submit(notice)
        return notices

    async def stop(self) -> None:
        if self._webhook is not None:
            await self._webhook.close()
        if self._actions:  # let running actions finish (and be audited) before we go
            await asyncio.wait(set(self._actions), timeout=ACTION_GRACE_S)
        await self.poller.stop()
        from hpctui.sources.slurm.runner import reap_killed

        await reap_killed()  # children killed while they were being spawned: reaped before the loop closes

    # -- the UI port (hpctui.core.ports.UiPort) ------------------------------------------
    def poll_intervals(self) -> Mapping[str, float]:
        """Each source's poll interval in seconds, by source name."""
        return {s.name: s.interval_s for s in self.sources}

    @property
    def series(self) -> SeriesHistory:
        """The store's in-memory history rings (the charts read them)."""
        return self.store.series

    def watch_series(self, node: str) -> None:
        """Record ``node``'s per-GPU and per-port rings from now on (big clusters: what was looked at)."""
        self.store.series.watch(node)

    def node_history(self, key: str) -> list[tuple[float, float]]:
        """The store's short (time, value) history of one key ("gpu01/util")."""
        return self.store.history.get(key)

    def _history_provider(self) -> HistoryProvider | None:
        return next((s for s in self.sources if isinstance(s, HistoryProvider)), None)

    @property
    def history_source(self) -> str | None:
        """The name of the first source that serves history windows (a range query), or None."""
        source = self._history_provider()
        return None if source is None else source.name

    async def history(self, node: str, metric: str = "util", gpu: int | None = None,
                      window_s: float | None = None) -> MetricHistory | None:
        """A history window from the first source that serves them; None if none does."""
        source = self._history_provider()
        if source is None:
            return None
        return await source.history(node, metric, gpu=gpu, window_s=window_s)

    async def describe_pod(self, namespace: str, name: str) -> str | None:
        """The pod described by the first source that inspects pods; None if none does."""
        source = next((s for s in self.sources if isinstance(s, PodInspector)), None)
        return None if source is None else await source.describe_pod(namespace, name)

    async def pod_logs(self, namespace: str, name: str) -> str | None:
        """The pod's last log lines from the first source that inspects pods; None if none does."""
        source = next((s for s in self.sources if isinstance(s, PodInspector)), None)
        return None if source is None else await source.pod_logs(namespace, name)

    async def accounting(self, user: str | None, account: str | None) -> AccountingInfo | None:
        """Fair-share/QoS from the first :class:`AccountingProvider` source (a real Slurm one
        before the demo's); None when no source provides accounting."""
        providers = [s for s in self.sources if isinstance(s, AccountingProvider)]
        if not providers:
            return None
        first = min(providers, key=lambda s: s.kind != "slurm")  # min is stable: the first of a kind wins
        return await first.accounting(user=user, account=account)

    def run_plan(self, plan: ActionPlan, confirmation: str | bool, *,
                 progress: Progress | None = None) -> asyncio.Task[ActionResult]:
        """The port's name for :meth:`run_action`."""
        return self.run_action(plan, confirmation, progress=progress)

    def plan_action(self, kind: ActionKind, targets: Sequence[str], params: dict[str, str] | None) -> ActionPlan:
        """The executor's plan on the store's current snapshot."""
        return self.executor.plan(kind, targets, params, self.store.snapshot())

    def current_snapshot(self) -> ClusterSnapshot:
        return self.store.snapshot()

    @property
    def workflow(self) -> RuntimePort:
        """The workflows' port over this runtime."""
        return self.port

    @property
    def audit_log(self) -> AuditLog | None:
        """The executor's audit trail (None: none configured)."""
        return self.executor.audit


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
    runtime.notify_settings = config.notify
    runtime.notifier = Notifier(config.notify, cluster, runtime.clock)
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
