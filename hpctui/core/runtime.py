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
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from hpctui.actions.audit import AuditLog
from hpctui.actions.checks.backend import CheckBackend
from hpctui.actions.checks.ledger import CheckLedger
from hpctui.actions.checks.settings import HealthCheckSettings
from hpctui.actions.custom import CustomBackend
from hpctui.actions.executor import ActionExecutor, AuditExtra
from hpctui.actions.plans import ActionSettings
from hpctui.actions.shells import ShellSettings
from hpctui.core.config import AppConfig, default_state_dir, source_settings
from hpctui.core.frame import Frame
from hpctui.core.heatmap_settings import HeatmapSettings
from hpctui.core.logs import LogService
from hpctui.core.notify import Notice, Notifier, NotifySettings, WebhookSender
from hpctui.core.poller import Poller
from hpctui.core.ports import RuntimePort
from hpctui.core.store import NodeNameMap, Store
from hpctui.core.wall_settings import WallSettings
from hpctui.findings.correlate import workload_index
from hpctui.findings.health import Thresholds
from hpctui.findings.idle import IdleSettings, IdleTracker
from hpctui.findings.index import FindingsCache, FindingsIndex
from hpctui.model import ClusterSnapshot, Event
from hpctui.model.action import ActionKind, ActionPlan, ActionResult, Progress
from hpctui.model.scheduler import CTLD_PREFIX
from hpctui.sources.base import ActionBackend, Source
from hpctui.sources.capabilities import (
    AccountingProvider,
    CommandRunner,
    DetailFocus,
    HistoryProvider,
    JobOutlookProvider,
    PodInspector,
)
from hpctui.sources.registry import SourceContext, build_source

if TYPE_CHECKING:
    from hpctui.actions.audit import AuditLog
    from hpctui.actions.custom import CustomActionSettings
    from hpctui.core.series_history import SeriesHistory
    from hpctui.findings.nodehistory import Offender
    from hpctui.model.accounting import AccountingInfo
    from hpctui.model.checks import CheckResult, CriticalMark
    from hpctui.model.history import MetricHistory
    from hpctui.model.nodehistory import AcctQuery, AcctResult, NodeEvent, NodeRecord
    from hpctui.model.scheduler import JobOutlook


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
        self.idle = IdleTracker()  # idle allocated GPUs: remembers since when, across frames ([idle])
        self._frame: Frame | None = None
        self._frame_lock = threading.Lock()  # the poller's worker thread and the UI thread both ask
        self.poller = Poller(self.sources, self.store)
        self.poller.prepare = self._prepare  # findings once per change, in the data layer
        backends: list[ActionBackend] = [s for s in self.sources if isinstance(s, ActionBackend)]
        runners = [s for s in self.sources if isinstance(s, CommandRunner)]  # [[custom_actions]] run = "ssh"
        backends += [CustomBackend(lambda: self.custom_actions, remote=False),
                     CustomBackend(lambda: self.custom_actions, remote=True, runners=runners)]
        audit_file = audit_path or default_state_dir() / "audit.jsonl"
        self.health_settings = HealthCheckSettings()  # [health_checks]: the checks and the resume gate
        self.checks = CheckLedger(checks_path(audit_file.parent / "checks", cluster), clock=clock, read_only=read_only)
        self.checks_problem: str | None = None  # the last failure to keep the records (a full disk), shown
        check_runners: list[CommandRunner] = list(runners)
        if not check_runners and any(s.kind == "demo" for s in self.sources):  # the demo's nodes answer checks
            from hpctui.actions.checks.demo import DemoCheckRunner

            check_runners.append(DemoCheckRunner(self.store.snapshot, self.findings, lambda: self.health_settings))
        backends.append(CheckBackend(lambda: self.health_settings, lambda: self.checks, check_runners, clock))
        self.executor = ActionExecutor(backends, AuditLog(audit_file), cluster=cluster, read_only=read_only,
                                       clock=clock, settings=actions, findings=self.findings, checks=self.checks)
        self._actions: set[asyncio.Task[ActionResult]] = set()
        self.heatmap = HeatmapSettings()  # [heatmap] of the config: grouping, racks, palette
        # The first collect is CPU work in this process (a big demo cluster), not waiting on a
        # daemon: the UI draws its first frame before it starts (HpcApp.on_mount).
        self.first_collect_heavy = False
        self.secrets: tuple[str, ...] = ()  # config values (tokens, passwords, key paths) reports must redact
        self.custom_actions: tuple[CustomActionSettings, ...] = ()  # [[custom_actions]] (hpctui.actions.custom)
        self.mig_layouts: dict[str, Any] = {}  # named MIG layouts from config (the MIG wizard)
        self.wall_settings = WallSettings()  # the config's [wall] table (the --wall display)
        self.shells = ShellSettings()  # [shells], enabled as this cluster has it (hpctui.actions.shells)
        self.notify_settings = NotifySettings()  # [notify] of the config: who is told about new problems
        self.notifier = Notifier(self.notify_settings, cluster, clock)
        self._webhook: WebhookSender | None = None
        self.port = RuntimePort(self)  # what workflows (MIG wizard, custom actions) see of this runtime
        self.logs = LogService(lambda: self.sources, lambda: self.store)  # the UiPort's log reads (hpctui.core.logs)
        from hpctui.core.nodehistory import NodeHistoryService

        self.node_records = NodeHistoryService(self.sources, cluster=cluster, audit_records=self._audit_records,
                                               snapshot=self.store.snapshot, clock=clock)
        self.executor.history_advice = self.node_records.advice  # resume/uncordon previews warn from it
        self.node_records.extra_sources.append(self.check_events)  # the health checks in each node's history

    def set_idle_settings(self, settings: IdleSettings) -> None:
        """``[idle]`` of the config: the tracker's thresholds, and its notify commands as custom actions
        (:data:`~hpctui.findings.idle.NOTIFY_JOB_ACTION`, run from the idle view like any custom action)."""
        from hpctui.actions.custom import idle_notify_actions
        from hpctui.findings.idle import NOTIFY_JOB_ACTION, NOTIFY_POD_ACTION

        self.idle = IdleTracker(settings)
        extra = idle_notify_actions(settings)
        kept = tuple(a for a in self.custom_actions if a.name not in (NOTIFY_JOB_ACTION, NOTIFY_POD_ACTION))
        self.custom_actions = kept + tuple(extra)

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

    def _audit_records(self) -> list[dict[str, Any]]:
        """The audit trail's outcome records (blocking file I/O: a worker thread calls it)."""
        audit = self.executor.audit
        return [] if audit is None else audit.tail(intents=False).records

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
                findings, workload, idle = old.findings, old.workload, old.idle
            else:
                workload = workload_index(snapshot)
                idle = self.idle.update(snapshot, workload, self.clock())
                findings = self._findings.index(snapshot, self.thresholds).with_extra(idle.findings)
            frame = Frame(version=version, data_version=data_version, snapshot=snapshot, findings=findings,
                          workload=workload, idle=idle)
            self._frame = frame
            return frame

    def _prepare(self, snapshot: ClusterSnapshot) -> None:
        """The poller's hook after a change (in a thread for big clusters), before the UI hears
        of it: the new frame is built there, off the UI's event loop, and the critical findings the
        resume gate remembers are noted (written only when one is new)."""
        frame = self.frame()
        problem = self.checks.observe(frame.findings, self.health_settings)
        if problem:
            self.checks_problem = problem

    # -- health checks (hpctui.actions.checks) -------------------------------------------
    def check_history(self, node: str) -> list[CheckResult]:
        """Every kept check result of ``node``, newest first."""
        return self.checks.results(node)

    def check_events(self, nodes: str | None, start: float, end: float) -> list[NodeEvent]:
        """The kept health-check results of ``nodes`` (a hostlist; None: every node) in [start, end] as node
        history: a failure is a fault (``health``), a pass a ``check``; the summary is the reason."""
        from hpctui.model.hostlist import expand
        from hpctui.model.nodehistory import CHECKED, HEALTH, ORIGIN_CHECKS, NodeEvent

        names = expand(nodes) if nodes else self.checks.nodes()
        out = []
        for node in names:
            for r in self.checks.results(node):
                if start <= r.time <= end and r.status.value in ("passed", "failed"):
                    out.append(NodeEvent(node=node, kind=CHECKED if r.passed else HEALTH, time=r.time,
                                         origin=ORIGIN_CHECKS, reason=f"{r.check}: {r.summary}", user=r.user))
        return out

    def check_view(self, node: str) -> tuple[list[CheckResult], list[CriticalMark]]:
        """For a screen (never file I/O: empty until the poller's thread has read the records): the
        newest result of each check on ``node`` and the critical findings the gate holds it for."""
        if not self.checks.ready:
            return [], []
        return self.checks.latest(node), self.checks.blocking(node, self.health_settings)

    def check_choices(self) -> list[tuple[str, str]]:
        """(check id, title) of every check the config offers, for the picker."""
        s = self.health_settings
        return [(c, s.title(c)) for c in s.check_ids()]

    def drain_offers(self, result: ActionResult) -> list[tuple[str, str]]:
        """What a finished ``check`` action offers: (nodes, reason) drains of its failed nodes."""
        from hpctui.actions.checks.offer import drain_offers

        return drain_offers(self.checks, result)

    def check_marks(self, node: str) -> list[CriticalMark]:
        """The critical findings the resume gate remembers for ``node`` that no passing check followed."""
        return self.checks.blocking(node, self.health_settings)

    def set_health_checks(self, settings: HealthCheckSettings, directory: Path | None = None) -> None:
        """Use the config's ``[health_checks]`` (and ``checks_dir``): the checks, the gate, the records' place."""
        self.health_settings = settings
        self.executor.health = settings
        if directory is not None:
            self.checks = CheckLedger(checks_path(directory, self.cluster), keep_per_node=settings.keep_per_node,
                                      clock=self.clock, read_only=self.read_only)
            self.executor.checks = self.checks
        else:
            self.checks.keep_per_node = settings.keep_per_node

    def subscribe(self, socket_path: Path) -> None:
        """Take the data from the collector on ``socket_path`` (``hpctui serve``'s, one for every
        session: :mod:`hpctui.core.collector_hub`) instead of polling the sources: they stay built,
        for actions and on-demand reads, but :meth:`start` polls none of them."""
        from hpctui.core.collector_hub import CollectorFeed

        self.poller.feed = CollectorFeed(socket_path, cluster=self.cluster, clock=self.clock)

    @property
    def subscribed(self) -> bool:
        """The data comes from a collector (:meth:`subscribe`), not from this process's polls."""
        return self.poller.feed is not None

    def start(self, on_change: Callable[[], None] | None = None, after: asyncio.Event | None = None) -> None:
        self.poller.on_change = on_change
        self.poller.start(after)
        if not (self.subscribed and self.read_only):  # the advice cache serves actions only: one reader less
            self.node_records.start()

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
        await self.node_records.stop()
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
        """Record ``node``'s per-GPU and per-port rings from now on (big clusters: what was looked at), and
        have the sources that sum healthy nodes up read it in full (:class:`DetailFocus`)."""
        self.store.series.watch(node)
        for source in self.sources:
            if isinstance(source, DetailFocus):
                source.want_detail(node)

    def node_history(self, key: str) -> list[tuple[float, float]]:
        """The store's short (time, value) history of one key ("gpu01/util"); "ctld:…" keys from its
        longer controller history."""
        if key.startswith(CTLD_PREFIX):
            return self.store.ctld_history.get(key)
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

    # -- what the cluster remembers (hpctui.core.nodehistory) ---------------------------------
    async def node_record(self, node: str, window_s: float) -> NodeRecord:
        """``node``'s merged history and the jobs that died there over the last ``window_s``."""
        return await self.node_records.record(node, window_s)

    async def offenders(self, window_s: float, kind: str | None = None) -> tuple[list[Offender], list[str], list[str]]:
        """The repeat-offender ranking of the last ``window_s`` (of one event ``kind``), problems, commands."""
        return await self.node_records.offenders(window_s, kind)

    async def acct_jobs(self, query: AcctQuery) -> AcctResult | None:
        """``sacct`` rows for ``query`` from the accounting source; None when no source has accounting."""
        provider = self.node_records.provider
        return None if provider is None else await provider.acct_jobs(query)

    async def gpu_usage(self, start: float, end: float, account: str | None = None,
                        user: str | None = None) -> AcctResult | None:
        """GPU-hours per account/user (``sreport``); None when no source has accounting."""
        provider = self.node_records.provider
        return None if provider is None else await provider.gpu_usage(start, end, account, user)

    async def job_outlook(self, job_id: str) -> JobOutlook | None:
        """Priority factors and expected start of one job from the first :class:`JobOutlookProvider`
        (a real Slurm source before the demo's); None when no source provides them."""
        providers = [s for s in self.sources if isinstance(s, JobOutlookProvider)]
        if not providers:
            return None
        first = min(providers, key=lambda s: s.kind != "slurm")
        return await first.job_outlook(job_id)

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
    context = SourceContext(cluster=cluster, name_map=name_map, thresholds=config.thresholds, idle=config.idle)
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
    runtime.shells = config.shells if cc.shells is None else msgspec.structs.replace(config.shells, enabled=cc.shells)
    runtime.notify_settings = config.notify
    runtime.notifier = Notifier(config.notify, cluster, runtime.clock)
    runtime.set_health_checks(config.health_checks,
                              Path(config.checks_dir).expanduser() if config.checks_dir else None)
    runtime.set_idle_settings(config.idle)
    return runtime


def checks_path(directory: Path, cluster: str) -> Path:
    """The cluster's health-check record file in ``directory`` (the name made file-safe)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", cluster).lstrip(".") or "cluster"
    return directory / f"{safe}.json"


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
    # the demo's idle 8-GPU job was idle before hpctui started: shown at once (a real cluster waits after_s)
    runtime.set_idle_settings(IdleSettings(after_s=0.0))
    return runtime
