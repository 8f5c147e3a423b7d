"""The core's ports: what the layers above may ask of a running cluster.

:class:`UiPort` is the UI's; :class:`RuntimePort` implements the workflows' :class:`~hpctui.actions.ports.WorkflowPort`.

Screens and widgets draw :class:`~hpctui.core.frame.Frame` objects pushed down to them and send
their few requests through :class:`UiPort` — a history window, a pod's description or logs,
accounting, running a plan, watching a node's history series. They never hold the
:class:`~hpctui.core.runtime.Runtime`, a source or the store (the "ui-through-ports" import
contract in pyproject.toml keeps it so); the runtime implements the port.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from hpctui.actions.audit import AuditLog
    from hpctui.actions.custom import CustomActionSettings
    from hpctui.actions.executor import AuditExtra
    from hpctui.actions.ports import WorkflowPort
    from hpctui.actions.shells import ShellSettings
    from hpctui.core.frame import Frame
    from hpctui.core.heatmap_settings import HeatmapSettings
    from hpctui.core.logs import LogService
    from hpctui.core.runtime import Runtime
    from hpctui.core.series_history import NodeRings, Series
    from hpctui.core.wall_settings import WallSettings
    from hpctui.findings.health import Thresholds
    from hpctui.findings.nodehistory import Offender
    from hpctui.model import ClusterSnapshot, Event
    from hpctui.model.accounting import AccountingInfo
    from hpctui.model.action import ActionKind, ActionPlan, ActionResult, Progress, TargetResult
    from hpctui.model.checks import CheckResult, CriticalMark
    from hpctui.model.history import MetricHistory
    from hpctui.model.mig_layouts import MigLayoutSpec
    from hpctui.model.nodehistory import AcctQuery, AcctResult, NodeRecord
    from hpctui.model.scheduler import JobOutlook
    from hpctui.sources.base import ActionBackend


class SeriesReader(Protocol):
    """Read access to the in-memory per-GPU and per-port history rings (the charts)."""

    def node(self, node: str) -> NodeRings | None:
        """The node's rings, or None while nothing is recorded for it."""
        ...

    def gpu_series(self, node: str, metric: str, window_s: float, now: float) -> list[Series]:
        """One series per GPU of ``node`` for ``metric`` over the last ``window_s``."""
        ...

    def port_series(self, node: str, metric: str, window_s: float, now: float) -> list[Series]:
        """One series per IB port of ``node`` for ``metric`` over the last ``window_s``."""
        ...


class UiPort(Protocol):
    """What a screen or widget may read of, and ask of, the running cluster.

    Reads are cheap and never block; the ``async`` requests may take a while (a range query, a
    Kubernetes call) and never raise for "no source can": they answer None then. Failures of a
    source that can (a timeout, an HTTP error) do raise, for the screen to show.
    """

    cluster: str
    thresholds: Thresholds
    read_only: bool
    heatmap: HeatmapSettings  # the config's [heatmap]: grouping, racks, palette
    wall_settings: WallSettings  # the config's [wall]
    clock: Callable[[], float]  # "now" for ages and countdowns (frozen in tests and screenshots)
    logs: LogService  # job output, node journals, pod logs, Loki (hpctui.core.logs): all async, bounded, sanitised

    def frame(self) -> Frame:
        """The frame of the store's current version (built once per version, then shared)."""
        ...

    def poll_intervals(self) -> Mapping[str, float]:
        """Each source's poll interval in seconds, by source name."""
        ...

    # -- history ------------------------------------------------------------------------
    @property
    def series(self) -> SeriesReader:
        """The in-memory history rings (read only: :meth:`watch_series` chooses what they record)."""
        ...

    def watch_series(self, node: str) -> None:
        """Record ``node``'s per-GPU and per-port history from now on (a big cluster records only
        the nodes someone looked at)."""
        ...

    def node_history(self, key: str) -> list[tuple[float, float]]:
        """The store's short (time, value) history of one key ("gpu01/util"), oldest first."""
        ...

    @property
    def history_source(self) -> str | None:
        """The name of the source that serves history windows (a range query), or None."""
        ...

    async def history(self, node: str, metric: str = "util", gpu: int | None = None,
                      window_s: float | None = None) -> MetricHistory | None:
        """A history window of ``node`` (one GPU's with ``gpu``) from that source; None if none."""
        ...

    # -- one object on demand -----------------------------------------------------------
    async def describe_pod(self, namespace: str, name: str) -> str | None:
        """A sanitised description of one pod (object and events); None if no source can."""
        ...

    async def pod_logs(self, namespace: str, name: str) -> str | None:
        """The pod's last log lines, sanitised; None if no source can."""
        ...

    async def accounting(self, user: str | None, account: str | None) -> AccountingInfo | None:
        """Fair-share and QoS of a user/account (Slurm accounting); None if no source can."""
        ...

    # -- what the cluster remembers (slurmdbd, the audit log, the timeline) ------------------
    async def node_record(self, node: str, window_s: float) -> NodeRecord:
        """A node's merged history (drains, downs, resumes, cordons) and the jobs that died there."""
        ...

    async def offenders(self, window_s: float, kind: str | None = None) -> tuple[list[Offender], list[str], list[str]]:
        """Nodes by fault events over the window, most first; what could not be read; commands run."""
        ...

    async def acct_jobs(self, query: AcctQuery) -> AcctResult | None:
        """Finished jobs (``sacct``) for a bounded query; None if no source has accounting."""
        ...

    async def gpu_usage(self, start: float, end: float, account: str | None = None,
                        user: str | None = None) -> AcctResult | None:
        """GPU-hours per account and user (``sreport``); None if no source has accounting."""
        ...

    async def job_outlook(self, job_id: str) -> JobOutlook | None:
        """A job's priority factors and expected start (sprio, squeue --start); None if no source can."""
        ...

    # -- actions and their trail --------------------------------------------------------
    def plan_action(self, kind: ActionKind, targets: Sequence[str], params: dict[str, str] | None) -> ActionPlan:
        """The executor's plan of an action on the current data (validated, with its preview); runs nothing."""
        ...

    def current_snapshot(self) -> ClusterSnapshot:
        """The store's current snapshot (for a dialog that plans against the newest data)."""
        ...

    def refresh_now(self) -> None:
        """Poll every source now (after an action, so its effect shows at once)."""
        ...

    @property
    def workflow(self) -> WorkflowPort:
        """What a multi-step workflow (the MIG wizard) drives the cluster through."""
        ...

    def run_plan(self, plan: ActionPlan, confirmation: str | bool, *,
                 progress: Progress | None = None) -> asyncio.Task[ActionResult]:
        """Run a previewed plan as a task the runtime owns (closing a screen cannot cancel it);
        ``progress`` hears what the backend does while it runs."""
        ...

    @property
    def audit_log(self) -> AuditLog | None:
        """The audit trail actions are written to (None: none configured)."""
        ...

    def audit_history(self, limit: int = 200) -> list[Event]:
        """Earlier actions on this cluster as events; blocking file I/O (call it in a thread)."""
        ...

    # -- health checks (hpctui.actions.checks) ---------------------------------------------
    def check_view(self, node: str) -> tuple[list[CheckResult], list[CriticalMark]]:
        """The newest result of each check on ``node`` and what the resume gate holds it for; no I/O."""
        ...

    def check_choices(self) -> list[tuple[str, str]]:
        """(check id, title) of every check the config offers."""
        ...

    def drain_offers(self, result: ActionResult) -> list[tuple[str, str]]:
        """(nodes, reason) drains a finished check offers for its failed nodes."""
        ...


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
    def shells(self) -> ShellSettings:
        return self._rt.shells

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
