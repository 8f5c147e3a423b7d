"""Slurm partitions with their state, time limits and default flag.

``scontrol -o show partition`` (CLI, every version) and REST ``GET partitions`` (flat fields
up to v0.0.38: ``state``, ``flags: ["default"]``, ``max_time_limit`` -1 = UNLIMITED; nested
from v0.0.39: ``partition.state``, ``maximums.time``, ``defaults.time``, ``nodes.configured``).
Every string passes :func:`values.text` (hpctui.base.sanitize) on its way in.
"""

from __future__ import annotations

from typing import Any

import msgspec

from hpctui.model.hostlist import HostlistError, expand
from hpctui.model.partition import SlurmPartition
from hpctui.sources.slurm.parse.errors import SlurmParseError
from hpctui.sources.slurm.parse.nodes import decode_document
from hpctui.sources.slurm.parse.rest_versions import Meta, RestError
from hpctui.sources.slurm.parse.scontrol import OnInvalid, _invalid, _lines, _splitter, split_pairs
from hpctui.sources.slurm.parse.values import Num, num, parse_duration_min, text, to_int

_PARTITION_KEYS = [
    "PartitionName", "AllowGroups", "AllowAccounts", "AllowQos", "AllocNodes", "Default", "QoS", "DefaultTime",
    "DisableRootJobs", "ExclusiveUser", "ExclusiveTopo", "GraceTime", "Hidden", "MaxNodes", "MaxTime", "MinNodes",
    "LLN", "MaxCPUsPerNode", "MaxCPUsPerSocket", "Nodes", "NodeSets", "PriorityJobFactor", "PriorityTier",
    "RootOnly", "ReqResv", "OverSubscribe", "OverTimeLimit", "PreemptMode", "State", "TotalCPUs", "TotalNodes",
    "SelectTypeParameters", "JobDefaults", "DefMemPerNode", "DefMemPerCPU", "MaxMemPerNode", "MaxMemPerCPU",
    "TRES", "TRESBillingWeights", "DenyAccounts", "DenyQos", "PowerDownOnIdle", "ResumeTimeout",
    "SuspendTimeout", "SuspendTime", "Alternate", "CpuBind", "MaxCPUsPerNode",
]
_PARTITION_SPLIT = _splitter(sorted(set(_PARTITION_KEYS)))
_UNLIMITED = ("UNLIMITED", "INFINITE")


def _hostlist_ok(expr: str | None) -> str | None:
    if expr is None:
        return None
    try:
        expand(expr)
    except HostlistError:
        return None
    return expr


def parse_scontrol_partitions(text_in: str, *, on_invalid: OnInvalid | None = None) -> tuple[SlurmPartition, ...]:
    """``scontrol -o show partition`` → partitions; a line without a name is dropped (reported)."""
    out: list[SlurmPartition] = []
    for lineno, line in enumerate(_lines(text_in), 1):
        if line.startswith("No partitions in the system"):
            continue
        d = dict(split_pairs(line, _PARTITION_SPLIT))
        name = text(d.get("PartitionName"))
        if not name:
            _invalid(f"scontrol partitions: line {lineno} lacks PartitionName=: {line[:60]!r}", on_invalid)
            continue
        max_time = text(d.get("MaxTime"))
        default = text(d.get("Default"))
        out.append(SlurmPartition(
            name=name,
            state=(text(d.get("State")) or "").upper() or None,
            default=None if default is None else default.upper() == "YES",
            max_time_min=parse_duration_min(max_time),
            max_time_unlimited=(max_time or "").upper() in _UNLIMITED,
            default_time_min=parse_duration_min(d.get("DefaultTime")),
            nodes=_hostlist_ok(text(d.get("Nodes"))),
            total_nodes=to_int(d.get("TotalNodes")),
            total_cpus=to_int(d.get("TotalCPUs")),
        ))
    return tuple(out)


# -- REST ------------------------------------------------------------------------------------
class _Nodes(msgspec.Struct, kw_only=True):
    configured: str | None = None
    total: int | Num | None = None


class _Cpus(msgspec.Struct, kw_only=True):
    total: int | Num | None = None


class _Limits(msgspec.Struct, kw_only=True):
    time: int | Num | None = None


class _State(msgspec.Struct, kw_only=True):
    state: list[str] | str | None = None


class _Partition(msgspec.Struct, kw_only=True):
    name: str
    # v0.0.36-38: flat
    state: str | None = None
    flags: list[str] | None = None
    max_time_limit: int | Num | None = None
    default_time_limit: int | Num | None = None
    total_nodes: int | None = None
    total_cpus: int | None = None
    nodes: str | _Nodes | None = None
    # v0.0.39+: nested
    partition: _State | None = None
    maximums: _Limits | None = None
    defaults: _Limits | None = None
    cpus: _Cpus | None = None


class _PartitionsDoc(msgspec.Struct, kw_only=True):
    meta: Meta | None = None
    errors: list[RestError] | None = None
    partitions: list[_Partition]


_decoder = msgspec.json.Decoder(_PartitionsDoc)


def _limit(value: Any) -> tuple[int | None, bool]:
    """(minutes, unlimited) from -1 / 4294967295 / {"infinite": true} / a number."""
    if isinstance(value, Num):
        if value.infinite:
            return None, True
        return num(value), False
    if isinstance(value, int) and (value < 0 or value >= 0xFFFFFFFE):
        return None, True
    return num(value), False


def parse_partition_records_json(data: bytes | str, version: str | None = None) -> tuple[SlurmPartition, ...]:
    """REST ``GET partitions`` → partitions with state, limits and the default flag."""
    doc = decode_document(_decoder, data, version, "slurm partitions JSON")
    out: list[SlurmPartition] = []
    for i, p in enumerate(doc.partitions):
        name = text(p.name)
        if not name:
            raise SlurmParseError(f"slurm partitions JSON: empty name at $.partitions[{i}]")
        state: str | list[str] | None = p.state
        if p.partition is not None and p.partition.state is not None:
            state = p.partition.state
        if isinstance(state, list):
            state = next((s for s in state if s), None)
        max_min, unlimited = _limit(p.maximums.time if p.maximums is not None else p.max_time_limit)
        default_min, _ = _limit(p.defaults.time if p.defaults is not None else p.default_time_limit)
        nodes = p.nodes.configured if isinstance(p.nodes, _Nodes) else p.nodes
        total_nodes = num(p.nodes.total) if isinstance(p.nodes, _Nodes) else p.total_nodes
        flags = [f.lower() for f in p.flags or ()]
        out.append(SlurmPartition(
            name=name,
            state=(text(state) or "").upper() or None,
            default=("default" in flags) if p.flags is not None else None,
            max_time_min=max_min, max_time_unlimited=unlimited, default_time_min=default_min,
            nodes=_hostlist_ok(text(nodes)),
            total_nodes=total_nodes if total_nodes is None or total_nodes >= 0 else None,
            total_cpus=num(p.cpus.total) if p.cpus is not None else p.total_cpus,
        ))
    return tuple(out)
