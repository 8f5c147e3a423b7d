"""A stand-in for ``pynvml`` (no GPU on this machine): the subset hpctui's NVML source calls,
with the same names, constants, error classes and return shapes as nvidia-ml-py 12/13.

Values are those of the real recorded H100 outputs (tests/fixtures/probes, driver 590.48.01):
GPU 0 as under load (100 %, 19818/81559 MiB, 59 °C, HBM 54 °C, 631.95 W of 700 W, 1980 MHz,
PCIe gen5 x16, 18 NVLinks), GPU 1 with MIG on (3g.40gb, 2g.20gb, 2x 1g.10gb as in ``nvidia-smi -L``;
utilisation and NVLink queries not supported), GPU 2 fallen off the bus (every call: GPU is lost).
"""

from __future__ import annotations

import ctypes
import os
import types
from dataclasses import dataclass, field
from types import SimpleNamespace

MIB = 1024 * 1024


class NVMLError(Exception):
    value = 999

    def __init__(self, value: int | None = None) -> None:
        if value is not None:
            self.value = value
        super().__init__(self.value)

    def __str__(self) -> str:
        return {3: "Not Supported", 10: "Timeout", 12: "NVML Shared Library Not Found", 15: "GPU is lost",
                9: "Driver Not Loaded"}.get(self.value, "Unknown Error")


class NVMLError_NotSupported(NVMLError):
    value = 3


class NVMLError_Timeout(NVMLError):
    value = 10


class NVMLError_GpuIsLost(NVMLError):
    value = 15


class NVMLError_DriverNotLoaded(NVMLError):
    value = 9


NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_SM = 1
NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0
NVML_AGGREGATE_ECC = 1
NVML_FI_DEV_MEMORY_TEMP = 82
NVML_NVLINK_MAX_LINKS = 36
NVML_NVLINK_ERROR_DL_REPLAY = 0
NVML_NVLINK_ERROR_DL_RECOVERY = 1
NVML_NVLINK_ERROR_DL_CRC_FLIT = 2
NVML_NVLINK_ERROR_DL_CRC_DATA = 3
nvmlEventTypeXidCriticalError = 8


@dataclass
class FakeGpu:
    index: int
    bus: str
    mig: bool = False
    lost: bool = False
    crc: dict[int, int] = field(default_factory=dict)
    pids: list[int] = field(default_factory=list)
    fabric: tuple[int, int] | None = (3, 0)  # (state, status): Completed / NVML_SUCCESS; None: NOT_SUPPORTED


class c_nvmlGpuFabricInfo_v2_t(ctypes.Structure):  # pynvml's name and layout
    _fields_ = [("version", ctypes.c_uint), ("clusterUuid", ctypes.c_uint8 * 16), ("status", ctypes.c_int),
                ("cliqueId", ctypes.c_uint32), ("state", ctypes.c_uint), ("healthMask", ctypes.c_uint32)]


c_nvmlGpuFabricInfoV_t = c_nvmlGpuFabricInfo_v2_t


@dataclass(frozen=True)
class Handle:
    index: int


@dataclass(frozen=True)
class MigHandle:
    parent: int
    slot: int


MIG_DEVICES = [("3g.40gb", 2, 0, 40192), ("2g.20gb", 3, 0, 19968), ("1g.10gb", 9, 0, 9856), ("1g.10gb", 10, 0, 9856)]


def new_module(**overrides: object) -> types.ModuleType:
    """A fresh stand-in module (its own state). ``init_error`` makes nvmlInit raise that NVML error value."""
    m = types.ModuleType("pynvml")
    for name, value in globals().items():
        if name.startswith(("NVML", "nvmlEventType", "c_nvml")):
            setattr(m, name, value)
    gpus = [FakeGpu(0, "00000000:00:09.0", pids=[os.getpid()]), FakeGpu(1, "00000000:00:0A.0", mig=True),
            FakeGpu(2, "00000000:00:0B.0", lost=True)]
    state = SimpleNamespace(inited=False, events=[], registered=set(), calls=0, init_error=None)
    m.state = state  # type: ignore[attr-defined]
    m.gpus = gpus  # type: ignore[attr-defined]

    def gpu(h: Handle) -> FakeGpu:
        state.calls += 1
        g = gpus[h.index]
        if g.lost:
            raise NVMLError_GpuIsLost()
        return g

    def nvmlInit() -> None:
        if state.init_error is not None:
            raise NVMLError(state.init_error)
        state.inited = True

    def nvmlShutdown() -> None:
        state.inited = False

    def nvmlDeviceGetCount() -> int:
        return len(gpus)

    def nvmlDeviceGetHandleByIndex(i: int) -> Handle:
        return Handle(i)

    def nvmlDeviceGetIndex(h: Handle) -> int:
        return h.index

    def nvmlDeviceGetUUID(h: Handle | MigHandle) -> str:
        if isinstance(h, MigHandle):
            return f"MIG-0000000{h.slot}-0000-0000-0000-00000000000{h.slot}"
        return f"GPU-0000000{gpu(h).index}-0000-0000-0000-000000000000"

    def nvmlDeviceGetName(h: Handle | MigHandle) -> str:
        if isinstance(h, MigHandle):
            return f"NVIDIA H100 80GB HBM3 MIG {MIG_DEVICES[h.slot][0]}"
        gpu(h)
        return "NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetPciInfo(h: Handle) -> SimpleNamespace:
        return SimpleNamespace(busId=gpu(h).bus, pciDeviceId=0x233010DE)

    def nvmlDeviceGetUtilizationRates(h: Handle) -> SimpleNamespace:
        if gpu(h).mig:
            raise NVMLError_NotSupported()
        return SimpleNamespace(gpu=100, memory=11)

    def nvmlDeviceGetMemoryInfo(h: Handle | MigHandle) -> SimpleNamespace:
        if isinstance(h, MigHandle):
            total = MIG_DEVICES[h.slot][3] * MIB
            return SimpleNamespace(total=total, used=17 * MIB, free=total - 17 * MIB)
        used = 19818 if not gpu(h).mig else 11125
        return SimpleNamespace(total=81559 * MIB, used=used * MIB, free=(81559 - used) * MIB)

    def nvmlDeviceGetTemperature(h: Handle, sensor: int) -> int:
        return 59 if gpu(h).index == 0 else 53

    def nvmlDeviceGetFieldValues(h: Handle, ids: list[int]) -> list[SimpleNamespace]:
        g = gpu(h)
        ok = ids == [NVML_FI_DEV_MEMORY_TEMP] and not g.mig
        return [SimpleNamespace(fieldId=ids[0], nvmlReturn=0 if ok else 3, valueType=1,
                                value=SimpleNamespace(uiVal=54 if ok else 0))]

    def nvmlDeviceGetPowerUsage(h: Handle) -> int:
        return 631950 if gpu(h).index == 0 else 433780

    def nvmlDeviceGetEnforcedPowerLimit(h: Handle) -> int:
        gpu(h)
        return 700000

    def nvmlDeviceGetClockInfo(h: Handle, clock: int) -> int:
        gpu(h)
        return 1980

    def nvmlDeviceGetTotalEccErrors(h: Handle, kind: int, counter: int) -> int:
        gpu(h)
        return 0

    def nvmlDeviceGetRemappedRows(h: Handle) -> tuple[int, int, int, int]:
        if gpu(h).mig:
            raise NVMLError_NotSupported()
        return (0, 0, 0, 0)

    def nvmlDeviceGetMigMode(h: Handle) -> list[int]:
        g = gpu(h)
        return [int(g.mig), int(g.mig)]

    def nvmlDeviceGetMaxMigDeviceCount(h: Handle) -> int:
        return 7 if gpu(h).mig else 0

    def nvmlDeviceGetMigDeviceHandleByIndex(h: Handle, slot: int) -> MigHandle:
        if slot >= len(MIG_DEVICES):
            raise NVMLError(13)  # NVML_ERROR_NOT_FOUND
        return MigHandle(h.index, slot)

    def nvmlDeviceGetGpuInstanceId(h: MigHandle) -> int:
        return MIG_DEVICES[h.slot][1]

    def nvmlDeviceGetComputeInstanceId(h: MigHandle) -> int:
        return MIG_DEVICES[h.slot][2]

    def nvmlDeviceGetCurrentClocksEventReasons(h: Handle) -> int:
        gpu(h)
        return 0

    def nvmlDeviceGetCurrentClocksThrottleReasons(h: Handle) -> int:
        gpu(h)
        return 0x1

    def nvmlDeviceGetCurrPcieLinkGeneration(h: Handle) -> int:
        gpu(h)
        return 5

    def nvmlDeviceGetMaxPcieLinkGeneration(h: Handle) -> int:
        gpu(h)
        return 5

    def nvmlDeviceGetCurrPcieLinkWidth(h: Handle) -> int:
        gpu(h)
        return 16

    def nvmlDeviceGetMaxPcieLinkWidth(h: Handle) -> int:
        gpu(h)
        return 16

    def nvmlDeviceGetPersistenceMode(h: Handle) -> int:
        gpu(h)
        return 1

    def nvmlDeviceGetNvLinkState(h: Handle, link: int) -> int:
        g = gpu(h)
        if g.mig:
            raise NVMLError_NotSupported()
        if link >= 18:
            raise NVMLError(2)  # NVML_ERROR_INVALID_ARGUMENT
        return 1

    def nvmlDeviceGetNvLinkErrorCounter(h: Handle, link: int, counter: int) -> int:
        g = gpu(h)
        return g.crc.get(link, 0) if counter == NVML_NVLINK_ERROR_DL_CRC_FLIT else 0

    def nvmlDeviceGetComputeRunningProcesses(h: Handle) -> list[SimpleNamespace]:
        g = gpu(h)
        return [SimpleNamespace(pid=p, usedGpuMemory=2566 * MIB, gpuInstanceId=0xFFFFFFFF,
                                computeInstanceId=0xFFFFFFFF) for p in g.pids]

    def nvmlDeviceGetGpuFabricInfoV(h: Handle, ref: object) -> int:
        g = gpu(h)
        if g.fabric is None:
            raise NVMLError_NotSupported()
        info = ref._obj  # type: ignore[attr-defined]  (a ctypes.byref of the struct, as pynvml expects)
        info.state, info.status = g.fabric
        return 0

    def nvmlErrorString(code: int) -> bytes:
        return {3: b"Not Supported", 23: b"Insufficient Resources"}.get(code, b"Unknown Error")

    def nvmlEventSetCreate() -> object:
        return object()

    def nvmlDeviceRegisterEvents(h: Handle, types_: int, es: object) -> None:
        gpu(h)
        state.registered.add(h.index)

    def nvmlEventSetWait_v2(es: object, timeout_ms: int) -> SimpleNamespace:
        if not state.events:
            raise NVMLError_Timeout()
        index, xid = state.events.pop(0)
        return SimpleNamespace(device=Handle(index), eventType=nvmlEventTypeXidCriticalError, eventData=xid,
                               gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF)

    def nvmlEventSetFree(es: object) -> None:
        return None

    for name, value in list(locals().items()):
        if name.startswith("nvml"):
            setattr(m, name, value)
    m.NVMLError = NVMLError  # type: ignore[attr-defined]
    m.NVMLError_NotSupported = NVMLError_NotSupported  # type: ignore[attr-defined]
    m.NVMLError_GpuIsLost = NVMLError_GpuIsLost  # type: ignore[attr-defined]
    m.NVMLError_Timeout = NVMLError_Timeout  # type: ignore[attr-defined]
    for name, value in overrides.items():
        if value is None:
            delattr(m, name)
        else:
            setattr(m, name, value)
    return m
