"""The simulated cluster: topology + workload + incidents, advanced by explicit time.

``advance(t)`` moves the world to ``t``; ``to_result(t)`` hands out one
:class:`SourceResult`. Frozen Structs are cached per node and rebuilt only for
nodes that changed or whose turn it is in the rolling refresh, so a tick at
16k nodes stays cheap.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import msgspec

from hpctui.base.sanitize import clean_optional, clean_text
from hpctui.model import (
    ControllerHealth,
    Event,
    Gpu,
    IbPort,
    K8sNodeInfo,
    Mount,
    Pod,
    Severity,
    SlurmJob,
    SlurmNodeInfo,
    SourceResult,
    Taint,
)
from hpctui.model.mount import QuotaUsage
from hpctui.model.scheduler import Reservation
from hpctui.sim import metrics
from hpctui.sim.fabric import build_sim_fabric
from hpctui.sim.incidents import DRAIN_REASON, NOTREADY_MESSAGE, Incidents, place, place_idle, place_stray
from hpctui.sim.pods import build_pods, crashloop_restarts, demo_volumes
from hpctui.sim.quotas import demo_quotas
from hpctui.sim.scheduler import HAMMER_USER, demo_reservations, demo_stats
from hpctui.sim.storage import demo_ceph, demo_object_stores
from hpctui.sim.topology import GFD_PRODUCT, GPU_SHORT, MIG_BALANCED, NodeSpec, build_topology
from hpctui.sim.workload import SimJob, Workload, idx_str

REFRESH_ALL_UP_TO = 512  # up to this many nodes every node is re-read every tick
REFRESH_SHARE = 16  # above it, a rolling 1/16 (at least 512) plus changed and incident nodes
DRAIN_FINISH_TICKS = 2  # running jobs on a node set to reboot ASAP end this many ticks later
REBOOT_TICKS = 2
DRIVER = "550.90.07"
READY_CONDITIONS = {"Ready": "True", "MemoryPressure": "False", "DiskPressure": "False", "PIDPressure": "False",
                    "NetworkUnavailable": "False"}
READY_MESSAGES = {"Ready": "kubelet is posting ready status"}


@dataclass(slots=True)
class NodeAdmin:
    """What admins and failures did to a node (Slurm flags/reason, K8s cordon)."""

    flags: frozenset[str] = frozenset()  # shared by every node without flags; replaced, never mutated
    reason: str | None = None
    reason_user: str | None = None
    reason_time: float | None = None
    down: bool = False
    cordoned: bool = False
    cordoned_at: float | None = None
    reboot_done_tick: int | None = None


class SimCluster:
    def __init__(self, size: int = 64, seed: int = 0, start_time: float = 0.0) -> None:
        self.size, self.seed, self.t0, self.t, self.tick = size, seed, start_time, start_time, 0
        self.topo = build_topology(size, seed)
        self.place = place(self.topo, seed)
        self.workload = Workload(self.topo, seed, start_time, exclude=frozenset({self.place.xid_node}),
                                 unavailable=self._unavailable_nodes())
        self.place = place_stray(self.place, self.topo, lambda n: self.workload.alloc[n].gpus)
        self.place = place_idle(self.place, self.topo, self._one_job_holds_all)
        self.incidents = Incidents(self.place, start_time, seed)
        self.incident_nodes = self.place.nodes
        self._reservations: tuple[Reservation, ...] | None = None
        self.volumes = demo_volumes(start_time)  # the pods' claims and storage classes (static)
        self._quota_user: str | None = None  # the demo's user over quota (most running jobs at the start)
        self._quotas: tuple[frozenset[str], tuple[QuotaUsage, ...]] | None = None
        self.fabric = build_sim_fabric(self.topo)
        self.ceph = {"ceph": demo_ceph()}  # HEALTH_WARN: an OSD down (hpctui.sim.storage)
        self.object_stores = demo_object_stores(start_time)  # one endpoint refusing auth, one healthy
        # the faulty leaf switch: the flapping node's; the first port of each node on it flaps as well
        self.leaf_flap_nodes = frozenset(self.fabric.peers(self.place.flap_node))
        rng = random.Random(f"phases-{seed}")
        self.specs: tuple[NodeSpec, ...] = self.topo.all_nodes
        self.phase = {n.name: rng.uniform(0.0, 6.283) for n in self.specs}
        self.ecc_agg = {n.name: rng.choice((0, 0, 0, 0, 1, 2, 7)) for n in self.specs}
        self.admin = {n.name: NodeAdmin() for n in self.specs}
        self._init_admin()
        self.sim_pods = build_pods(self.topo, seed, start_time, skip=frozenset({self.place.notready_node}))
        self.pod_gpus: dict[str, int] = {}
        for sp in self.sim_pods:
            if sp.pod.node is not None and sp.pod.phase == "Running":
                self.pod_gpus[sp.pod.node] = self.pod_gpus.get(sp.pod.node, 0) + sp.pod.gpus_requested
        self._slurm: dict[str, SlurmNodeInfo] = {}
        self._k8s: dict[str, K8sNodeInfo] = {}
        self._gpus: dict[str, tuple[Gpu, ...]] = {}
        self._ib: dict[str, tuple[IbPort, ...]] = {}
        self._mounts: dict[str, tuple[Mount, ...]] = {}
        self._last_read: dict[str, float] = {}
        self._jobs: tuple[SlurmJob, ...] = ()
        self._pods: tuple[Pod, ...] = tuple(sp.pod for sp in self.sim_pods)
        self._admin_dirty: set[str] = set()
        self._reboot_watch: set[str] = set()  # nodes with a reboot requested or under way
        self._order = {n.name: k for k, n in enumerate(self.specs)}
        self._counts: tuple[tuple[SlurmJob, ...], int, int] | None = None  # jobs -> (running, pending)
        self._cursor = 0
        # MIG layout per GPU (None: MIG off); changed by the MIG wizard after a short delay
        self.mig: dict[str, list[tuple[str, ...] | None]] = {}
        self.mig_label: dict[str, str] = {}
        self.mig_pending: dict[str, tuple[float, dict[int, tuple[str, ...] | None], str]] = {}
        for spec in self.specs:
            if spec.n_gpus and spec.gpu_model:
                on = tuple(p for p, _ in MIG_BALANCED[spec.gpu_model]) if spec.mig else None
                self.mig[spec.name] = [on] * spec.n_gpus
                self.mig_label[spec.name] = "all-balanced" if spec.mig else "all-disabled"
        for spec in self.specs:
            self._rebuild_slurm(spec)
            self._rebuild_k8s(spec)
            self._read_node(spec, start_time)
        self.workload.dirty_nodes.clear()
        self._refresh_jobs()

    def _one_job_holds_all(self, name: str) -> bool:
        """One running single-node job holds every GPU of node ``name`` (the idle-job incident's node)."""
        alloc = self.workload.alloc[name]
        if len(alloc.jobs) != 1 or len(alloc.gpus) < 8:
            return False
        job = self.workload.jobs.get(next(iter(alloc.jobs)))
        return job is not None and job.state == "RUNNING" and job.num_nodes == 1

    def _unavailable_nodes(self) -> tuple[str, ...]:
        """What the showcase ReqNodeNotAvail job asked for and cannot get: the drained Xid node and
        the first node of its partition that the ``k8s`` reservation holds."""
        xid = self.topo.by_name[self.place.xid_node]
        reserved = [n.name for n in self.topo.gpu_nodes if n.k8s_reserved and n.partitions[0] == xid.partitions[0]]
        return (xid.name, *reserved[:1])

    def _init_admin(self) -> None:
        p = self.place
        xid = self.admin[p.xid_node]
        xid.flags |= {"DRAIN"}
        xid.reason, xid.reason_user, xid.reason_time = DRAIN_REASON, "root", self.t0 - 1800
        for spec in self.topo.gpu_nodes:
            if spec.k8s_reserved:
                self.admin[spec.name].flags |= {"RESERVED"}

    # -- time ----------------------------------------------------------------------
    def advance(self, t: float) -> None:
        """One tick at time ``t`` (never backwards)."""
        t = max(t, self.t)
        self.tick += 1
        self.workload.advance(t, self.tick, self.schedulable)
        self.incidents.step(t)
        self._reboots(t)
        self._crashloops(t)
        self._mig_apply(t)
        dirty = self.workload.dirty_nodes | self._admin_dirty
        self.workload.dirty_nodes = set()
        self._admin_dirty = set()
        for name in dirty:
            spec = self.topo.by_name[name]
            self._rebuild_slurm(spec)
            self._rebuild_k8s(spec)
        refresh = dirty | self.incident_nodes
        n = len(self.specs)
        chunk = n if n <= REFRESH_ALL_UP_TO else max(REFRESH_ALL_UP_TO, n // REFRESH_SHARE)
        for k in range(chunk):
            refresh.add(self.specs[(self._cursor + k) % n].name)
        self._cursor = (self._cursor + chunk) % n
        for name in sorted(refresh):
            self._read_node(self.topo.by_name[name], t)
        self._refresh_jobs()
        self.t = t

    def schedulable(self, name: str) -> bool:
        spec, adm = self.topo.by_name[name], self.admin[name]
        return not (adm.down or adm.flags & {"DRAIN", "REBOOT_REQUESTED", "REBOOT_ISSUED", "MAINTENANCE"}
                    or spec.k8s_reserved or self.mig_on(name))

    def mig_on(self, name: str) -> bool:
        return any(p is not None for p in self.mig.get(name, ()))

    def set_mig(self, name: str, gpus: dict[int, tuple[str, ...] | None], label: str, t: float,
                delay_s: float) -> None:
        """Start a MIG layout change: it shows (and the node's GRES/labels follow) ``delay_s`` later;
        meanwhile the GPU Operator label state reads ``pending``."""
        self.mig_pending[name] = (t + delay_s, dict(gpus), label)
        self.mig_label[name] = label
        self.mark(name)
        self._event(t, "demo", f"node/{name}", Severity.INFO, f"MIG reconfiguration to {label} started")
        if delay_s <= 0:
            self._mig_apply(t)

    def _mig_apply(self, t: float) -> None:
        for name, (due, gpus, label) in list(self.mig_pending.items()):
            if due > t:
                continue
            del self.mig_pending[name]
            for i, profiles in gpus.items():
                if 0 <= i < len(self.mig[name]):
                    self.mig[name][i] = profiles
            self.mark(name)
            self._read_node(self.topo.by_name[name], t)
            self._event(t, "demo", f"node/{name}", Severity.INFO, f"MIG layout {label} applied")

    def _reboots(self, t: float) -> None:
        # only nodes a reboot was asked for (not all 20k every tick), in node order as before
        for name in sorted(self._reboot_watch, key=self._order.__getitem__):
            adm = self.admin[name]
            if "REBOOT_REQUESTED" in adm.flags and not self.workload.alloc[name].jobs:
                adm.flags -= {"REBOOT_REQUESTED"}
                adm.flags |= {"REBOOT_ISSUED"}
                adm.reboot_done_tick = self.tick + REBOOT_TICKS
                self._admin_dirty.add(name)
                self._event(t, "slurm", f"node/{name}", Severity.INFO, "reboot issued")
            elif adm.reboot_done_tick is not None and self.tick >= adm.reboot_done_tick:
                adm.flags -= {"REBOOT_ISSUED", "DRAIN"}
                adm.reason = adm.reason_user = adm.reason_time = None
                adm.down, adm.reboot_done_tick = False, None
                self.incidents.rebooted(name, t)
                self._admin_dirty.add(name)
                self._event(t, "slurm", f"node/{name}", Severity.INFO, "rebooted, back in service")
            if "REBOOT_REQUESTED" not in adm.flags and adm.reboot_done_tick is None:
                self._reboot_watch.discard(name)

    def _crashloops(self, t: float) -> None:
        changed = False
        for sp in self.sim_pods:
            if sp.crashloop_base is not None:
                restarts = crashloop_restarts(sp.crashloop_base, t, self.t0)
                if restarts != sp.pod.restarts:
                    sp.pod = msgspec.structs.replace(sp.pod, restarts=restarts)
                    changed = True
        if changed:
            self._pods = tuple(sp.pod for sp in self.sim_pods)

    def _refresh_jobs(self) -> None:
        if self.workload.changed:
            self._jobs = tuple(j.to_struct() for j in self.workload.jobs.values())
            self.workload.changed = False

    # -- per-node readings ---------------------------------------------------------
    def _busy(self, spec: NodeSpec) -> set[int] | frozenset[int]:
        if spec.k8s_reserved:
            return set(range(min(spec.n_gpus, self.pod_gpus.get(spec.name, 0))))
        return self.workload.alloc[spec.name].gpus

    def _read_node(self, spec: NodeSpec, t: float) -> None:
        name, phase = spec.name, self.phase[spec.name]
        dt = max(0.0, t - self._last_read.get(name, t))
        self._last_read[name] = t
        busy = self._busy(spec)
        incident = name in self.incident_nodes
        if spec.n_gpus:
            layout = self.mig.get(name)
            old_gpus = self._gpus.get(name)
            gpus = []
            for i, g in enumerate(metrics.gpu_readings(spec, t, busy, phase, self.ecc_agg[name], layout)):
                if incident:
                    g = self.incidents.patch_gpu(g, t)
                if old_gpus is not None and g == old_gpus[i]:
                    g = old_gpus[i]  # unchanged: the same object, so the app can skip it
                gpus.append(g)
            # always a new tuple: the store takes a history sample per new tuple (a reading happened)
            self._gpus[name] = tuple(gpus)
        self._read_ib(spec, t, dt, bool(busy) or bool(self.workload.alloc[name].jobs))
        mounts = metrics.mount_readings(
            name, t, phase, slow=name == self.place.slow_node,
            hung_target="/lustre/scratch" if name == self.place.hung_node else None)
        old_mounts = self._mounts.get(name)
        if old_mounts is None or mounts != old_mounts:
            if old_mounts is not None:
                mounts = tuple(o if o == m else m for o, m in zip(old_mounts, mounts, strict=True))
            self._mounts[name] = mounts

    def _read_ib(self, spec: NodeSpec, t: float, dt: float, busy: bool) -> None:
        """Advance the node's port counters by ``dt`` and store its ports.

        A port's counters live in its IbPort's own dict (no second copy); its deltas hold the
        counters that moved, like the probe's (an empty read shares one all-zero dict). A port
        whose reading did not change is kept as the same object, and so is the node's tuple."""
        name, phase = spec.name, self.phase[spec.name]
        olds = self._ib.get(name)
        incident = name in self.incident_nodes
        flap_here = name == self.place.flap_node
        leaf_flap = name in self.leaf_flap_nodes
        ports: list[IbPort] = []
        sin, replace = math.sin, msgspec.structs.replace
        W53, W13 = metrics.W53, metrics.W13
        same = olds is not None
        for k, dev in enumerate(spec.ib_devices):
            old_port = olds[k] if olds is not None else None
            old = old_port.counters if old_port is not None else metrics.initial_ib_counters(phase, k)
            up, rate = self.incidents.ib_link(name, dev) if incident else (True, None)
            new = old
            deltas = metrics.ZERO_DELTAS
            if up:
                # metrics.ib_traffic() and the wait counter, written out (same arithmetic)
                if busy:
                    ph = phase + k
                    octets = (0.55 + 0.35 * sin(t * W53 + ph)) * (rate or spec.ib_max_gbps) * 1e9 / 8.0 * dt
                    words, pkts = int(octets / 4), int(octets / 4096)
                    wait = int(dt * 40 * (1.0 + sin(t * W13 + ph)))
                else:
                    octets = 0.002 * (rate or spec.ib_max_gbps) * 1e9 / 8.0 * dt
                    words, pkts, wait = int(octets / 4), int(octets / 4096), 0
                if words or pkts or wait:
                    new = old.copy()
                    rcv = words - words // 50
                    new["port_xmit_data"] += words
                    new["port_rcv_data"] += rcv
                    new["port_xmit_packets"] += pkts
                    new["port_rcv_packets"] += pkts
                    if wait:
                        new["port_xmit_wait"] += wait
                        deltas = {"port_xmit_wait": wait, "port_xmit_data": words, "port_rcv_data": rcv,
                                  "port_xmit_packets": pkts, "port_rcv_packets": pkts}
                    else:
                        deltas = {"port_xmit_data": words, "port_rcv_data": rcv,
                                  "port_xmit_packets": pkts, "port_rcv_packets": pkts}
                    if not (words and rcv and pkts):  # a trickle: only what moved
                        deltas = {c: v for c, v in deltas.items() if v}
            flaps, last_down = 0, None
            if flap_here and dev == self.place.flap_dev:
                moved = {c: v - old[c] for c, v in self.incidents.flap_counters.items() if v != old[c]}
                if moved:
                    if new is old:
                        new = old.copy()
                    new.update(self.incidents.flap_counters)
                    deltas = dict(moved) if deltas is metrics.ZERO_DELTAS else {**moved, **deltas}
                # the probe's flap memory: the port stays listed as flapping while it is up again
                flaps, last_down = self.incidents.flap_downs, self.incidents.flap_last_down
            elif leaf_flap and k == 0:  # the leaf switch flaps every node's port on it
                flaps, last_down = self.incidents.leaf_flaps(t)
            if (old_port is not None and new is old and deltas is old_port.deltas
                    and old_port.flaps == flaps and old_port.last_down == last_down
                    and old_port.is_up == up and old_port.rate_gbps == (spec.ib_max_gbps if rate is None else rate)):
                ports.append(old_port)  # nothing moved: the same object
                continue
            same = False
            ports.append(replace(metrics.port_template(spec.ib_max_gbps, up, rate), node=name, device=dev,
                                 counters=new, deltas=deltas, flaps=flaps, last_down=last_down))
        if not same:
            self._ib[name] = tuple(ports)

    def _rebuild_slurm(self, spec: NodeSpec) -> None:
        a, adm = self.workload.alloc[spec.name], self.admin[spec.name]
        if adm.down:
            base = "DOWN"
        elif a.cpus >= spec.cpus:
            base = "ALLOCATED"
        elif a.cpus > 0:
            base = "MIXED"
        else:
            base = "IDLE"
        short = GPU_SHORT.get(spec.gpu_model or "", "")
        gres: str | None
        mig_on = self.mig_on(spec.name)
        if mig_on and spec.gpu_model:
            counts: dict[str, int] = {}
            for profiles in self.mig[spec.name]:
                for prof in profiles or ():
                    counts[prof] = counts.get(prof, 0) + 1
            gres = ",".join(f"gpu:{p}:{c}" for p, c in counts.items())
            total = sum(counts.values())
        else:
            gres = f"gpu:{short}:{spec.n_gpus}(S:0-1)" if spec.n_gpus else None
            total = spec.n_gpus
        used = None
        if spec.n_gpus and not mig_on:
            used = f"gpu:{short}:{len(a.gpus)}(IDX:{idx_str(a.gpus) if a.gpus else 'N/A'})"
        mem_alloc = sum(
            self.workload.jobs[j].cpus_per_node * (spec.mem_mb // spec.cpus)
            for j in a.jobs if j in self.workload.jobs)
        self._slurm[spec.name] = SlurmNodeInfo(
            base_state=base, flags=adm.flags, reason=clean_optional(adm.reason),
            reason_user=clean_optional(adm.reason_user),
            reason_time=adm.reason_time, partitions=spec.partitions, features=spec.features,
            cpus_total=spec.cpus, cpus_alloc=a.cpus, memory_total_mb=spec.mem_mb, memory_alloc_mb=mem_alloc,
            gpus_total=total if spec.n_gpus else None, gpus_alloc=len(a.gpus) if spec.n_gpus else None,
            gpu_type=short or None, gres=gres, gres_used=used,
        )

    def _rebuild_k8s(self, spec: NodeSpec) -> None:
        adm = self.admin[spec.name]
        notready = spec.name == self.place.notready_node
        if notready:
            conditions = {"Ready": "Unknown", "MemoryPressure": "Unknown", "DiskPressure": "Unknown",
                          "PIDPressure": "Unknown", "NetworkUnavailable": "False"}
            messages = {"Ready": NOTREADY_MESSAGE}
        else:  # every ready node shares these two (frozen readings: never mutated)
            conditions, messages = READY_CONDITIONS, READY_MESSAGES
        taints: list[Taint] = []
        if notready:
            taints += [Taint(key="node.kubernetes.io/unreachable", effect="NoSchedule"),
                       Taint(key="node.kubernetes.io/unreachable", effect="NoExecute")]
        if adm.cordoned:
            taints.append(Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule",
                                time_added=adm.cordoned_at))
        labels = {"kubernetes.io/hostname": spec.name, "kubernetes.io/os": "linux"}
        capacity: int | None = None
        allocatable: int | None = None
        if spec.gpu_model:
            labels.update({
                "nvidia.com/gpu.product": GFD_PRODUCT[spec.gpu_model], "nvidia.com/gpu.count": str(spec.n_gpus),
                "nvidia.com/gpu.memory": str(spec.gpu_mem_mib), "nvidia.com/gpu.present": "true",
                "nvidia.com/mig.capable": "true", "nvidia.com/mig.strategy": "mixed",
                "nvidia.com/mig.config": self.mig_label.get(spec.name, "all-disabled"),
                "nvidia.com/mig.config.state": "pending" if spec.name in self.mig_pending else "success", "nvidia.com/cuda.driver-version.full": DRIVER,
            })
            mig_on = self.mig_on(spec.name)
            capacity = allocatable = sum(p is None for p in self.mig[spec.name]) if mig_on else spec.n_gpus
            mig_cap: dict[str, int] = {}
            for profiles in self.mig[spec.name]:
                for prof in profiles or ():
                    mig_cap[prof] = mig_cap.get(prof, 0) + 1
            for prof, n in mig_cap.items():
                labels[f"nvidia.com/mig-{prof}.count"] = str(n)
            if not mig_on and spec.name == self.place.xid_node and self.incidents.xid_active:
                allocatable = spec.n_gpus - 1  # the device plugin marks the lost GPU unhealthy
        self._k8s[spec.name] = K8sNodeInfo(
            name=spec.name, conditions=conditions, condition_messages=messages, taints=tuple(taints),
            labels=labels, unschedulable=adm.cordoned, gpu_capacity=capacity, gpu_allocatable=allocatable,
        )

    # -- output --------------------------------------------------------------------------
    def controller(self, t: float) -> ControllerHealth:
        if self._counts is None or self._counts[0] is not self._jobs:
            states = [j.state for j in self._jobs]
            self._counts = (self._jobs, states.count("RUNNING"), states.count("PENDING"))
        _, running, pending = self._counts
        w = metrics.wave(t, 0.3, 60.0)
        threads, bf_s, sched_us = 3 + int(2 + 2 * w), round(0.8 + 0.3 * w, 3), round(1800 + 400 * w, 0)
        return ControllerHealth(
            reachable=True, server_thread_count=threads, agent_queue_size=0,
            jobs_pending=pending, jobs_running=running, last_backfill_cycle_s=bf_s,
            mean_schedule_cycle_us=sched_us, detail="demo slurmctld (primary) UP",
            stats=demo_stats(t, self.t0, threads, pending, running, bf_s, sched_us),
        )

    def job(self, job_id: str) -> SlurmJob | None:
        """The job of the last tick with this id (``1234`` or an array task's ``1234_5``)."""
        return next((j for j in self._jobs if j.display_id == job_id or str(j.job_id) == job_id), None)

    def reservations(self) -> tuple[Reservation, ...]:
        """The scripted reservations (hpctui.sim.scheduler): maintenance over the drained Xid node, and k8s."""
        if self._reservations is None:
            maint = self._unavailable_nodes()[:1] + tuple(self._neighbour(self.place.xid_node))
            k8s = [n.name for n in self.topo.gpu_nodes if n.k8s_reserved]
            self._reservations = demo_reservations(self.t0, maint, k8s)
        return self._reservations

    def quotas(self) -> tuple[QuotaUsage, ...]:
        """What a quota sweep would report now: the users with running jobs, one of them over quota."""
        running = [j.user for j in self._jobs if j.state == "RUNNING" and j.user]
        others = sorted(set(running) - {HAMMER_USER})  # judy already shows the slurmctld finding
        if self._quota_user is None and others:
            self._quota_user = max(others, key=running.count)
        owners = frozenset(running)
        if self._quotas is None or self._quotas[0] != owners:
            self._quotas = (owners, demo_quotas(owners, self._quota_user, self.seed))
        return self._quotas[1]

    def _neighbour(self, name: str) -> list[str]:
        """The next plain GPU node after ``name`` in the same partition (none at the end)."""
        spec = self.topo.by_name[name]
        same = [n.name for n in self.topo.gpu_nodes if n.partitions[:1] == spec.partitions[:1] and not n.k8s_reserved]
        i = same.index(name) if name in same else -1
        return same[i + 1:i + 2]

    def to_result(self, t: float, source: str = "demo") -> SourceResult:
        """Everything, as one collection; events are those since the previous call."""
        return SourceResult(
            source=source, time=t, slurm_nodes=dict(self._slurm), slurm_jobs=self._jobs,
            k8s_nodes=dict(self._k8s), pods=self._pods, gpus=dict(self._gpus), ib=dict(self._ib),
            mounts=dict(self._mounts), events=tuple(self.incidents.drain_events()), controller=self.controller(t),
            fabric=self.fabric, quotas=self.quotas(), volumes=self.volumes, ceph=self.ceph,
            object_stores=self.object_stores,
        )

    def _event(self, t: float, source: str, obj: str, sev: Severity, message: str) -> None:
        self.incidents.events.append(Event(time=t, source=source, object=obj, severity=sev,
                                                 message=clean_text(message)))

    # -- node actions (Slurm / K8s semantics, FACTS §3); each returns an error or None ---
    def mark(self, name: str) -> None:
        self._admin_dirty.add(name)

    def drain(self, name: str, reason: str, user: str, t: float) -> str | None:
        adm = self.admin[name]
        adm.flags |= {"DRAIN"}
        adm.reason, adm.reason_user, adm.reason_time = reason, user, t
        # As the preview says: running jobs finish first (at their own end), nothing is killed;
        # the node shows DRAINING until they have, then DRAINED.
        self.mark(name)
        self._event(t, "slurm", f"node/{name}", Severity.WARNING, f"drained by {user}: {reason}")
        return None

    def resume(self, name: str, t: float) -> str | None:
        adm = self.admin[name]
        if not (adm.down or adm.flags & {"DRAIN", "REBOOT_REQUESTED", "NOT_RESPONDING"}):
            return "Invalid node state specified"
        adm.flags -= {"DRAIN", "REBOOT_REQUESTED", "NOT_RESPONDING"}
        adm.down = False
        adm.reason = adm.reason_user = adm.reason_time = None
        self.mark(name)
        self._event(t, "slurm", f"node/{name}", Severity.INFO, "resumed")
        return None

    def reboot(self, name: str, reason: str, user: str, t: float) -> str | None:
        adm = self.admin[name]
        adm.flags |= {"DRAIN", "REBOOT_REQUESTED"}
        self._reboot_watch.add(name)
        adm.reason = f"Reboot ASAP: {reason}" if reason else "Reboot ASAP"
        adm.reason_user, adm.reason_time = user, t
        for job in self.workload.running_on(name):
            if job.finish_tick is None:
                job.finish_tick = self.tick + DRAIN_FINISH_TICKS
        self.mark(name)
        self._event(t, "slurm", f"node/{name}", Severity.WARNING, f"reboot ASAP requested by {user}")
        return None

    def cancel_reboot(self, name: str, t: float) -> str | None:
        adm = self.admin[name]
        if "REBOOT_REQUESTED" not in adm.flags:
            return f"node {name} has no pending reboot"
        adm.flags -= {"REBOOT_REQUESTED"}
        if adm.reason and adm.reason.startswith("Reboot ASAP"):
            adm.flags -= {"DRAIN"}
            adm.reason = adm.reason_user = adm.reason_time = None
        self.mark(name)
        self._event(t, "slurm", f"node/{name}", Severity.INFO, "reboot cancelled")
        return None

    def cordon(self, name: str, on: bool, t: float) -> str | None:
        adm = self.admin[name]
        if adm.cordoned != on:
            adm.cordoned = on
            adm.cordoned_at = t if on else None
            self.mark(name)
            self._event(t, "k8s", f"node/{name}", Severity.INFO, "cordoned" if on else "uncordoned")
        return None

    # -- job actions -------------------------------------------------------------------
    def requeue(self, job: SimJob, hold: bool, t: float) -> str | None:
        if job.state == "PENDING":
            return "Job is pending execution"
        if job.state != "RUNNING":
            return "Job/step already completing or completed"
        if not job.batch:
            return "Only batch jobs are accepted or processed"
        if not job.requeueable:
            return "Requested operation is presently disabled"
        self.workload.requeue(job, self.tick, hold=hold)
        self._event(t, "slurm", f"job/{job.display_id}", Severity.INFO, "requeued" + (" and held" if hold else ""))
        return None

    def hold(self, job: SimJob, t: float) -> str | None:
        if job.state != "PENDING":
            return "Job is no longer pending execution" if job.state == "RUNNING" else \
                "Job/step already completing or completed"
        job.reason, job.priority = "JobHeldUser", 0
        self.workload.touch(job)
        self._event(t, "slurm", f"job/{job.display_id}", Severity.INFO, "held")
        return None

    def release(self, job: SimJob, t: float) -> str | None:
        if job.state != "PENDING":
            return "Job is no longer pending execution" if job.state == "RUNNING" else \
                "Job/step already completing or completed"
        if job.held:
            job.reason, job.priority = "Priority", 10_000
            self.workload.touch(job)
            self._event(t, "slurm", f"job/{job.display_id}", Severity.INFO, "released")
        return None

    def cancel(self, job: SimJob, t: float) -> str | None:
        if job.state not in ("PENDING", "RUNNING"):
            return "Job/step already completing or completed"
        # between ticks: stay visible for the next collect, gone the one after
        self.workload.finish(job, "CANCELLED", t, self.tick + 1, refill=False)
        self._event(t, "slurm", f"job/{job.display_id}", Severity.INFO, "cancelled")
        return None

