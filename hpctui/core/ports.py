"""The UI port: the few things screens and widgets may ask of a running cluster.

Screens and widgets draw :class:`~hpctui.core.frame.Frame` objects pushed down to them and send
their few requests through :class:`UiPort` — a history window, a pod's description or logs,
accounting, running a plan, watching a node's history series. They never hold the
:class:`~hpctui.core.runtime.Runtime`, a source or the store (the "ui-through-ports" import
contract in pyproject.toml keeps it so); the runtime implements the port.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from hpctui.actions.audit import AuditLog
    from hpctui.core.frame import Frame
    from hpctui.core.heatmap_settings import HeatmapSettings
    from hpctui.core.series_history import NodeRings, Series
    from hpctui.core.wall_settings import WallSettings
    from hpctui.findings.health import Thresholds
    from hpctui.model import Event
    from hpctui.model.accounting import AccountingInfo
    from hpctui.model.action import ActionPlan, ActionResult
    from hpctui.model.history import MetricHistory


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

    # -- actions and their trail --------------------------------------------------------
    def run_plan(self, plan: ActionPlan, confirmation: str | bool) -> asyncio.Task[ActionResult]:
        """Run a previewed plan as a task the runtime owns (closing a screen cannot cancel it)."""
        ...

    @property
    def audit_log(self) -> AuditLog | None:
        """The audit trail actions are written to (None: none configured)."""
        ...

    def audit_history(self, limit: int = 200) -> list[Event]:
        """Earlier actions on this cluster as events; blocking file I/O (call it in a thread)."""
        ...
