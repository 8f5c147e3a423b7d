"""Storage behind the nodes: a Ceph cluster's health and the probes of S3 object-storage endpoints.

One :class:`CephHealth` per configured Ceph source (``ceph status`` + ``health detail`` + ``osd tree`` +
``df detail``), one :class:`S3Probe` per configured S3 endpoint (a canary list/put/get/delete). Both are
keyed by their source's name in the snapshot (:attr:`~hpctui.model.snapshot.ClusterSnapshot.ceph`,
:attr:`~hpctui.model.snapshot.ClusterSnapshot.object_stores`). Every string in them was sanitised by the
source's parser; a value a tool did not report is None, never 0.
"""

from __future__ import annotations

import enum

import msgspec

from hpctui.model.common import Severity

CEPH_SEVERITY = {"HEALTH_OK": Severity.OK, "HEALTH_WARN": Severity.WARNING, "HEALTH_ERR": Severity.ERROR}


class CephCheck(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One health check of ``ceph health detail``: ``OSD_DOWN``, ``PG_DEGRADED``, ``POOL_FULL``, ..."""

    code: str
    severity: Severity  # HEALTH_WARN → WARNING, HEALTH_ERR → ERROR
    summary: str  # "1 osds down"
    details: tuple[str, ...] = ()  # "osd.0 (root=default,host=cephlab) is down", one per line Ceph gives
    count: int | None = None
    muted: bool = False  # ``ceph health mute``: shown, never a finding


class CephOsd(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One OSD of ``ceph osd tree``: where it is and whether it is up and in."""

    id: int
    name: str  # "osd.3"
    host: str | None = None  # its CRUSH host bucket
    up: bool = True
    in_cluster: bool = True  # reweight > 0 ("out" OSDs have reweight 0: their data moved away)
    device_class: str | None = None


class CephPool(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One pool of ``ceph df detail``: how full it is, against the cluster and against its own quota."""

    name: str
    id: int | None = None
    stored_bytes: int | None = None
    objects: int | None = None
    used_pct: float | None = None  # of what the pool may still grow to (Ceph's percent_used × 100)
    max_avail_bytes: int | None = None
    quota_bytes: int | None = None  # None: no quota
    quota_objects: int | None = None

    @property
    def quota_pct(self) -> float | None:
        """The fuller of bytes and objects against the pool's quota (None without a quota)."""
        shares = []
        if self.quota_bytes and self.stored_bytes is not None:
            shares.append(100.0 * self.stored_bytes / self.quota_bytes)
        if self.quota_objects and self.objects is not None:
            shares.append(100.0 * self.objects / self.quota_objects)
        return max(shares) if shares else None


class CephHealth(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What one Ceph cluster says about itself at one moment."""

    name: str  # the source's name (the problem list's group is ``ceph/<name>``)
    status: str  # HEALTH_OK / HEALTH_WARN / HEALTH_ERR (anything else is kept as Ceph wrote it)
    fsid: str | None = None
    version: str | None = None  # "16.2.15" (the mons' version)
    checks: tuple[CephCheck, ...] = ()
    osds_total: int | None = None
    osds_up: int | None = None
    osds_in: int | None = None
    osds: tuple[CephOsd, ...] = ()
    pgs_total: int | None = None
    pg_states: tuple[tuple[str, int], ...] = ()  # ("active+undersized+degraded", 3), as ``ceph status`` counts
    degraded_objects: int | None = None
    bytes_total: int | None = None
    bytes_used: int | None = None
    pools: tuple[CephPool, ...] = ()
    pool_warn_pct: float = 85.0  # the source's setting: a pool this full (or this near its quota) is a finding
    parts_missing: tuple[str, ...] = ()  # commands that failed this time ("osd tree: timed out"); the rest is shown
    mon_addrs: tuple[str, ...] = ()  # the mons' public addresses ("10.0.0.1:6789", "10.0.0.1:3300"; IPs alone from
    #                                  the mgr's metrics): what an old-syntax CephFS mount names
    via: str = "cli"  # "cli" (ceph here), "ssh" (ceph on an admin host), "metrics" (the mgr's Prometheus module:
    #                   check codes and severities without Ceph's messages)

    @property
    def severity(self) -> Severity:
        return CEPH_SEVERITY.get(self.status, Severity.WARNING)

    def pgs_in(self, word: str) -> int:
        """PGs whose state has ``word`` (``degraded``, ``undersized``, ``stale``) among its ``+`` parts."""
        return sum(n for state, n in self.pg_states if word in state.split("+"))


class S3Failure(enum.StrEnum):
    """Why an S3 probe failed, in the words the finding uses."""

    UNREACHABLE = "unreachable"  # no TCP connection, DNS, timeout
    TLS = "tls"  # certificate not trusted, handshake failed
    AUTH = "auth"  # InvalidAccessKeyId, SignatureDoesNotMatch, AccessDenied
    BUCKET = "bucket"  # NoSuchBucket
    QUOTA = "quota"  # QuotaExceeded
    ERROR = "error"  # any other S3 error or a wrong answer (the object read back differs)


class S3Step(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One call of the canary round trip."""

    op: str  # "list", "put", "get", "delete"
    ok: bool
    ms: float | None = None
    code: str | None = None  # the S3 error code (``NoSuchBucket``) or the exception's class


class S3Probe(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One probe of one S3 endpoint: list the canary prefix, put, get and delete a small object."""

    name: str  # the source's name (the problem list's group is ``s3/<name>``)
    endpoint: str  # the URL, without userinfo
    bucket: str
    time: float
    ok: bool
    failure: S3Failure | None = None
    code: str | None = None  # the S3 error code or the exception's class
    message: str | None = None  # one line, sanitised and with every credential redacted
    steps: tuple[S3Step, ...] = ()
    latency_ms: float | None = None  # the whole round trip (when it completed)
    latency_warn_ms: float = 2000.0  # the source's setting: a round trip slower than this is a finding

    @property
    def slowest(self) -> S3Step | None:
        timed = [s for s in self.steps if s.ms is not None]
        return max(timed, key=lambda s: s.ms or 0.0) if timed else None


__all__ = ["CEPH_SEVERITY", "CephCheck", "CephHealth", "CephOsd", "CephPool", "S3Failure", "S3Probe", "S3Step"]
