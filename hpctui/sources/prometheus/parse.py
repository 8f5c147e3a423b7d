"""Prometheus answers → the model. UI-free and synchronous (runs in a worker thread).

One :class:`Collector` per refresh: every family's samples are folded into per-GPU,
per-port, per-mount and per-node records, then :meth:`Collector.build` makes the frozen
model objects. Label values pass through ``clean_text`` once (cached); NaN/±Inf are
"not available"; duplicate series for one object keep the first and count the rest;
a series without the labels that identify it is dropped and counted.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hpctui.base.digits import is_uint
from hpctui.base.sanitize import clean_text
from hpctui.model import Gpu, GpuProcess, IbPort, MigInstance, Mount, MountState, NodeResources
from hpctui.model.validate import (
    BITMASK,
    BYTE_RATE,
    BYTES,
    CLOCK_MHZ,
    COUNT,
    COUNTER,
    DCGM_BLANKS,
    EPOCH_S,
    FLAG,
    LOAD,
    MEMORY_MIB,
    PERCENT,
    PERCENT_LOOSE,
    POWER_W,
    RATIO,
    SMALL_ENUM,
    TEMP_C,
    XID,
    Bounds,
    Drops,
    ib_rate_ok,
    is_node_name,
)
from hpctui.sources.prometheus.client import Sample
from hpctui.sources.prometheus.queries import (
    FS_GAUGES,
    GPU_GAUGES,
    GPU_SPARSE,
    IB_COUNTERS,
    IB_ERROR_COUNTERS,
    INFO_METRICS,
    RESOURCE_GAUGES,
    THROTTLE_NAMES,
    V1_NAMES,
)

IB_STATE = {1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
IB_PHYS = {1: "Sleep", 2: "Polling", 3: "Disabled", 4: "PortConfigurationTraining", 5: "LinkUp",
           6: "LinkErrorRecovery", 7: "Phy Test"}
MIB = 1024.0 * 1024.0

# The plausible range of every field a handler fills (hpctui.model.validate), and the metric it is named
# by in a warning. A value outside is N/A plus one line in the source's warnings.
FIELD_BOUNDS: dict[str, Bounds] = {
    "util": PERCENT, "mem_util": PERCENT, "temp": TEMP_C, "hbm_temp": TEMP_C, "fb_used": MEMORY_MIB,
    "fb_free": MEMORY_MIB, "fb_reserved": MEMORY_MIB, "power": POWER_W, "power_limit": POWER_W,
    "sm_clock": CLOCK_MHZ, "mig_mode": FLAG, "remap_failure": FLAG, "remap_pending": FLAG, "xid": XID,
    "throttle": BITMASK, "nvl_bw": BYTE_RATE, "state": SMALL_ENUM, "phys": SMALL_ENUM,
    "load1": LOAD, "load5": LOAD, "load15": LOAD, "mem_total": BYTES, "mem_available": BYTES,
    "swap_total": BYTES, "swap_free": BYTES, "cpu_count": COUNT, "cpu_busy": PERCENT_LOOSE,
    "disk_busy": PERCENT_LOOSE, "nic_rx": BYTE_RATE, "nic_tx": BYTE_RATE, "nic_errors": COUNTER,
    "size": BYTES, "avail": BYTES, "readonly": FLAG, "device_error": FLAG,
}  # everything else (counters, increase() of counters) is a COUNTER
PROF_BYTES = Bounds(0.0, 1e13)  # DCGM_FI_PROF_*_BYTES are bytes/s; the other PROF fields are ratios
FIELD_METRIC: dict[str, str] = {
    **dict((*GPU_GAUGES, *GPU_SPARSE)), "throttle": THROTTLE_NAMES.split("|")[0],
    "nvl_bw": "rate(DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL)", "state": "node_infiniband_state_id",
    "phys": "node_infiniband_physical_state_id", "rate": "node_infiniband_rate_bytes_per_second",
    **{f: m for m, f in (*RESOURCE_GAUGES.items(), *FS_GAUGES.items())},
    **{f"c:{f}": m for m, f in IB_COUNTERS.items()}, **{f"d:{f}": f"increase({m})" for m, f in IB_COUNTERS.items()},
    "cpu_count": "count(node_cpu_seconds_total)", "cpu_busy": "rate(node_cpu_seconds_total)",
    "disk_busy": "rate(node_disk_io_time_seconds_total)", "nic_rx": "rate(node_network_receive_bytes_total)",
    "nic_tx": "rate(node_network_transmit_bytes_total)", "nic_errors": "increase(node_network_*_errs_total)",
}
# Field -> the families its value came from, in the order a follow-up prefers them (gauges first:
# they answer for every GPU, the sparse families only where non-zero).
FOLLOWUP_FIELDS: dict[str, tuple[str, ...]] = {
    **{f: (m,) for f, m in GPU_GAUGES}, "throttle": tuple(THROTTLE_NAMES.split("|")), **{f: (m,) for f, m in GPU_SPARSE}}


GpuKey = tuple[str, int, int | None]  # node, gpu index, GPU instance id (MIG) or None


class NodeNamer:
    """Label values → cluster node name: first non-empty node label, the rewrite rule, the node map.

    Cached per raw label tuple (a few thousand nodes, hundreds of thousands of series). Also
    remembers which raw label value a node came from, for range queries about that node.
    """

    def __init__(self, labels: list[str], pattern: str, replace: str,
                 to_cluster: Callable[[str], str] | None = None) -> None:
        self.labels = tuple(labels)
        self.pattern = re.compile(pattern)
        self.replace = replace
        self.to_cluster = to_cluster
        self._cache: dict[tuple[str | None, ...], str | None] = {}
        self.bad: dict[tuple[str | None, ...], str] = {}  # label tuple -> the invalid node name it gave
        self.origin: dict[str, dict[str, set[str]]] = {}  # node -> label -> raw values it came from
        self.gpu_keys: dict[tuple[str | None, ...], GpuKey | None] = {}  # Collector's caches, per label tuple
        self.port_keys: dict[tuple[str | None, ...], tuple[str, str, int] | None] = {}

    def trim(self, limit: int = 1_000_000) -> None:
        """Forget cached label tuples when too many accumulated (nodes and GPUs renamed over weeks)."""
        for cache in (self._cache, self.gpu_keys, self.port_keys, self.bad):
            if len(cache) > limit:
                cache.clear()

    def rejected(self, metric: Mapping[str, str]) -> str | None:
        """The invalid node name ``metric``'s labels gave (so it has no node), or None."""
        return self.bad.get(tuple(map(metric.get, self.labels))) if self.bad else None

    def __call__(self, metric: Mapping[str, str]) -> str | None:
        key = tuple(map(metric.get, self.labels))
        try:
            return self._cache[key]
        except KeyError:
            pass
        name: str | None = None
        for label, raw in zip(self.labels, key, strict=True):  # raw is None for an absent label
            if raw:
                m = self.pattern.match(raw)
                try:
                    candidate = m.expand(self.replace) if m else raw
                except (re.error, IndexError):
                    candidate = raw
                candidate = clean_text(candidate.strip())
                if candidate and self.to_cluster is not None:
                    candidate = self.to_cluster(candidate)
                if candidate and not is_node_name(candidate):  # the one node-name rule (hpctui.model.validate)
                    self.bad[key] = candidate
                elif candidate:
                    name = candidate
                    self.origin.setdefault(name, {}).setdefault(label, set()).add(raw)
                break
        self._cache[key] = name
        return name




@dataclass
class _GpuInfo:
    uuid: str | None = None
    profile: str | None = None
    model: str | None = None
    pci: str | None = None
    pods: list[tuple[str, str | None]] = field(default_factory=list)  # (namespace/pod, container)


class Collector:
    def __init__(self, namer: NodeNamer, exporter_pod: str = "dcgm-exporter") -> None:
        self.namer = namer
        self.exporter_pod = re.compile(exporter_pod) if exporter_pod else None
        # a field is None when its series answered without a usable value (NaN, a DCGM blank,
        # implausible): N/A, which a sparse family's "absent means 0" must not overwrite
        self.gpu: dict[GpuKey, dict[str, float | None]] = {}
        self.info: dict[GpuKey, _GpuInfo] = {}
        # rate() over a range still answers for series that just went stale: these values never
        # make a GPU exist on their own, they only complete GPUs the instant queries returned
        self.gpu_rates: dict[GpuKey, dict[str, float]] = {}
        self.ib: dict[tuple[str, str, int], dict[str, float]] = {}
        self.ib_deltas: dict[tuple[str, str, int], dict[str, int]] = {}
        self.ib_have: dict[tuple[str, str, int], int] | None = None  # port -> its error counter families
        self.fs: dict[tuple[str, str], dict[str, object]] = {}
        self.res: dict[str, dict[str, float]] = {}
        self.res_dev: dict[str, dict[str, dict[str, float]]] = {}
        # Nodes with a current sample (instant queries honour staleness markers; rate()/increase()
        # over a range still answer for a node whose exporter just stopped): None = not asked/failed.
        self.gpu_time: dict[str, float] = {}
        self.node_time: dict[str, float] = {}
        self.gpu_time_ok = False
        self.node_time_ok = False
        self.present: set[str] = set()  # sparse families the exporters have (answers to the PRESENCE queries)
        self.dropped = 0  # series without identifying labels
        self.duplicates = 0
        self.not_numbers = 0  # NaN / Inf / unparsable
        self.drops = Drops()  # implausible values, series whose node name is invalid
        self._clean: dict[str, str] = {}
        self._gpu_labels = (*namer.labels, "gpu", "GPU_I_ID")
        self._port_labels = (*namer.labels, "device", "port")
        self._gpu_keys = namer.gpu_keys  # kept across refreshes: pure functions of the labels
        self._port_keys = namer.port_keys

    # -- helpers -------------------------------------------------------------------
    def clean(self, value: str | None) -> str | None:
        if not value:
            return None
        c = self._clean.get(value)
        if c is None:
            c = self._clean[value] = clean_text(value)
        return c

    def _value(self, s: Sample) -> float | None:
        try:
            v = float(s.value[1])  # type: ignore[index]
        except (TypeError, ValueError, OverflowError):
            v = math.nan
        if v - v != 0.0:  # NaN or ±Inf (or unparsable): not available
            self.not_numbers += 1
            return None
        return v

    def _checked(self, s: Sample, fld: str, bounds: Bounds, node: str) -> float | None:
        """:meth:`_value`, or None (recorded in ``drops``) when outside ``bounds`` for ``fld``."""
        v = self._value(s)
        if v is None or bounds.ok(v):
            return v
        self.drops.value(FIELD_METRIC.get(fld, fld), v, node)
        return None

    def _no_node(self, m: Mapping[str, str]) -> None:
        """A series without a node: its node name was invalid (named once), or it had no node label."""
        bad = self.namer.rejected(m)
        if bad is not None:
            self.drops.bad_name(bad)
        else:
            self.dropped += 1

    # Keys are cached per raw label tuple: a refresh has ~10 series per GPU and port, and the
    # same few thousand label tuples come back in every family.
    def _gpu_key(self, m: Mapping[str, str], count: bool = True) -> GpuKey | None:
        raw = tuple(map(m.get, self._gpu_labels))
        try:
            key = self._gpu_keys[raw]
        except KeyError:
            key = self._gpu_keys[raw] = self._make_gpu_key(m)
        if key is None and count:
            self._no_node(m)
        return key

    def _make_gpu_key(self, m: Mapping[str, str]) -> GpuKey | None:
        node = self.namer(m)
        gpu = m.get("gpu")
        if node is None or gpu is None or not is_uint(gpu):
            return None
        gi = m.get("GPU_I_ID")
        return node, int(gpu), int(gi) if gi and is_uint(gi) else None

    def _port_key(self, m: Mapping[str, str]) -> tuple[str, str, int] | None:
        raw = tuple(map(m.get, self._port_labels))
        try:
            key = self._port_keys[raw]
        except KeyError:
            key = self._port_keys[raw] = self._make_port_key(m)
        if key is None:
            self._no_node(m)
        return key

    def _make_port_key(self, m: Mapping[str, str]) -> tuple[str, str, int] | None:
        node, dev, port = self.namer(m), m.get("device"), m.get("port")
        if node is None or not dev or not port or not is_uint(port):
            return None
        return node, self.clean(dev) or dev, int(port)

    # -- handlers, one per Family.target ----------------------------------------------
    def add(self, target: str, fld: str, samples: list[Sample]) -> None:
        HANDLERS[target](self, fld, samples)

    def _first(self, seen: set[Any], key: object) -> bool:
        """True the first time ``key`` is met in one family; a repeat (a duplicate series) is counted."""
        if key in seen:
            self.duplicates += 1
            return False
        seen.add(key)
        return True

    def _gpu(self, fld: str, samples: list[Sample]) -> None:
        seen: set[GpuKey] = set()
        bounds = FIELD_BOUNDS.get(fld, COUNTER)
        lo, hi, counter = bounds.lo, bounds.hi, bounds.integer  # inlined check: 11 families × every GPU
        for s in samples:
            key = self._gpu_key(s.metric)
            if key is None:
                continue
            if not self._first(seen, key):
                continue
            v = self._value(s)
            if v is not None and (not lo <= v <= hi or (counter and v in DCGM_BLANKS)):
                self.drops.value(FIELD_METRIC.get(fld, fld), v, key[0])
                v = None
            # the GPU exists even when this value is NaN: N/A (None), not absent
            self.gpu.setdefault(key, {})[fld] = v

    def _gpu_rate(self, fld: str, samples: list[Sample]) -> None:
        for s in samples:
            key = self._gpu_key(s.metric, count=False)  # may be a series gone stale: not worth a warning
            v = self._checked(s, fld, BYTE_RATE, key[0]) if key is not None else None
            if key is not None and v is not None:
                self.gpu_rates.setdefault(key, {})[fld] = v

    def _gpu_prof(self, _fld: str, samples: list[Sample]) -> None:
        seen: set[tuple[GpuKey, str]] = set()
        for s in samples:
            name = s.metric.get("__name__", "")
            key = self._gpu_key(s.metric)
            if key is None or not name.upper().startswith("DCGM_FI_PROF_"):  # 1.x: dcgm_fi_prof_*
                continue
            short = name[len("DCGM_FI_PROF_"):].lower()
            if not self._first(seen, (key, short)):
                continue
            v = self._checked(s, name, PROF_BYTES if short.endswith("_bytes") else RATIO, key[0])
            if v is not None:
                self.gpu.setdefault(key, {})["prof_" + short] = v

    def _gpu_info(self, _fld: str, samples: list[Sample]) -> None:
        for s in samples:
            m = s.metric
            key = self._gpu_key(m)
            if key is None:
                continue
            info = self.info.get(key)
            if info is None:
                info = self.info[key] = _GpuInfo(
                    uuid=self.clean(m.get("UUID") or m.get("uuid")), profile=self.clean(m.get("GPU_I_PROFILE")),
                    model=self.clean(m.get("modelName")), pci=self.clean(m.get("pci_bus_id")))
            pod, ns, ctr = m.get("exported_pod"), m.get("exported_namespace"), m.get("exported_container")
            if not pod:  # 1.x pod-gpu-metrics-exporter
                pod, ns, ctr = m.get("pod_name"), m.get("pod_namespace"), m.get("container_name")
            if not pod:  # scraped with honor_labels (or no service monitor): pod/namespace are the workload's
                pod, ns, ctr = m.get("pod"), m.get("namespace"), m.get("container")
                if pod and self.exporter_pod is not None and self.exporter_pod.search(pod):
                    pod = None  # the exporter's own pod (Prometheus' target labels), not a workload
            if pod:
                entry = (f"{self.clean(ns)}/{self.clean(pod)}" if ns else self.clean(pod) or "", self.clean(ctr))
                if entry not in info.pods:
                    info.pods.append(entry)

    def _gpu_ident(self, fld: str, samples: list[Sample]) -> None:
        """The follow-up answer (queries.identity_family): identity where the refresh had none,
        and each node's newest GPU sample time where XID_ERRORS gave none."""
        missing = [s for s in samples if self._gpu_key(s.metric, count=False) not in self.info]
        self._gpu_info(fld, missing)
        timed = set(self.gpu_time)
        for s in samples:
            node = self.namer(s.metric)
            v = self._checked(s, "timestamp()", EPOCH_S, node) if node is not None and node not in timed else None
            if node is not None and v is not None:
                self.gpu_time[node] = max(v, self.gpu_time.get(node, v))

    def followup_metrics(self) -> list[str]:
        """The families to ask :func:`~hpctui.sources.prometheus.queries.identity_family` about:
        for each GPU without identity, or on a node without a sample time, one family it answered
        in (a counters file without FB_USED and GPU_TEMP). Empty for a default counters file."""
        timed = self.gpu_time if self.gpu_time_ok else None
        out: set[str] = set()
        for key in self.gpu.keys() | self.info.keys():
            if key in self.info and (timed is None or key[0] in timed):
                continue
            rec = self.gpu.get(key, {})
            field = next((f for f in FOLLOWUP_FIELDS if f in rec), None)
            if field is not None:
                out.update(FOLLOWUP_FIELDS[field])
            elif any(f.startswith("prof_") for f in rec):
                out.add("DCGM_FI_PROF_" + next(f for f in rec if f.startswith("prof_"))[5:].upper())
            elif key in self.info:
                out.update(INFO_METRICS)
        return sorted(out)

    def _present(self, _fld: str, samples: list[Sample]) -> None:
        self.present.update(s.metric.get("__name__", "") for s in samples)

    def _time(self, out: dict[str, float], samples: list[Sample]) -> None:
        for s in samples:
            node = self.namer(s.metric)
            if node is None:
                self._no_node(s.metric)
                continue
            v = self._checked(s, "timestamp()", EPOCH_S, node)
            if v is not None:
                out[node] = max(v, out.get(node, v))

    def _gpu_time(self, _fld: str, samples: list[Sample]) -> None:
        self._time(self.gpu_time, samples)
        self.gpu_time_ok = True

    def _node_time(self, _fld: str, samples: list[Sample]) -> None:
        self._time(self.node_time, samples)
        self.node_time_ok = True

    def _live(self, node: str) -> bool:
        """Whether node_exporter has a current sample of ``node`` (rate()/increase() answers alone
        never make a node). GPUs need no such test: every GPU family is an instant query."""
        return not self.node_time_ok or node in self.node_time

    def _ib(self, fld: str, samples: list[Sample]) -> None:
        seen: set[tuple[str, str, int]] = set()
        for s in samples:
            key = self._port_key(s.metric)
            if key is None:
                continue
            if not self._first(seen, key):
                continue
            v = self._value(s)
            if v is not None and fld == "rate" and not ib_rate_ok(v * 8 / 1e9):  # not an IB link rate
                self.drops.value(FIELD_METRIC["rate"], v, key[0])
            elif v is not None and fld != "rate" and not SMALL_ENUM.ok(v):
                self.drops.value(FIELD_METRIC.get(fld, fld), v, key[0])
            elif v is not None:
                self.ib.setdefault(key, {})[fld] = v

    def _ib_counters(self, _fld: str, samples: list[Sample]) -> None:
        for s in samples:
            counter = IB_COUNTERS.get(s.metric.get("__name__", ""))
            key = self._port_key(s.metric)
            if key is None or counter is None:
                continue
            v = self._checked(s, "c:" + counter, COUNTER, key[0])
            if v is not None:
                rec = self.ib.setdefault(key, {})
                if "c:" + counter in rec:
                    self.duplicates += 1
                    continue
                rec["c:" + counter] = v

    def _ib_have(self, _fld: str, samples: list[Sample]) -> None:
        """How many error counter families each port has (a port with none is not in the answer)."""
        have = self.ib_have = {}
        for s in samples:
            key = self._port_key(s.metric)
            v = self._checked(s, "ib_have", COUNT, key[0]) if key is not None else None
            if key is not None and v is not None:
                have[key] = round(v)

    def _ib_delta(self, fld: str, samples: list[Sample]) -> None:
        for s in samples:
            key = self._port_key(s.metric)
            v = self._checked(s, "d:" + fld, COUNTER, key[0]) if key is not None else None
            if key is not None and v is not None:
                self.ib_deltas.setdefault(key, {})[fld] = round(v)

    def _res(self, fld: str, samples: list[Sample]) -> None:
        bounds = FIELD_BOUNDS.get(fld, COUNTER)
        for s in samples:
            node = self.namer(s.metric)
            if node is None:
                self._no_node(s.metric)
                continue
            v = self._checked(s, fld, bounds, node)
            if v is not None:
                self.res.setdefault(node, {})[fld] = v

    def _res_gauges(self, _fld: str, samples: list[Sample]) -> None:
        for s in samples:
            fld = RESOURCE_GAUGES.get(s.metric.get("__name__", ""))
            node = self.namer(s.metric)
            if node is None or fld is None:
                self._no_node(s.metric)
                continue
            v = self._checked(s, fld, FIELD_BOUNDS[fld], node)
            if v is not None:
                self.res.setdefault(node, {})[fld] = v

    def _res_dev(self, fld: str, samples: list[Sample]) -> None:
        bounds = FIELD_BOUNDS.get(fld, COUNTER)
        for s in samples:
            node, dev = self.namer(s.metric), self.clean(s.metric.get("device"))
            if node is None or dev is None:
                self._no_node(s.metric)
                continue
            v = self._checked(s, fld, bounds, node)
            if v is not None:
                self.res_dev.setdefault(node, {}).setdefault(fld, {})[dev] = v

    def _fs(self, _fld: str, samples: list[Sample]) -> None:
        for s in samples:
            m = s.metric
            fld = FS_GAUGES.get(m.get("__name__", ""))
            node, mp = self.namer(m), self.clean(m.get("mountpoint"))
            if node is None or mp is None or fld is None:
                self._no_node(m)
                continue
            rec = self.fs.setdefault((node, mp), {})
            rec.setdefault("device", self.clean(m.get("device")))
            rec.setdefault("fstype", self.clean(m.get("fstype")))
            v = self._checked(s, fld, FIELD_BOUNDS[fld], node)
            if v is not None:
                rec[fld] = v

    # -- the model ---------------------------------------------------------------------
    def warnings(self) -> list[str]:
        out = []
        if self.dropped:
            out.append(f"{self.dropped} series without node/gpu/device labels dropped")
        if self.duplicates:
            out.append(f"{self.duplicates} duplicate series ignored")
        out.extend(self.drops.warnings())
        return out

    def build_gpus(self) -> dict[str, tuple[Gpu, ...]]:
        # A GPU is present when any of its families answered an instant query (those honour
        # staleness markers; rate() answers never make a GPU): a trimmed counters file keeps it.
        by_gpu: dict[tuple[str, int], list[int | None]] = {}
        for node, idx, gi in self.gpu.keys() | self.info.keys():
            by_gpu.setdefault((node, idx), []).append(gi)
        out: dict[str, list[Gpu]] = {}
        uuids: dict[str, tuple[str, int]] = {}
        sparse: dict[str, float | None] = {
            field: 0.0 for field, metric in GPU_SPARSE
            if metric in self.present or V1_NAMES.get(metric) in self.present}
        for (node, idx), gis in sorted(by_gpu.items()):
            instances = sorted(g for g in gis if g is not None)
            device_key: GpuKey = (node, idx, None) if None in gis else (node, idx, instances[0])
            d = self.gpu.get(device_key, {})
            if sparse or device_key in self.gpu_rates:
                d = {**sparse, **d, **self.gpu_rates.get(device_key, {})}
            info = self.info.get(device_key) or next((self.info[(node, idx, g)] for g in instances
                                                      if (node, idx, g) in self.info), _GpuInfo())
            if info.uuid is not None:  # the same physical GPU seen under another node/index: keep the first
                first = uuids.setdefault(info.uuid, (node, idx))
                if first != (node, idx):
                    self.duplicates += 1
                    continue
            out.setdefault(node, []).append(self._make_gpu(node, idx, d, info, instances, None in gis))
        return {n: tuple(g) for n, g in out.items()}

    def _make_gpu(self, node: str, idx: int, d: dict[str, float | None], info: _GpuInfo, instances: list[int],
                  whole: bool) -> Gpu:
        mig = bool(instances) or bool(d.get("mig_mode"))
        mig_out = []
        for gi in instances:
            gd = self.gpu.get((node, idx, gi), {})
            gi_info = self.info.get((node, idx, gi))
            used, free = gd.get("fb_used"), gd.get("fb_free")
            mig_out.append(MigInstance(
                gi_id=gi, profile=(gi_info.profile if gi_info and gi_info.profile else "?"),
                memory_used_mib=used, memory_total_mib=None if used is None or free is None else used + free,
                engine_active=gd.get("prof_gr_engine_active")))
        used, free = d.get("fb_used"), d.get("fb_free")
        total = None if used is None or free is None else used + free + (d.get("fb_reserved") or 0.0)
        if instances and (not whole or used is None):  # no whole-GPU memory series: the instances' sum
            used = _sum([m.memory_used_mib for m in mig_out])
            total = _sum([m.memory_total_mib for m in mig_out])
        xid = _int(d.get("xid"))
        pods = tuple(GpuProcess(gpu_uuid=info.uuid, gpu_index=idx, pod=p, container=c) for p, c in info.pods)
        nvl = {k: v for k, v in (("crc_flit", _int(d.get("nvl_crc_flit"))), ("crc_data", _int(d.get("nvl_crc_data"))),
                                 ("replay", _int(d.get("nvl_replay"))), ("recovery", _int(d.get("nvl_recovery"))))
               if v is not None}
        retired = {k: v for k, v in (("sbe", _int(d.get("retired_sbe"))), ("dbe", _int(d.get("retired_dbe"))),
                                     ("pending", _int(d.get("retired_pending")))) if v is not None}
        prof = {k[5:]: v for k, v in d.items() if k.startswith("prof_") and v is not None}
        return Gpu(
            node=node, index=idx, uuid=info.uuid, model=info.model, pci_bus_id=info.pci,
            util_pct=None if mig else d.get("util"), mem_util_pct=None if mig else d.get("mem_util"),
            memory_used_mib=used, memory_total_mib=total, temp_c=d.get("temp"), hbm_temp_c=d.get("hbm_temp"),
            power_w=d.get("power"), power_limit_w=d.get("power_limit"), sm_clock_mhz=d.get("sm_clock"),
            ecc_corrected_volatile=_int(d.get("ecc_sbe_vol")), ecc_uncorrected_volatile=_int(d.get("ecc_dbe_vol")),
            ecc_corrected_aggregate=_int(d.get("ecc_sbe_agg")), ecc_uncorrected_aggregate=_int(d.get("ecc_dbe_agg")),
            remapped_correctable=_int(d.get("remap_corr")), remapped_uncorrectable=_int(d.get("remap_unc")),
            remap_pending=_bool(d.get("remap_pending")), remap_failure=_bool(d.get("remap_failure")),
            last_xid=xid or None, mig_mode_current=True if mig else _bool(d.get("mig_mode")),
            mig_instances=tuple(mig_out), throttle_reasons=_int(d.get("throttle")),
            pcie_replay_count=_int(d.get("pcie_replay")), nvlink_bandwidth_rate=d.get("nvl_bw"),
            nvlink_errors=nvl, retired_pages=retired, profiling=prof, processes=pods,
        )

    def build_ib(self) -> dict[str, tuple[IbPort, ...]]:
        out: dict[str, list[IbPort]] = {}
        # error counters and their increase() are asked for only where non-zero: zero elsewhere
        # A port with fewer families than the fabric has (ib_have) reads N/A where it has no
        # answer: which of its counters exist is not known, so none is taken for 0.
        ib_zero = {IB_COUNTERS[m]: 0 for m in IB_ERROR_COUNTERS if m in self.present}
        for (node, dev, port), rec in sorted(self.ib.items()):
            if not self._live(node):
                continue
            state, phys, rate = _int(rec.get("state")), _int(rec.get("phys")), rec.get("rate")
            partial = self.ib_have is not None and self.ib_have.get((node, dev, port), 0) < len(ib_zero)
            zero = {} if partial else ib_zero
            counters = dict(zero)
            counters.update((k[2:], round(v)) for k, v in rec.items() if k.startswith("c:"))
            for k in ("port_rcv_data", "port_xmit_data"):  # node_exporter reports bytes; sysfs counts octets ÷ 4
                if k in counters:
                    counters[k] //= 4
            out.setdefault(node, []).append(IbPort(
                node=node, device=dev, port=port,
                state=IB_STATE.get(state, str(state)) if state is not None else None,
                phys_state=IB_PHYS.get(phys, str(phys)) if phys is not None else None,
                rate_gbps=None if rate is None else round(rate * 8 / 1e9, 1),
                counters=counters, deltas={**zero, **self.ib_deltas.get((node, dev, port), {})}))
        return {n: tuple(p) for n, p in out.items()}

    def build_mounts(self, wanted: list[str]) -> dict[str, tuple[Mount, ...]]:
        per_node: dict[str, dict[str, dict[str, object]]] = {}
        for (node, mp), fs_rec in self.fs.items():
            if not self._live(node):
                continue
            per_node.setdefault(node, {})[mp] = fs_rec
        out: dict[str, tuple[Mount, ...]] = {}
        for node, recs in per_node.items():
            mounts = []
            for target in wanted:
                rec = recs.get(target)
                if rec is None:
                    mounts.append(Mount(node=node, target=target, fstype="?", state=MountState.MISSING,
                                        detail="not in node_exporter's node_filesystem_* for this node"))
                    continue
                size, avail = _float(rec.get("size")), _float(rec.get("avail"))
                if rec.get("device_error"):
                    state, detail = MountState.DEGRADED, "node_exporter could not stat it (device_error=1)"
                elif rec.get("readonly"):
                    state, detail = MountState.READ_ONLY, None
                else:
                    state, detail = MountState.OK, None
                mounts.append(Mount(node=node, target=target, fstype=str(rec.get("fstype") or "?"),
                                    source=_str(rec.get("device")), state=state, detail=detail,
                                    size_bytes=size, avail_bytes=avail))
            out[node] = tuple(mounts)
        return out

    def build_resources(self) -> dict[str, NodeResources]:
        out: dict[str, NodeResources] = {}
        for node in sorted(self.res.keys() | self.res_dev.keys()):
            if not self._live(node):
                continue
            r, dev = self.res.get(node, {}), self.res_dev.get(node, {})
            out[node] = NodeResources(
                node=node, load1=r.get("load1"), load5=r.get("load5"), load15=r.get("load15"),
                cpu_busy_pct=_clip(r.get("cpu_busy")), cpu_count=_int(r.get("cpu_count")),
                mem_total_mib=_div(r.get("mem_total"), MIB), mem_available_mib=_div(r.get("mem_available"), MIB),
                swap_total_mib=_div(r.get("swap_total"), MIB), swap_free_mib=_div(r.get("swap_free"), MIB),
                disk_busy_pct={k: min(100.0, v) for k, v in dev.get("disk_busy", {}).items()},
                nic_rx_bps=dict(dev.get("nic_rx", {})), nic_tx_bps=dict(dev.get("nic_tx", {})),
                nic_errors={k: round(v) for k, v in dev.get("nic_errors", {}).items()},
            )
        return out

    def node_times(self) -> dict[str, float]:
        """Per node, the newest sample of the older exporter: any stale part makes the node stale."""
        out = dict(self.node_time)
        for node, t in self.gpu_time.items():
            out[node] = min(t, out.get(node, t))
        return out


HANDLERS: dict[str, Callable[[Collector, str, list[Sample]], None]] = {
    "gpu": Collector._gpu, "gpu_rate": Collector._gpu_rate, "gpu_prof": Collector._gpu_prof, "gpu_info": Collector._gpu_info,
    "gpu_ident": Collector._gpu_ident, "ib_have": Collector._ib_have,
    "present": Collector._present, "gpu_time": Collector._gpu_time, "node_time": Collector._node_time, "ib": Collector._ib,
    "ib_counters": Collector._ib_counters, "ib_delta": Collector._ib_delta, "res": Collector._res,
    "res_gauges": Collector._res_gauges, "res_dev": Collector._res_dev, "fs": Collector._fs,
}


def _sum(values: list[float | None]) -> float | None:
    return None if not values or any(v is None for v in values) else sum(v for v in values if v is not None)


def _int(v: float | None) -> int | None:
    return None if v is None else round(v)


def _bool(v: float | None) -> bool | None:
    return None if v is None else bool(v)


def _float(v: object) -> float | None:
    return v if isinstance(v, float) else None


def _str(v: object) -> str | None:
    return v if isinstance(v, str) else None


def _div(v: float | None, by: float) -> float | None:
    return None if v is None else v / by


def _clip(v: float | None) -> float | None:
    return None if v is None else max(0.0, min(100.0, v))
