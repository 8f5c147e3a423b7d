"""Per-GPU and per-IB-port history for the chart screen, in fixed-size rings.

Two tiers per node: a *fine* ring that keeps every sample (5 minutes at a 2 s poll) and a
*coarse* ring that keeps one sample per ``coarse_step_s`` (1 hour at 30 s). Values are
``array('f')`` rows (one float32 per series), times ``array('d')``; nothing grows with time.

A cluster of 16k nodes × 8 GPUs cannot keep an hour of every GPU at full rate (gigabytes),
so rings exist for at most ``max_nodes`` nodes: every node while the cluster is smaller,
else the nodes someone looked at (:meth:`NodeRings.watch`, least recently used dropped).
The byte bound is ``max_nodes × bytes_per_node`` (see :meth:`SeriesHistory.bound_bytes`).
"""

from __future__ import annotations

import math
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from hpctui.model import Gpu, IbPort
from hpctui.model.ib import LINK_ERROR_COUNTERS
from hpctui.model.validate import COUNTER_LIMIT

GPU_METRICS = ("util", "temp", "power", "mem")  # %, °C, W, GiB used
GPU_UNITS = {"util": "%", "temp": "°C", "power": "W", "mem": "GiB"}
GPU_TITLES = {"util": "GPU utilization", "temp": "GPU temperature", "power": "GPU power", "mem": "GPU memory used"}
IB_METRICS = ("rx", "tx", "err")  # Gb/s received, Gb/s sent, link-error counter increase per sample
IB_UNITS = {"rx": "Gb/s", "tx": "Gb/s", "err": "errors"}
NAN = math.nan
MAX_SERIES_PER_NODE = 64  # 8 GPUs × 4 metrics + 8 ports × 3 = 56: more than that is not a GPU node


class Ring:
    """A fixed-capacity ring of (time, row of ``width`` floats); NaN means "not available"."""

    __slots__ = ("capacity", "count", "times", "values", "width")

    def __init__(self, capacity: int, width: int) -> None:
        self.capacity = capacity
        self.width = width
        self.count = 0
        self.times = array("d", bytes(8 * capacity))
        self.values = array("f", bytes(4 * capacity * width))

    def add(self, t: float, row: Sequence[float]) -> None:
        slot = self.count % self.capacity
        self.times[slot] = t
        w = self.width
        self.values[slot * w:(slot + 1) * w] = array("f", row)
        self.count += 1

    @property
    def last_time(self) -> float | None:
        return self.times[(self.count - 1) % self.capacity] if self.count else None

    def series(self, column: int, since: float = -math.inf) -> tuple[list[float], list[float]]:
        """(times, values) of one column, oldest first, samples at or after ``since``; NaNs dropped."""
        xs: list[float] = []
        ys: list[float] = []
        cap, w, times, values = self.capacity, self.width, self.times, self.values
        for i in range(max(0, self.count - cap), self.count):
            slot = i % cap
            t = times[slot]
            v = values[slot * w + column]
            if t >= since and not math.isnan(v):
                xs.append(t)
                ys.append(v)
        return xs, ys

    @property
    def nbytes(self) -> int:
        return self.times.itemsize * len(self.times) + self.values.itemsize * len(self.values)


@dataclass(frozen=True, slots=True)
class Series:
    label: str  # "GPU 3", "mlx5_0:1"
    times: list[float]
    values: list[float]
    newest: float | None = None  # time of the node's newest sample, also when this series had none (N/A)


class NodeRings:
    """One node's GPUs and IB ports: fine and coarse rings with one column per series."""

    def __init__(self, gpus: tuple[int, ...], ports: tuple[str, ...], fine: int, coarse: int) -> None:
        self.gpus = gpus
        self.ports = ports
        width = len(gpus) * len(GPU_METRICS) + len(ports) * len(IB_METRICS)
        self.fine = Ring(fine, width)
        self.coarse = Ring(coarse, width)
        self.last_counters: dict[str, tuple[float, int, int]] = {}  # port -> (t, rcv, xmit)

    def column(self, kind: str, key: int | str, metric: str) -> int:
        if kind == "gpu":
            return self.gpus.index(int(key)) * len(GPU_METRICS) + GPU_METRICS.index(metric)
        base = len(self.gpus) * len(GPU_METRICS)
        return base + self.ports.index(str(key)) * len(IB_METRICS) + IB_METRICS.index(metric)

    @property
    def nbytes(self) -> int:
        return self.fine.nbytes + self.coarse.nbytes


def _f(value: float | None) -> float:
    """``value`` as a float for a ring; None, non-finite or beyond float range → NaN (N/A)."""
    if value is None:
        return NAN
    try:
        v = float(value)
    except (OverflowError, TypeError, ValueError):
        return NAN
    return v if v - v == 0.0 else NAN


def _counter(value: object) -> int | None:
    """A counter reading usable for a rate: a non-negative int below 2**63, else None."""
    return value if isinstance(value, int) and 0 <= value < COUNTER_LIMIT else None


def gpu_row(gpu: Gpu) -> tuple[float, float, float, float]:
    mem = None if gpu.memory_used_mib is None else gpu.memory_used_mib / 1024.0
    return (_f(gpu.util_pct), _f(gpu.temp_c), _f(gpu.power_w), _f(mem))


def port_key(port: IbPort) -> str:
    return f"{port.device}:{port.port}"


def link_error_delta(port: IbPort) -> float:
    """Sum of the link-error counters' increase; NaN without deltas. Never raises: a delta that is
    negative, not an int or not below 2**63 (a forged or placeholder value) counts as 0."""
    if not port.deltas:
        return NAN
    total = 0.0
    for k in LINK_ERROR_COUNTERS:
        v = _counter(port.deltas.get(k, 0))
        if v:
            total += v
    return total


class SeriesHistory:
    """Per-GPU and per-port series of many nodes, bounded by ``max_nodes`` rings.

    ``fine`` samples at every poll; ``coarse`` one per ``coarse_step_s``: with the defaults
    (150, 120, 30 s) 5 minutes at 2 s and 1 hour at 30 s.
    """

    def __init__(self, *, fine: int = 150, coarse: int = 120, coarse_step_s: float = 30.0,
                 max_nodes: int = 512) -> None:
        self.fine_capacity = fine
        self.coarse_capacity = coarse
        self.coarse_step_s = coarse_step_s
        self.max_nodes = max_nodes
        self._rings: OrderedDict[str, NodeRings] = OrderedDict()
        self._watched: OrderedDict[str, None] = OrderedDict()
        self.cluster_size = 0

    # -- which nodes ----------------------------------------------------------
    def watch(self, node: str) -> None:
        """Keep ``node``'s series from now on even in a cluster bigger than ``max_nodes``."""
        self._watched[node] = None
        self._watched.move_to_end(node)
        while len(self._watched) > self.max_nodes:
            self._watched.popitem(last=False)

    def tracks(self, node: str) -> bool:
        return self.cluster_size <= self.max_nodes or node in self._watched

    # -- writes ---------------------------------------------------------------
    def add_gpus(self, t: float, gpus_by_node: Mapping[str, Sequence[Gpu]],
                 ib_by_node: Mapping[str, Sequence[IbPort]] | None = None) -> None:
        ib = ib_by_node or {}
        self.cluster_size = max(len(gpus_by_node), len(ib))
        nodes: Iterable[str]
        if self.cluster_size > self.max_nodes:
            nodes = list(self._watched)
        elif not ib:
            nodes = gpus_by_node
        else:  # IB-only nodes (CPU, storage) and nodes whose GPUs another source reads count too
            nodes = dict.fromkeys([*gpus_by_node, *ib])
        for node in nodes:
            gpus = gpus_by_node.get(node, ())
            ports = ib.get(node, ())
            if gpus or ports:
                self._add_node(node, t, gpus, ports)

    def add_ib(self, t: float, ib_by_node: Mapping[str, Sequence[IbPort]]) -> None:
        """IB readings from a source without GPUs (the rows get NaN GPU columns)."""
        self.add_gpus(t, {}, ib_by_node)

    def _add_node(self, node: str, t: float, gpus: Sequence[Gpu], ports: Sequence[IbPort]) -> None:
        rings = self._rings.get(node)
        gpu_ids = tuple(g.index for g in gpus)
        port_ids = tuple(port_key(p) for p in ports)
        if rings is not None and ((gpus and rings.gpus != gpu_ids) or (ports and rings.ports != port_ids)):
            # hardware changed (a GPU fell off, a port appeared): start over, keeping the layout of
            # the half this call does not report (GPUs and IB may come from two sources)
            gpu_ids = gpu_ids if gpus else rings.gpus
            port_ids = port_ids if ports else rings.ports
            rings = None
        if rings is None:
            if len(gpu_ids) * len(GPU_METRICS) + len(port_ids) * len(IB_METRICS) > MAX_SERIES_PER_NODE:
                return
            rings = self._rings[node] = NodeRings(gpu_ids, port_ids, self.fine_capacity, self.coarse_capacity)
            while len(self._rings) > self.max_nodes:
                self._rings.popitem(last=False)
        self._rings.move_to_end(node)
        if rings.fine.last_time is not None and t <= rings.fine.last_time:
            return  # the same reading again
        row: list[float] = []
        if gpus:
            for g in gpus:
                row.extend(gpu_row(g))
        else:
            row.extend([NAN] * len(rings.gpus) * len(GPU_METRICS))
        if ports:
            for p in ports:
                row.extend(self._port_row(rings, p, t))
        else:
            row.extend([NAN] * len(rings.ports) * len(IB_METRICS))
        rings.fine.add(t, row)
        last = rings.coarse.last_time
        if last is None or t - last >= self.coarse_step_s:
            rings.coarse.add(t, row)

    @staticmethod
    def _port_row(rings: NodeRings, port: IbPort, t: float) -> tuple[float, float, float]:
        """Gb/s from the data counters (sysfs counts 4-byte words, FACTS §4) between two samples."""
        key = port_key(port)
        rcv, xmit = _counter(port.counters.get("port_rcv_data")), _counter(port.counters.get("port_xmit_data"))
        rx = tx = NAN
        if rcv is not None and xmit is not None:
            prev = rings.last_counters.get(key)
            if prev is not None and t > prev[0]:
                dt = t - prev[0]
                if rcv >= prev[1]:  # a counter reset gives no rate, never a negative one
                    rx = 4 * 8 * (rcv - prev[1]) / dt / 1e9
                if xmit >= prev[2]:
                    tx = 4 * 8 * (xmit - prev[2]) / dt / 1e9
            rings.last_counters[key] = (t, rcv, xmit)
        return (rx, tx, link_error_delta(port))

    # -- reads ----------------------------------------------------------------
    def node(self, node: str) -> NodeRings | None:
        return self._rings.get(node)

    def gpu_series(self, node: str, metric: str, window_s: float, now: float) -> list[Series]:
        rings = self._rings.get(node)
        if rings is None:
            return []
        return [self._series(rings, f"GPU {g}", rings.column("gpu", g, metric), window_s, now) for g in rings.gpus]

    def port_series(self, node: str, metric: str, window_s: float, now: float) -> list[Series]:
        rings = self._rings.get(node)
        if rings is None:
            return []
        return [self._series(rings, p, rings.column("ib", p, metric), window_s, now) for p in rings.ports]

    def _series(self, rings: NodeRings, label: str, column: int, window_s: float, now: float) -> Series:
        since = now - window_s
        fine_t, fine_v = rings.fine.series(column, since)
        fine_span = rings.fine.count and (rings.fine.times[max(0, rings.fine.count - rings.fine.capacity)
                                                         % rings.fine.capacity])
        newest = rings.fine.last_time
        if fine_t and fine_span and fine_span <= since:  # the fine ring covers the whole window
            return Series(label, fine_t, fine_v, newest)
        first_fine = fine_t[0] if fine_t else math.inf
        coarse_t, coarse_v = rings.coarse.series(column, since)
        keep = [i for i, x in enumerate(coarse_t) if x < first_fine]
        return Series(label, [coarse_t[i] for i in keep] + fine_t, [coarse_v[i] for i in keep] + fine_v, newest)

    @property
    def nbytes(self) -> int:
        return sum(r.nbytes for r in self._rings.values())

    def bound_bytes(self, series_per_node: int = MAX_SERIES_PER_NODE) -> int:
        """The most memory the rings can take: max_nodes × (fine + coarse) × (time + values)."""
        per_node = (self.fine_capacity + self.coarse_capacity) * (8 + 4 * series_per_node)
        return self.max_nodes * per_node


__all__ = ["GPU_METRICS", "GPU_TITLES", "GPU_UNITS", "IB_METRICS", "IB_UNITS", "Ring", "Series", "SeriesHistory"]
