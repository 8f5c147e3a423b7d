"""Smooth, deterministic readings for GPUs, IB ports and mounts.

Every value is a pure function of (static phase, load, time) or of counters the
caller keeps, so two clusters with the same seed fed the same times agree exactly.
"""

from __future__ import annotations

import math

import msgspec

from hpctui.model import Gpu, IbPort, MigInstance, Mount, MountState, ThrottleReason
from hpctui.model.mount import FsTarget, TargetState
from hpctui.sim.storage import CEPHFS_MOUNT
from hpctui.sim.topology import H100, H200, MIG_BALANCED, PCI_BUS_IDS, NodeSpec

POWER_LIMIT_W = 700.0
IB_COUNTERS = (
    "symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
    "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_discards",
    "port_xmit_constraint_errors", "port_rcv_constraint_errors", "local_link_integrity_errors",
    "excessive_buffer_overrun_errors", "VL15_dropped", "port_xmit_wait",
    "port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets",
)
RATE_TEXT = {400.0: "400 Gb/sec (4X NDR)", 200.0: "200 Gb/sec (4X HDR)"}
MOUNTS = (  # target, fstype, source, typical stat latency in ms
    ("/lustre/scratch", "lustre", "10.10.0.11@o2ib:10.10.0.12@o2ib:/scratch", 1.8),
    ("/beegfs/data", "beegfs", "beegfs_nodev", 2.4),
    ("/home", "nfs4", "nfs01:/export/home", 0.9),
)
SLOW_MS = 1000.0
_OST_KIB = 90_767_651_352  # an OST's size in KiB (as in the real lfs df fixture)
# The demo's Lustre targets as every client sees them (lfs df): OST0003 is 97 % full (an error finding).
LUSTRE_TARGETS = (FsTarget(fs="scratch", name="scratch-MDT0000", kind="MDT", used_pct=31.0, size_kib=2_994_111_520),
                  *(FsTarget(fs="scratch", name=f"scratch-OST{i:04x}", kind="OST", used_pct=pct, size_kib=_OST_KIB)
                    for i, pct in enumerate((72.0, 74.0, 71.0, 97.0, 76.0, 73.0, 75.0, 72.0))))
BEEGFS_TARGETS = tuple(FsTarget(fs="beegfs", name=f"storage:{t}", kind="storage", state=TargetState.ACTIVE,
                                detail=f"Online Good on node {t // 10}") for t in (3011, 3012, 3021, 3022))


def wave(t: float, phase: float, period: float) -> float:
    """A value in [-1, 1] that moves smoothly with time."""
    return math.sin(t * (2.0 * math.pi / period) + phase)


def utilization(t: float, phase: float) -> float:
    """Busy-GPU utilisation: high, wobbling, never quite flat."""
    u = 82.0 + 12.0 * wave(t, phase, 97.0) + 5.0 * wave(t, 2.3 * phase, 23.0)
    return round(min(100.0, max(0.0, u)), 0)


# Angular speeds of the waves below, computed as ``wave`` does so the values are bit-identical.
_W97, _W23, _W181, _W41, _W300 = (2.0 * math.pi / p for p in (97.0, 23.0, 181.0, 41.0, 300.0))
_sin = math.sin
# One interned object per distinct float value (temperatures, powers, MiB...): 131k GPUs share a
# few thousand float objects instead of holding eight each. Values repeat (rounded readings).
_FLOATS: dict[float, float] = {}
_intern_float = _FLOATS.setdefault
# The fields every reading of a model shares (built once; readings are copies with the moving
# fields replaced, which also shares the template's empty dicts instead of three new ones per GPU).
_TEMPLATES: dict[str | None, Gpu] = {}


def _template(spec: NodeSpec) -> Gpu:
    tmpl = _TEMPLATES.get(spec.gpu_model)
    if tmpl is None:
        tmpl = _TEMPLATES[spec.gpu_model] = Gpu(
            node="", index=0, model=spec.gpu_model, memory_total_mib=float(spec.gpu_mem_mib),
            power_limit_w=POWER_LIMIT_W, ecc_corrected_volatile=0, ecc_uncorrected_volatile=0,
            ecc_corrected_aggregate=0, ecc_uncorrected_aggregate=0, remapped_correctable=0,
            remapped_uncorrectable=0, remap_pending=False, remap_failure=False, pcie_gen_max=5,
            pcie_width_current=16, pcie_width_max=16, persistence_mode=True,
        )
    return tmpl


def gpu_reading(spec: NodeSpec, index: int, t: float, busy: bool, phase: float, ecc_agg: int,
                mig_profiles: tuple[str, ...] | bool | None = True, mig_pending: bool | None = None) -> Gpu:
    """One GPU as NVML would report it; MIG GPUs have no utilisation (FACTS §1).

    ``mig_profiles``: the GPU's MIG instances (None: MIG off; True: the node's static layout)."""
    profiles: tuple[str, ...] | None
    if mig_profiles is True:
        profiles = tuple(p for p, _ in MIG_BALANCED[spec.gpu_model]) if spec.mig and spec.gpu_model else None
    elif mig_profiles is False:
        profiles = None
    else:
        profiles = mig_profiles
    tmpl = _template(spec)
    intern = _intern_float
    # the same arithmetic, in the same order, as utilization() and wave()
    if busy:
        u = 82.0 + 12.0 * _sin(t * _W97 + phase) + 5.0 * _sin(t * _W23 + 2.3 * phase)
        util = round(min(100.0, max(0.0, u)), 0)
    else:
        util = 0.0
    temp = round(31.0 + 0.46 * util + 1.5 * _sin(t * _W181 + phase), 0)
    power = round((118.0 + 5.6 * util if busy else 68.0) + 6.0 * _sin(t * _W41 + phase), 1)
    throttle = int(ThrottleReason.GPU_IDLE) if not busy else (
        int(ThrottleReason.SW_POWER_CAP) if power > 640.0 else 0)
    mig: tuple[MigInstance, ...] = ()
    util_pct: float | None = util
    mem_util: float | None = round(util * 0.55, 0)
    total = tmpl.memory_total_mib
    assert total is not None
    used = round(total * (0.78 + 0.12 * _sin(t * _W300 + phase)), 0) if busy else 4.0
    mig_on = profiles is not None
    if mig_on:
        mig = mig_instances(spec, index, t, phase, profiles, busy=busy)
        util_pct = mem_util = None
        used = float(sum(m.memory_used_mib or 0.0 for m in mig))
        engine = max((m.engine_active or 0.0 for m in mig), default=0.0)
        busy_any = engine > 0.05
        if busy_any:
            power = round(95.0 + 260.0 * engine, 1)
            temp = round(33.0 + 0.1 * (power - 95.0), 0)
        # else: the idle draw and temperature of a GPU without MIG (computed above with util 0)
        throttle = 0 if busy_any else int(ThrottleReason.GPU_IDLE)
    return msgspec.structs.replace(
        tmpl, node=spec.name, index=index, uuid=spec.gpu_uuids[index],
        pci_bus_id=PCI_BUS_IDS[index % len(PCI_BUS_IDS)],
        util_pct=None if util_pct is None else intern(util_pct, util_pct),
        mem_util_pct=None if mem_util is None else intern(mem_util, mem_util),
        memory_used_mib=intern(used, used), temp_c=intern(temp, temp), hbm_temp_c=intern(temp + 6.0, temp + 6.0),
        power_w=intern(power, power), sm_clock_mhz=1980.0 if busy else 345.0,
        ecc_corrected_aggregate=ecc_agg, mig_mode_current=mig_on,
        mig_mode_pending=mig_on if mig_pending is None else mig_pending,
        mig_instances=mig, throttle_reasons=throttle, pcie_gen_current=5 if busy else 1,
    )


def gpu_readings(spec: NodeSpec, t: float, busy: set[int] | frozenset[int], phase: float, ecc_agg: int,
                 layout: list[tuple[str, ...] | None] | None) -> list[Gpu]:
    """All of a node's GPUs: ``gpu_reading(spec, i, t, i in busy, phase + 0.7 * i, ecc_agg, layout[i])``
    for each, with the common (non-MIG) case written out once per node instead of per call."""
    tmpl = _template(spec)
    intern = _intern_float
    replace = msgspec.structs.replace
    total = tmpl.memory_total_mib
    assert total is not None
    name, uuids = spec.name, spec.gpu_uuids
    idle_throttle, cap_throttle = int(ThrottleReason.GPU_IDLE), int(ThrottleReason.SW_POWER_CAP)
    out = []
    for i in range(spec.n_gpus):
        ph = phase + 0.7 * i
        on = i in busy
        profiles = layout[i] if layout else None
        if profiles is not None:
            out.append(gpu_reading(spec, i, t, on, ph, ecc_agg, mig_profiles=profiles))
            continue
        # float(round(x)) is round(x, 0) for x >= 0 (both round the exact binary value half to
        # even; only -0.0 would differ) at a third of the cost; every value rounded so is >= 0
        if on:
            u = 82.0 + 12.0 * _sin(t * _W97 + ph) + 5.0 * _sin(t * _W23 + 2.3 * ph)
            util = float(round(min(100.0, max(0.0, u))))
            temp = float(round(31.0 + 0.46 * util + 1.5 * _sin(t * _W181 + ph)))
            power = round((118.0 + 5.6 * util) + 6.0 * _sin(t * _W41 + ph), 1)
            mem_util = float(round(util * 0.55))
            used = float(round(total * (0.78 + 0.12 * _sin(t * _W300 + ph))))
            out.append(replace(
                tmpl, node=name, index=i, uuid=uuids[i], pci_bus_id=PCI_BUS_IDS[i % len(PCI_BUS_IDS)],
                util_pct=intern(util, util), mem_util_pct=intern(mem_util, mem_util),
                memory_used_mib=intern(used, used), temp_c=intern(temp, temp),
                hbm_temp_c=intern(temp + 6.0, temp + 6.0), power_w=intern(power, power), sm_clock_mhz=1980.0,
                ecc_corrected_aggregate=ecc_agg, mig_mode_current=False, mig_mode_pending=False,
                throttle_reasons=cap_throttle if power > 640.0 else 0, pcie_gen_current=5,
            ))
        else:
            temp = float(round(31.0 + 0.46 * 0.0 + 1.5 * _sin(t * _W181 + ph)))
            power = round(68.0 + 6.0 * _sin(t * _W41 + ph), 1)
            out.append(replace(
                tmpl, node=name, index=i, uuid=uuids[i], pci_bus_id=PCI_BUS_IDS[i % len(PCI_BUS_IDS)],
                util_pct=0.0, mem_util_pct=0.0, memory_used_mib=4.0, temp_c=intern(temp, temp),
                hbm_temp_c=intern(temp + 6.0, temp + 6.0), power_w=intern(power, power), sm_clock_mhz=345.0,
                ecc_corrected_aggregate=ecc_agg, mig_mode_current=False, mig_mode_pending=False,
                throttle_reasons=idle_throttle, pcie_gen_current=1,
            ))
    return out


def profile_mib(profile: str) -> float:
    """Usable MiB of a MIG profile ("3g.40gb" → ~40 GB less the driver's share)."""
    for p, mib in (*MIG_BALANCED[H100], *MIG_BALANCED[H200]):
        if p == profile:
            return float(mib)
    gb = profile.split(".", 1)[1].split("gb", 1)[0] if "." in profile else "0"
    return round(float(gb or 0) * 1004.8, 0)


MIG_IDLE_MIB = 13.0  # what an instance without a process holds (the driver's share)


def mig_instances(spec: NodeSpec, index: int, t: float, phase: float,
                  profiles: tuple[str, ...] | None = None, busy: bool = False) -> tuple[MigInstance, ...]:
    """The GPU's MIG instances; only a GPU that work holds (``busy``) has active ones: an idle
    instance reads engine 0 and the driver's few MiB."""
    assert spec.gpu_model is not None
    balanced = tuple(p for p, _ in MIG_BALANCED[spec.gpu_model])
    if profiles is None:
        profiles = balanced
    gi_ids = (2, 3, 9, 10) if profiles == balanced else tuple(range(1, len(profiles) + 1))
    out = []
    for k, profile in enumerate(profiles):
        mib = profile_mib(profile)
        active = max(0.0, 0.45 + 0.45 * wave(t, phase + k, 67.0 + 11 * k)) if busy and (index + k) % 3 else 0.0
        out.append(MigInstance(
            gi_id=gi_ids[k], ci_id=0, profile=profile,
            uuid=f"MIG-{spec.gpu_uuids[index][4:12]}-{k:04x}-{index:04x}-{k * 17:04x}-{spec.gpu_uuids[index][-12:]}",
            memory_used_mib=round(mib * (0.2 + 0.6 * active), 0) if active else MIG_IDLE_MIB,
            memory_total_mib=float(mib), engine_active=round(active, 3),
        ))
    return tuple(out)


# Shared by every port whose read moved no counter (never mutated: ports are frozen readings).
ZERO_DELTAS: dict[str, int] = dict.fromkeys(IB_COUNTERS, 0)


def _key_sharing_dict(keys: tuple[str, ...]) -> dict[str, int]:
    """A plain ``dict`` of ``keys`` (all 0) whose copies share one key table: CPython keeps an
    instance's ``__dict__`` split, and ``dict.copy()`` of a split dict stays split. At 135k ports
    that is ~30% less memory per counters dict; elsewhere it is an ordinary dict."""

    class _Keys:
        pass

    holder = _Keys()
    for key in keys:
        setattr(holder, key, 0)
    return holder.__dict__


_COUNTERS_AT_ZERO = _key_sharing_dict(IB_COUNTERS)


def initial_ib_counters(phase: float, k: int) -> dict[str, int]:
    """Port ``k``'s counters before the first read: traffic so far, no errors."""
    c = _COUNTERS_AT_ZERO.copy()
    c["port_xmit_data"] = c["port_rcv_data"] = int(phase * 1e12) + k * 7_919_000
    c["port_xmit_packets"] = c["port_rcv_packets"] = int(phase * 1e9) + k * 1931
    return c


def ib_traffic(busy: bool, t: float, phase: float, dt: float, gbps: float) -> tuple[int, int]:
    """(4-octet words, packets) moved in ``dt`` seconds; port_*_data count octets ÷ 4."""
    load = (0.55 + 0.35 * wave(t, phase, 53.0)) if busy else 0.002
    octets = load * gbps * 1e9 / 8.0 * dt
    return int(octets / 4), int(octets / 4096)


W53, W13 = 2.0 * math.pi / 53.0, 2.0 * math.pi / 13.0  # wave() periods of traffic and xmit_wait
_PORT_TEMPLATES: dict[tuple[float, bool, float | None], IbPort] = {}


def port_template(max_gbps: float, up: bool, rate: float | None) -> IbPort:
    """What ``ib_port`` fills in besides node, device, counters, deltas and flap memory."""
    key = (max_gbps, up, rate)
    tmpl = _PORT_TEMPLATES.get(key)
    if tmpl is None:
        r = max_gbps if rate is None else rate
        tmpl = _PORT_TEMPLATES[key] = IbPort(
            node="", device="", port=1, state="ACTIVE" if up else "DOWN", phys_state="LinkUp" if up else "Polling",
            rate_gbps=r, rate_text=RATE_TEXT.get(r), max_rate_gbps=max_gbps, link_layer="InfiniBand")
    return tmpl


def ib_port(spec: NodeSpec, device: str, counters: dict[str, int], deltas: dict[str, int], *,
            up: bool = True, rate: float | None = None, flaps: int = 0, last_down: float | None = None) -> IbPort:
    rate = spec.ib_max_gbps if rate is None else rate
    return IbPort(
        node=spec.name, device=device, port=1, state="ACTIVE" if up else "DOWN",
        phys_state="LinkUp" if up else "Polling", rate_gbps=rate, rate_text=RATE_TEXT.get(rate),
        max_rate_gbps=spec.ib_max_gbps, link_layer="InfiniBand", counters=counters, deltas=deltas,
        flaps=flaps, last_down=last_down,
    )


_W71 = 2.0 * math.pi / 71.0


def mount_readings(node: str, t: float, phase: float, slow: bool = False, hung_target: str | None = None,
                   ) -> tuple[Mount, ...]:
    out = []
    for k, (target, fstype, source, base) in enumerate(MOUNTS):
        if target == hung_target:
            out.append(Mount(node=node, target=target, fstype=fstype, source=source, state=MountState.HUNG,
                             latency_ms=None, detail="stat -f timed out after 5 s"))
            continue
        lat = round(base * (1.0 + 0.4 * _sin(t * _W71 + (phase + k))), 2)
        if slow and fstype == "nfs4":
            lat = round(1800.0 + 300.0 * wave(t, phase, 29.0), 1)
        state = MountState.SLOW if lat > SLOW_MS else MountState.OK
        targets = LUSTRE_TARGETS if fstype == "lustre" else BEEGFS_TARGETS if fstype == "beegfs" else ()
        out.append(Mount(node=node, target=target, fstype=fstype, source=source, state=state,
                         latency_ms=_intern_float(lat, lat), targets=targets))
    if slow:  # the slow node also mounts the demo's CephFS, slow while the cluster has degraded PGs
        target, source, lat = CEPHFS_MOUNT
        out.append(Mount(node=node, target=target, fstype="ceph", source=source, state=MountState.SLOW,
                         latency_ms=lat))
    return tuple(out)
