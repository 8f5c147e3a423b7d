"""Local GPUs through NVML (``pynvml`` from ``nvidia-ml-py``), in a thread.

nvitop's pattern: every NVML call goes through one wrapper, so "not supported", "no
permission", a missing function in an older binding, or any other NVML error becomes
``None`` ("not available", shown as N/A) instead of an exception or a 0. "GPU is lost"
marks the GPU lost. Only ``nvmlInit`` failing (no driver, no library) fails the collection.

Same model as the SSH probe: :class:`~hpctui.model.gpu.Gpu` with MIG instances, NVLinks (with
deltas) and processes (user, command, Slurm job / pod from ``/proc/PID/cgroup``), Xid events
from NVML's event API, and a :class:`~hpctui.model.probe.ProbeStatus` for this host.
"""

from __future__ import annotations

import asyncio
import ctypes
import math
import pwd
import re
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import msgspec

from hpctui.base.sanitize import clean_text
from hpctui.model import SourceResult
from hpctui.model.event import Event
from hpctui.model.gpu import XID_ACTION, XID_MEANING, Gpu, MigInstance, XidEvent, xid_severity
from hpctui.model.probe import GpuProcess, NvLink, ProbeStatus
from hpctui.model.validate import GPU_BOUNDS, MEMORY_MIB, SMALL_ENUM, XID, Drops, checked, is_node_name, show_value
from hpctui.sources.base import SourceError
from hpctui.sources.ssh.probe import parse_gpu as pg

if TYPE_CHECKING:
    from hpctui.sources.nvml.settings import NvmlSettings

_GPU_IS_LOST = 15  # NVML_ERROR_GPU_IS_LOST
_MIB = 1024 * 1024
_MIG_PROFILE = re.compile(r"MIG (?:\d+c\.)?(\d+g\.\d+gb(?:\+me)?)")
XID_KEEP_PER_GPU = 20
# nvmlGpuFabricState_t (NVML_GPU_FABRIC_STATE_*), named as nvidia-smi names them (FACTS §8)
_FABRIC_STATES = {0: "Not Supported", 1: "Not Started", 2: "In Progress", 3: "Completed"}
# nvmlFieldValue_t.valueType -> union member
_VALUE_MEMBER = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal"}


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return clean_text(str(value))


def local_process(pid: int, proc_root: str = "/proc") -> pg.ProcInfo:
    """Owner, command line and Slurm job / pod of a local process, from /proc (never raises)."""
    base = Path(proc_root) / str(pid)
    try:
        status = (base / "status").read_text(errors="replace")
    except OSError:
        return pg.ProcInfo(pid=pid, gone=True)
    uid = None
    for line in status.splitlines():
        if line.startswith("Uid:"):
            parts = line.split()
            uid = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
            break
    user = None
    if uid is not None:
        try:
            user = pwd.getpwuid(uid).pw_name
        except KeyError:
            user = str(uid)
    try:
        cmd = (base / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace").strip()[:400]
    except OSError:
        cmd = ""
    try:
        cgroup = (base / "cgroup").read_text(errors="replace").splitlines()
    except OSError:
        cgroup = []
    job, pod = pg.job_from_cgroup(cgroup)
    return pg.ProcInfo(pid=pid, uid=uid, user=clean_text(user) if user else None,
                       command=clean_text(cmd) if cmd else None, slurm_job_id=job, pod=pod)


class _Calls:
    """Every NVML call through :meth:`q`: errors become ``None``; "GPU is lost" is remembered."""

    def __init__(self, nvml: ModuleType) -> None:
        self.m = nvml
        self.lost = False

    def const(self, name: str, default: Any = None) -> Any:
        return getattr(self.m, name, default)

    def q(self, name: str, *args: Any) -> Any:
        fn: Callable[..., Any] | None = getattr(self.m, name, None)
        if fn is None:
            return None
        try:
            return fn(*args)
        except self.m.NVMLError as e:
            if getattr(e, "value", None) == _GPU_IS_LOST:
                self.lost = True
            return None
        except (AttributeError, TypeError, ValueError, OSError, KeyError):
            return None


class NvmlSource:
    kind = "nvml"

    def __init__(self, settings: NvmlSettings, nvml: ModuleType | None = None, proc_root: str = "/proc") -> None:
        self.settings = settings
        self.name = settings.name
        self.interval_s = settings.interval_s
        self.node = settings.node or socket.gethostname().split(".")[0]
        self._module = nvml
        self._proc_root = proc_root
        self._lock = threading.Lock()
        self._inited = False
        self._events: Any = None
        self._prev_links: dict[int, tuple[NvLink, ...]] = {}
        self._xids: dict[int, list[XidEvent]] = {}

    # ------------------------------------------------------------ protocol

    async def collect(self) -> SourceResult:
        return await asyncio.to_thread(self._collect)

    async def close(self) -> None:
        await asyncio.to_thread(self._shutdown)

    # ------------------------------------------------------------ internals

    def _nvml(self) -> ModuleType:
        if self._module is None:
            try:
                import pynvml
            except ImportError as e:
                raise SourceError("NVML: pynvml (nvidia-ml-py) is not installed") from e
            self._module = pynvml
        return self._module

    def _shutdown(self) -> None:
        with self._lock:
            if not self._inited or self._module is None:
                return
            c = _Calls(self._module)
            if self._events is not None:
                c.q("nvmlEventSetFree", self._events)
                self._events = None
            c.q("nvmlShutdown")
            self._inited = False

    def _init(self, m: ModuleType) -> None:
        if self._inited:
            return
        try:
            m.nvmlInit()
        except m.NVMLError as e:
            raise SourceError(f"NVML: {clean_text(str(e))}") from e
        self._inited = True

    def _collect(self) -> SourceResult:
        if not is_node_name(self.node):  # the host name (or node = …) names the node: the one node-name rule
            raise SourceError(f"NVML: this host's name {show_value(self.node)} is no valid node name; "
                              "set node = \"…\" in this nvml source's section")
        with self._lock:
            m = self._nvml()
            self._init(m)
            c = _Calls(m)
            now = time.time()
            count = c.q("nvmlDeviceGetCount")
            if count is None:
                raise SourceError("NVML: nvmlDeviceGetCount failed")
            handles = [c.q("nvmlDeviceGetHandleByIndex", i) for i in range(count)]
            if self.settings.xid_events and self._events is None:
                self._register_events(c, handles)
            gpus: list[Gpu] = []
            warnings: list[str] = []
            drops = Drops()  # implausible readings (hpctui.model.validate): N/A plus one warning
            for i, h in enumerate(handles):
                if h is None:
                    gpus.append(Gpu(node=self.node, index=i, lost=True))
                    continue
                gpus.append(checked(self._read_gpu(c, i, h, drops), GPU_BOUNDS, drops, f"{self.node} GPU {i}"))
            events = self._poll_xids(c, gpus, now, drops) if self._events is not None else []
            warnings.extend(drops.warnings())
            out = []
            for g in gpus:
                recent = self._xids.get(g.index)
                out.append(msgspec.structs.replace(g, xid_events=tuple(recent), last_xid=recent[-1].xid)
                           if recent else g)
            return SourceResult(
                source=self.name, time=now, gpus={self.node: tuple(out)},
                events=tuple(events),
                probes={self.node: ProbeStatus(node=self.node, reachable=True, last_ok=now)},
                warnings=tuple(warnings))

    def _read_gpu(self, c: _Calls, index: int, h: Any, drops: Drops | None = None) -> Gpu:
        """One GPU's readings; implausible MIG and NVLink readings are N/A, recorded in ``drops``
        (the caller checks the Gpu's own fields against GPU_BOUNDS)."""
        drops = drops if drops is not None else Drops()
        c.lost = False
        pci = c.q("nvmlDeviceGetPciInfo", h)
        util = c.q("nvmlDeviceGetUtilizationRates", h)
        mem = c.q("nvmlDeviceGetMemoryInfo", h)
        power = c.q("nvmlDeviceGetPowerUsage", h)
        limit = c.q("nvmlDeviceGetEnforcedPowerLimit", h)
        mig = c.q("nvmlDeviceGetMigMode", h)
        remap = c.q("nvmlDeviceGetRemappedRows", h)
        persistence = c.q("nvmlDeviceGetPersistenceMode", h)
        throttle = c.q("nvmlDeviceGetCurrentClocksEventReasons", h)
        if throttle is None:
            throttle = c.q("nvmlDeviceGetCurrentClocksThrottleReasons", h)
        corrected = c.const("NVML_MEMORY_ERROR_TYPE_CORRECTED", 0)
        uncorrected = c.const("NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1)
        volatile, aggregate = c.const("NVML_VOLATILE_ECC", 0), c.const("NVML_AGGREGATE_ECC", 1)
        mig_current = bool(mig[0]) if isinstance(mig, (list, tuple)) and len(mig) == 2 else None
        gpu = Gpu(
            node=self.node, index=index,
            uuid=_text(c.q("nvmlDeviceGetUUID", h)),
            model=_text(c.q("nvmlDeviceGetName", h)),
            pci_bus_id=_text(getattr(pci, "busId", None)) if pci is not None else None,
            util_pct=_num(util.gpu) if util is not None and not mig_current else None,
            mem_util_pct=_num(util.memory) if util is not None and not mig_current else None,
            memory_used_mib=_div(mem.used, _MIB) if mem is not None else None,
            memory_total_mib=_div(mem.total, _MIB) if mem is not None else None,
            temp_c=_num(c.q("nvmlDeviceGetTemperature", h, c.const("NVML_TEMPERATURE_GPU", 0))),
            hbm_temp_c=self._field(c, h, c.const("NVML_FI_DEV_MEMORY_TEMP", 82)),
            power_w=_div(power, 1000.0),
            power_limit_w=_div(limit, 1000.0),
            sm_clock_mhz=_num(c.q("nvmlDeviceGetClockInfo", h, c.const("NVML_CLOCK_SM", 1))),
            ecc_corrected_volatile=_int(c.q("nvmlDeviceGetTotalEccErrors", h, corrected, volatile)),
            ecc_uncorrected_volatile=_int(c.q("nvmlDeviceGetTotalEccErrors", h, uncorrected, volatile)),
            ecc_corrected_aggregate=_int(c.q("nvmlDeviceGetTotalEccErrors", h, corrected, aggregate)),
            ecc_uncorrected_aggregate=_int(c.q("nvmlDeviceGetTotalEccErrors", h, uncorrected, aggregate)),
            remapped_correctable=_int(remap[0]) if remap is not None else None,
            remapped_uncorrectable=_int(remap[1]) if remap is not None else None,
            remap_pending=bool(remap[2]) if remap is not None else None,
            remap_failure=bool(remap[3]) if remap is not None else None,
            mig_mode_current=mig_current,
            mig_mode_pending=bool(mig[1]) if mig_current is not None else None,
            throttle_reasons=_int(throttle),
            pcie_gen_current=_int(c.q("nvmlDeviceGetCurrPcieLinkGeneration", h)),
            pcie_gen_max=_int(c.q("nvmlDeviceGetMaxPcieLinkGeneration", h)),
            pcie_width_current=_int(c.q("nvmlDeviceGetCurrPcieLinkWidth", h)),
            pcie_width_max=_int(c.q("nvmlDeviceGetMaxPcieLinkWidth", h)),
            persistence_mode=bool(persistence) if persistence is not None else None,
        )
        upd: dict[str, object] = {}
        fabric = self._fabric(c, h)
        if fabric is not None:
            upd["fabric_state"], upd["fabric_status"] = fabric
        if mig_current:
            upd["mig_instances"] = self._mig(c, h, drops, f"{self.node} GPU {index}")
        if self.settings.nvlink:
            links = self._nvlinks(c, index, h, bool(mig_current), drops)
            if links:
                upd["nvlinks"] = links
        if self.settings.processes:
            upd["processes"] = self._processes(c, index, h, gpu.uuid)
        if c.lost:
            upd["lost"] = True
        return msgspec.structs.replace(gpu, **upd) if upd else gpu

    def _fabric(self, c: _Calls, h: Any) -> tuple[str, str | None] | None:
        """(state, status) of the GPU's NVLink fabric registration: ``nvmlDeviceGetGpuFabricInfoV`` with a
        ``c_nvmlGpuFabricInfoV_t`` (``nvmlDeviceGetGpuFabricInfo`` on older bindings). None: not available
        (no such call, or NOT_SUPPORTED on a GPU without an NVLink fabric). Status only once Completed."""
        for call, struct in (("nvmlDeviceGetGpuFabricInfoV", "c_nvmlGpuFabricInfoV_t"),
                             ("nvmlDeviceGetGpuFabricInfo", "c_nvmlGpuFabricInfo_t")):
            cls = getattr(c.m, struct, None)
            if cls is None or not hasattr(c.m, call):
                continue
            try:
                info = cls()
            except (TypeError, ValueError):
                continue
            if c.q(call, h, ctypes.byref(info)) is None:  # NOT_SUPPORTED, or missing from this driver
                if c.lost:
                    return None
                continue
            state = _FABRIC_STATES.get(_int(getattr(info, "state", None)) or 0)
            if state is None:
                return None
            status_code = _int(getattr(info, "status", None))
            if state != "Completed" or status_code is None:
                return state, None
            if status_code == 0:
                return state, "Success"
            text = _text(c.q("nvmlErrorString", status_code))
            return state, text or f"NVML error {status_code}"
        return None

    def _field(self, c: _Calls, h: Any, field_id: int) -> float | None:
        values = c.q("nvmlDeviceGetFieldValues", h, [field_id])
        if not values:
            return None
        v = values[0]
        if getattr(v, "nvmlReturn", 1) != 0:
            return None
        member = _VALUE_MEMBER.get(getattr(v, "valueType", -1))
        raw = getattr(v.value, member, None) if member else None
        return _num(raw)

    def _mig(self, c: _Calls, h: Any, drops: Drops, where: str) -> tuple[MigInstance, ...]:
        """The MIG devices of one GPU; one without a plausible GPU instance id is left out, an
        implausible CI id or memory size is N/A (each recorded in ``drops``)."""
        out = []
        count = drops.check(_int(c.q("nvmlDeviceGetMaxMigDeviceCount", h)), SMALL_ENUM, "MIG device count", where)
        for j in range(int(count or 0)):
            mh = c.q("nvmlDeviceGetMigDeviceHandleByIndex", h, j)
            if mh is None:
                continue
            gi = drops.check(_int(c.q("nvmlDeviceGetGpuInstanceId", mh)), SMALL_ENUM, "MIG GPU instance id", where)
            if gi is None:
                continue
            name = _text(c.q("nvmlDeviceGetName", mh)) or ""
            m = _MIG_PROFILE.search(name)
            mem = c.q("nvmlDeviceGetMemoryInfo", mh)
            ci = drops.check(_int(c.q("nvmlDeviceGetComputeInstanceId", mh)), SMALL_ENUM, "MIG compute instance id", where)
            used = drops.check(_div(mem.used, _MIB), MEMORY_MIB, "MIG memory used MiB", where) if mem is not None else None
            total = drops.check(_div(mem.total, _MIB), MEMORY_MIB, "MIG memory total MiB", where) if mem is not None else None
            out.append(MigInstance(gi_id=int(gi), profile=m.group(1) if m else name, uuid=_text(c.q("nvmlDeviceGetUUID", mh)),
                                   ci_id=None if ci is None else int(ci), memory_used_mib=used, memory_total_mib=total))
        return tuple(sorted(out, key=lambda i: (i.gi_id, i.ci_id if i.ci_id is not None else -1)))

    def _nvlinks(self, c: _Calls, index: int, h: Any, mig: bool, drops: Drops) -> tuple[NvLink, ...]:
        status: list[NvLink] = []
        errors: dict[int, dict[str, int]] = {}
        kinds = (("crc", "NVML_NVLINK_ERROR_DL_CRC_FLIT"), ("crc", "NVML_NVLINK_ERROR_DL_CRC_DATA"),
                 ("replay", "NVML_NVLINK_ERROR_DL_REPLAY"), ("recovery", "NVML_NVLINK_ERROR_DL_RECOVERY"))
        for link in range(int(c.const("NVML_NVLINK_MAX_LINKS", 18))):
            state = c.q("nvmlDeviceGetNvLinkState", h, link)
            if state is None:
                break  # no such link (or NVLink not supported, e.g. with MIG on)
            status.append(NvLink(link=link, up=bool(state)))
            counters: dict[str, int] = {}
            bad: set[str] = set()  # a kind with an implausible part (CRC flit + data) is N/A as a whole
            for kind, const in kinds:
                if c.const(const) is None:
                    continue
                raw = _int(c.q("nvmlDeviceGetNvLinkErrorCounter", h, link, c.const(const)))
                v = drops.count(raw, f"nvlink {link} {const.removeprefix('NVML_NVLINK_ERROR_DL_').lower()} errors",
                                f"{self.node} GPU {index}")
                if v is not None:
                    counters[kind] = counters.get(kind, 0) + v
                elif raw is not None:
                    bad.add(kind)
            errors[link] = {k: v for k, v in counters.items() if k not in bad}
        links = pg.merge_nvlinks(status, errors, mig and not status, self._prev_links.get(index, ()))
        self._prev_links[index] = links
        return links

    def _processes(self, c: _Calls, index: int, h: Any, uuid: str | None) -> tuple[GpuProcess, ...]:
        out = []
        for p in c.q("nvmlDeviceGetComputeRunningProcesses", h) or ():
            pid = _int(getattr(p, "pid", None))
            if pid is None:
                continue
            used = getattr(p, "usedGpuMemory", None)
            info = local_process(pid, self._proc_root)
            out.append(GpuProcess(
                pid=pid, gpu_uuid=uuid, gpu_index=index,
                used_memory_mib=used / _MIB if isinstance(used, int) else None,
                user=info.user, command=info.command, slurm_job_id=info.slurm_job_id, pod=info.pod))
        return tuple(out)

    def _register_events(self, c: _Calls, handles: list[Any]) -> None:
        es = c.q("nvmlEventSetCreate")
        xid_type = c.const("nvmlEventTypeXidCriticalError")
        if es is None or xid_type is None:
            return
        for h in handles:
            if h is not None:
                c.q("nvmlDeviceRegisterEvents", h, xid_type, es)
        self._events = es

    def _poll_xids(self, c: _Calls, gpus: list[Gpu], now: float, drops: Drops) -> list[Event]:
        by_index = {g.index: g for g in gpus}
        wait = "nvmlEventSetWait_v2" if hasattr(c.m, "nvmlEventSetWait_v2") else "nvmlEventSetWait"
        events = []
        for _ in range(256):
            ev = c.q(wait, self._events, 0)
            if ev is None:
                break  # NVML_ERROR_TIMEOUT: nothing pending
            xid = _int(getattr(ev, "eventData", None))
            idx = _int(c.q("nvmlDeviceGetIndex", getattr(ev, "device", None)))
            if xid is None:
                continue
            if not XID.ok(xid):  # -1 or 10**300 is no Xid: no event, no CRITICAL
                drops.value("Xid", xid, self.node)
                continue
            gpu = by_index.get(idx) if idx is not None else None
            gi = _int(getattr(ev, "gpuInstanceId", None))
            gi = None if gi is None or gi >= 0xFFFFFFFF else gi
            bus = gpu.pci_bus_id if gpu is not None and gpu.pci_bus_id else "unknown"
            x = XidEvent(time=now, xid=xid, pci_bus_id=bus, message="NVML Xid critical error event",
                         gpu_instance=gi)
            if idx is not None:
                recent = self._xids.setdefault(idx, [])
                recent.append(x)
                del recent[:-XID_KEEP_PER_GPU]
            action = XID_ACTION.get(xid)
            events.append(Event(
                time=now, source="gpu", object=f"gpu/{self.node}/{idx}" if idx is not None else f"node/{self.node}",
                severity=xid_severity(xid),
                message=f"Xid {xid} on {bus}: {XID_MEANING.get(xid, 'see NVIDIA Xid catalog')}"
                        + (f"; action: {action}" if action else "")))
        return events


def _num(value: object) -> float | None:
    """A finite float, or None (not a number, NaN/Inf, an int beyond float range)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        try:
            f = float(value)
        except OverflowError:
            return None
        return f if math.isfinite(f) else None
    return None


def _div(value: object, by: float) -> float | None:
    """``value / by`` for a finite number (NVML's mW, bytes), else None."""
    v = _num(value)
    return None if v is None else v / by


def _int(value: object) -> int | None:
    """An int, or None (not a number, NaN/Inf)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else None
    return None
