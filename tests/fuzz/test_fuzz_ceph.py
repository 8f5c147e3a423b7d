"""The ceph CLI parsers (issue 27) under mutation: ``ceph status``, ``health detail``, ``osd tree``, ``df``,
``versions`` and ``mon dump`` JSON from the real Ceph 16.2 recordings, the plain text of ``ceph health detail``,
the mgr's Prometheus exposition and CephFS mount sources. Each returns clean model values or raises only
:class:`CephParseError` with a clean one-line message."""

from __future__ import annotations

from collections.abc import Callable

from fuzzkit import (
    check,
    clean_message,
    dump_json,
    mutated_bytes,
    mutated_json,
    mutated_text,
    seed_bytes,
    seed_json,
)
from hypothesis import given

from hpctui.base.sanitize import decode_output
from hpctui.sources.ceph.parse import (
    CephParseError,
    parse_df,
    parse_health_detail,
    parse_health_detail_text,
    parse_mon_dump,
    parse_osd_tree,
    parse_status,
    parse_versions,
)

DOCS = {
    "status": (parse_status, ["ceph/status-osd-down.json", "ceph/status-pg-degraded.json"]),
    "health": (parse_health_detail, ["ceph/health-detail-osd-down-later.json", "ceph/health-detail-pool-full.json"]),
    "tree": (parse_osd_tree, ["ceph/osd-tree-osd-down.json"]),
    "df": (parse_df, ["ceph/df-pool-full.json"]),
    "versions": (parse_versions, ["ceph/versions.json"]),
    "mon dump": (parse_mon_dump, ["ceph/mon-dump.json"]),
}
ALL_DOCS = [seed_json(p) for _, paths in DOCS.values() for p in paths]
TEXT = [decode_output(seed_bytes("ceph/health-detail-osd-down.txt")),
        decode_output(seed_bytes("ceph/health-detail-pool-full.txt"))]


def _try(parse: Callable[[bytes], object], data: bytes) -> None:
    try:
        check(lambda: parse(data), raises=())
    except CephParseError as exc:
        clean_message(exc)


@given(mutated_json(ALL_DOCS))
def test_json_answers(doc: object) -> None:
    data = dump_json(doc)
    for parse, _ in DOCS.values():
        _try(parse, data)  # type: ignore[arg-type]


@given(mutated_text(TEXT))
def test_health_detail_text(text: str) -> None:
    try:
        check(lambda: parse_health_detail_text(text), raises=())
    except CephParseError as exc:
        clean_message(exc)


# the osd-down exposition, cut to the lines Ceph's health is read from (the rest is passed over unparsed)
METRICS = [b"\n".join(line for line in seed_bytes("ceph/metrics-osd-down.txt").split(b"\n")
                      if line.startswith((b"ceph_health", b"ceph_osd_up", b"ceph_osd_in", b"ceph_osd_metadata",
                                          b"ceph_pool_metadata", b"ceph_pool_percent", b"ceph_pg_stale",
                                          b"ceph_pg_total", b"ceph_mon_metadata", b"# HELP ceph_health")))]


@given(mutated_bytes(METRICS))
def test_mgr_metrics(data: bytes) -> None:
    from hpctui.sources.ceph.metrics import health_from_metrics

    try:
        check(lambda: health_from_metrics("fuzz", data), raises=())
    except CephParseError as exc:
        clean_message(exc)


SOURCES = ["10.132.4.63:6789:/", "10.10.11.7:6789,10.10.11.8:6789,10.10.11.9:6789:/",
           "services@00000000-0000-0000-0000-000000000000.cephfs=/volumes/containers",
           "admin@6cd89b06-c072-11ee-95c4-d00d10ad2e38.cephfs=/", "[2001:db8::1]:3300:/x", "ceph-fuse"]


@given(mutated_text(SOURCES))
def test_cephfs_sources(text: str) -> None:
    from hpctui.findings.cephfs import parse_cephfs_source

    check(lambda: parse_cephfs_source(text), raises=())
