"""CephFS mounts on the nodes tied to the Ceph cluster that serves them.

A node's CephFS mount names its cluster in its source (the device field of ``/proc/self/mountinfo``), in one
of two forms the kernel client shows:

- the new syntax (Linux 5.17+, ``mount.ceph`` from Quincy): ``client@fsid.fsname=/path``, e.g.
  ``services@1a2b...-....cephfs=/volumes/containers``: the cluster's **fsid** (the mons are a mount option,
  not in the source);
- the old one: ``mon1[:port][,mon2[:port]...]:/path``, e.g. ``10.132.4.63:6789:/``: the **mons' addresses**
  (the port defaults to 6789; ``mount.ceph`` resolves host names to IPs before the kernel sees them).

:func:`cluster_of` finds the configured cluster (a :class:`~hpctui.model.storage.CephHealth` of
``snapshot.ceph``) by fsid (from ``ceph status``), else by a mon address (``ceph mon dump``; from the mgr's
metrics only IPs, so only the host part is compared then). A ``ceph-fuse`` mount (source ``ceph-fuse``) names
no cluster and is tied to none. Pure functions; every string they return is sanitised (the probe and the Ceph
source sanitised theirs already).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

from hpctui.base.sanitize import clean_text
from hpctui.model.mount import Mount
from hpctui.model.storage import CephHealth

CEPH_FSTYPES = frozenset({"ceph", "fuse.ceph", "fuse.ceph-fuse"})
DEFAULT_MON_PORT = 6789
_NEW = re.compile(r"^(?P<client>[^@\s]*)@(?P<fsid>[0-9a-fA-F-]{36})?\.(?P<fs>[^=\s]*)=(?P<path>/.*)$")
_MON = re.compile(r"^(?:\[(?P<v6>[0-9a-fA-F:.]+)\]|(?P<host>[^:\[\]]+))(?::(?P<port>\d{1,5}))?$")


class CephfsDevice(NamedTuple):
    """What a CephFS mount's source says about its cluster."""

    fsid: str | None  # new syntax, lower case
    fs_name: str | None  # new syntax: the file system ("cephfs"); None: the default one
    path: str  # the directory of the file system mounted ("/", "/volumes/x")
    mons: tuple[tuple[str, int], ...]  # old syntax: (host, port) of each mon named


def parse_cephfs_source(source: str | None) -> CephfsDevice | None:
    """The cluster a CephFS mount source names (see the module docstring); None for one that names none."""
    if not source or len(source) > 4096:
        return None
    m = _NEW.match(source)
    if m:
        fsid = m.group("fsid")
        return CephfsDevice(fsid=fsid.lower() if fsid else None, fs_name=clean_text(m.group("fs")) or None,
                            path=clean_text(m.group("path")), mons=())
    head, sep, rest = source.partition(":/")
    if not sep or not head:
        return None
    mons = []
    for word in head.split(",")[:16]:
        mm = _MON.match(word.strip())
        if mm is None:
            continue
        port = int(mm.group("port")) if mm.group("port") else DEFAULT_MON_PORT
        mons.append((clean_text((mm.group("v6") or mm.group("host")).lower()), port))
    return CephfsDevice(fsid=None, fs_name=None, path=clean_text("/" + rest), mons=tuple(mons)) if mons else None


def _split_addr(addr: str) -> tuple[str, int | None]:
    mm = _MON.match(addr)
    if mm is None:
        return addr.lower(), None
    return (mm.group("v6") or mm.group("host")).lower(), int(mm.group("port")) if mm.group("port") else None


def _mons_match(named: tuple[tuple[str, int], ...], known: tuple[str, ...]) -> bool:
    addrs = [_split_addr(a) for a in known]
    for host, port in named:
        for khost, kport in addrs:
            if host == khost and (kport is None or kport == port):
                return True
    return False


def cluster_of(mount: Mount, clusters: Mapping[str, CephHealth]) -> CephHealth | None:
    """The configured cluster ``mount`` belongs to: by fsid, else by mon address; None when no configured
    cluster matches or the mount names none (or is not CephFS)."""
    if mount.fstype not in CEPH_FSTYPES or not clusters:
        return None
    dev = parse_cephfs_source(mount.source)
    if dev is None:
        return None
    if dev.fsid is not None:
        return next((h for h in clusters.values() if h.fsid and h.fsid.lower() == dev.fsid), None)
    return next((h for h in clusters.values() if h.mon_addrs and _mons_match(dev.mons, h.mon_addrs)), None)


def cluster_words(health: CephHealth, limit: int = 3) -> str:
    """``ceph/prod HEALTH_WARN MDS_SLOW_REQUEST, OSD_DOWN``: the cluster and what it says now (its active checks,
    worst first, muted ones left out)."""
    codes = [c.code for c in health.checks if not c.muted]
    more = f" (+{len(codes) - limit} more)" if len(codes) > limit else ""
    said = f" {', '.join(codes[:limit])}{more}" if codes else ""
    return f"ceph/{health.name} {health.status}{said}"


__all__ = ["CEPH_FSTYPES", "CephfsDevice", "cluster_of", "cluster_words", "parse_cephfs_source"]
