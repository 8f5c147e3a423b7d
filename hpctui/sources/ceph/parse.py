"""Pure parsers of the ``ceph`` CLI's answers (``-f json``) into :mod:`hpctui.model.storage`.

Formats from real recordings of Ceph 16.2 (tests/fixtures/ceph, ORIGIN.md there): ``ceph status``,
``ceph health detail``, ``ceph osd tree``, ``ceph df detail``, ``ceph versions``, and the plain text of
``ceph health detail``. Decoded typed (msgspec) with only the fields read; unknown fields are ignored, so a
newer Ceph that adds fields still parses. Every string is sanitised here, on its way into the model.
A document that is not the expected JSON raises :class:`CephParseError` (one line).
"""

from __future__ import annotations

import re

import msgspec

from hpctui.base.sanitize import clean_text
from hpctui.model.common import Severity
from hpctui.model.storage import CEPH_SEVERITY, CephCheck, CephOsd, CephPool

MAX_DETAILS = 50  # detail lines kept per check (a PG_DEGRADED on a big cluster lists thousands of PGs)


class CephParseError(ValueError):
    """A ``ceph`` answer that is not the JSON document expected."""


# -- the typed shapes (only what is read) ------------------------------------------------------------
class _Summary(msgspec.Struct):
    message: str = ""
    count: int | None = None


class _Detail(msgspec.Struct):
    message: str = ""


class _Check(msgspec.Struct):
    severity: str = "HEALTH_WARN"
    summary: _Summary = msgspec.field(default_factory=_Summary)
    detail: list[_Detail] = msgspec.field(default_factory=list)
    muted: bool = False


class _Health(msgspec.Struct):
    status: str = "HEALTH_UNKNOWN"
    checks: dict[str, _Check] = msgspec.field(default_factory=dict)


class _OsdMap(msgspec.Struct):
    num_osds: int | None = None
    num_up_osds: int | None = None
    num_in_osds: int | None = None
    osdmap: _OsdMap | None = None  # before Octopus the counts sat one level deeper


class _PgState(msgspec.Struct):
    state_name: str
    count: int


class _PgMap(msgspec.Struct):
    pgs_by_state: list[_PgState] = msgspec.field(default_factory=list)
    num_pgs: int | None = None
    degraded_objects: int | None = None
    bytes_used: int | None = None
    bytes_total: int | None = None


class _Status(msgspec.Struct):
    health: _Health = msgspec.field(default_factory=_Health)
    fsid: str | None = None
    osdmap: _OsdMap = msgspec.field(default_factory=_OsdMap)
    pgmap: _PgMap = msgspec.field(default_factory=_PgMap)


class _TreeNode(msgspec.Struct):
    id: int
    name: str = ""
    type: str = ""
    children: list[int] = msgspec.field(default_factory=list)
    status: str | None = None
    reweight: float | None = None
    device_class: str | None = None


class _Tree(msgspec.Struct):
    nodes: list[_TreeNode] = msgspec.field(default_factory=list)
    stray: list[_TreeNode] = msgspec.field(default_factory=list)


class _PoolStats(msgspec.Struct):
    stored: int | None = None
    objects: int | None = None
    percent_used: float | None = None
    max_avail: int | None = None
    quota_objects: int | None = None
    quota_bytes: int | None = None


class _Pool(msgspec.Struct):
    name: str
    id: int | None = None
    stats: _PoolStats = msgspec.field(default_factory=_PoolStats)


class _DfStats(msgspec.Struct):
    total_bytes: int | None = None
    total_used_raw_bytes: int | None = None


class _Df(msgspec.Struct):
    stats: _DfStats = msgspec.field(default_factory=_DfStats)
    pools: list[_Pool] = msgspec.field(default_factory=list)


class _Addr(msgspec.Struct):
    addr: str = ""


class _AddrVec(msgspec.Struct):
    addrvec: list[_Addr] = msgspec.field(default_factory=list)


class _Mon(msgspec.Struct):
    public_addrs: _AddrVec = msgspec.field(default_factory=_AddrVec)
    public_addr: str | None = None  # "10.0.0.1:6789/0" (the v1 address and its nonce)


class _MonDump(msgspec.Struct):
    mons: list[_Mon] = msgspec.field(default_factory=list)


def _decode(data: bytes | str, shape: type, what: str) -> object:
    try:
        return msgspec.json.decode(data, type=shape)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        head = clean_text(data[:60].decode("utf-8", "replace") if isinstance(data, bytes) else data[:60])
        raise CephParseError(f"ceph {what}: not the JSON expected ({clean_text(str(exc))[:200]}); starts {head!r}"
                             ) from None


# -- parsers ---------------------------------------------------------------------------------------
def _checks(health: _Health) -> tuple[CephCheck, ...]:
    out = []
    for code, c in sorted(health.checks.items()):
        details = tuple(clean_text(d.message) for d in c.detail[:MAX_DETAILS])
        if len(c.detail) > MAX_DETAILS:
            details += (f"... {len(c.detail) - MAX_DETAILS} more",)
        out.append(CephCheck(code=clean_text(code), severity=CEPH_SEVERITY.get(c.severity, Severity.WARNING),
                             summary=clean_text(c.summary.message), details=details, count=c.summary.count,
                             muted=c.muted))
    # worst first, then by code (stable across polls)
    return tuple(sorted(out, key=lambda c: -c.severity))


class StatusView(msgspec.Struct, frozen=True, kw_only=True):
    """What ``ceph status -f json`` says (the checks without their detail lines)."""

    status: str
    fsid: str | None
    checks: tuple[CephCheck, ...]
    osds_total: int | None
    osds_up: int | None
    osds_in: int | None
    pgs_total: int | None
    pg_states: tuple[tuple[str, int], ...]
    degraded_objects: int | None
    bytes_total: int | None
    bytes_used: int | None


def parse_status(data: bytes | str) -> StatusView:
    """``ceph status -f json``: overall health, OSD counts, PG states, raw usage."""
    s = _decode(data, _Status, "status")
    assert isinstance(s, _Status)
    om = s.osdmap.osdmap or s.osdmap
    pg = s.pgmap
    return StatusView(status=clean_text(s.health.status), fsid=clean_text(s.fsid) if s.fsid else None,
                      checks=_checks(s.health), osds_total=om.num_osds, osds_up=om.num_up_osds,
                      osds_in=om.num_in_osds, pgs_total=pg.num_pgs,
                      pg_states=tuple((clean_text(p.state_name), p.count) for p in pg.pgs_by_state),
                      degraded_objects=pg.degraded_objects, bytes_total=pg.bytes_total, bytes_used=pg.bytes_used)


def parse_health_detail(data: bytes | str) -> tuple[str, tuple[CephCheck, ...]]:
    """``ceph health detail -f json``: (overall status, every check with its detail lines)."""
    h = _decode(data, _Health, "health detail")
    assert isinstance(h, _Health)
    return clean_text(h.status), _checks(h)


def parse_osd_tree(data: bytes | str) -> tuple[CephOsd, ...]:
    """``ceph osd tree -f json``: every OSD with its CRUSH host, up/down and in/out (reweight 0 = out)."""
    t = _decode(data, _Tree, "osd tree")
    assert isinstance(t, _Tree)
    host_of: dict[int, str] = {}
    for n in t.nodes:
        if n.type == "host":
            for child in n.children:
                host_of[child] = clean_text(n.name)
    out = []
    for n in (*t.nodes, *t.stray):
        if n.type != "osd":
            continue
        out.append(CephOsd(id=n.id, name=clean_text(n.name) or f"osd.{n.id}", host=host_of.get(n.id),
                           up=n.status != "down", in_cluster=n.reweight is None or n.reweight > 0,
                           device_class=clean_text(n.device_class) if n.device_class else None))
    return tuple(sorted(out, key=lambda o: o.id))


def parse_df(data: bytes | str) -> tuple[tuple[CephPool, ...], int | None, int | None]:
    """``ceph df detail -f json`` (or plain ``ceph df``): (pools, raw bytes total, raw bytes used)."""
    d = _decode(data, _Df, "df")
    assert isinstance(d, _Df)
    pools = tuple(CephPool(name=clean_text(p.name), id=p.id, stored_bytes=p.stats.stored, objects=p.stats.objects,
                           used_pct=None if p.stats.percent_used is None else 100.0 * p.stats.percent_used,
                           max_avail_bytes=p.stats.max_avail, quota_bytes=p.stats.quota_bytes or None,
                           quota_objects=p.stats.quota_objects or None)
                  for p in d.pools)
    return pools, d.stats.total_bytes, d.stats.total_used_raw_bytes


MAX_MONS = 64  # more is no real cluster's monmap


def parse_mon_dump(data: bytes | str) -> tuple[str, ...]:
    """``ceph mon dump -f json``: every mon's public addresses (``ip:port``, v2 and v1), sorted, each once."""
    d = _decode(data, _MonDump, "mon dump")
    assert isinstance(d, _MonDump)
    found: set[str] = set()
    for mon in d.mons[:MAX_MONS]:
        addrs = [a.addr for a in mon.public_addrs.addrvec[:8]]
        if mon.public_addr:
            addrs.append(mon.public_addr.split("/", 1)[0])
        found.update(clean_text(a) for a in addrs if a and len(a) <= 64)
    return tuple(sorted(found))


_VERSION = re.compile(r"ceph version (\S+)")


def parse_versions(data: bytes | str) -> str | None:
    """``ceph versions -f json``: the mons' version ("16.2.15"); several at once during an upgrade
    ("16.2.15, 17.2.7"); None when the answer names none."""
    v = _decode(data, dict[str, dict[str, int]], "versions")
    assert isinstance(v, dict)
    found = sorted({m.group(1) for text in v.get("mon", {}) if (m := _VERSION.match(text))})
    return clean_text(", ".join(found)) if found else None


_TEXT_HEAD = re.compile(r"^(HEALTH_[A-Z]+)\b")
_TEXT_CHECK = re.compile(r"^\[(WRN|ERR)\] ([A-Z0-9_]+): (.*)$")


def parse_health_detail_text(text: str) -> tuple[str, tuple[CephCheck, ...]]:
    """The plain text of ``ceph health detail`` (or ``ceph health``): what sites paste into tickets and
    what an older or wrapped CLI prints when ``-f json`` is not passed on. Same result as the JSON form,
    without the counts."""
    lines = text.splitlines()
    head = _TEXT_HEAD.match(lines[0].strip()) if lines else None
    if head is None:
        raise CephParseError(f"ceph health: no HEALTH_ status in {clean_text(text[:60])!r}")
    checks: list[CephCheck] = []
    current: tuple[str, Severity, str] | None = None
    details: list[str] = []

    def flush() -> None:
        if current is not None:
            checks.append(CephCheck(code=current[0], severity=current[1], summary=current[2],
                                    details=tuple(details[:MAX_DETAILS])))

    for line in lines[1:]:
        m = _TEXT_CHECK.match(line)
        if m:
            flush()
            current = (clean_text(m.group(2)), Severity.ERROR if m.group(1) == "ERR" else Severity.WARNING,
                       clean_text(m.group(3)))
            details = []
        elif current is not None and line.strip():
            details.append(clean_text(line.strip()))
    flush()
    return clean_text(head.group(1)), tuple(sorted(checks, key=lambda c: (-c.severity, c.code)))


__all__ = ["CephParseError", "StatusView", "parse_df", "parse_health_detail", "parse_health_detail_text",
           "parse_mon_dump", "parse_osd_tree", "parse_status", "parse_versions"]
