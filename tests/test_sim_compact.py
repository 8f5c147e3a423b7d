"""The simulator's compact bookkeeping: same values as the plain per-port dicts it replaced,
and unchanged readings handed out as the same objects (the store and findings skip those)."""

from __future__ import annotations

import math
import random

from hpctui.model import IbPort
from hpctui.sim import SimCluster, metrics
from hpctui.sim.topology import build_topology

T0 = 1_700_000_000.0


def _reference_counters(sim: SimCluster, state: dict[tuple[str, int], tuple[float, dict[str, int]]],
                        t: float) -> dict[tuple[str, int], tuple[dict[str, int], dict[str, int]]]:
    """The simulator's IB arithmetic as it was written with two full dicts per port (counters,
    deltas over every counter), for a cluster small enough that every node is read every tick."""
    out = {}
    for spec in sim.specs:
        name, phase = spec.name, sim.phase[spec.name]
        busy = bool(sim._busy(spec)) or bool(sim.workload.alloc[name].jobs)
        for k, dev in enumerate(spec.ib_devices):
            last_t, old = state.get((name, k), (t, {}))
            if not old:
                old = dict.fromkeys(metrics.IB_COUNTERS, 0)
                old["port_xmit_data"] = old["port_rcv_data"] = int(phase * 1e12) + k * 7_919_000
                old["port_xmit_packets"] = old["port_rcv_packets"] = int(phase * 1e9) + k * 1931
            dt = max(0.0, t - last_t)
            new = dict(old)
            up, rate = sim.incidents.ib_link(name, dev)
            if up:
                load = (0.55 + 0.35 * math.sin(t * (2.0 * math.pi / 53.0) + (phase + k))) if busy else 0.002
                octets = load * (rate or spec.ib_max_gbps) * 1e9 / 8.0 * dt
                words, pkts = int(octets / 4), int(octets / 4096)
                new["port_xmit_data"] += words
                new["port_rcv_data"] += words - words // 50
                new["port_xmit_packets"] += pkts
                new["port_rcv_packets"] += pkts
                if busy:
                    new["port_xmit_wait"] += int(dt * 40 * (1.0 + metrics.wave(t, phase + k, 13.0)))
            if name == sim.place.flap_node and dev == sim.place.flap_dev:
                new.update(sim.incidents.flap_counters)
            state[(name, k)] = (t, new)
            out[(name, k)] = (new, {c: new[c] - old[c] for c in metrics.IB_COUNTERS})
    return out


def test_ib_counters_and_deltas_match_the_plain_dict_arithmetic() -> None:
    sim = SimCluster(size=64, seed=3, start_time=T0)
    state: dict[tuple[str, int], tuple[float, dict[str, int]]] = {}
    _reference_counters(sim, state, T0)
    seen_flap_delta = False
    for k in range(1, 9):
        t = T0 + 2.0 * k + (0.25 if k % 3 == 0 else 0.0)
        sim.advance(t)
        result = sim.to_result(t)
        assert result.ib is not None
        expected = _reference_counters(sim, state, t)
        for node, ports in result.ib.items():
            for k_port, port in enumerate(ports):
                counters, deltas = expected[(node, k_port)]
                assert type(port.counters) is dict and port.counters == counters
                assert list(port.counters) == list(metrics.IB_COUNTERS)  # the probe's key order
                # deltas hold exactly the counters that moved (absent = 0, as from the probe)
                assert {c: v for c, v in port.deltas.items() if v} == {c: v for c, v in deltas.items() if v}
                assert sum(port.deltas.values()) == sum(deltas.values())
                seen_flap_delta |= port.deltas.get("link_downed", 0) > 0
    assert seen_flap_delta, "the flapping link's downs show in its deltas"


def test_counters_dicts_are_independent_plain_dicts() -> None:
    a = metrics.initial_ib_counters(1.5, 0)
    b = a.copy()
    b["symbol_error"] += 3
    assert type(a) is dict and a["symbol_error"] == 0 and b["symbol_error"] == 3
    assert list(b) == list(metrics.IB_COUNTERS)
    assert dict.fromkeys(metrics.IB_COUNTERS, 0) == metrics.ZERO_DELTAS


def test_gpu_readings_equal_per_gpu_readings() -> None:
    topo = build_topology(64, 0)
    rng = random.Random(7)
    for spec in (topo.gpu_nodes[0], topo.gpu_nodes[-1], next(n for n in topo.gpu_nodes if n.mig)):
        for _ in range(20):
            t, phase = T0 + rng.uniform(0, 10_000), rng.uniform(0.0, 6.283)
            busy = {i for i in range(spec.n_gpus) if rng.random() < 0.7}
            layout = [None if rng.random() < 0.5 else ("3g.40gb", "1g.10gb") for _ in range(spec.n_gpus)] \
                if spec.mig else None
            batch = metrics.gpu_readings(spec, t, busy, phase, 2, layout)
            single = [metrics.gpu_reading(spec, i, t, i in busy, phase + 0.7 * i, 2,
                                          mig_profiles=layout[i] if layout else None) for i in range(spec.n_gpus)]
            assert batch == single
            assert metrics.gpu_reading(spec, 0, t, True, phase, 2, mig_profiles=None).nvlink_errors == {}


def test_unchanged_readings_are_the_same_objects_across_ticks() -> None:
    sim = SimCluster(size=2048, seed=0, start_time=T0)  # big enough for the rolling refresh (512 a tick)
    before = sim.to_result(T0)
    sim.advance(T0 + 2.0)
    after = sim.to_result(T0 + 2.0)
    assert before.gpus and after.gpus and before.ib and after.ib and before.mounts and after.mounts
    assert before.slurm_nodes and after.slurm_nodes and before.k8s_nodes and after.k8s_nodes
    # nodes outside this tick's share of the rolling refresh: every part is the very same object
    untouched = [n for n in before.gpus if before.gpus[n] is after.gpus[n]]
    assert len(untouched) > len(before.gpus) * 0.6
    for n in untouched[:50]:
        assert before.ib[n] is after.ib[n] and before.mounts[n] is after.mounts[n]
    same_nodes = sum(before.slurm_nodes[n] is after.slurm_nodes[n] and before.k8s_nodes[n] is after.k8s_nodes[n]
                     for n in before.slurm_nodes)
    assert same_nodes > len(before.slurm_nodes) * 0.9
    # incident nodes are read every tick: what did not move is still the same object
    lost_before = [g for g in before.gpus[sim.place.xid_node] if g.lost]
    lost_after = [g for g in after.gpus[sim.place.xid_node] if g.lost]
    assert len(lost_before) == 1 and lost_after[0] is lost_before[0]
    hung = [m for m in after.mounts[sim.place.hung_node] if m.latency_ms is None]
    assert hung and hung[0] is next(m for m in before.mounts[sim.place.hung_node] if m.latency_ms is None)
    # a port that moved is a new object with the deltas of this read
    refreshed = next(n for n in after.ib if after.ib[n] is not before.ib[n] and n not in sim.incident_nodes)
    port: IbPort = after.ib[refreshed][0]
    assert port is not before.ib[refreshed][0] and port.deltas["port_xmit_data"] > 0
    assert port.counters["port_xmit_data"] - before.ib[refreshed][0].counters["port_xmit_data"] == \
        port.deltas["port_xmit_data"]


def test_a_port_whose_counters_did_not_move_is_kept() -> None:
    sim = SimCluster(size=64, seed=0, start_time=T0)
    sim.advance(T0 + 2.0)
    sim.advance(T0 + 2.0)  # the same time again: nothing moves (dt = 0)
    first = sim.to_result(T0 + 2.0)
    sim.advance(T0 + 2.0)
    second = sim.to_result(T0 + 2.0)
    assert first.ib and second.ib
    plain = next(n for n in first.ib if n not in sim.incident_nodes)
    assert second.ib[plain] is first.ib[plain]
    assert all(p.deltas is metrics.ZERO_DELTAS for p in second.ib[plain])
