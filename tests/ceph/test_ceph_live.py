"""The Ceph and S3 sources against a real Ceph 16.2 and its radosgw (tests/testbed/ceph): healthy, an OSD
stopped (OSD_DOWN through the store, the findings and the problem list's groups), the mons unreachable (the
stale marker), the canary round trip, wrong keys and a missing bucket."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from cephlab import S3_SECRET, CephLab

from hpctui.core.store import Store
from hpctui.findings.health import Thresholds
from hpctui.findings.index import findings_for
from hpctui.findings.storage import ceph_findings, storage_findings
from hpctui.model.storage import S3Failure
from hpctui.sources.ceph.settings import CephSettings
from hpctui.sources.ceph.source import CephError, CephSource
from hpctui.sources.s3.settings import S3Settings
from hpctui.sources.s3.source import S3Source

pytestmark = pytest.mark.live
BUCKET = "hpctui-canary"


def ceph_source(lab: CephLab, **kw: object) -> CephSource:
    return CephSource(CephSettings(conf=lab.conf, timeout_s=15, **kw))  # type: ignore[arg-type]


def s3_source(lab: CephLab, keys: tuple[Path, Path], **kw: object) -> S3Source:
    settings = S3Settings(name="rgw", endpoint=lab.s3_endpoint, bucket=kw.pop("bucket", BUCKET),  # type: ignore[arg-type]
                          access_key_id_file=str(keys[0]), secret_access_key_file=str(keys[1]), timeout_s=20, **kw)
    return S3Source(settings)


@pytest.fixture(scope="module")
def bucket(ceph_lab: CephLab, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The canary bucket, made once with the bed's user (the probe itself never creates one)."""
    from cephlab import S3_ACCESS
    from minio import Minio

    client = Minio(ceph_lab.s3_endpoint.removeprefix("http://"), access_key=S3_ACCESS, secret_key=S3_SECRET,
                   secure=False, region="us-east-1")
    if not client.bucket_exists(BUCKET):
        client.make_bucket(BUCKET)  # the first one: radosgw makes its bucket pools (~3 s)
    return BUCKET


def test_healthy_cluster_reads_clean(ceph_lab: CephLab) -> None:
    source = ceph_source(ceph_lab)
    result = asyncio.run(source.collect())
    health = result.ceph["ceph"]  # type: ignore[index]
    assert health.status == "HEALTH_OK" and health.checks == ()
    assert health.version and health.version.startswith("16.2.")
    assert (health.osds_total, health.osds_up, health.osds_in) == (1, 1, 1)
    assert [o.name for o in health.osds] == ["osd.0"] and health.osds[0].host == "cephlab" and health.osds[0].up
    assert {p.name for p in health.pools} >= {".rgw.root", "device_health_metrics"}
    assert health.pgs_total and dict(health.pg_states) == {"active+clean": health.pgs_total}
    assert health.parts_missing == () and result.warnings == ()
    assert ceph_findings(health) == []


def test_canary_round_trip(ceph_lab: CephLab, bucket: str, tmp_path: Path) -> None:
    source = s3_source(ceph_lab, ceph_lab.write_keys(tmp_path))
    result = asyncio.run(source.collect())
    probe = result.object_stores["rgw"]  # type: ignore[index]
    assert probe.ok, probe.message
    assert [s.op for s in probe.steps] == ["list", "put", "get", "delete"] and all(s.ok for s in probe.steps)
    assert probe.latency_ms is not None and probe.latency_ms > 0 and all(s.ms and s.ms > 0 for s in probe.steps)
    assert probe.latency_ms >= sum(s.ms or 0 for s in probe.steps) * 0.99
    print(f"\n[s3 canary] {probe.latency_ms:.1f} ms: " + ", ".join(f"{s.op} {s.ms:.1f}" for s in probe.steps))
    # the canary leaves nothing behind
    from cephlab import S3_ACCESS
    from minio import Minio

    client = Minio(ceph_lab.s3_endpoint.removeprefix("http://"), access_key=S3_ACCESS, secret_key=S3_SECRET,
                   secure=False, region="us-east-1")
    assert list(client.list_objects(bucket, prefix="hpctui-canary/")) == []
    slow = s3_source(ceph_lab, ceph_lab.write_keys(tmp_path), latency_warn_ms=0.001)
    found = storage_findings_of(asyncio.run(slow.collect()))
    assert [f.code for f in found] == ["s3_slow"] and "canary round trip" in found[0].message


def storage_findings_of(result: object) -> list:
    store = Store("c")
    store.register_source(result.source, "s3")  # type: ignore[attr-defined]
    store.apply(result)  # type: ignore[arg-type]
    return [f for fs in storage_findings(store.snapshot()).values() for f in fs]


@pytest.mark.parametrize(("access", "secret", "code"), [
    ("LABACCESSKEY000000001", "wrong" + S3_SECRET[5:], "SignatureDoesNotMatch"),
    ("NOSUCHACCESSKEY00000", S3_SECRET, "InvalidAccessKeyId"),
])
def test_wrong_key_is_an_auth_finding(ceph_lab: CephLab, bucket: str, tmp_path: Path, access: str, secret: str,
                                      code: str) -> None:
    source = s3_source(ceph_lab, ceph_lab.write_keys(tmp_path, access, secret))
    result = asyncio.run(source.collect())
    probe = result.object_stores["rgw"]  # type: ignore[index]
    assert not probe.ok and probe.failure is S3Failure.AUTH and probe.code == code
    assert [s.op for s in probe.steps] == ["list"]
    found = storage_findings_of(result)
    assert [f.code for f in found] == ["s3_auth"] and code in found[0].message
    text = repr(probe) + repr(found)
    assert secret not in text and access not in text  # credentials are never shown


def test_missing_bucket(ceph_lab: CephLab, bucket: str, tmp_path: Path) -> None:
    source = s3_source(ceph_lab, ceph_lab.write_keys(tmp_path), bucket="no-such-bucket")
    probe = asyncio.run(source.collect()).object_stores["rgw"]  # type: ignore[index]
    assert probe.failure is S3Failure.BUCKET and probe.code == "NoSuchBucket"
    assert [f.code for f in storage_findings_of_probe(probe)] == ["s3_bucket_missing"]


def storage_findings_of_probe(probe: object) -> list:
    from hpctui.findings.storage import s3_findings

    return s3_findings(probe)  # type: ignore[arg-type]


def test_unreachable_mons_mark_the_group_stale(ceph_lab: CephLab, tmp_path: Path) -> None:
    """A conf naming a mon port nobody listens on: the read fails within its timeout; the store keeps the error,
    and the group says "never read" (an error), then "stale" over the last health once one was read."""
    conf = Path(ceph_lab.conf).read_text().replace("127.0.0.1:23300", "127.0.0.1:23301").replace(
        "127.0.0.1:23789", "127.0.0.1:23790")
    bad = tmp_path / "ceph.conf"
    bad.write_text(conf)
    source = CephSource(CephSettings(conf=str(bad), timeout_s=3))
    with pytest.raises(CephError) as err:
        asyncio.run(source.collect())
    store = Store("c")
    store.register_source("ceph", "ceph")
    store.record_error("ceph", str(err.value))
    groups = storage_findings(store.snapshot())
    assert [f.code for f in groups["ceph/ceph"]] == ["ceph_stale"] and "never read" in groups["ceph/ceph"][0].message
    good = asyncio.run(ceph_source(ceph_lab).collect())
    store.apply(good)
    store.record_error("ceph", str(err.value))
    stale = storage_findings(store.snapshot())["ceph/ceph"]
    assert [f.code for f in stale] == ["ceph_stale"] and stale[0].message.startswith("stale")


def test_healthy_cluster_from_the_mgr_metrics(ceph_lab: CephLab, ceph_metrics_url: str) -> None:
    """``metrics_url``: the same health from the mgr's Prometheus module, one GET (no ``ceph`` run)."""
    import json

    source = CephSource(CephSettings(name="m", metrics_url=ceph_metrics_url, timeout_s=10))
    # radosgw creates its pools as it starts, and a pool's new PGs peer for a while: wait until the cluster
    # itself (``ceph pg stat``) says every PG is active+clean, then until the module (refreshed every second)
    # counts the same PGs, and compare the two
    deadline = time.monotonic() + 90
    while True:
        stat = json.loads(ceph_lab.ceph("pg", "stat", "--format", "json"))
        summary = stat.get("pg_summary", stat)
        cli_total = int(summary.get("num_pgs", 0))
        cli_clean = sum(int(s.get("num", 0)) for s in summary.get("num_pg_by_state", [])
                        if set(str(s.get("name", "")).split("+")) == {"active", "clean"})
        t = time.monotonic()
        health = asyncio.run(source.collect()).ceph["m"]  # type: ignore[index]
        took = time.monotonic() - t
        settled = cli_total and cli_clean == cli_total and health.pgs_total == cli_total
        if settled or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    print(f"\n[ceph metrics] one read {1000 * took:.0f} ms; {cli_total} PGs")
    assert (health.status, health.checks, health.via) == ("HEALTH_OK", (), "metrics")
    assert health.version and health.version.startswith("16.2.")
    assert [(o.name, o.host, o.up, o.in_cluster) for o in health.osds] == [("osd.0", "cephlab", True, True)]
    assert {p.name for p in health.pools} >= {".rgw.root", "device_health_metrics"}
    assert cli_total and cli_clean == cli_total, stat  # the bed settled within 90 s
    assert health.pgs_total == cli_total and health.pgs_in("clean") == cli_total
    assert health.mon_addrs == ("127.0.0.1",) and ceph_findings(health) == []
    # the module answers any other path with its HTML index page (200): not its metrics, one line
    index = CephSource(CephSettings(name="m", metrics_url=ceph_metrics_url.replace("/metrics", "/"), timeout_s=5))
    with pytest.raises(CephError, match=r"no ceph_health_status in the answer .*not the mgr's Prometheus metrics"):
        asyncio.run(index.collect())
    port = int(ceph_metrics_url.rsplit(":", 1)[1].split("/")[0])
    closed = CephSource(CephSettings(name="m", metrics_url=f"http://127.0.0.1:{port + 1}/metrics", timeout_s=5))
    with pytest.raises(CephError, match=r"cannot reach http://127\.0\.0\.1"):
        asyncio.run(closed.collect())


def test_stopped_osd_is_an_osd_down_finding(ceph_lab: CephLab, ceph_metrics_url: str) -> None:
    """SIGTERM to the OSD: within seconds ``ceph health detail`` says OSD_DOWN; the source, the store, the findings
    index and the problem list's grouping all show it in the ceph/ceph group; the mgr's metrics say it too
    (code and severity, no message). The OSD is started again after."""
    from hpctui.ui.widgets.problems import problem_groups

    source = ceph_source(ceph_lab)
    metrics = CephSource(CephSettings(name="m", metrics_url=ceph_metrics_url, timeout_s=10))
    ceph_lab.stop_osd()
    try:
        deadline = time.monotonic() + 60
        while True:
            result = asyncio.run(source.collect())
            health = result.ceph["ceph"]  # type: ignore[index]
            if any(c.code == "OSD_DOWN" for c in health.checks) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert health.status == "HEALTH_WARN"
        assert health.osds_up == 0 and [o.up for o in health.osds] == [False]
        store = Store("c")
        store.register_source("ceph", "ceph")
        store.apply(result)
        index = findings_for(store.snapshot(), Thresholds())
        groups = dict(problem_groups(index))
        found = groups["ceph/ceph"]
        down = [f for f in found if f.code == "ceph_osd_down"]
        assert down and "osd.0 (root=default,host=cephlab) is down" in down[0].message
        assert down[0].object == "ceph/ceph/OSD_DOWN"
        assert index.by_object("ceph/ceph/OSD_DOWN") == tuple(down)
        t = time.monotonic()
        while True:  # the module refreshes its metrics every scrape_interval (1 s here; 15 s by default)
            seen = asyncio.run(metrics.collect()).ceph["m"]  # type: ignore[index]
            if any(c.code == "OSD_DOWN" for c in seen.checks) or time.monotonic() > t + 30:
                break
            time.sleep(0.5)
        print(f"\n[ceph metrics] OSD_DOWN in the metrics {time.monotonic() - t:.1f}s after the CLI said it")
        assert seen.status == "HEALTH_WARN" and [o.up for o in seen.osds] == [False]
        (via,) = [f for f in ceph_findings(seen) if f.code == "ceph_osd_down"]
        assert via.object == "ceph/m/OSD_DOWN" and via.message.startswith("OSD_DOWN: osd.0 on cephlab down (the mgr")
    finally:
        ceph_lab.start_osd()
    healed = asyncio.run(source.collect()).ceph["ceph"]  # type: ignore[index]
    assert healed.status == "HEALTH_OK" and ceph_findings(healed) == []
