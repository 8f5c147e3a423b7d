"""Issue #27 §2 quotas end to end: real sshd, the probe loop seeing the shims' Lustre and BeeGFS mounts, Slurm
jobs in the same store, the SSH source's background quota sweep running ``lfs quota`` / ``beegfs-ctl
--getquota`` (shims printing the real recordings) on a node of each user's job, and the finding for the
user over quota with running jobs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from sshbed import SshBed
from test_ssh_transport_live import collect_until, settings_for

from hpctui.core.store import Store
from hpctui.findings.health import Thresholds
from hpctui.findings.index import findings_for
from hpctui.model import Severity, SlurmJob, SourceResult
from hpctui.sources.registry import SourceContext
from hpctui.sources.ssh.probe.script import ProbeOptions
from hpctui.sources.ssh.settings import QuotaSettings
from hpctui.sources.ssh.source import SshSource

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "nodeshims"))

nodeshims = pytest.importorskip("nodeshims", reason="tests/testbed/nodeshims not present")

pytestmark = pytest.mark.live

PROBED = "node[0004-0006]"  # three clean nodes of the bed


async def test_quota_sweep_over_ssh_finds_the_user_over_quota(ssh_bed: SshBed, tmp_path: Path) -> None:
    specs = {n.address: nodeshims.NodeSpec(variant="cpu") for n in ssh_bed.nodes}
    root = nodeshims.build_shim_root(tmp_path / "shims", specs)
    address = {n.name: n.address for n in ssh_bed.nodes}
    nodeshims.set_quota_over(root, address["node0005"], "alice")  # the shims know a node by its address
    store = Store("ssh")
    store.apply(SourceResult(source="slurm", time=1.0, slurm_jobs=(
        SlurmJob(job_id=7, user="alice", state="RUNNING", nodes="node0005"),
        SlurmJob(job_id=8, user="bob", state="RUNNING", nodes="node[0004,0006]"),
        SlurmJob(job_id=9, user="it's;id", state="RUNNING", nodes="node0004"))))
    probe = ProbeOptions(shim_root=str(root), probe_timeout_s=4, mount_timeout_s=4, slow_every=2, gpus=False)
    source = SshSource(settings_for(ssh_bed, nodes=PROBED, interval_s=1.0, stale_after_s=20.0, probe=probe,
                                    quotas=QuotaSettings(interval_s=1.0)),
                       SourceContext(cluster="ssh", snapshot=store.snapshot))

    def ready(r: Any) -> bool:
        store.apply(r)
        return r.quotas is not None and {q.user for q in r.quotas} == {"alice", "bob"}

    try:
        result = await collect_until(source, ready, rounds=60)
        assert ready(result), (result.quotas, result.warnings)
    finally:
        await source.close()
    by = {(q.user, q.filesystem): q for q in result.quotas or ()}
    assert sorted(by) == [("alice", "/lustre/scratch"), ("alice", "/mnt/beegfs (pool Default)"),
                          ("bob", "/lustre/scratch"), ("bob", "/mnt/beegfs (pool Default)")]
    assert by[("alice", "/lustre/scratch")].over and not by[("bob", "/lustre/scratch")].over
    assert any("1 user name(s) not asked" in w for w in result.warnings)
    index = findings_for(store.snapshot(), Thresholds())
    found = index.node("user/alice")
    assert [f.code for f in found] == ["quota_over"] and found[0].severity is Severity.ERROR
    assert "on /lustre/scratch" in found[0].message and "1 running job(s)" in found[0].message
    assert not index.node("user/bob")
