"""The Ceph source with a stand-in ``ceph`` (a script answering from the real recordings): the exact argv,
a part that fails costing only that part, the read failing when neither status nor health detail answers,
a hung call ended by the timeout; then the findings through the store, the problem list's groups and the demo."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path

import pytest

from hpctui.core.store import Store
from hpctui.findings.health import Thresholds
from hpctui.findings.index import findings_for
from hpctui.findings.storage import storage_findings
from hpctui.model import Part, Severity
from hpctui.sources.ceph.settings import CephSettings
from hpctui.sources.ceph.source import CephError, CephSource
from hpctui.sources.registry import build_source
from hpctui.ui.widgets.problems import finding_part, object_node, problem_groups

FIX = Path(__file__).parent / "fixtures" / "ceph"


def fake_ceph(tmp_path: Path, state: str, fail: tuple[str, ...] = (), hang: tuple[str, ...] = ()) -> list[str]:
    """argv of a stand-in ``ceph``: answers status/health detail/osd tree/df/versions from the ``state`` samples."""
    script = tmp_path / "ceph.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time, pathlib
        args = [a for a in sys.argv[1:]]
        (pathlib.Path({str(tmp_path)!r}) / "argv").open("a").write(" ".join(args) + "\\n")
        i = args.index("--connect-timeout") + 2
        words = " ".join(args[i:args.index("-f")])
        if words in {fail!r}:
            sys.stderr.write("Error initializing cluster client: ObjectNotFound('RADOS object not found')\\n")
            sys.exit(1)
        if words in {hang!r}:
            time.sleep(60)
        name = {{"status": "status-{state}.json", "health detail": "health-detail-{state}.json",
                 "osd tree": "osd-tree-{state}.json", "df detail": "df-{state}.json",
                 "versions": "versions.json", "mon dump": "mon-dump.json"}}[words]
        p = pathlib.Path({str(FIX)!r}) / name
        sys.stdout.write(p.read_text() if p.exists() else "{{}}")
    """))
    return [sys.executable, str(script)]


def test_argv() -> None:
    s = CephSource(CephSettings(command=["ssh", "admin1", "ceph"], conf="/etc/ceph/c.conf",
                                keyring="/etc/ceph/ro.keyring", client="client.hpctui", timeout_s=7.5))
    assert s.argv("health", "detail") == ["ssh", "admin1", "ceph", "--conf", "/etc/ceph/c.conf", "--keyring",
                                          "/etc/ceph/ro.keyring", "--name", "client.hpctui", "--connect-timeout", "7",
                                          "health", "detail", "-f", "json"]
    assert isinstance(build_source(CephSettings()), CephSource)


def test_osd_down_read(tmp_path: Path) -> None:
    source = CephSource(CephSettings(command=fake_ceph(tmp_path, "osd-down"), pool_warn_pct=80))
    result = asyncio.run(source.collect())
    h = result.ceph["ceph"]  # type: ignore[index]
    assert h.status == "HEALTH_WARN" and [c.code for c in h.checks] == ["OSD_DOWN", "OSD_HOST_DOWN", "OSD_ROOT_DOWN"]
    assert h.checks[0].details == ("osd.0 (root=default,host=cephlab) is down",)  # from health detail
    assert h.osds[0].up is False and h.version == "16.2.15" and h.pool_warn_pct == 80 and len(h.pools) == 7
    calls = (tmp_path / "argv").read_text().splitlines()
    assert len(calls) == 6 and sum("versions" in c or "mon dump" in c for c in calls) == 2
    asyncio.run(source.collect())
    assert len((tmp_path / "argv").read_text().splitlines()) == 10  # versions and mon dump only once


def test_a_failed_part_costs_that_part(tmp_path: Path) -> None:
    source = CephSource(CephSettings(command=fake_ceph(tmp_path, "osd-down", fail=("osd tree", "health detail"))))
    result = asyncio.run(source.collect())
    h = result.ceph["ceph"]  # type: ignore[index]
    assert h.osds == () and [c.code for c in h.checks][:1] == ["OSD_DOWN"] and h.checks[0].details == ()
    assert [m.split(":")[0] for m in h.parts_missing] == ["health detail", "osd tree"]
    assert any("RADOS object not found" in w for w in result.warnings)
    found = storage_findings_of(result)
    assert "ceph_partial" in [f.code for f in found]


def test_no_status_and_no_health_fails_the_read(tmp_path: Path) -> None:
    source = CephSource(CephSettings(command=fake_ceph(tmp_path, "healthy", fail=("status", "health detail"))))
    with pytest.raises(CephError, match="exit 1: Error initializing cluster client"):
        asyncio.run(source.collect())


def test_a_hung_call_is_ended(tmp_path: Path) -> None:
    source = CephSource(CephSettings(command=fake_ceph(tmp_path, "healthy", hang=("df detail",)), timeout_s=0.5))
    h = asyncio.run(source.collect()).ceph["ceph"]  # type: ignore[index]
    assert h.status == "HEALTH_OK" and h.parts_missing and "timed out" in h.parts_missing[0]


def test_a_wrong_answer_fails_the_read(tmp_path: Path) -> None:
    source = CephSource(CephSettings(command=[sys.executable, "-c", "print('garbage')"]))
    with pytest.raises(CephError, match="not the JSON expected"):
        asyncio.run(source.collect())


def storage_findings_of(result: object) -> list:
    store = Store("c")
    store.register_source("ceph", "ceph")
    store.apply(result)  # type: ignore[arg-type]
    return [f for fs in storage_findings(store.snapshot()).values() for f in fs]


def test_stale_marker_over_the_last_health(tmp_path: Path) -> None:
    store = Store("c")
    store.register_source("ceph", "ceph")
    store.record_error("ceph", "ceph status: timed out after 20s", at=100.0)
    (never,) = storage_findings(store.snapshot())["ceph/ceph"]
    assert (never.code, never.severity) == ("ceph_stale", Severity.ERROR) and "never read" in never.message
    result = asyncio.run(CephSource(CephSettings(command=fake_ceph(tmp_path, "osd-down")), clock=lambda: 200.0)
                         .collect())
    store.apply(result)
    store.record_error("ceph", "ceph status: timed out after 20s", at=290.0)
    snap = store.snapshot()
    group = storage_findings(snap)["ceph/ceph"]
    assert group[0].code == "ceph_stale" and group[0].message.startswith("stale for ") and "timed out" in group[0].message
    assert "ceph_osd_down" in [f.code for f in group]  # the last health read stays shown under the marker
    groups = dict(problem_groups(findings_for(snap, Thresholds())))
    assert groups["ceph/ceph"][0].code == "ceph_stale"


def test_problem_list_places_storage_after_the_nodes() -> None:
    from hpctui.findings.health import Finding

    f = Finding(severity=Severity.WARNING, object="ceph/prod/OSD_DOWN", code="ceph_osd_down", message="m")
    assert object_node(f.object) == "ceph/prod" and object_node("s3/datasets/auth") == "s3/datasets"
    assert finding_part(f) is Part.CEPH
    assert finding_part(Finding(severity=Severity.ERROR, object="s3/x/auth", code="s3_auth", message="m")) \
        is Part.OBJECT_STORES


def test_demo_shows_an_osd_down_and_an_endpoint_refusing_auth() -> None:
    from hpctui.sim.cluster import SimCluster

    sim = SimCluster(size=16, seed=0, start_time=1000.0)
    result = sim.to_result(1000.0)
    store = Store("demo")
    store.register_source("demo", "demo")
    store.apply(result)
    snap = store.snapshot()
    groups = storage_findings(snap)
    assert [f.code for f in groups["ceph/ceph"]] == ["ceph_osd_down", "ceph_pg_degraded", "ceph_mounts"]
    assert "osd.17 (root=default,host=stor02) is down" in groups["ceph/ceph"][0].message
    assert [f.code for f in groups["s3/datasets"]] == ["s3_auth"] and "s3/checkpoints" not in groups
    assert snap.part_sources[Part.CEPH.value] == ("demo",)
