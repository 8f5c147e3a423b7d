"""Scripted faults, present from the first tick and placed at fixed relative positions.

The same seed puts them on the same nodes at any size, so screenshots and tests
can rely on them; some evolve every tick (ECC count, IB flapping).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace

import msgspec

from hpctui.model import Event, Gpu, GpuProcess, Severity, ThrottleReason, XidEvent
from hpctui.sim.topology import PCI_BUS_IDS, Topology

DRAIN_REASON = "xid 79 gpu3 - RMA ticket 4411"
NOTREADY_MESSAGE = "Kubelet stopped posting node status."
STRAY_USER, STRAY_COMMAND = "mallory", "python3 finetune.py --resume"  # left behind outside any job
STRAY_MEM_MIB = 23_840.0


@dataclass(frozen=True, slots=True)
class Placement:
    xid_node: str
    ecc_node: str
    thermal_node: str
    flap_node: str
    degraded_node: str
    hung_node: str
    slow_node: str
    notready_node: str
    stray_node: str = ""  # a GPU busy with a process no job or pod owns (the node runs no job)
    idle_node: str = ""  # a node whose one 8-GPU job holds every GPU and does nothing (a hung loader)
    xid_gpu: int = 3
    ecc_gpu: int = 5
    thermal_gpu: int = 6
    flap_dev: str = "mlx5_2"
    degraded_dev: str = "mlx5_5"
    stray_gpu: int = 2

    @property
    def nodes(self) -> frozenset[str]:
        names = (self.xid_node, self.ecc_node, self.thermal_node, self.flap_node, self.degraded_node,
                 self.hung_node, self.slow_node, self.notready_node, self.stray_node, self.idle_node)
        return frozenset(n for n in names if n)


def place(topo: Topology, seed: int) -> Placement:
    """Pick distinct nodes near fixed fractions of the GPU node list, jittered by seed."""
    rng = random.Random(f"incidents-{seed}")
    plain = [n.name for n in topo.gpu_nodes if not n.mig and not n.k8s_reserved] or [n.name for n in topo.gpu_nodes]
    reserved = [n.name for n in topo.gpu_nodes if n.k8s_reserved] or plain
    jitter = rng.randrange(max(1, len(plain) // 16))
    used: set[str] = set()

    def pick(frac: float, pool: list[str]) -> str:
        start = min(len(pool) - 1, int(frac * len(pool)) + jitter)
        for k in range(len(pool)):
            name = pool[(start + k) % len(pool)]
            if name not in used:
                used.add(name)
                return name
        return pool[start]

    return Placement(
        xid_node=pick(0.10, plain), ecc_node=pick(0.23, plain), flap_node=pick(0.37, plain),
        degraded_node=pick(0.45, plain), hung_node=pick(0.52, plain), slow_node=pick(0.60, plain),
        thermal_node=pick(0.81, plain), notready_node=pick(0.66, reserved),
    )


STRAY_AT = 0.74  # where in the GPU node list the search for the stray process's GPU starts


def place_stray(p: Placement, topo: Topology, busy: Callable[[str], frozenset[int]]) -> Placement:
    """``p`` with the GPU a process outside any job keeps busy: on the first plain node from
    :data:`STRAY_AT` on that runs no job (``busy`` gives a node's allocated GPUs; a node idle when
    the demo starts stays so, nothing refills it), else the first free GPU of a node that runs
    some; unchanged where every GPU is taken. Placed after the workload, so it changes no job."""
    plain = [n for n in topo.gpu_nodes if not n.mig and not n.k8s_reserved and n.name not in p.nodes]
    if not plain:
        return p
    start = int(STRAY_AT * len(plain))
    ordered = plain[start:] + plain[:start]
    for spec in ordered:
        if not busy(spec.name):
            return replace(p, stray_node=spec.name, stray_gpu=min(p.stray_gpu, spec.n_gpus - 1))
    for spec in ordered:
        free = [i for i in range(spec.n_gpus) if i not in busy(spec.name)]
        if free:
            return replace(p, stray_node=spec.name, stray_gpu=free[-1])
    return p


IDLE_AT = 0.30  # where in the GPU node list the search for the idle 8-GPU job starts
IDLE_MEM_MIB = 14_336.0  # what the idle job's hung processes keep allocated per GPU


def place_idle(p: Placement, topo: Topology, whole_job: Callable[[str], bool]) -> Placement:
    """``p`` with the node of the idle 8-GPU job: the first plain node from :data:`IDLE_AT` on whose
    GPUs one job holds all of (``whole_job``); unchanged where there is none. Placed after the
    workload, so it changes no job; the job's GPUs read 0 % from then on (:meth:`Incidents.patch_gpu`)."""
    plain = [n for n in topo.gpu_nodes if not n.mig and not n.k8s_reserved and n.name not in p.nodes
             and n.n_gpus >= 8]
    if not plain:
        return p
    start = int(IDLE_AT * len(plain))
    for spec in plain[start:] + plain[:start]:
        if whole_job(spec.name):
            return replace(p, idle_node=spec.name)
    return p


def _gpu_obj(node: str, idx: int) -> str:
    return f"gpu/{node}/{idx}"


def _xid_pci(idx: int) -> str:
    """``00000000:61:00.0`` → ``0000:61:00`` as the kernel log prints it."""
    return PCI_BUS_IDS[idx][4:-2].lower()


class Incidents:
    """Mutable incident state; the cluster asks it how to bend the normal readings."""

    def __init__(self, place_: Placement, t0: float, seed: int) -> None:
        self.p = place_
        self.t0 = t0
        rng = random.Random(f"incident-state-{seed}")
        self.xid_active = True
        self.xid_pid = rng.randint(2000, 90_000)
        self.stray_pid = 90_000 + self.xid_pid % 7919
        self.ecc_uncorrected = 3
        self.ecc_active = True
        self.flap_up = True
        self.flap_counters = {"link_downed": 4, "symbol_error": 1180, "link_error_recovery": 9}
        self.flap_downs = 0  # downs since the demo started (the probe's flap memory: IbPort.flaps)
        self.flap_last_down: float | None = None
        self.events: list[Event] = self._initial_events()

    def _initial_events(self) -> list[Event]:
        p, t0 = self.p, self.t0
        return [
            Event(time=t0 - 1900, source="gpu", object=_gpu_obj(p.xid_node, p.xid_gpu), severity=Severity.CRITICAL,
                  message=self._xid79_line()),
            Event(time=t0 - 1800, source="slurm", object=f"node/{p.xid_node}", severity=Severity.WARNING,
                  message=f"drained by root: {DRAIN_REASON}"),
            Event(time=t0 - 1200, source="k8s", object=f"node/{p.notready_node}", severity=Severity.ERROR,
                  message=f"NodeNotReady: Ready=Unknown: {NOTREADY_MESSAGE}"),
            Event(time=t0 - 900, source="mount", object=f"mount/{p.hung_node}/lustre/scratch", severity=Severity.ERROR,
                  message="/lustre/scratch hung: stat -f timed out after 5 s"),
            Event(time=t0 - 600, source="ib", object=f"ib/{p.degraded_node}/{p.degraded_dev}/1",
                  severity=Severity.WARNING, message="rate 200 Gb/sec (4X HDR) below max 400 Gb/sec: reseat cable"),
            Event(time=t0 - 420, source="gpu", object=_gpu_obj(p.ecc_node, p.ecc_gpu), severity=Severity.ERROR,
                  message="uncorrectable ECC errors: 3 (volatile), row remap pending"),
            Event(time=t0 - 300, source="gpu", object=_gpu_obj(p.thermal_node, p.thermal_gpu),
                  severity=Severity.WARNING, message="thermal slowdown at 88 C (HW_THERMAL_SLOWDOWN, SW_THERMAL_SLOWDOWN)"),
            Event(time=t0 - 120, source="ib", object=f"ib/{p.flap_node}/{p.flap_dev}/1", severity=Severity.WARNING,
                  message="link flapping: link_downed=4"),
        ]

    def _xid79_line(self) -> str:
        return (f"NVRM: Xid (PCI:{_xid_pci(self.p.xid_gpu)}): 79, pid={self.xid_pid}, name=python3, "
                "GPU has fallen off the bus.")

    # -- evolution ---------------------------------------------------------------
    def step(self, t: float) -> None:
        """One tick: the ECC count climbs, the flapping link changes state."""
        p = self.p
        if self.ecc_active:
            self.ecc_uncorrected += 1
            self.events.append(Event(
                time=t, source="gpu", object=_gpu_obj(p.ecc_node, p.ecc_gpu), severity=Severity.ERROR,
                message=f"uncorrectable ECC errors: {self.ecc_uncorrected} (volatile), row remap pending"))
        self.flap_up = not self.flap_up
        obj = f"ib/{p.flap_node}/{p.flap_dev}/1"
        if not self.flap_up:
            self.flap_downs += 1
            self.flap_last_down = t
            self.flap_counters["link_downed"] += 1
            self.flap_counters["symbol_error"] += 37
            self.flap_counters["link_error_recovery"] += 1
            self.events.append(Event(time=t, source="ib", object=obj, severity=Severity.WARNING,
                                     message=f"link down (link_downed={self.flap_counters['link_downed']})"))
        else:
            self.events.append(Event(time=t, source="ib", object=obj, severity=Severity.INFO, message="link up"))

    def rebooted(self, node: str, t: float) -> None:
        """A reboot clears a lost GPU and applies pending row remaps; cables stay bad."""
        if node == self.p.xid_node and self.xid_active:
            self.xid_active = False
            self.events.append(Event(time=t, source="gpu", object=_gpu_obj(node, self.p.xid_gpu),
                                     severity=Severity.INFO, message="GPU back on the bus after reboot"))
        if node == self.p.ecc_node and self.ecc_active:
            self.ecc_active = False

    def drain_events(self) -> list[Event]:
        out, self.events = self.events, []
        return out

    # -- bending readings ------------------------------------------------------
    def patch_gpu(self, gpu: Gpu, t: float) -> Gpu:
        p = self.p
        if gpu.node == p.xid_node and gpu.index == p.xid_gpu and self.xid_active:
            ev = XidEvent(time=self.t0 - 1900, xid=79, pci_bus_id=_xid_pci(gpu.index), message=self._xid79_line())
            return Gpu(node=gpu.node, index=gpu.index, uuid=gpu.uuid, model=gpu.model, pci_bus_id=gpu.pci_bus_id,
                       xid_events=(ev,), last_xid=79, lost=True)
        if gpu.node == p.ecc_node and gpu.index == p.ecc_gpu:
            if not self.ecc_active:
                return msgspec.structs.replace(gpu, ecc_uncorrected_aggregate=self.ecc_uncorrected,
                                               remapped_uncorrectable=1)
            ev = XidEvent(time=self.t0 - 420, xid=63, pci_bus_id=_xid_pci(gpu.index), message=(
                f"NVRM: Xid (PCI:{_xid_pci(gpu.index)}): 63, pid=1871, Row Remapper: New row marked for remapping, "
                "reset gpu to activate."))
            return msgspec.structs.replace(
                gpu, ecc_uncorrected_volatile=self.ecc_uncorrected, ecc_uncorrected_aggregate=self.ecc_uncorrected,
                remapped_uncorrectable=0, remap_pending=True, xid_events=(ev,), last_xid=63)
        if gpu.node == p.stray_node and gpu.index == p.stray_gpu:
            return self._stray(gpu, t)
        if gpu.node == p.idle_node and gpu.util_pct:  # allocated (the sim's busy reading): idle instead
            return msgspec.structs.replace(
                gpu, util_pct=0.0, mem_util_pct=0.0, memory_used_mib=IDLE_MEM_MIB, power_w=round(71.0 + gpu.index * 0.4, 1),
                sm_clock_mhz=1980.0, throttle_reasons=int(ThrottleReason.GPU_IDLE), temp_c=33.0, hbm_temp_c=39.0)
        if gpu.node == p.thermal_node and gpu.index == p.thermal_gpu:
            temp = 88.0 + (1.0 if int(t) % 7 < 3 else 0.0)
            return msgspec.structs.replace(
                gpu, temp_c=temp, hbm_temp_c=temp + 7.0, sm_clock_mhz=1410.0,
                throttle_reasons=int(ThrottleReason.HW_THERMAL_SLOWDOWN | ThrottleReason.SW_THERMAL_SLOWDOWN))
        return gpu

    def _stray(self, gpu: Gpu, t: float) -> Gpu:
        """The GPU a process outside any job keeps busy: load, memory and its process (no job id, no pod)."""
        proc = GpuProcess(pid=self.stray_pid, gpu_uuid=gpu.uuid, gpu_index=gpu.index, used_memory_mib=STRAY_MEM_MIB,
                          user=STRAY_USER, command=STRAY_COMMAND)
        if gpu.mig_mode_current:  # after a MIG change the process is still there: the finding stays
            return msgspec.structs.replace(gpu, processes=(proc,))
        util = 61.0 + (4.0 if int(t) % 5 < 2 else 0.0)
        return msgspec.structs.replace(
            gpu, util_pct=util, mem_util_pct=round(util * 0.5, 0), memory_used_mib=STRAY_MEM_MIB + 1024.0,
            temp_c=round(31.0 + 0.46 * util, 0), hbm_temp_c=round(37.0 + 0.46 * util, 0),
            power_w=round(118.0 + 5.6 * util, 1), sm_clock_mhz=1980.0, throttle_reasons=0, pcie_gen_current=5,
            processes=(proc,))

    def leaf_flaps(self, t: float) -> tuple[int, float]:
        """(downs, last down) of a port under the faulty leaf switch: it went down twice before the
        demo started and again with every down of the flapping node's link (the same switch)."""
        last = self.flap_last_down if self.flap_last_down is not None else self.t0 - 90.0
        return 2 + self.flap_downs, min(last, t)

    def ib_link(self, node: str, device: str) -> tuple[bool, float | None]:
        """(link up, rate override) for one port."""
        if node == self.p.flap_node and device == self.p.flap_dev:
            return self.flap_up, None
        if node == self.p.degraded_node and device == self.p.degraded_dev:
            return True, 200.0
        return True, None
