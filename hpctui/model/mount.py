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
    targets: tuple[FsTarget, ...] = ()  # the file system's targets as this node sees them (lfs df, beegfs-ctl)


class TargetState(enum.StrEnum):
    """A Lustre/BeeGFS target as one client sees it."""

    ACTIVE = "active"  # lfs df lists it with usage; BeeGFS Online + Good
    INACTIVE = "inactive"  # lfs df: "inactive device" (deactivated or not connected)
    ERROR = "error"  # lfs df: "<uuid>: <strerror>" (the client could not read it: unreachable)
    OFFLINE = "offline"  # BeeGFS reachability Offline / Probably-offline
    DEGRADED = "degraded"  # BeeGFS consistency Needs-resync / Bad; lfs df flag D


class FsTarget(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One MDT/OST (Lustre) or metadata/storage target (BeeGFS) of a file system, seen from one node."""

    fs: str  # the file system: Lustre fsname ("snx11035"), "beegfs" for BeeGFS
    name: str  # "snx11035-OST0006", "storage:3011"
    kind: str  # "OST", "MDT", "storage", "meta"
    state: TargetState = TargetState.ACTIVE
    used_pct: float | None = None
    size_kib: int | None = None
    detail: str | None = None  # the error text, lfs df flags, BeeGFS reachability/consistency


class QuotaUsage(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A user's usage and limits on one file system (``lfs quota -u``, ``beegfs-ctl --getquota``)."""

    user: str
    filesystem: str  # the mount point (Lustre) or storage pool (BeeGFS)
    used_bytes: float | None = None  # None: not valid ([brackets]: a target did not report)
    soft_bytes: float | None = None  # None or 0: no limit
    hard_bytes: float | None = None
    files: int | None = None
    files_soft: int | None = None
    files_hard: int | None = None
    over: bool = False  # lfs printed '*' (at/over a limit), or usage >= a hard limit
    grace: str | None = None

    @property
    def used_pct(self) -> float | None:
        """Usage in % of the tightest block limit (soft, else hard); None without a limit."""
        limit = self.soft_bytes or self.hard_bytes
        if not limit or self.used_bytes is None:
            return None
        return 100.0 * self.used_bytes / limit
