"""Findings about the storage behind the nodes: Ceph clusters and S3 endpoints, one group each.

Ceph (``ceph/<source>``): every health check of warning or worse that is not muted, with its code and Ceph's
own words (``OSD_DOWN: 1 osds down: osd.17 (root=default,host=stor02) is down``); OSDs that are out; PGs
degraded, undersized or stale (with their counts, from ``ceph status``); pools at least ``pool_warn_pct``
full or that near their quota; the nodes whose CephFS mounts of the cluster are hung or slow (how many, which:
hpctui.findings.cephfs ties a mount to its cluster). S3 (``s3/<source>``): a probe that failed, by why (auth refused, bucket
missing, quota exceeded, TLS, unreachable), or a round trip slower than its ``latency_warn_ms``.

A storage source whose last read failed adds a *stale* finding to its group, saying since when and why: the
findings under it are the last ones read, not the cluster's state now. Objects are
``ceph/<source>/<check or what>`` and ``s3/<source>/<what>``; the problem list shows each group after the
nodes (hpctui.ui.widgets.problems). Pure functions of the snapshot.
"""

from __future__ import annotations

from hpctui.findings.cephfs import CEPH_FSTYPES, cluster_of
from hpctui.findings.health import Finding
from hpctui.model import ClusterSnapshot, MountState, Severity
from hpctui.model.snapshot import SourceHealth
from hpctui.model.storage import CephHealth, S3Failure, S3Probe

CEPH_PREFIX = "ceph/"
S3_PREFIX = "s3/"
STORAGE_KINDS = {"ceph": CEPH_PREFIX, "s3": S3_PREFIX}  # source kind -> its groups' prefix
STORAGE_PREFIXES = (CEPH_PREFIX, S3_PREFIX)
# checks whose news the OSD/PG/pool findings below already carry with more detail: not listed twice
_COVERED = frozenset({"OSD_HOST_DOWN", "OSD_ROOT_DOWN"})
_S3_WORDS = {S3Failure.AUTH: ("s3_auth", "refuses the credentials"),
             S3Failure.BUCKET: ("s3_bucket_missing", "the canary bucket is missing"),
             S3Failure.QUOTA: ("s3_quota", "refuses writes: quota exceeded"),
             S3Failure.TLS: ("s3_tls", "TLS failed"),
             S3Failure.UNREACHABLE: ("s3_unreachable", "does not answer"),
             S3Failure.ERROR: ("s3_error", "the canary fails")}


def _ago(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s}s" if s < 120 else f"{s // 60}m" if s < 7200 else f"{s // 3600}h"


def _details(lines: tuple[str, ...], limit: int = 3) -> str:
    if not lines:
        return ""
    shown = "; ".join(lines[:limit])
    more = f" (+{len(lines) - limit} more)" if len(lines) > limit else ""
    return f": {shown}{more}"


def _unworded(code: str, health: CephHealth) -> str:
    """A check read from the mgr's metrics, which carry its code and severity but not Ceph's words."""
    said = ""
    if code == "OSD_DOWN":
        down = [o for o in health.osds if not o.up]
        if down:
            said = ": " + ", ".join(f"{o.name}{f' on {o.host}' if o.host else ''}" for o in down[:5]) + " down"
    return f"{code}{said} (the mgr's metrics carry no message: `ceph health detail` has Ceph's words)"


def ceph_findings(health: CephHealth) -> list[Finding]:
    """The findings of one Ceph cluster's health (see the module docstring)."""
    base = f"{CEPH_PREFIX}{health.name}"
    out: list[Finding] = []
    for c in health.checks:
        if c.muted or c.severity < Severity.WARNING or c.code in _COVERED:
            continue
        out.append(Finding(severity=c.severity, object=f"{base}/{c.code}", code=f"ceph_{c.code.lower()}",
                           message=f"{c.code}: {c.summary}{_details(c.details, 2)}" if c.summary
                           else _unworded(c.code, health)))
    codes = {c.code for c in health.checks}
    down = [o for o in health.osds if not o.up]
    if down and "OSD_DOWN" not in codes:  # the tree says down before (or without) a health check saying so
        names = ", ".join(f"{o.name}{f' on {o.host}' if o.host else ''}" for o in down[:5])
        out.append(Finding(severity=Severity.WARNING, object=f"{base}/osd_down", code="ceph_osd_down",
                           message=f"{len(down)} OSD(s) down: {names}"))
    gone = [o for o in health.osds if not o.in_cluster]
    if gone:
        names = ", ".join(f"{o.name}{f' on {o.host}' if o.host else ''}" for o in gone[:5])
        more = f" (+{len(gone) - 5} more)" if len(gone) > 5 else ""
        out.append(Finding(severity=Severity.WARNING, object=f"{base}/osd_out", code="ceph_osd_out",
                           message=f"{len(gone)} OSD(s) out (their data moves to the others): {names}{more}"))
    if "PG_DEGRADED" not in codes and "PG_AVAILABILITY" not in codes:
        bad = {w: health.pgs_in(w) for w in ("degraded", "undersized", "stale", "down", "incomplete")}
        bad = {w: n for w, n in bad.items() if n}
        if bad:
            what = ", ".join(f"{n} {w}" for w, n in bad.items())
            of = f" (of {health.pgs_total})" if health.pgs_total else ""
            out.append(Finding(severity=Severity.WARNING, object=f"{base}/pgs", code="ceph_pgs",
                               message=f"PGs not active+clean: {what}{of}"))
    full_checks = {"POOL_FULL", "POOL_NEAR_FULL", "POOL_NEARFULL"} & codes
    for p in health.pools:
        pct, quota = p.used_pct, p.quota_pct
        if pct is not None and pct >= health.pool_warn_pct:
            out.append(Finding(severity=Severity.ERROR if pct >= 100 else Severity.WARNING,
                               object=f"{base}/pool/{p.name}", code="ceph_pool_used",
                               message=f"pool {p.name} {pct:.0f}% full (of what it may still grow to)"))
        elif quota is not None and quota >= health.pool_warn_pct and not full_checks:
            out.append(Finding(severity=Severity.ERROR if quota >= 100 else Severity.WARNING,
                               object=f"{base}/pool/{p.name}", code="ceph_pool_quota",
                               message=f"pool {p.name} at {quota:.0f}% of its quota: writes block at 100%"))
    if health.parts_missing:
        out.append(Finding(severity=Severity.INFO, object=f"{base}/read", code="ceph_partial",
                           message="not read this time: " + "; ".join(health.parts_missing)))
    return out


def s3_findings(probe: S3Probe) -> list[Finding]:
    """The findings of one S3 endpoint's last probe."""
    obj = f"{S3_PREFIX}{probe.name}"
    where = f"({probe.endpoint}, bucket {probe.bucket})"
    if not probe.ok:
        failure = probe.failure or S3Failure.ERROR
        code, words = _S3_WORDS[failure]
        sev = Severity.WARNING if failure is S3Failure.QUOTA else Severity.ERROR
        return [Finding(severity=sev, object=f"{obj}/{failure.value}", code=code,
                        message=f"{words}: {probe.message or probe.code or '?'} {where}")]
    if probe.latency_ms is not None and probe.latency_ms > probe.latency_warn_ms:
        slow = probe.slowest
        worst = f"; slowest {slow.op} {slow.ms:.0f} ms" if slow is not None and slow.ms is not None else ""
        return [Finding(severity=Severity.WARNING, object=f"{obj}/latency", code="s3_slow",
                        message=f"canary round trip {probe.latency_ms:.0f} ms (> {probe.latency_warn_ms:g} ms){worst} "
                                f"{where}")]
    return []


def stale_finding(health: SourceHealth, now: float, prefix: str, known: bool) -> Finding | None:
    """The stale marker of a storage source whose last read failed: a warning over the last findings read
    (``known``), an error when it never read anything."""
    if not health.last_error:
        return None
    since = f" for {_ago(now - health.last_success)}" if health.last_success is not None else ""
    if known:
        message = (f"stale{since}: the last read failed ({health.last_error}); what follows is the last state "
                   "read, not now")
        sev = Severity.WARNING
    else:
        message = f"never read: {health.last_error}"
        sev = Severity.ERROR
    kind = prefix.rstrip("/")
    return Finding(severity=sev, object=f"{prefix}{health.name}/source", code=f"{kind}_stale", message=message)


_BAD_MOUNT = (MountState.HUNG, MountState.SLOW, MountState.DEGRADED, MountState.READ_ONLY)


def cephfs_mount_findings(snapshot: ClusterSnapshot) -> dict[str, list[Finding]]:
    """Per Ceph group, the nodes whose CephFS mounts of that cluster are hung (an error), or slow, degraded or
    read-only (a warning): ``ceph/<source>/mounts``, with how many nodes and the first of them. One pass over
    the snapshot's mounts (the findings index computes it when the mounts or the clusters change)."""
    if not snapshot.ceph:
        return {}
    by: dict[str, dict[MountState, list[str]]] = {}
    for node, mounts in snapshot.mounts.items():
        for m in mounts:
            if m.fstype not in CEPH_FSTYPES or m.state not in _BAD_MOUNT:
                continue
            health = cluster_of(m, snapshot.ceph)
            if health is None:
                continue
            nodes = by.setdefault(health.name, {}).setdefault(m.state, [])
            if not nodes or nodes[-1] != node:
                nodes.append(node)
    out: dict[str, list[Finding]] = {}
    for name, states in by.items():
        parts = []
        for state in _BAD_MOUNT:
            nodes = sorted(set(states.get(state, ())))
            if nodes:
                more = f" (+{len(nodes) - 5} more)" if len(nodes) > 5 else ""
                parts.append(f"{state.value} on {len(nodes)} node(s): {', '.join(nodes[:5])}{more}")
        sev = Severity.ERROR if MountState.HUNG in states else Severity.WARNING
        code = "ceph_mounts_hung" if MountState.HUNG in states else "ceph_mounts"
        out[f"{CEPH_PREFIX}{name}"] = [Finding(severity=sev, object=f"{CEPH_PREFIX}{name}/mounts", code=code,
                                               message="CephFS mounts " + "; ".join(parts))]
    return out


def storage_findings(snapshot: ClusterSnapshot,
                     cephfs: dict[str, list[Finding]] | None = None) -> dict[str, tuple[Finding, ...]]:
    """Every storage group of ``snapshot``: ``ceph/<source>`` and ``s3/<source>`` → findings, worst first
    (the stale marker first among equals). Groups with nothing of note are left out. Cheap (a few checks per
    source): computed for every snapshot, since the stale marker reads the sources' health and the time.
    ``cephfs``: :func:`cephfs_mount_findings` of this snapshot when the caller keeps it (else computed here)."""
    groups: dict[str, list[Finding]] = {}
    for name, health in snapshot.ceph.items():
        groups[f"{CEPH_PREFIX}{name}"] = ceph_findings(health)
    for group, found in (cephfs_mount_findings(snapshot) if cephfs is None else cephfs).items():
        groups.setdefault(group, []).extend(found)
    for name, probe in snapshot.object_stores.items():
        groups[f"{S3_PREFIX}{name}"] = s3_findings(probe)
    for name, sh in snapshot.sources.items():
        prefix = STORAGE_KINDS.get(sh.kind)
        if prefix is None:
            continue
        known = name in (snapshot.ceph if prefix == CEPH_PREFIX else snapshot.object_stores)
        stale = stale_finding(sh, snapshot.time, prefix, known)
        if stale is not None:
            groups.setdefault(f"{prefix}{name}", []).insert(0, stale)
    return {k: tuple(sorted(v, key=lambda f: f.severity, reverse=True)) for k, v in groups.items() if v}


__all__ = ["CEPH_PREFIX", "S3_PREFIX", "STORAGE_KINDS", "STORAGE_PREFIXES", "ceph_findings", "cephfs_mount_findings",
           "s3_findings", "stale_finding", "storage_findings"]
