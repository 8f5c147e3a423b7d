"""PrometheusSource: GPUs (dcgm-exporter), IB ports, mounts and node resources
(node_exporter) of every node from a few batched queries per refresh.

- One query per metric family (gauge families of one exporter may share one query),
  never one per node; at most ``max_parallel_queries`` in flight; each answer is decoded
  and folded in a worker thread, so the event loop only waits on sockets.
- A node gone from Prometheus keeps its last values for ``keep_stale_s`` with the time of
  its newest sample (the node panel shows the age; older than scrape interval × 3 = stale),
  then has no data at all (N/A, never zeros).
- ``DCGM_FI_DEV_XID_ERRORS`` holds the *last* Xid: an event is emitted when it changes.
- Some queries failing is a warning on the status line; all failing is an error (the
  poller backs off and the next success clears it).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

from hpctui.model import Event, Gpu, IbPort, Mount, NodeResources, SourceResult, xid_severity
from hpctui.model.gpu import XID_MEANING
from hpctui.model.history import MetricHistory
from hpctui.model.names import NodeNameMap
from hpctui.sources.prometheus.client import PromClient, PromError, QueryResult, number
from hpctui.sources.prometheus.parse import Collector, NodeNamer
from hpctui.sources.prometheus.queries import HISTORY_METRICS, Family, families, history_expr, identity_family
from hpctui.sources.prometheus.settings import PrometheusSettings

PARTS = ("gpus", "ib", "mounts", "resources")


class PrometheusSource:
    kind = "prometheus"

    def __init__(self, settings: PrometheusSettings, name_map: NodeNameMap | None = None,
                 clock: Callable[[], float] = time.time) -> None:
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
        lock = threading.Lock()
        gate = asyncio.Semaphore(self.settings.max_parallel_queries)
        errors: list[str] = []
        warnings: list[str] = []

        def fold(family: Family, body: bytes) -> QueryResult:
            # one answer decoded at a time: msgspec holds the GIL, so parallel decodes would
            # gain nothing and only multiply the memory of decoded answers in flight
            with lock:
                result = self.client.decode(body)
                collector.add(family.target, family.field, result.samples)
            return result

        async def one(family: Family) -> None:
            try:
                async with gate:
                    body = await self.client.query_raw(family.expr, at=t)
                result = await asyncio.to_thread(fold, family, body)
            except PromError as exc:
                errors.append(str(exc))
                return
            warnings.extend(w for w in result.warnings if w not in warnings)

        await asyncio.gather(*(one(f) for f in self.families))
        if errors and len(errors) == len(self.families):
            raise PromError(errors[0])
        followup = await asyncio.to_thread(collector.followup_metrics) if self.settings.gpus else []
        if followup:  # GPUs without identity or sample time (a trimmed counters file): one more query
            await one(identity_family(self.settings, followup))
        self.last_query_s = time.monotonic() - started
        built = await asyncio.to_thread(self._build, collector)
        return self._result(t, built, collector, errors, warnings)

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
                warnings: list[str]) -> SourceResult:
        s = self.settings
        fresh_times = c.node_times()
        events = self._xid_events(t, built.get("gpus", {}))
        node_times: dict[str, float] = {}
        for view in built.values():
            for node in view:
                node_times[node] = fresh_times.get(node, t)
        kept = 0
        for part, view in built.items():  # carry nodes that vanished, with their old sample time
            for node, value in self._kept[part].items():
                if node not in view and t - self._kept_times.get(node, t) <= s.keep_stale_s:
                    view[node] = value
                    node_times.setdefault(node, self._kept_times.get(node, t))
                    kept += 1
            self._kept[part] = dict(view)
        self._kept_times = node_times
        stale = sum(1 for nt in node_times.values() if t - nt > s.stale_after_s)
        notes = list(c.warnings())
        if errors:
            notes.insert(0, f"{len(errors)} of {len(self.families)} queries failed: {errors[0]}")
        if stale:
            notes.append(f"{stale} node(s) stale: no sample for over {s.stale_after_s:g} s")
        if c.not_numbers:
            notes.append(f"{c.not_numbers} NaN/Inf values shown as N/A")
        notes.extend(f"prometheus: {w}" for w in warnings)
        return SourceResult(
            source=self.name, time=t,
            gpus=built.get("gpus"),  # type: ignore[arg-type]
            ib=built.get("ib"),  # type: ignore[arg-type]
            mounts=built.get("mounts"),  # type: ignore[arg-type]
            resources=built.get("resources"),  # type: ignore[arg-type]
            events=tuple(events), warnings=tuple(notes), node_times=node_times, stale_after_s=s.stale_after_s,
        )

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
