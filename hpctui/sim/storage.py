"""The demo's storage behind the nodes: a Ceph cluster in HEALTH_WARN with one OSD down (its PGs undersized
and degraded while the cluster waits to mark it out), one S3 endpoint refusing the configured access key and
one answering the canary; the slow node's CephFS mount of that cluster slow (``CEPHFS_MOUNT``). Shapes and words as a real Ceph 16.2 and RGW give them (tests/fixtures/ceph);
deterministic, built once (the same objects every poll: the findings are not recomputed for nothing)."""

from __future__ import annotations

from hpctui.model import Severity
from hpctui.model.storage import CephCheck, CephHealth, CephOsd, CephPool, S3Failure, S3Probe, S3Step

HOSTS = ("stor01", "stor02", "stor03")
OSDS_PER_HOST = 12
DOWN_OSD = 17  # on stor02
TIB = 1024**4
CEPH_FSID = "4f8c2a4e-6b1d-4c36-9a51-2d3e8c0f7b19"
# the slow node's CephFS mount of this cluster (new mount syntax, as /proc/self/mountinfo shows it): tied to
# ceph/ceph by its fsid, so its finding names the cluster's HEALTH_WARN and the group counts the node
CEPHFS_MOUNT = ("/ceph/projects", f"hpc@{CEPH_FSID}.cephfs=/projects", 2400.0)  # target, source, stat latency ms


def demo_ceph() -> CephHealth:
    """36 OSDs on 3 hosts, osd.17 down: OSD_DOWN and PG_DEGRADED, as ``ceph health detail`` words them."""
    osds = tuple(CephOsd(id=i, name=f"osd.{i}", host=HOSTS[i // OSDS_PER_HOST], up=i != DOWN_OSD,
                         device_class="nvme" if i % OSDS_PER_HOST < 2 else "hdd")
                 for i in range(len(HOSTS) * OSDS_PER_HOST))
    pgs = ("3.1f", "3.2a", "3.47", "3.5c", "3.9d", "5.0e")
    checks = (
        CephCheck(code="OSD_DOWN", severity=Severity.WARNING, summary="1 osds down", count=1,
                  details=(f"osd.{DOWN_OSD} (root=default,host=stor02) is down",)),
        CephCheck(code="PG_DEGRADED", severity=Severity.WARNING, count=61,
                  summary="Degraded data redundancy: 412107/12330963 objects degraded (3.342%), 61 pgs degraded, "
                          "61 pgs undersized",
                  details=tuple(f"pg {p} is stuck undersized for 4m, current state active+undersized+degraded, "
                                f"last acting [{4 + k},{26 + k}]" for k, p in enumerate(pgs))),
    )
    pools = (
        CephPool(name="rbd", id=1, stored_bytes=int(96.2 * TIB), objects=25_214_112, used_pct=41.3),
        CephPool(name="cephfs_data", id=2, stored_bytes=int(151.7 * TIB), objects=39_811_004, used_pct=58.9),
        CephPool(name="cephfs_metadata", id=3, stored_bytes=int(0.4 * TIB), objects=1_902_377, used_pct=0.2),
        CephPool(name="default.rgw.buckets.data", id=5, stored_bytes=int(61.0 * TIB), objects=8_010_553,
                 used_pct=36.0),
    )
    return CephHealth(name="ceph", status="HEALTH_WARN", fsid=CEPH_FSID,
                      mon_addrs=("10.20.0.11:3300", "10.20.0.11:6789", "10.20.0.12:3300", "10.20.0.12:6789",
                                 "10.20.0.13:3300", "10.20.0.13:6789"),
                      version="16.2.15", checks=checks, osds_total=36, osds_up=35, osds_in=36, osds=osds,
                      pgs_total=2048, pg_states=(("active+clean", 1987), ("active+undersized+degraded", 61)),
                      degraded_objects=412_107, bytes_total=int(1.31 * 1024 * TIB), bytes_used=int(0.62 * 1024 * TIB),
                      pools=pools)


def demo_object_stores(t: float) -> dict[str, S3Probe]:
    """``datasets`` (MinIO) refuses the access key (403 InvalidAccessKeyId at the first call, the list);
    ``checkpoints`` (Ceph RGW) answers the canary round trip in 41 ms."""
    refused = S3Probe(name="datasets", endpoint="https://minio.demo.example:9000", bucket="datasets", time=t,
                      ok=False, failure=S3Failure.AUTH, code="InvalidAccessKeyId",
                      message="list: InvalidAccessKeyId: The Access Key Id you provided does not exist in our records.",
                      steps=(S3Step(op="list", ok=False, ms=12.4, code="InvalidAccessKeyId"),))
    steps = (S3Step(op="list", ok=True, ms=9.8), S3Step(op="put", ok=True, ms=14.1),
             S3Step(op="get", ok=True, ms=6.2), S3Step(op="delete", ok=True, ms=10.9))
    ok = S3Probe(name="checkpoints", endpoint="http://rgw.demo.example:7480", bucket="ckpt-canary", time=t, ok=True,
                 steps=steps, latency_ms=41.0)
    return {"datasets": refused, "checkpoints": ok}
