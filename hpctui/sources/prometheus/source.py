"""PrometheusSource: GPUs (dcgm-exporter), IB ports, mounts and node resources
(node_exporter) of every node from a few batched queries per refresh.

- One query per metric family (gauge families of one exporter may share one query),
  never one per node; at most ``max_parallel_queries`` in flight; each answer is decoded
  and folded in a worker thread, so the event loop only waits on sockets.
- A node gone from Prometheus keeps its last values for ``keep_stale_s`` with the time of
  its newest sample (the node panel shows the age; older than scrape interval × 3 = stale),
  then has no data at all (N/A, never zeros). A node still answered with samples older than
  that (VictoriaMetrics answers a vanished series with its last sample for its whole lookback;
  Prometheus drops it at the staleness marker) is treated the same: the engine decides nothing.
- ``DCGM_FI_DEV_XID_ERRORS`` holds the *last* Xid: an event is emitted when it changes.
- Some queries failing is a warning on the status line; all failing is an error (the
  poller backs off and the next success clears it).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

import msgspec

from hpctui.findings.health import Thresholds
from hpctui.findings.idle import IdleSettings
from hpctui.model import (
    ClusterSnapshot,
    Event,
    Gpu,
    GpuSummary,
    IbPort,
    Mount,
    NodeResources,
    SourceResult,
    xid_severity,
)
from hpctui.model.gpu import XID_MEANING
from hpctui.model.history import MetricHistory
from hpctui.model.names import NodeNameMap
from hpctui.sources.prometheus.aggregate import (
    CLUSTER_WIDE,
    SummaryFold,
    cluster_families,
    idle_candidates,
    idle_families,
    needs_detail_expr,
    node_count_expr,
    restricted_families,
    restriction,
    summary_families,
)
from hpctui.sources.prometheus.client import PromClient, PromError, QueryResult, number
from hpctui.sources.prometheus.parse import Collector, NodeNamer
from hpctui.sources.prometheus.queries import HISTORY_METRICS, Family, families, history_expr, identity_family
from hpctui.sources.prometheus.settings import PrometheusSettings

PARTS = ("gpus", "ib", "mounts", "resources")
PRESENT_EVERY = 12  # aggregate: refreshes between two asks of which sparse families exist (1 min at 5 s)


class _Rounds:
    """Runs lists of families against the engine for one refresh: at most ``parallel`` in flight,
    each answer decoded (typed) and folded in a worker thread, one at a time."""

    def __init__(self, client: PromClient, t: float, parallel: int, collector: Collector) -> None:
        self.client, self.t, self.collector = client, t, collector
        self.gate = asyncio.Semaphore(parallel)
        self.lock = threading.Lock()
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def _fold(self, family: Family, body: bytes, summary: SummaryFold | None) -> QueryResult:
        # one answer decoded at a time: msgspec holds the GIL, so parallel decodes would
        # gain nothing and only multiply the memory of decoded answers in flight
        with self.lock:
            result = self.client.decode(body)
            if family.target == "gsum" and summary is not None:
                summary.summary(family.field, result.samples)
            elif family.target == "needs_detail" and summary is not None:
                summary.needs_detail(result.samples)
            else:
                if summary is not None and family.target in ("gpu_time", "node_time"):
                    summary.times(family.target == "gpu_time", result.samples)
                self.collector.add(family.target, family.field, result.samples)
        return result

    async def _one(self, family: Family, summary: SummaryFold | None) -> None:
        try:
            async with self.gate:
                body = await self.client.query_raw(family.expr, at=self.t)
            result = await asyncio.to_thread(self._fold, family, body, summary)
        except PromError as exc:
            self.errors.append(str(exc))
            return
        self.warnings.extend(w for w in result.warnings if w not in self.warnings)

    async def ask(self, families: list[Family], summary: SummaryFold | None = None) -> None:
        await asyncio.gather(*(self._one(f, summary) for f in families))


class PrometheusSource:
    kind = "prometheus"

    def __init__(self, settings: PrometheusSettings, name_map: NodeNameMap | None = None,
                 clock: Callable[[], float] = time.time, thresholds: Thresholds | None = None,
                 idle: IdleSettings | None = None,
                 snapshot: Callable[[], ClusterSnapshot | None] | None = None) -> None:
        self.settings = settings
        self.name = settings.name
        self.interval_s = settings.interval_s
        self.timeout_s = settings.timeout_s
        self.clock = clock
        self.client = PromClient(settings)
        self.families: list[Family] = families(settings)
        self.namer = NodeNamer(settings.node_labels, settings.node_pattern, settings.node_replace,
                               name_map.to_slurm if name_map is not None else None)
        self._kept: dict[str, dict[str, object]] = {p: {} for p in PARTS}
        self._kept_times: dict[str, float] = {}
        self._xid: dict[tuple[str, str], int] = {}
        self.last_query_s: float | None = None  # wall time of the last refresh's HTTP + decode
        self.thresholds = thresholds or Thresholds()  # the health rules' (aggregate: which nodes need detail)
        self.idle = idle or IdleSettings()  # [idle]: the idle rules' (aggregate: the same)
        self.snapshot = snapshot  # the other sources' view (aggregate: who holds which GPUs, for the idle rules)
        self._focus: OrderedDict[str, None] = OrderedDict()  # nodes looked at, most recent last (want_detail)
        self._detail_settings = settings  # the follow-up's selector (aggregate: the detail nodes')
        self.last_detail: list[str] = []  # the nodes the last refresh read in full
        self._nodes_seen: int | None = None  # nodes of the last refresh (detail = "auto")
        self._present: set[str] | None = None  # aggregate: the sparse families the exporters have (asked every
        self._present_age = 0  # PRESENT_EVERY refreshes)

    async def close(self) -> None:
        await self.client.close()

    # -- one refresh -------------------------------------------------------------------
    async def collect(self) -> SourceResult:
        try:
            return await asyncio.wait_for(self._collect(), timeout=self.settings.timeout_s)
        except TimeoutError:
            raise PromError(f"no complete answer from {self.client.where} within {self.settings.timeout_s:g} s") from None

    async def _collect(self) -> SourceResult:
        t = self.clock()
        started = time.monotonic()
        self.namer.trim()
        collector = Collector(self.namer, self.settings.exporter_pod_pattern)
        rounds = _Rounds(self.client, t, self.settings.max_parallel_queries, collector)
        summaries: dict[str, GpuSummary] | None = None
        if await self._mode(t) == "aggregate":
            asked, summaries = await self._aggregate(rounds, collector)
        else:
            asked = len(self.families)
            await rounds.ask(self.families)
        if rounds.errors and len(rounds.errors) == asked:
            raise PromError(rounds.errors[0])
        followup = await asyncio.to_thread(collector.followup_metrics) if self.settings.gpus else []
        if followup:  # GPUs without identity or sample time (a trimmed counters file): one more query
            await rounds.ask([identity_family(self._detail_settings, followup)])
        self.last_query_s = time.monotonic() - started
        built = await asyncio.to_thread(self._build, collector)
        if summaries is not None:
            built["gpu_summaries"] = dict(summaries)
        self.last_detail = sorted(n for part in ("gpus", "ib", "mounts", "resources") for n in built.get(part, {}))
        result = self._result(t, built, collector, rounds.errors, rounds.warnings, asked)
        self._nodes_seen = len(result.node_times or ())
        return result

    async def _mode(self, t: float) -> str:
        """The ``detail`` of this refresh: ``auto`` is ``aggregate`` above ``aggregate_above_nodes``
        nodes (the previous refresh's count; before the first, one query counts them)."""
        s = self.settings
        if s.detail != "auto":
            return s.detail
        if self._nodes_seen is None:
            answer = await self.client.query(node_count_expr(s), at=t)  # PromError: this refresh fails, saying why
            try:
                self._nodes_seen = round(float(answer.samples[0].value[1]))  # type: ignore[index]
            except (IndexError, TypeError, ValueError, OverflowError):
                self._nodes_seen = 0  # no answer to count: series, as before there was a choice
        return "aggregate" if self._nodes_seen > s.aggregate_above_nodes else "series"

    # -- detail = "aggregate" --------------------------------------------------------
    def want_detail(self, node: str) -> None:
        """:class:`~hpctui.sources.capabilities.DetailFocus`: read ``node`` in full from the next refresh
        on (the ``detail_nodes`` most recent ones are kept)."""
        self._focus[node] = None
        self._focus.move_to_end(node)
        while len(self._focus) > self.settings.detail_nodes:
            self._focus.popitem(last=False)

    async def _aggregate(self, rounds: _Rounds, collector: Collector) -> tuple[int, dict[str, GpuSummary]]:
        """Round 1: per-node summaries, sample times and the nodes that need detail, for the whole
        cluster; round 2: the ``series`` families of those nodes and the looked-at ones (or of all
        nodes, when more than ``max_detail_nodes`` need it). Returns (queries asked, summaries)."""
        s = self.settings
        fold = SummaryFold(self.namer)
        snap = self.snapshot() if self.snapshot is not None else None
        scheduled = snap is not None and bool(snap.jobs or snap.pods) and self.idle.enabled
        cluster = cluster_families(s)
        # which sparse families exist changes with an exporter's configuration, not per refresh, and
        # "count by (__name__)" over every GPU's counters is the engine's dearest query of this mode
        if self._present is not None and self._present_age < PRESENT_EVERY:
            cluster = [f for f in cluster if f.target != "present"]
            collector.present.update(self._present)
            self._present_age += 1
        else:
            self._present_age = 0
        first = [*summary_families(s), *cluster, *(idle_families(s, self.idle) if scheduled else ())]
        sick = Family("needs_detail", "", needs_detail_expr(s, self.thresholds))
        await rounds.ask([*first, sick], fold)
        wanted = fold.sick | set(self._focus) | idle_candidates(fold.values, snap if scheduled else None, self.idle)
        self._detail_settings = s
        if len(wanted) > s.max_detail_nodes:
            detail = [f for f in self.families if f.target not in CLUSTER_WIDE]
        else:
            gpu_tuples = [t for n in wanted for t in fold.gpu_tuples.get(n, ())]
            node_tuples = [t for n in wanted for t in fold.node_tuples.get(n, ())]
            detail = restricted_families(s, gpu_tuples, node_tuples)
            restrict = restriction(s.node_labels, gpu_tuples)
            if len(restrict) == 1:  # the follow-up (identity) of these nodes only
                self._detail_settings = msgspec.structs.replace(
                    s, dcgm_selector=",".join(p for p in (s.dcgm_selector, restrict[0]) if p))
        await rounds.ask(detail)
        window = max(s.keep_stale_s, s.stale_after_s)
        gpu_live = {n for n, nt in collector.gpu_time.items() if rounds.t - nt <= window}
        live = gpu_live | {n for n, nt in collector.node_time.items() if rounds.t - nt <= window}
        for key in [k for k in self._xid if k[0] not in wanted]:  # its Xid gauge reads 0 (else it needs detail)
            del self._xid[key]
        if self._present_age == 0:
            self._present = None if rounds.errors else set(collector.present)  # a failed refresh: ask again
        return len(first) + 1 + len(detail), fold.build(live, gpu_live)

    def _build(self, c: Collector) -> dict[str, dict[str, object]]:
        s = self.settings
        out: dict[str, dict[str, object]] = {}
        if s.gpus:
            out["gpus"] = dict(c.build_gpus())
        if s.ib:
            out["ib"] = dict(c.build_ib())
        if s.mounts:
            out["mounts"] = dict(c.build_mounts(s.mounts))
        if s.resources:
            out["resources"] = dict(c.build_resources())
        return out

    def _result(self, t: float, built: dict[str, dict[str, object]], c: Collector, errors: list[str],
                warnings: list[str], asked: int) -> SourceResult:
        s = self.settings
        fresh_times = c.node_times()
        too_old = self._drop_old(t, built, c)
        events = self._xid_events(t, built.get("gpus", {}))
        node_times: dict[str, float] = {}
        for view in built.values():
            for node in view:
                node_times[node] = fresh_times.get(node, t)
        kept = 0
        summed = built.get("gpu_summaries", {})  # aggregate: nodes answered this time, read in full or not
        for part, view in built.items():  # carry nodes that vanished, with their old sample time
            for node, value in self._kept.setdefault(part, {}).items():
                if node in summed and part != "gpu_summaries":
                    continue  # still there, only not read in full this time (healthy, not looked at)
                if node not in view and node not in too_old.get(part, ()) and t - self._kept_times.get(node, t) <= s.keep_stale_s:
                    view[node] = value
                    node_times.setdefault(node, self._kept_times.get(node, t))
                    kept += 1
            self._kept[part] = dict(view)
        self._kept_times = node_times
        stale = sum(1 for nt in node_times.values() if t - nt > s.stale_after_s)
        notes = list(c.warnings())
        if errors:
            notes.insert(0, f"{len(errors)} of {asked} queries failed: {errors[0]}")
        if stale:
            notes.append(f"{stale} node(s) stale: no sample for over {s.stale_after_s:g} s")
        if c.not_numbers:
            notes.append(f"{c.not_numbers} NaN/Inf values shown as N/A")
        notes.extend(f"prometheus: {w}" for w in warnings)
        return SourceResult(
            source=self.name, time=t,
            gpus=built.get("gpus"),  # type: ignore[arg-type]
            gpu_summaries=built.get("gpu_summaries"),  # type: ignore[arg-type]
            ib=built.get("ib"),  # type: ignore[arg-type]
            mounts=built.get("mounts"),  # type: ignore[arg-type]
            resources=built.get("resources"),  # type: ignore[arg-type]
            events=tuple(events), warnings=tuple(notes), node_times=node_times, stale_after_s=s.stale_after_s,
        )

    def _drop_old(self, t: float, built: dict[str, dict[str, object]], c: Collector) -> dict[str, set[str]]:
        """Remove from each part the nodes whose newest sample of that part's exporter is older
        than the keep window (``max(keep_stale_s, stale_after_s)``): answered, but as gone as a
        node the engine no longer answers for (and not carried as kept either). Returns them by part."""
        window = max(self.settings.keep_stale_s, self.settings.stale_after_s)
        dropped: dict[str, set[str]] = {}
        for part, view in built.items():
            if part == "gpu_summaries":
                continue  # built from the live nodes only (SummaryFold.build)
            times = c.gpu_time if part == "gpus" else c.node_time
            for node in [n for n, nt in times.items() if n in view and t - nt > window]:
                del view[node]
                dropped.setdefault(part, set()).add(node)
        return dropped

    def _xid_events(self, t: float, gpus: dict[str, object]) -> list[Event]:
        """An event when a GPU's last-Xid gauge changes to a non-zero value (once per change)."""
        events = []
        for node, node_gpus in gpus.items():
            assert isinstance(node_gpus, tuple)
            for gpu in node_gpus:
                assert isinstance(gpu, Gpu)
                key = (node, gpu.uuid or str(gpu.index))
                xid = gpu.last_xid or 0
                if xid and self._xid.get(key) != xid:
                    meaning = XID_MEANING.get(xid, "see NVIDIA Xid catalog")
                    events.append(Event(time=t, source="gpu", object=f"gpu/{node}/{gpu.index}",
                                        severity=xid_severity(xid),
                                        message=f"Xid {xid}: {meaning} (DCGM_FI_DEV_XID_ERRORS)"))
                self._xid[key] = xid
        return events

    # -- history for the node panel ------------------------------------------------------
    async def history(self, node: str, metric: str = "util", gpu: int | None = None,
                      window_s: float | None = None, points: int = 120) -> MetricHistory:
        """A range query over the node's (or one GPU's) series; empty points = no data."""
        end = self.clock()
        window = window_s or self.settings.history_window_s
        step = max(1.0, round(window / points))
        hist = MetricHistory(node=node, metric=metric, gpu=gpu, start=end - window, end=end, step_s=step,
                             source=self.name)
        origin = self.namer.origin.get(node, {})
        label = next((lb for lb in self.settings.node_labels if lb in origin), None)
        prom_metric = HISTORY_METRICS.get(metric)
        if label is None or prom_metric is None:
            return hist
        expr = history_expr(prom_metric, label, origin[label], gpu, self.settings.dcgm_selector)
        result = await self.client.query_range(expr, end - window, end, step)
        for sample in result.samples[:1]:
            for ts, text in sample.values or ():
                v = number(text)
                if v is not None:
                    hist.points.append((float(ts), v))
        return hist


__all__ = ["IbPort", "MetricHistory", "Mount", "NodeResources", "PrometheusSource"]
