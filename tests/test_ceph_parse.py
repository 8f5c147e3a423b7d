"""The ceph CLI parsers on the real Ceph 16.2 recordings (tests/fixtures/ceph, ORIGIN.md): every sample is read
by a test here or in tests/test_s3_probe.py, or listed in ORIGIN.md as a reference that nothing parses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hpctui.findings.storage import ceph_findings
from hpctui.model import Severity
from hpctui.model.storage import CephHealth
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

FIX = Path(__file__).parent / "fixtures" / "ceph"


def read(name: str) -> bytes:
    return (FIX / name).read_bytes()


@pytest.mark.parametrize(("name", "status", "codes", "up", "states"), [
    ("status-healthy.json", "HEALTH_OK", [], 1, {"active+clean": 33}),
    ("status-after-recovery.json", "HEALTH_OK", [], 1, {"active+clean": 49}),
    ("status-osd-down.json", "HEALTH_WARN", ["OSD_DOWN", "OSD_HOST_DOWN", "OSD_ROOT_DOWN"], 0,
     {"stale+active+clean": 49}),
    ("status-osd-down-later.json", "HEALTH_WARN", ["OSD_DOWN", "OSD_HOST_DOWN", "OSD_ROOT_DOWN", "PG_AVAILABILITY"], 0,
     {"stale+active+clean": 49}),
    ("status-pg-degraded.json", "HEALTH_WARN", ["PG_DEGRADED"], 1,
     {"active+clean": 49, "active+undersized": 5, "active+undersized+degraded": 3}),
    ("status-pool-full.json", "HEALTH_WARN", ["POOL_FULL"], 1, {"active+clean": 57}),
])
def test_status(name: str, status: str, codes: list[str], up: int, states: dict[str, int]) -> None:
    s = parse_status(read(name))
    assert s.status == status and [c.code for c in s.checks] == codes
    assert (s.osds_total, s.osds_up, s.osds_in) == (1, up, 1)
    assert dict(s.pg_states) == states and s.pgs_total == sum(states.values())
    assert s.fsid and re.fullmatch(r"[0-9a-f-]{36}", s.fsid) and s.bytes_total == 1 << 30
    assert all(c.details == () for c in s.checks)  # status carries no detail lines: health detail does


def test_status_degraded_objects() -> None:
    s = parse_status(read("status-pg-degraded.json"))
    assert s.degraded_objects == 3
    health = CephHealth(name="c", status=s.status, pg_states=s.pg_states, pgs_total=s.pgs_total)
    assert (health.pgs_in("degraded"), health.pgs_in("undersized"), health.pgs_in("stale")) == (3, 8, 0)


@pytest.mark.parametrize(("name", "status", "codes", "first_detail"), [
    ("health-detail-healthy.json", "HEALTH_OK", [], None),
    ("health-detail-osd-down.json", "HEALTH_WARN", ["OSD_DOWN", "OSD_HOST_DOWN", "OSD_ROOT_DOWN"],
     "osd.0 (root=default,host=cephlab) is down"),
    ("health-detail-osd-down-later.json", "HEALTH_WARN", ["OSD_DOWN", "OSD_HOST_DOWN", "OSD_ROOT_DOWN", "PG_AVAILABILITY"],
     "osd.0 (root=default,host=cephlab) is down"),
    ("health-detail-pg-degraded.json", "HEALTH_WARN", ["PG_DEGRADED"], "pg 9.2 is active+undersized+degraded, acting [0]"),
    ("health-detail-pool-full.json", "HEALTH_WARN", ["POOL_FULL"],
     "pool 'default.rgw.buckets.data' is full (running out of quota)"),
])
def test_health_detail(name: str, status: str, codes: list[str], first_detail: str | None) -> None:
    got_status, checks = parse_health_detail(read(name))
    assert got_status == status and [c.code for c in checks] == codes
    assert all(c.severity is Severity.WARNING and not c.muted for c in checks)
    if first_detail:
        assert checks[0].details[0] == first_detail


def test_health_detail_keeps_50_detail_lines() -> None:
    _, checks = parse_health_detail(read("health-detail-osd-down-later.json"))
    stale = next(c for c in checks if c.code == "PG_AVAILABILITY")
    assert stale.summary == "Reduced data availability: 49 pgs stale" and stale.count == 49
    assert len(stale.details) == 49 and stale.details[0].startswith("pg 1.0 is stuck stale")


@pytest.mark.parametrize(("text", "json_name"), [
    ("health-detail-osd-down.txt", "health-detail-osd-down.json"),
    ("health-detail-pool-full.txt", "health-detail-pool-full.json"),
    ("health-healthy.txt", "health-detail-healthy.json"),
])
def test_health_text_says_what_json_says(text: str, json_name: str) -> None:
    t_status, t_checks = parse_health_detail_text((FIX / text).read_text())
    j_status, j_checks = parse_health_detail(read(json_name))
    assert t_status == j_status
    assert [(c.code, c.severity, c.summary, c.details) for c in t_checks] == \
        [(c.code, c.severity, c.summary, c.details) for c in j_checks]


def test_status_text_is_not_health_text() -> None:
    """``ceph status`` plain text is a reference only (the source reads JSON): the health parser refuses it."""
    with pytest.raises(CephParseError):
        parse_health_detail_text((FIX / "status-healthy.txt").read_text())


@pytest.mark.parametrize(("name", "up"), [("osd-tree-healthy.json", True), ("osd-tree-osd-down.json", False)])
def test_osd_tree(name: str, up: bool) -> None:
    (osd,) = parse_osd_tree(read(name))
    assert (osd.id, osd.name, osd.host, osd.up, osd.in_cluster, osd.device_class) == (0, "osd.0", "cephlab", up, True,
                                                                                      "hdd")


def test_osd_tree_out_and_stray() -> None:
    doc = ('{"nodes": [{"id": -1, "name": "default", "type": "root", "children": [-2]},'
           '{"id": -2, "name": "stor01", "type": "host", "children": [3]},'
           '{"id": 3, "name": "osd.3", "type": "osd", "status": "up", "reweight": 0}],'
           '"stray": [{"id": 9, "name": "osd.9", "type": "osd", "status": "down", "reweight": 0}]}')
    osds = parse_osd_tree(doc)
    assert [(o.name, o.host, o.up, o.in_cluster) for o in osds] == [("osd.3", "stor01", True, False),
                                                                    ("osd.9", None, False, False)]


@pytest.mark.parametrize(("name", "pools", "quota"), [
    ("df-healthy.json", 5, {}),
    ("df-osd-down.json", 7, {}),
    ("df-pool-full.json", 8, {"default.rgw.buckets.data": 100.0, "quota-test": 120.0}),
])
def test_df(name: str, pools: int, quota: dict[str, float]) -> None:
    got, total, used = parse_df(read(name))
    assert len(got) == pools and total == 1 << 30 and used and used > 0
    assert {p.name: p.quota_pct for p in got if p.quota_pct is not None} == quota
    assert all(p.used_pct is not None and 0 <= p.used_pct < 1 for p in got)  # % of max_avail: nearly empty bed


def test_versions() -> None:
    assert parse_versions(read("versions.json")) == "16.2.15"
    mixed = '{"mon": {"ceph version 16.2.15 (x) pacific (stable)": 2, "ceph version 17.2.7 (y) quincy (stable)": 1}}'
    assert parse_versions(mixed) == "16.2.15, 17.2.7"


@pytest.mark.parametrize("bad", [b"", b"not json", b"[]", b'{"health": 3}', b'{"nodes": [{"name": "x"}]}'])
def test_wrong_answers_are_one_line_errors(bad: bytes) -> None:
    for parse in (parse_status, parse_osd_tree, parse_df):
        try:
            parse(bad)
        except CephParseError as exc:
            assert "\n" not in str(exc)


def test_hostile_strings_are_cleaned() -> None:
    doc = ('{"status": "HEALTH_WARN", "checks": {"OSD_DOWN\\u001b[2J": {"severity": "HEALTH_WARN", "summary": '
           '{"message": "1 osds down\\u001b]0;pwned\\u0007"}, "detail": [{"message": "osd.1\\u202e down"}]}}}')
    _, (check,) = parse_health_detail(doc)
    assert "\x1b" not in check.code + check.summary and "\u202e" not in check.details[0]


def test_findings_of_the_samples() -> None:
    """What each recorded state becomes in the problem list."""
    def health(status: str, detail: str, tree: str | None = None, df: str | None = None) -> CephHealth:
        s = parse_status(read(status))
        overall, checks = parse_health_detail(read(detail))
        pools = parse_df(read(df))[0] if df else ()
        return CephHealth(name="lab", status=overall, checks=checks, osds=parse_osd_tree(read(tree)) if tree else (),
                          pg_states=s.pg_states, pgs_total=s.pgs_total, pools=pools)

    ok = health("status-healthy.json", "health-detail-healthy.json", "osd-tree-healthy.json", "df-healthy.json")
    assert ceph_findings(ok) == []
    down = ceph_findings(health("status-osd-down.json", "health-detail-osd-down.json", "osd-tree-osd-down.json",
                                "df-osd-down.json"))
    assert [(f.code, f.object) for f in down] == [("ceph_osd_down", "ceph/lab/OSD_DOWN"), ("ceph_pgs", "ceph/lab/pgs")]
    assert down[0].message == "OSD_DOWN: 1 osds down: osd.0 (root=default,host=cephlab) is down"
    # before Ceph says PG_AVAILABILITY (~50 s later), the PG states already say the data is unavailable
    assert down[1].message == "PGs not active+clean: 49 stale (of 49)"
    later = ceph_findings(health("status-osd-down-later.json", "health-detail-osd-down-later.json"))
    assert [f.code for f in later] == ["ceph_osd_down", "ceph_pg_availability"]
    assert later[1].message.endswith("(+47 more)")
    degraded = ceph_findings(health("status-pg-degraded.json", "health-detail-pg-degraded.json"))
    assert [f.code for f in degraded] == ["ceph_pg_degraded"] and "3 pgs degraded" in degraded[0].message
    full = ceph_findings(health("status-pool-full.json", "health-detail-pool-full.json", df="df-pool-full.json"))
    assert [f.code for f in full] == ["ceph_pool_full"]  # the check; the quota rule does not say it twice
    assert "pool 'quota-test' is full (running out of quota)" in full[0].message


def test_mon_dump() -> None:
    assert parse_mon_dump(read("mon-dump.json")) == ("127.0.0.1:33300", "127.0.0.1:33789")  # v2 and v1
    assert parse_mon_dump('{"mons": [{"public_addr": "10.0.0.1:6789/0"}, {"public_addrs": {"addrvec": '
                          '[{"addr": "[2001:db8::1]:3300"}]}}]}') == ("10.0.0.1:6789", "[2001:db8::1]:3300")
    with pytest.raises(CephParseError):
        parse_mon_dump(b"[]")


# -- the mgr's Prometheus module (hpctui.sources.ceph.metrics) --------------------------------------------
def test_metrics_healthy() -> None:
    from hpctui.sources.ceph.metrics import health_from_metrics

    h = health_from_metrics("lab", read("metrics-healthy.txt"))
    assert (h.status, h.checks, h.version, h.via) == ("HEALTH_OK", (), "16.2.15", "metrics")
    assert [(o.name, o.host, o.up, o.in_cluster, o.device_class) for o in h.osds] == [
        ("osd.0", "cephlab", True, True, "hdd")]
    assert (h.osds_total, h.osds_up, h.osds_in, h.pgs_total) == (1, 1, 1, 33)
    assert dict(h.pg_states) == {"active": 33, "clean": 33}  # per state word, summed over the pools
    assert [p.name for p in h.pools] == [".rgw.root", "device_health_metrics", "default.rgw.log",
                                         "default.rgw.control", "default.rgw.meta"]
    assert h.pools[0].id == 1 and h.pools[0].stored_bytes and h.pools[0].quota_bytes is None  # 0: no quota
    assert h.mon_addrs == ("127.0.0.1",) and h.fsid is None  # the metrics name no fsid and no mon port
    assert h.bytes_total and h.bytes_used is not None and h.parts_missing == ()
    assert ceph_findings(h) == []


def test_metrics_osd_down_gives_the_cli_findings_without_the_words() -> None:
    from hpctui.sources.ceph.metrics import health_from_metrics

    h = health_from_metrics("lab", read("metrics-osd-down.txt"))
    assert h.status == "HEALTH_WARN"
    assert [(c.code, c.severity, c.summary) for c in h.checks] == [
        ("OSD_DOWN", Severity.WARNING, ""), ("OSD_HOST_DOWN", Severity.WARNING, ""),
        ("OSD_ROOT_DOWN", Severity.WARNING, "")]
    assert [o.up for o in h.osds] == [False] and h.osds_up == 0 and h.pgs_in("stale") == 33
    found = ceph_findings(h)
    assert [(f.code, f.object) for f in found] == [("ceph_osd_down", "ceph/lab/OSD_DOWN"), ("ceph_pgs", "ceph/lab/pgs")]
    assert found[0].message.startswith("OSD_DOWN: osd.0 on cephlab down (the mgr's metrics carry no message")
    assert found[1].message == "PGs not active+clean: 33 stale (of 33)"
    # after recovery the module keeps the checks it saw, at 0: cleared, not active
    healed = health_from_metrics("lab", read("metrics-after-recovery.txt"))
    assert b'ceph_health_detail{name="OSD_DOWN",severity="HEALTH_WARN"} 0.0' in read("metrics-after-recovery.txt")
    assert healed.status == "HEALTH_OK" and healed.checks == () and ceph_findings(healed) == []


def test_metrics_one_bad_sample_costs_one_sample_and_labels_are_cleaned() -> None:
    from hpctui.sources.ceph.metrics import health_from_metrics, parse_exposition

    text = read("metrics-osd-down.txt").replace(b'ceph_osd_in{ceph_daemon="osd.0"} 1.0',
                                                b'ceph_osd_in{ceph_daemon="osd.0" 1.0')
    text += (b'ceph_health_detail{name="MDS_SLOW\\"_REQUEST\x1b]0;pwn\x07",severity="HEALTH_ERR"} 1\n'
             b'ceph_osd_up{ceph_daemon="osd.1"} not-a-number\n'
             b'ceph_osd_up{ceph_daemon="osd.\xe2\x80\xae2"} 1 1700000000000\n'
             b'ceph_pool_metadata{pool_id="9",name="' + b"x" * 5000 + b'"} 1\n'
             b"{garbage\n")
    h = health_from_metrics("lab", text)
    assert h.checks[0].severity is Severity.ERROR and "\x1b" not in h.checks[0].code and '"' in h.checks[0].code
    assert len(h.osds) == 2 and "\u202e" not in h.osds[1].name  # osd.1's sample lost, the other's name cleaned
    assert h.osds[0].in_cluster  # its ceph_osd_in sample was lost: not read as out
    assert len(next(p for p in h.pools if p.id == 9).name) <= 256
    assert h.parts_missing == ("metrics: 3 malformed line(s) skipped",)  # the long name is cut, not lost
    samples, bad = parse_exposition(b'# HELP x\n\nceph_health_status 2.0\nceph_health_status{a="1",} 1\n')
    assert bad == 0 and [s[0] for s in samples] == ["ceph_health_status", "ceph_health_status"]


@pytest.mark.parametrize("bad", [b"", b"<html>not metrics</html>", b'{"health": 1}', b"node_load1 0.5\n"])
def test_metrics_without_health_status_is_one_line_error(bad: bytes) -> None:
    from hpctui.sources.ceph.metrics import health_from_metrics

    with pytest.raises(CephParseError, match="no ceph_health_status") as err:
        health_from_metrics("lab", bad)
    assert "\n" not in str(err.value)


def test_every_sample_is_read_or_listed_as_reference() -> None:
    origin = (FIX / "ORIGIN.md").read_text()
    reference = set(re.findall(r"`([^`]+)`", origin.split("## Not parsed", 1)[1])) if "## Not parsed" in origin else set()
    tests = (Path(__file__).read_text() + (Path(__file__).parent / "test_s3_probe.py").read_text())
    for sample in sorted(p.name for p in FIX.iterdir() if p.name != "ORIGIN.md"):
        assert f'"{sample}"' in tests or sample in reference, f"{sample}: no test reads it, not listed as reference"
