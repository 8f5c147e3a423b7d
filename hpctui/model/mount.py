"""Mount health model: a parallel or network filesystem seen from one node."""

from __future__ import annotations

import enum

import msgspec


class MountState(enum.StrEnum):
    OK = "ok"
    SLOW = "slow"
    HUNG = "hung"
    READ_ONLY = "read-only"
    DEGRADED = "degraded"
    MISSING = "missing"
    UNKNOWN = "unknown"


class Mount(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    node: str
    target: str
    fstype: str
    source: str | None = None
    state: MountState = MountState.UNKNOWN
    latency_ms: float | None = None
    detail: str | None = None
    size_bytes: float | None = None  # node_filesystem_size_bytes
    avail_bytes: float | None = None  # node_filesystem_avail_bytes
