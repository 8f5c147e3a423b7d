"""CephFS mounts tied to their Ceph cluster (hpctui.findings.cephfs): the mount sources of real kernel-client
mount lines, the cluster found by fsid or mon address, a hung mount's finding naming the cluster and its health,
the Ceph group counting the nodes whose mounts hang, and the incremental findings following the cluster's health.

The mount lines are real ones, quoted from public sources (fsids as published, some redacted there):
- old syntax, from a pod: ``10.132.4.63:6789:/ /mnt/cephfs ceph rw,noatime,name=inference-test,acl,
  mds_namespace=cephfs-inference-test``; a test fixture's ``10.0.0.1:6789:/ /work ceph rw,relatime,name=admin 0 0``;
  several mons (as mounted): ``10.10.11.7:6789,10.10.11.8:6789,10.10.11.9:6789:/``;
- new syntax, ``/proc/self/mounts``: ``services@00000000-0000-0000-0000-000000000000.cephfs=/volumes/containers
  /ceph/containers ceph rw,noatime,name=services,secret=<hidden>,ms_mode=prefer-crc,mount_timeout=300,acl,
  mon_addr=[REDACTED]:3300,recover_session=clean 0 0``; ``df`` after ``mount.ceph admin@$(ceph fsid).cephfs=/``:
  ``admin@6cd89b06-c072-11ee-95c4-d00d10ad2e38.cephfs=/``; one with its fsid redacted: ``admin@REDACTED.caskd=/``.
"""

from __future__ import annotations

import pytest

from hpctui.findings.cephfs import cluster_of, cluster_words, parse_cephfs_source
from hpctui.findings.health import Thresholds, mount_findings, node_findings
from hpctui.findings.index import FindingsCache, findings_for
from hpctui.findings.storage import storage_findings
from hpctui.model import ClusterSnapshot, Mount, MountState, Node, Severity
from hpctui.model.storage import CephCheck, CephHealth
from hpctui.sources.ssh.probe.parse_node import StatResult, mount_state, parse_mountinfo

FSID = "6cd89b06-c072-11ee-95c4-d00d10ad2e38"


@pytest.mark.parametrize(("source", "fsid", "fs", "path", "mons"), [
    ("10.132.4.63:6789:/", None, None, "/", (("10.132.4.63", 6789),)),
    ("10.0.0.1:6789:/", None, None, "/", (("10.0.0.1", 6789),)),
    ("10.10.11.7:6789,10.10.11.8:6789,10.10.11.9:6789:/", None, None, "/",
     (("10.10.11.7", 6789), ("10.10.11.8", 6789), ("10.10.11.9", 6789))),
    ("192.168.2.163:/scratch/a:b", None, None, "/scratch/a:b", (("192.168.2.163", 6789),)),  # port defaults
    ("[2001:db8::1]:3300:/", None, None, "/", (("2001:db8::1", 3300),)),
    ("services@00000000-0000-0000-0000-000000000000.cephfs=/volumes/containers",
     "00000000-0000-0000-0000-000000000000", "cephfs", "/volumes/containers", ()),
    (f"admin@{FSID.upper()}.cephfs=/", FSID, "cephfs", "/", ()),
    ("admin@.cephfs=/", None, "cephfs", "/", ()),  # the helper fills the fsid in; written without it
])
def test_mount_sources(source: str, fsid: str | None, fs: str | None, path: str,
                       mons: tuple[tuple[str, int], ...]) -> None:
    dev = parse_cephfs_source(source)
    assert dev is not None and (dev.fsid, dev.fs_name, dev.path, dev.mons) == (fsid, fs, path, mons)


@pytest.mark.parametrize("source", ["ceph-fuse", "admin@REDACTED.caskd=/", "", None, "none", ":/", "x" * 5000])
def test_sources_that_name_no_cluster(source: str | None) -> None:
    assert parse_cephfs_source(source) is None


def test_the_probe_keeps_the_source_of_a_mountinfo_line() -> None:
    line = (f"812 29 0:61 / /scratch rw,noatime shared:400 - ceph admin@{FSID}.cephfs=/scratch "
            "rw,name=admin,secret=<hidden>,ms_mode=prefer-crc,acl,mon_addr=10.0.0.1:3300/10.0.0.2:3300\n"
            "813 29 0:62 / /home rw,relatime shared:401 - ceph 10.0.0.1:6789,10.0.0.2:6789:/home rw,name=hpc,acl\n")
    infos = parse_mountinfo(line, ["ceph"])
    mounts = [mount_state(i, StatResult(rc=None, late=True, latency_ms=None, error=None), 500.0) for i in infos]
    assert [(m.target, m.source, m.state) for m in mounts] == [
        ("/scratch", f"admin@{FSID}.cephfs=/scratch", MountState.HUNG),
        ("/home", "10.0.0.1:6789,10.0.0.2:6789:/home", MountState.HUNG)]


def prod(status: str = "HEALTH_WARN", codes: tuple[str, ...] = ("MDS_SLOW_REQUEST", "OSD_DOWN"), **kw: object) -> CephHealth:
    checks = tuple(CephCheck(code=c, severity=Severity.WARNING, summary="s") for c in codes)
    fields: dict[str, object] = {"fsid": FSID, "mon_addrs": ("10.0.0.1:3300", "10.0.0.1:6789", "10.0.0.2:6789")}
    fields.update(kw)
    return CephHealth(name="prod", status=status, checks=checks, **fields)  # type: ignore[arg-type]


def mount(source: str | None, state: MountState = MountState.HUNG, node: str = "gpu01", fstype: str = "ceph",
          target: str = "/scratch") -> Mount:
    return Mount(node=node, target=target, fstype=fstype, source=source, state=state,
                 detail="stat -f did not return in time" if state is MountState.HUNG else None)


def test_cluster_by_fsid_or_mon_address() -> None:
    other = CephHealth(name="other", status="HEALTH_OK", fsid="11111111-2222-3333-4444-555555555555",
                       mon_addrs=("10.9.0.1:6789",))
    clusters = {"other": other, "prod": prod()}
    assert cluster_of(mount(f"admin@{FSID}.cephfs=/"), clusters) is clusters["prod"]
    assert cluster_of(mount("10.0.0.2:6789:/"), clusters) is clusters["prod"]  # a v1 address of `mon dump`
    assert cluster_of(mount("10.9.0.1:/"), clusters) is other  # the default port
    assert cluster_of(mount("10.0.0.2:3300:/"), clusters) is None  # that mon has no v2 address in the dump
    assert cluster_of(mount("mon1.example.org:6789:/"), clusters) is None  # names are resolved before the kernel
    assert cluster_of(mount("admin@99999999-2222-3333-4444-555555555555.cephfs=/"), clusters) is None
    assert cluster_of(mount("10.0.0.1:6789:/", fstype="nfs4"), clusters) is None
    assert cluster_of(mount("ceph-fuse", fstype="fuse.ceph-fuse"), clusters) is None
    # from the mgr's metrics: no fsid, the mons' IPs without ports
    metrics = prod(fsid=None, mon_addrs=("10.0.0.1",))
    assert cluster_of(mount("10.0.0.1:6789:/"), {"prod": metrics}) is metrics
    assert cluster_of(mount(f"admin@{FSID}.cephfs=/"), {"prod": metrics}) is None


def test_a_hung_cephfs_mount_names_its_cluster_and_its_health() -> None:
    clusters = {"prod": prod()}
    (f,) = mount_findings(mount(f"admin@{FSID}.cephfs=/scratch"), clusters)
    assert (f.severity, f.code, f.object) == (Severity.CRITICAL, "mount_hung", "mount/gpu01:/scratch")
    assert f.message == ("ceph /scratch hung: stat -f did not return in time — cluster ceph/prod HEALTH_WARN "
                         "MDS_SLOW_REQUEST, OSD_DOWN")
    (slow,) = mount_findings(mount("10.0.0.1:6789:/", MountState.SLOW), {"prod": prod("HEALTH_OK", ())})
    assert slow.message == "ceph /scratch slow — cluster ceph/prod HEALTH_OK"
    assert mount_findings(mount("10.0.0.1:6789:/", MountState.OK), clusters) == []
    (plain,) = mount_findings(mount("10.7.7.7:6789:/"), clusters)  # a cluster hpctui is not told about
    assert "cluster" not in plain.message
    many = prod(codes=("A", "B", "C", "D", "E"))
    assert cluster_words(many) == "ceph/prod HEALTH_WARN A, B, C (+2 more)"


NODES = {f"gpu0{i}": Node(name=f"gpu0{i}") for i in range(1, 10)}


def snapshot(mounts: dict[str, tuple[Mount, ...]], health: CephHealth | None = None) -> ClusterSnapshot:
    return ClusterSnapshot(cluster="c", time=1000.0, nodes=NODES, mounts=mounts, ceph={"prod": health or prod()})


def test_the_ceph_group_counts_the_nodes_whose_mounts_hang() -> None:
    src = f"admin@{FSID}.cephfs=/scratch"
    mounts = {f"gpu0{i}": (mount(src, node=f"gpu0{i}"), mount("10.0.0.1:6789:/home", node=f"gpu0{i}", target="/home"))
              for i in range(1, 8)}
    mounts["gpu08"] = (mount(src, MountState.SLOW, node="gpu08"),)
    mounts["gpu09"] = (mount(src, MountState.OK, node="gpu09"), mount("10.7.7.7:/", node="gpu09"))
    group = storage_findings(snapshot(mounts))["ceph/prod"]
    (m,) = [f for f in group if f.object == "ceph/prod/mounts"]
    assert (m.severity, m.code) == (Severity.ERROR, "ceph_mounts_hung")
    assert m.message == ("CephFS mounts hung on 7 node(s): gpu01, gpu02, gpu03, gpu04, gpu05 (+2 more); "
                         "slow on 1 node(s): gpu08")
    only_slow = storage_findings(snapshot({"gpu08": mounts["gpu08"]}))["ceph/prod"]
    assert [(f.code, f.severity) for f in only_slow if f.object.endswith("/mounts")] == [("ceph_mounts", Severity.WARNING)]
    assert "ceph/prod" not in storage_findings(snapshot({"gpu09": mounts["gpu09"]}, prod("HEALTH_OK", ())))


def test_incremental_findings_follow_the_clusters_health() -> None:
    """The mounts are the same objects in both snapshots: the node is recomputed because its cluster's health
    changed (the index's ceph key), and the group's count is there in both."""
    mounts = {"gpu01": (mount(f"admin@{FSID}.cephfs=/scratch"),), "gpu02": (mount("10.0.0.1:6789:/", MountState.OK),)}
    cache = FindingsCache()
    t = Thresholds()
    first = cache.index(snapshot(mounts), t)
    assert "MDS_SLOW_REQUEST" in first.node("gpu01")[0].message
    healed = snapshot(mounts, prod("HEALTH_OK", ()))
    second = cache.index(healed, t)
    assert second.node("gpu01")[0].message.endswith("cluster ceph/prod HEALTH_OK")
    assert cache.last_recomputed(t) == 2  # the nodes with CephFS mounts, for the health change
    assert [f.message for f in second] == [f.message for f in findings_for(healed, t)]
    assert any(f.code == "ceph_mounts_hung" for f in second)
    same = cache.index(snapshot(mounts, prod("HEALTH_OK", ())), t)  # new objects, same words: nothing recomputed
    assert cache.last_recomputed(t) == 0 and [f.message for f in same] == [f.message for f in second]
    assert node_findings(healed, "gpu02", t) == []


def test_the_demo_ties_the_slow_nodes_cephfs_mount_to_its_ceph() -> None:
    from hpctui.core.store import Store
    from hpctui.sim.cluster import SimCluster

    sim = SimCluster(size=16, seed=0, start_time=1000.0)
    store = Store("demo")
    store.register_source("demo", "demo")
    store.apply(sim.to_result(1000.0))
    snap = store.snapshot()
    node = sim.place.slow_node
    index = findings_for(snap, Thresholds())
    (cephfs,) = [f for f in index.node(node) if f.object == f"mount/{node}:/ceph/projects"]
    assert cephfs.message == ("ceph /ceph/projects slow (2400 ms) — cluster ceph/ceph HEALTH_WARN OSD_DOWN, "
                              "PG_DEGRADED")
    (group,) = [f for f in index if f.object == "ceph/ceph/mounts"]
    assert (group.code, group.message) == ("ceph_mounts", f"CephFS mounts slow on 1 node(s): {node}")
    assert sum(1 for ms in snap.mounts.values() for m in ms if m.fstype == "ceph") == 1
