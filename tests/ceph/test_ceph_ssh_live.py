"""The Ceph source through an admin host over SSH (``host``): a real OpenSSH sshd (tests/testbed/ssh, one node on
127.x) runs the real ``ceph`` CLI of the session's Ceph bed; a conf path with a space arrives whole, a hostile
word never runs; the fsid and mon addresses read that way tie CephFS mounts to the cluster."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cephlab import CephLab

from hpctui.findings.cephfs import cluster_of
from hpctui.findings.storage import ceph_findings
from hpctui.model import Mount, MountState
from hpctui.sources.ceph.settings import CephSettings, CephSshSettings
from hpctui.sources.ceph.source import CephError, CephSource

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "ssh"))
from sshbed import SshBed, sshd_missing

pytestmark = pytest.mark.live
IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")


@pytest.fixture(scope="module")
def admin_bed() -> Iterator[SshBed]:
    """One sshd node of this module's own (the 64-node SSH bed is tests/ssh's): the "admin host", on this machine,
    so its ``ceph`` reaches the session's Ceph bed."""
    why_not = sshd_missing()
    if why_not:
        if IN_CI:
            pytest.fail(f"CI=true but the SSH test bed cannot run: {why_not}", pytrace=False)
        pytest.skip(why_not)
    bed = SshBed(n_nodes=1, faults={}, prefix="admin")
    t = time.monotonic()
    try:
        bed.start()
        print(f"\n[ssh bed] 1 node up in {time.monotonic() - t:.2f}s", file=sys.stderr)
        yield bed
    finally:
        bed.stop()


def over_ssh(bed: SshBed, **kw: object) -> CephSource:
    ssh = CephSshSettings(ssh_config=[str(bed.ssh_config)], known_hosts=[str(bed.known_hosts)], connect_timeout_s=5)
    return CephSource(CephSettings(name="prod", host="admin0001", ssh=ssh, timeout_s=15, **kw))  # type: ignore[arg-type]


def test_ceph_over_ssh_with_a_conf_path_with_a_space(ceph_lab: CephLab, admin_bed: SshBed, tmp_path: Path) -> None:
    spaced = tmp_path / "my ceph" / "ceph.conf"
    spaced.parent.mkdir()
    shutil.copy(ceph_lab.conf, spaced)
    source = over_ssh(admin_bed, conf=str(spaced))
    t = time.monotonic()
    result = asyncio.run(source.collect())
    print(f"\n[ceph over ssh] first read {time.monotonic() - t:.2f}s")
    health = result.ceph["prod"]  # type: ignore[index]
    assert (health.status, health.via, health.parts_missing, result.warnings) == ("HEALTH_OK", "ssh", (), ())
    assert health.fsid == json.loads(ceph_lab.ceph("fsid", "-f", "json"))["fsid"]
    assert health.mon_addrs == ("127.0.0.1:23300", "127.0.0.1:23789")  # ceph mon dump, read once
    assert health.version and health.version.startswith("16.2.") and ceph_findings(health) == []
    argv = asyncio.run(source.command_line("status"))
    assert argv[-2] == "admin0001" and f"--conf '{spaced}'" in argv[-1]
    # what that read gives the CephFS mounts of the nodes: both mount syntaxes find this cluster
    clusters = {"prod": health}
    for src in (f"hpc@{health.fsid}.cephfs=/scratch", "127.0.0.1:23789:/scratch"):
        hung = Mount(node="gpu01", target="/scratch", fstype="ceph", source=src, state=MountState.HUNG)
        assert cluster_of(hung, clusters) is health
    t = time.monotonic()
    asyncio.run(source.collect())
    print(f"[ceph over ssh] second read {time.monotonic() - t:.2f}s (4 calls, 4 ssh connections)")


def test_a_hostile_word_arrives_as_one_word_and_never_runs(ceph_lab: CephLab, admin_bed: SshBed,
                                                          tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    source = over_ssh(admin_bed, conf=ceph_lab.conf, client=f"client.$(touch {marker})")
    with pytest.raises(CephError) as err:
        asyncio.run(source.collect())
    assert "on admin0001: exit" in str(err.value)  # ceph refused the name it was given, whole
    assert not marker.exists()


def test_an_unknown_host_key_refuses_the_connection(ceph_lab: CephLab, admin_bed: SshBed, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    ssh = CephSshSettings(ssh_config=[str(admin_bed.ssh_config)], known_hosts=[str(empty)], connect_timeout_s=5)
    source = CephSource(CephSettings(host="admin0001", ssh=ssh, conf=ceph_lab.conf, timeout_s=10))
    with pytest.raises(CephError, match=r"exit 255 \(ssh could not connect or log in\): .*Host key verification failed"):
        asyncio.run(source.collect())
