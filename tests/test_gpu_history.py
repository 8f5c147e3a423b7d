"""The per-GPU / per-port history rings: fixed memory, bounded node count, IB rates from counters."""

from __future__ import annotations

import math

from hpctui.core.series_history import GPU_METRICS, Ring, SeriesHistory
from hpctui.model import Gpu, IbPort


def gpus(node: str, t: float, n: int = 8) -> tuple[Gpu, ...]:
    return tuple(Gpu(node=node, index=i, util_pct=float((t + i) % 100), temp_c=50.0 + i, power_w=400.0,
                     memory_used_mib=2048.0 * (i + 1), memory_total_mib=81920.0) for i in range(n))


def test_ring_memory_is_fixed_and_keeps_the_newest() -> None:
    ring = Ring(capacity=10, width=3)
    size = ring.nbytes
    for t in range(1000):
        ring.add(float(t), (t, -t, math.nan))
    assert ring.nbytes == size == 10 * 8 + 10 * 3 * 4
    times, values = ring.series(0)
    assert times == [float(t) for t in range(990, 1000)]
    assert values == [float(t) for t in range(990, 1000)]
    assert ring.series(2) == ([], [])  # NaN = not available: dropped, never drawn as 0


def test_history_memory_bound_over_a_long_run() -> None:
    hist = SeriesHistory(fine=150, coarse=120, coarse_step_s=30, max_nodes=16)
    readings = {f"n{i:02d}": gpus(f"n{i:02d}", 0.0) for i in range(16)}
    hist.add_gpus(0.0, readings)
    after_one = hist.nbytes
    for k in range(1, 5000):  # ~2.8 hours at 2 s
        t = 2.0 * k
        hist.add_gpus(t, {n: gpus(n, t) for n in readings})
    assert hist.nbytes == after_one <= hist.bound_bytes()
    rings = hist.node("n00")
    assert rings is not None
    assert rings.fine.count == 5000 and len(rings.fine.times) == 150
    five_min = hist.gpu_series("n00", "util", 300, 2.0 * 4999)
    assert len(five_min) == 8 and all(len(s.values) <= 151 for s in five_min)
    hour = hist.gpu_series("n00", "util", 3600, 2.0 * 4999)
    assert hour[0].times[0] >= 2.0 * 4999 - 3600  # the coarse ring reaches back an hour
    assert hour[0].times[0] <= 2.0 * 4999 - 3000
    assert hour[0].times == sorted(hour[0].times)


def test_big_cluster_keeps_only_watched_nodes() -> None:
    hist = SeriesHistory(max_nodes=4)
    readings = {f"n{i:02d}": gpus(f"n{i:02d}", 0.0, 2) for i in range(10)}
    hist.add_gpus(0.0, readings)
    assert hist.nbytes == 0  # bigger than max_nodes and nobody looked at a node yet
    hist.watch("n07")
    hist.add_gpus(2.0, readings)
    assert hist.node("n07") is not None and hist.node("n01") is None
    for i in range(6):  # least recently watched dropped
        hist.watch(f"n0{i}")
        hist.add_gpus(4.0 + i, readings)
    assert len(hist._rings) <= 4


def test_ib_rate_from_data_counters_and_counter_reset() -> None:
    hist = SeriesHistory()

    def port(rcv: int, xmit: int, errs: int = 0) -> IbPort:
        return IbPort(node="n1", device="mlx5_0", port=1, counters={"port_rcv_data": rcv, "port_xmit_data": xmit},
                      deltas={"symbol_error": errs})
    hist.add_gpus(0.0, {"n1": gpus("n1", 0.0, 1)}, {"n1": (port(0, 0),)})
    words = 50_000_000_000 // 32  # 50 Gb in 4-byte words (sysfs counts octets / 4)
    hist.add_gpus(1.0, {"n1": gpus("n1", 1.0, 1)}, {"n1": (port(words, 2 * words, 3),)})
    hist.add_gpus(2.0, {"n1": gpus("n1", 2.0, 1)}, {"n1": (port(5, 5),)})  # counters reset
    rx = hist.port_series("n1", "rx", 300, 2.0)[0]
    tx = hist.port_series("n1", "tx", 300, 2.0)[0]
    err = hist.port_series("n1", "err", 300, 2.0)[0]
    assert rx.label == "mlx5_0:1"
    assert rx.times == [1.0] and math.isclose(rx.values[0], 50.0, rel_tol=1e-6)
    assert math.isclose(tx.values[0], 100.0, rel_tol=1e-6)
    assert err.values == [0.0, 3.0, 0.0]


def test_series_columns() -> None:
    hist = SeriesHistory()
    hist.add_gpus(10.0, {"n1": gpus("n1", 10.0, 2)})
    for metric in GPU_METRICS:
        series = hist.gpu_series("n1", metric, 300, 10.0)
        assert [s.label for s in series] == ["GPU 0", "GPU 1"]
    assert hist.gpu_series("n1", "mem", 300, 10.0)[1].values == [4.0]  # GiB
    assert hist.gpu_series("n1", "temp", 300, 10.0)[1].values == [51.0]


def ib_port(node: str, rcv: int, device: str = "mlx5_0") -> IbPort:
    return IbPort(node=node, device=device, port=1, counters={"port_rcv_data": rcv, "port_xmit_data": rcv},
                  deltas={"symbol_error": 0})


def test_ib_only_results_record_port_series() -> None:
    """A CPU/storage node (or one whose GPUs come from another source) still gets IB history."""
    hist = SeriesHistory()
    words = 10_000_000_000 // 32  # 10 Gb per second in 4-byte words
    for k in range(3):
        hist.add_ib(float(k), {"cpu01": (ib_port("cpu01", k * words),)})
    rings = hist.node("cpu01")
    assert rings is not None and rings.ports == ("mlx5_0:1",) and rings.gpus == ()
    rx = hist.port_series("cpu01", "rx", 300, 2.0)
    assert [s.label for s in rx] == ["mlx5_0:1"]
    assert rx[0].times == [1.0, 2.0] and all(math.isclose(v, 10.0, rel_tol=1e-6) for v in rx[0].values)
    assert hist.gpu_series("cpu01", "util", 300, 2.0) == []


def test_gpus_and_ib_from_different_sources_keep_both_histories() -> None:
    hist = SeriesHistory()
    for k in range(4):
        t = 2.0 * k
        hist.add_gpus(t, {"n1": gpus("n1", t, 2)})  # the GPU source: no IB
        hist.add_ib(t + 1.0, {"n1": (ib_port("n1", k * 1000),)})  # the IB source: no GPUs
    rings = hist.node("n1")
    assert rings is not None and rings.gpus == (0, 1) and rings.ports == ("mlx5_0:1",)
    util = hist.gpu_series("n1", "util", 300, 8.0)
    assert [len(s.values) for s in util] == [3, 3]  # only the first GPU sample preceded the first port
    assert len(hist.port_series("n1", "err", 300, 8.0)[0].values) == 4


def test_store_records_ib_of_a_result_without_gpus() -> None:
    from hpctui.core.store import Store
    from hpctui.model import SourceResult

    store = Store("c")
    for k in range(3):
        store.apply(SourceResult(source="ib", time=float(k), ib={"cpu01": (ib_port("cpu01", k * 1000),)}))
    assert [s.label for s in store.series.port_series("cpu01", "err", 300, 2.0)] == ["mlx5_0:1"]
