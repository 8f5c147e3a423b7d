"""One plausibility rule for every number and node name that comes from a source.

A value from a cluster is hostile until checked, like its strings (:mod:`hpctui.base.sanitize`):
an exporter bug, a not-supported placeholder or a forged sample must cost that one value,
shown as N/A (``None``), never the document, never shown as fact. Each parser checks each
field at its boundary against the field's :class:`Bounds` and counts what it dropped in a
:class:`Drops`; the source adds ``Drops.warning()`` to its :class:`~hpctui.model.SourceResult`
warnings, one line per source and collection that names the first few offenders.

DCGM's "blank" placeholders (``dcgm_structs.h``, NVIDIA/DCGM) are values, not errors:

- ``DCGM_INT32_BLANK 0x7ffffff0``, ``DCGM_INT64_BLANK 0x7ffffffffffffff0`` and
  ``DCGM_FP64_BLANK 140737488355328.0`` (2**47), each followed by ``+1`` NOT_FOUND,
  ``+2`` NOT_SUPPORTED, ``+3`` NOT_PERMISSIONED; ``DCGM_*_IS_BLANK(v)`` is ``v >= *_BLANK``.

Every gauge bound is far below 2**31, so blanks fall out of range; counters (non-negative
integers below 2**63) additionally refuse the exact 32-bit and FP64 blank values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

import msgspec

from hpctui.base.sanitize import clean_text
from hpctui.model.hostlist import is_valid_hostname

DCGM_INT32_BLANK = 0x7FFFFFF0
DCGM_INT64_BLANK = 0x7FFFFFFFFFFFFFF0
DCGM_FP64_BLANK = 140737488355328.0  # 2**47
COUNTER_LIMIT = 2**63  # counters are below this (int64); DCGM_INT64_BLANK as a float is exactly 2**63
# The exact placeholders a counter can carry that are below 2**63 (blank, not found, not supported,
# not permissioned): a count of exactly one of these is DCGM saying "no value".
DCGM_BLANKS = frozenset({*(DCGM_INT32_BLANK + i for i in range(4)), *(DCGM_FP64_BLANK + i for i in range(4))})


@dataclass(frozen=True, slots=True)
class Bounds:
    """An inclusive plausible range; ``integer``: the value is a count (no fraction expected)."""

    lo: float
    hi: float
    integer: bool = False

    def ok(self, value: float) -> bool:
        """True when ``value`` is inside (NaN never is); counters also refuse DCGM blanks."""
        if not self.lo <= value <= self.hi:
            return False
        return not self.integer or value not in DCGM_BLANKS


TEMP_C = Bounds(-40.0, 200.0)
POWER_W = Bounds(0.0, 5000.0)
PERCENT = Bounds(0.0, 100.0)
PERCENT_LOOSE = Bounds(-5.0, 200.0)  # rate()-derived percentages jitter past 0/100: clipped afterwards
RATIO = Bounds(0.0, 1.0)  # DCGM_FI_PROF_* activities
CLOCK_MHZ = Bounds(0.0, 10_000.0)
FAN_PCT = PERCENT
MEMORY_MIB = Bounds(0.0, float(2**30))  # 1 PiB in MiB: GPU or node memory
MEMORY_MB = MEMORY_MIB
MEMORY_KIB = Bounds(0.0, float(2**40))  # 1 PiB in KiB: /proc/meminfo
BYTES = Bounds(0.0, float(2**62))  # file system sizes, node memory in bytes
BYTE_RATE = Bounds(0.0, 1e13)  # bytes/s of one NIC, NVLink set or PCIe link (80 Tb/s)
NVLINK_GBPS = Bounds(0.0, 1000.0)  # GB/s of one NVLink (NVLink 5: 50 GB/s a direction)
COUNTER = Bounds(0, COUNTER_LIMIT - 1, integer=True)  # monotonically rising hardware/software counters
COUNT = Bounds(0, 2**31 - 1, integer=True)  # CPUs, GPUs, nodes, instances of one thing
FLAG = Bounds(0, 1, integer=True)
XID = Bounds(0, 9999, integer=True)  # NVIDIA's catalogue ends near 170; -1 or 10**300 is not an Xid
LOAD = Bounds(0.0, 1e6)  # load average
EPOCH_S = Bounds(0.0, 1e11)  # seconds since 1970 (year 5138)
GPU_INDEX = Bounds(0, 1023, integer=True)  # a GPU's index on its node
SMALL_ENUM = Bounds(0, 255, integer=True)  # IB state ids, PCIe generation/width
BITMASK = COUNTER  # throttle reasons: a non-negative 64-bit mask
UINT32 = Bounds(0, 2**32 - 1)  # Slurm's 32-bit job fields: ids, priority, minutes (NO_VAL/INFINITE: None before)

# InfiniBand link rates the kernel can print (drivers/infiniband/core/sysfs.c rate_show: speed × width):
# SDR 2.5, DDR 5, QDR/FDR10 10, FDR 14, EDR 25, HDR 50, NDR 100, XDR 200 Gb/s per lane; 1X/2X/4X/8X/12X.
IB_RATES_GBPS = frozenset(round(s * w, 1) for s in (2.5, 5.0, 10.0, 14.0, 25.0, 50.0, 100.0, 200.0)
                          for w in (1, 2, 4, 8, 12))


# Gpu attribute -> plausible range: the one table every GPU source checks its readings against.
GPU_BOUNDS: dict[str, Bounds] = {
    "index": GPU_INDEX, "util_pct": PERCENT, "mem_util_pct": PERCENT, "memory_used_mib": MEMORY_MIB,
    "memory_total_mib": MEMORY_MIB, "temp_c": TEMP_C, "hbm_temp_c": TEMP_C, "power_w": POWER_W,
    "power_limit_w": POWER_W, "sm_clock_mhz": CLOCK_MHZ, "ecc_corrected_volatile": COUNTER,
    "ecc_uncorrected_volatile": COUNTER, "ecc_corrected_aggregate": COUNTER, "ecc_uncorrected_aggregate": COUNTER,
    "remapped_correctable": COUNTER, "remapped_uncorrectable": COUNTER, "throttle_reasons": BITMASK,
    "pcie_gen_current": SMALL_ENUM, "pcie_gen_max": SMALL_ENUM, "pcie_width_current": SMALL_ENUM,
    "pcie_width_max": SMALL_ENUM, "last_xid": XID, "pcie_replay_count": COUNTER,
}

# SlurmNodeInfo attribute -> plausible range (sinfo/scontrol/REST: counts, MB, GPUs of one node).
SLURM_NODE_BOUNDS: dict[str, Bounds] = {
    "cpus_total": COUNT, "cpus_alloc": COUNT, "memory_total_mb": MEMORY_MB, "memory_alloc_mb": MEMORY_MB,
    "gpus_total": COUNT, "gpus_alloc": COUNT,
}
NODE_LIMIT = 2**30  # a cheap pre-check: values in [0, NODE_LIMIT) hold every SLURM_NODE_BOUNDS bound

# SlurmJob attribute -> plausible range (squeue/REST JSON, squeue/scontrol text).
SLURM_JOB_BOUNDS: dict[str, Bounds] = {
    "array_job_id": UINT32, "array_task_id": UINT32, "num_nodes": COUNT, "gpus_requested": COUNT,
    "submit_time": EPOCH_S, "start_time": EPOCH_S, "end_time": EPOCH_S, "time_limit_min": UINT32,
    "exit_code": SMALL_ENUM, "exit_signal": SMALL_ENUM, "restart_count": COUNT, "priority": UINT32,
}

S = TypeVar("S", bound=msgspec.Struct)


def checked(obj: S, bounds: Mapping[str, Bounds], drops: Drops, where: str = "",
            names: Mapping[str, str] | None = None) -> S:
    """``obj`` with every numeric attribute named in ``bounds`` that is outside its range set to None
    (each recorded in ``drops`` under ``names[attr]`` or the attribute's name); ``obj`` itself when all hold."""
    upd: dict[str, None] = {}
    for attr, b in bounds.items():
        v = getattr(obj, attr, None)
        if v is None or isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        if not b.ok(v):
            upd[attr] = None
            drops.value((names or {}).get(attr, attr), v, where)
    return msgspec.structs.replace(obj, **upd) if upd else obj


def ib_rate_ok(gbps: float) -> bool:
    """True when ``gbps`` is a rate an InfiniBand (or RoCE) port can run at."""
    return gbps - gbps == 0.0 and round(gbps, 1) in IB_RATES_GBPS


def is_node_name(name: object) -> bool:
    """The one node-name rule of every source: what Slurm, SSH and argv can carry safely.

    RFC 1123 host name(s): letters, digits and ``-`` in dot-separated labels of at most 63,
    at most 253 in all, never starting with ``-`` (so never an option). The same rule the Slurm
    parsers (``check_node_name``), hostlists and SSH targets apply (:func:`is_valid_hostname`).
    """
    return isinstance(name, str) and is_valid_hostname(name)


def show_value(value: object) -> str:
    """A short, safe rendering of a rejected value for a warning (a 300-digit number stays short)."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        if -10**18 < value < 10**18:
            return str(value)
        return f"{'-' if value < 0 else ''}{math.floor(math.log10(abs(value))) + 1}-digit number"
    if isinstance(value, float):
        return f"{value:.6g}"
    text = clean_text(str(value))
    return repr(text if len(text) <= 40 else text[:40] + "…")


class Drops:
    """What one collection of one source dropped as implausible: counts and the first few, named.

    ``check``/``count`` return the value when plausible, else ``None`` (N/A) and record it;
    ``bad_name`` records a record dropped for its node name. ``warning()`` is one line (or
    None when nothing was dropped) naming the field, the value and where it came from.
    """

    def __init__(self, keep: int = 3) -> None:
        self.keep = keep
        self.values = 0
        self.names = 0
        self._value_examples: list[str] = []
        self._name_examples: list[str] = []

    def __bool__(self) -> bool:
        return bool(self.values or self.names)

    def value(self, field: str, value: object, where: str = "") -> None:
        """Record one implausible value of ``field`` (seen at ``where``, e.g. a node)."""
        self.values += 1
        if len(self._value_examples) < self.keep:
            at = f" on {clean_text(where)[:64]}" if where else ""
            self._value_examples.append(f"{field}={show_value(value)}{at}")

    def check(self, value: float | None, bounds: Bounds, field: str, where: str = "") -> float | None:
        """``value`` when ``bounds`` hold it (``None`` stays ``None``), else ``None``, recorded."""
        if value is None or bounds.ok(value):
            return value
        self.value(field, value, where)
        return None

    def count(self, value: float | None, field: str, where: str = "", bounds: Bounds = COUNTER) -> int | None:
        """A counter as an int (rounded), or ``None`` when absent or implausible (recorded)."""
        if value is None:
            return None
        if bounds.ok(value):
            return round(value)
        self.value(field, value, where)
        return None

    def bad_name(self, name: object, where: str = "") -> None:
        """Record one record dropped because its node name breaks :func:`is_node_name`."""
        self.names += 1
        if len(self._name_examples) < self.keep:
            self._name_examples.append(show_value(name) + (f" at {where}" if where else ""))

    def merge(self, other: Drops) -> None:
        """Add ``other``'s counts and examples (several parsers of one collection)."""
        self.values += other.values
        self.names += other.names
        self._value_examples.extend(other._value_examples[:self.keep - len(self._value_examples)])
        self._name_examples.extend(other._name_examples[:self.keep - len(self._name_examples)])

    def warnings(self, prefix: str = "") -> list[str]:
        """At most two lines: the implausible values, and the records dropped for their node name."""
        out = []
        if self.values:
            more = ", …" if self.values > len(self._value_examples) else ""
            out.append(f"{prefix}{self.values} implausible value(s) dropped, shown as N/A "
                       f"({', '.join(self._value_examples)}{more})")
        if self.names:
            more = ", …" if self.names > len(self._name_examples) else ""
            out.append(f"{prefix}{self.names} record(s) with an invalid node name dropped "
                       f"({', '.join(self._name_examples)}{more})")
        return out


__all__ = [
    "BITMASK", "BYTES", "BYTE_RATE", "CLOCK_MHZ", "COUNT", "COUNTER", "COUNTER_LIMIT", "DCGM_BLANKS", "DCGM_FP64_BLANK",
    "DCGM_INT32_BLANK", "DCGM_INT64_BLANK", "EPOCH_S", "FAN_PCT", "FLAG", "GPU_BOUNDS", "GPU_INDEX", "IB_RATES_GBPS", "LOAD", "MEMORY_KIB",
    "MEMORY_MB", "MEMORY_MIB", "NODE_LIMIT", "NVLINK_GBPS", "PERCENT", "PERCENT_LOOSE", "POWER_W", "RATIO", "SLURM_JOB_BOUNDS", "SLURM_NODE_BOUNDS", "SMALL_ENUM", "TEMP_C",
    "UINT32", "XID", "Bounds", "Drops", "checked",
    "ib_rate_ok", "is_node_name", "show_value",
]
