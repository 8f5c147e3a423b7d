"""Parallel file systems as clients see them: parsers on real recorded outputs (tests/fixtures/lustre, beegfs),
the cross-node target findings (one per target naming the nodes) and quota findings, and the demo's OST at 97 %."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hpctui.findings import pfs
from hpctui.findings.health import Thresholds
from hpctui.findings.index import findings_for
from hpctui.findings.pfs import quota_findings, running_jobs_by_user, target_findings
from hpctui.model import ClusterSnapshot, Mount, MountState, Severity, SlurmJob
from hpctui.model.mount import FsTarget, QuotaUsage, TargetState
from hpctui.sources.ssh.probe import parse_pfs as pp

FIX = Path(__file__).parent / "fixtures"


def fixture(rel: str) -> str:
    return (FIX / rel).read_text()


def test_lfs_df_real_output_every_target_by_mount() -> None:
    by_mount = pp.parse_lfs_df(fixture("lustre/lfs-df_snx11035_nersc-edison.txt"))
    assert set(by_mount) == {"/scratch2", "/scratch3"}
    s2 = by_mount["/scratch2"]
    assert len(s2) == 25 and sum(t.kind == "MDT" for t in s2) == 1
    ost6 = next(t for t in s2 if t.name == "snx11035-OST0006")
    assert (ost6.fs, ost6.kind, ost6.used_pct, ost6.size_kib) == ("snx11035", "OST", 83.0, 90767651352)
    assert all(t.state is TargetState.ACTIVE for t in s2)
    assert {t.fs for t in by_mount["/scratch3"]} == {"snx11036"}


def test_lfs_df_inactive_error_and_flag_lines() -> None:
    # SYNTHETIC lines in lfs.c's showdf format (FACTS §13): no real recording of them was found
    text = ("UUID                   1K-blocks        Used   Available Use% Mounted on\n"
            "scratch-MDT0000_UUID       10000        5000        5000  50% /lustre/scratch[MDT:0]\n"
            "scratch-OST0000_UUID       10000        9700         300  97% /lustre/scratch[OST:0]\n"
            "scratch-OST0001_UUID: inactive device\n"
            "scratch-OST0002_UUID: Resource temporarily unavailable\n"
            "scratch-OST0003_UUID       10000        1000        9000  10% /lustre/scratch[OST:3] D\n"
            "\x1b[31mgarbage line\n"
            "filesystem_summary:        30000       15700       14300  52% /lustre/scratch\n")
    t = {x.name: x for x in pp.parse_lfs_df(text)["/lustre/scratch"]}
    assert t["scratch-OST0000"].used_pct == 97.0
    assert t["scratch-OST0001"].state is TargetState.INACTIVE
    assert t["scratch-OST0002"].state is TargetState.ERROR and t["scratch-OST0002"].detail == \
        "Resource temporarily unavailable"
    assert t["scratch-OST0003"].state is TargetState.DEGRADED
    assert len(t) == 5


def test_beegfs_targets_real_outputs() -> None:
    storage = pp.parse_beegfs_targets(fixture("beegfs/beegfs-ctl_listtargets_storage_state_offline.txt"))
    assert [(t.name, t.state) for t in storage[:3]] == [
        ("storage:3011", TargetState.OFFLINE), ("storage:3012", TargetState.OFFLINE),
        ("storage:3021", TargetState.ACTIVE)]
    assert len(storage) == 6 and "node 301" in (storage[0].detail or "")
    meta = pp.parse_beegfs_targets(fixture("beegfs/beegfs-ctl_listtargets_meta_state_needs-resync.txt"), "meta")
    assert [t.state for t in meta] == [TargetState.DEGRADED, TargetState.DEGRADED]


def test_lfs_quota_real_outputs() -> None:
    (h,) = pp.parse_lfs_quota(fixture("lustre/lfs-quota_u_mila-home_h.txt"))
    assert h.user == "normandf" and h.filesystem == "/home/mila"
    assert h.used_bytes == pytest.approx(99.99 * 1024**3) and h.hard_bytes == 100 * 1024**3
    assert h.files == 921718 and h.files_hard == 1048576 and not h.over
    assert h.used_pct == pytest.approx(99.99)
    (k,) = pp.parse_lfs_quota(fixture("lustre/lfs-quota_u_lustre7_kbytes.txt"))
    assert k.used_bytes == 982177580 * 1024 and k.hard_bytes == 1000000000 * 1024 and k.soft_bytes == 0
    (bad,) = pp.parse_lfs_quota(fixture("lustre/lfs-quota_u_ozstar-fred_invalid.txt"))
    assert bad.used_bytes is None and bad.files is None and bad.hard_bytes == 6291456 * 1024


def test_lfs_quota_over_flag_and_long_mount() -> None:
    # SYNTHETIC: the '*' flag after the used value and a long mount point on its own line (lfs.c, FACTS §13)
    text = ("Disk quotas for usr alice (uid 1000):\n"
            "     Filesystem  kbytes   quota   limit   grace   files   quota   limit   grace\n"
            "/lustre/very/long/mount/point/name\n"
            "                 1100*    1000    1200  6d23h59m59s  10  0  0  -\n")
    (q,) = pp.parse_lfs_quota(text)
    assert q.over and q.filesystem == "/lustre/very/long/mount/point/name" and q.grace == "6d23h59m59s"


def test_beegfs_quota_real_output() -> None:
    (q,) = pp.parse_beegfs_quota(fixture("beegfs/beegfs-ctl_getquota_mila-scratch.txt"))
    assert q.user == "normandf" and q.filesystem == "beegfs pool Default"
    assert q.used_bytes == pytest.approx(76.61 * 1024**3) and q.hard_bytes == pytest.approx(5 * 1024**4)
    assert q.files == 687792 and q.files_hard is None and not q.over


def _mounts(nodes: list[str], per_node: dict[str, tuple[FsTarget, ...]], shared: tuple[FsTarget, ...]
            ) -> dict[str, tuple[Mount, ...]]:
    return {n: (Mount(node=n, target="/lustre/scratch", fstype="lustre", state=MountState.OK,
                      targets=per_node.get(n, shared)),) for n in nodes}


def test_one_finding_per_target_naming_the_nodes() -> None:
    ok = (FsTarget(fs="scratch", name="scratch-OST0000", kind="OST", used_pct=97.0),
          FsTarget(fs="scratch", name="scratch-OST0001", kind="OST", used_pct=50.0))
    cut = (ok[0], FsTarget(fs="scratch", name="scratch-OST0001", kind="OST", state=TargetState.INACTIVE,
                           detail="inactive device"))
    nodes = [f"gpu{i:02d}" for i in range(1, 9)]
    snap = ClusterSnapshot(cluster="c", time=0.0, mounts=_mounts(nodes, {"gpu03": cut, "gpu04": cut}, ok))
    found = target_findings(snap, Thresholds())
    fs = found["scratch"]
    assert len(fs) == 2  # not one per node
    full = next(f for f in fs if f.code == "fs_target_full")
    assert full.severity is Severity.ERROR and "97% full" in full.message and full.object == "fs/scratch/scratch-OST0000"
    inactive = next(f for f in fs if f.code == "fs_target_inactive")
    assert inactive.severity is Severity.ERROR and "2 of 8 nodes: gpu[03-04]" in inactive.message
    assert "check" in inactive.action
    # thresholds from the config; 90 % is a warning
    warn = target_findings(snap, Thresholds(fs_target_warn_pct=40.0, fs_target_crit_pct=99.0))["scratch"]
    assert {(f.object, f.severity) for f in warn if f.code == "fs_target_full"} == {
        ("fs/scratch/scratch-OST0000", Severity.WARNING), ("fs/scratch/scratch-OST0001", Severity.WARNING)}
    # the index carries them (problem list, reports), and by_object finds them
    index = findings_for(snap, Thresholds())
    assert index.by_object("fs/scratch/scratch-OST0001")[0].code == "fs_target_inactive"
    with pytest.raises(ValueError):
        Thresholds(fs_target_warn_pct=98.0, fs_target_crit_pct=97.0)


def test_target_findings_cost_is_one_pass_at_16k_nodes() -> None:
    shared = tuple(FsTarget(fs="scratch", name=f"scratch-OST{i:04x}", kind="OST", used_pct=50.0) for i in range(64))
    snap = ClusterSnapshot(cluster="c", time=0.0, mounts=_mounts([f"n{i:05d}" for i in range(16384)], {}, shared))
    t0 = time.perf_counter()
    assert target_findings(snap, Thresholds()) == {}
    assert time.perf_counter() - t0 < 0.25  # ~10 ms here; generous for a loaded 2-core machine
    # every node its own (equal) tuple, as the SSH probe makes them: scanned once, then one look-up a node
    mounts = {n: (Mount(node=n, target="/l", fstype="lustre", targets=(*shared,)),)
              for n in (f"n{i:05d}" for i in range(16384))}
    own = ClusterSnapshot(cluster="c", time=0.0, mounts=mounts)
    cache = pfs.FsCache()
    target_findings(own, Thresholds(), cache)
    t0 = time.perf_counter()
    assert target_findings(own, Thresholds(), cache) == {}
    assert time.perf_counter() - t0 < 0.25  # ~16 ms here
    # one node's mounts change (a target goes full there, another inactive): the kept parts of every other
    # node and the new part give what a fresh computation gives
    bad = (FsTarget(fs="scratch", name="scratch-OST0003", kind="OST", used_pct=97.0),
           FsTarget(fs="scratch", name="scratch-OST0005", kind="OST", state=TargetState.INACTIVE), *shared[6:])
    for n in ("n00007", "n00003"):
        mounts[n] = (Mount(node=n, target="/l", fstype="lustre", targets=bad),)
        changed = ClusterSnapshot(cluster="c", time=0.0, mounts=dict(mounts))
        assert target_findings(changed, Thresholds(), cache) == target_findings(changed, Thresholds())
    found = target_findings(changed, Thresholds(), cache)["scratch"]
    assert [f.code for f in found] == ["fs_target_full", "fs_target_inactive"] and "2 of 16384 nodes" in found[1].message


def test_quota_finding_only_with_running_jobs() -> None:
    over = QuotaUsage(user="alice", filesystem="/lustre/scratch", used_bytes=110.0, hard_bytes=100.0, over=True)
    fine = QuotaUsage(user="bob", filesystem="/lustre/scratch", used_bytes=10.0, hard_bytes=100.0)
    idle = QuotaUsage(user="carol", filesystem="/lustre/scratch", used_bytes=110.0, hard_bytes=100.0, over=True)
    snap = ClusterSnapshot(cluster="c", time=0.0, jobs=(
        SlurmJob(job_id="1", user="alice", state="RUNNING"), SlurmJob(job_id="2", user="bob", state="RUNNING"),
        SlurmJob(job_id="3", user="carol", state="PENDING")))
    found = quota_findings([over, fine, idle], running_jobs_by_user(snap))
    assert list(found) == ["user/alice"]
    (f,) = found["user/alice"]
    assert f.code == "quota_over" and f.severity is Severity.ERROR and "110%" in f.message and "1 running" in f.message


def test_demo_has_an_ost_at_97_percent() -> None:
    from hpctui.core.store import Store
    from hpctui.sim.cluster import SimCluster

    sim = SimCluster(size=16, seed=0, start_time=1_700_000_000.0)
    sim.advance(1_700_000_010.0)
    store = Store("demo")
    store.apply(sim.to_result(1_700_000_010.0))
    index = findings_for(store.snapshot(), Thresholds())
    (full,) = [f for f in index if f.code == "fs_target_full"]
    assert full.object == "fs/scratch/scratch-OST0003" and "97% full" in full.message
    assert full.severity is Severity.ERROR


# ---- lctl import states (issue #27 §2: the import/connection state of each target, from the client)

def test_lctl_imports_every_target_full_in_the_fixture() -> None:
    imports = pp.parse_lctl_imports(fixture("lustre/lctl-get_param_server_uuid_snx11035.txt"))
    assert len(imports) == 25 and imports[("snx11035", "snx11035-MDT0000")] == (TargetState.ACTIVE, "import FULL")
    assert {s for s, _ in imports.values()} == {TargetState.ACTIVE}


def test_lctl_import_states_as_what_the_client_can_do() -> None:
    dev = "osc.scratch-OST{0}-osc-ffff88090509f000.ost_server_uuid=scratch-OST{0}_UUID\t{1}"
    text = "\n".join([dev.format("0000", "FULL"), dev.format("0001", "IDLE"), dev.format("0002", "DISCONN"),
                      dev.format("0003", "EVICTED"), dev.format("0004", "REPLAY_WAIT"),
                      dev.format("0005", "FULL\tDEACTIVATED"), dev.format("0006", "WEIRD"),
                      "mdc.scratch-MDT0000-mdc-ffff8.mds_server_uuid=scratch-MDT0000_UUID\tCONNECTING",
                      "garbage line", "osc.x.ost_server_uuid=not-a-target_UUID\tFULL",
                      "osc.scratch-OST0007-osc-ffff\x1b[31m.ost_server_uuid=scratch-OST0007_UUID\tFULL"])
    imp = pp.parse_lctl_imports(text)
    state = {name: s for (_, name), (s, _) in imp.items()}
    assert state == {"scratch-OST0000": TargetState.ACTIVE, "scratch-OST0001": TargetState.ACTIVE,
                     "scratch-OST0002": TargetState.ERROR, "scratch-OST0003": TargetState.ERROR,
                     "scratch-OST0004": TargetState.DEGRADED, "scratch-OST0005": TargetState.INACTIVE,
                     "scratch-OST0006": TargetState.ERROR, "scratch-MDT0000": TargetState.ERROR,
                     "scratch-OST0007": TargetState.ACTIVE}, "a bad line costs that line"
    assert imp[("scratch", "scratch-OST0004")][1] == "import REPLAY_WAIT: the server is in recovery"
    assert imp[("scratch", "scratch-OST0005")][1] == "import FULL, deactivated"


def test_lctl_two_mounts_of_one_fs_the_worse_import_counts() -> None:
    line = "osc.scratch-OST0000-osc-{0}.ost_server_uuid=scratch-OST0000_UUID\t{1}"
    imp = pp.parse_lctl_imports(line.format("ffff1", "EVICTED") + "\n" + line.format("ffff2", "FULL"))
    assert imp[("scratch", "scratch-OST0000")][0] is TargetState.ERROR


def test_lustre_fsname_of_mount_sources() -> None:
    assert pp.lustre_fsname("10.0.0.1@o2ib:10.0.0.2@o2ib:/scratch") == "scratch"
    assert pp.lustre_fsname("mgs@tcp:/scratch/projects") == "scratch"
    assert pp.lustre_fsname("/dev/sda1") is None and pp.lustre_fsname("mgs@tcp:/bad name") is None


def test_imports_over_lfs_df_keep_usage_add_unlisted_and_share_unchanged() -> None:
    df = tuple(pp.parse_lfs_df(fixture("lustre/lfs-df_snx11035_nersc-edison.txt"))["/scratch2"])
    full = pp.parse_lctl_imports(fixture("lustre/lctl-get_param_server_uuid_snx11035.txt"))
    assert pp.with_imports(df, "snx11035", full) is df, "nothing changes: the very same tuple"
    bad = dict(full)
    bad[("snx11035", "snx11035-OST0003")] = (TargetState.ERROR, "import EVICTED")
    merged = {t.name: t for t in pp.with_imports(df, "snx11035", bad)}
    ost3 = merged["snx11035-OST0003"]
    assert ost3.state is TargetState.ERROR and ost3.detail == "import EVICTED" and ost3.used_pct is not None
    assert pp.with_imports(df, "otherfs", bad) is df, "another file system's imports do not apply"
    # lfs df hung (not read): the targets come from the imports alone, without usage
    alone = pp.with_imports((), "snx11035", bad)
    assert len(alone) == 25 and {t.name: t.state for t in alone}["snx11035-OST0003"] is TargetState.ERROR
    assert all(t.used_pct is None for t in alone)


def test_evicted_import_on_one_node_is_one_finding_naming_it() -> None:
    df = tuple(pp.parse_lfs_df(fixture("lustre/lfs-df_snx11035_nersc-edison.txt"))["/scratch2"])
    bad = pp.parse_lctl_imports("osc.snx11035-OST0003-osc-ffff1.ost_server_uuid=snx11035-OST0003_UUID\tEVICTED")
    mounts = {f"n{i}": (Mount(node=f"n{i}", target="/scratch2", fstype="lustre", state=MountState.OK,
                              targets=pp.with_imports(df, "snx11035", bad) if i == 2 else df),) for i in range(4)}
    found = target_findings(ClusterSnapshot(cluster="c", time=0.0, mounts=mounts), Thresholds())["snx11035"]
    evicted = [f for f in found if f.object == "fs/snx11035/snx11035-OST0003"]
    assert len(evicted) == 1 and evicted[0].code == "fs_target_unreachable"
    assert evicted[0].message.endswith("unreachable (import EVICTED) from 1 of 4 nodes: n2")
