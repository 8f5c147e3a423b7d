"""Lustre/BeeGFS targets end to end: real sshd, the real probe loop, the node shims printing the real ``lfs df``
and ``beegfs-ctl --listtargets`` recordings (tests/fixtures/lustre, beegfs), the ssh source, the store and the
findings: one finding per target naming the nodes that see it inactive, not one per node."""

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
from hpctui.model import Severity
from hpctui.model.mount import TargetState
from hpctui.sources.ssh.probe.script import ProbeOptions
from hpctui.sources.ssh.source import SshSource

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "nodeshims"))

nodeshims = pytest.importorskip("nodeshims", reason="tests/testbed/nodeshims not present")

pytestmark = pytest.mark.live

PROBED = "node[0004-0006,0008]"  # four clean nodes of the bed
INACTIVE_FROM = {"node0005", "node0008"}
EVICTED_FROM = "node0006"  # lctl: its import of scratch-OST0003 is EVICTED while lfs df still lists the OST


async def test_full_inactive_and_offline_targets_are_one_finding_each(ssh_bed: SshBed, tmp_path: Path) -> None:
    specs = {}
    for n in ssh_bed.nodes:
        faults = {"ost-full", "beegfs-offline"} | ({"ost-inactive"} if n.name in INACTIVE_FROM else set()) \
            | ({"ost-evicted"} if n.name == EVICTED_FROM else set())
        specs[n.address] = nodeshims.NodeSpec(variant="cpu", faults=faults)
    root = nodeshims.build_shim_root(tmp_path / "shims", specs)
    probe = ProbeOptions(shim_root=str(root), probe_timeout_s=4, mount_timeout_s=4, slow_every=2, gpus=False)
    source = SshSource(settings_for(ssh_bed, nodes=PROBED, interval_s=1.0, stale_after_s=20.0, probe=probe))
    names = ["node0004", "node0005", "node0006", "node0008"]
    try:
        def ready(r: Any) -> bool:
            mounts = r.mounts or {}
            return all(any(m.targets for m in mounts.get(n, ()) if m.fstype == "lustre") and
                       any(m.targets for m in mounts.get(n, ()) if m.fstype == "beegfs") for n in names)

        result = await collect_until(source, ready, rounds=60)
        assert ready(result), result.mounts
    finally:
        await source.close()
    lustre = {m.target: m for m in (result.mounts or {})["node0005"]}["/lustre/scratch"]
    by_name = {t.name: t for t in lustre.targets}
    assert len(by_name) == 25 and by_name["scratch-OST0006"].used_pct == 97.0
    assert by_name["scratch-OST0001"].state is TargetState.INACTIVE
    store = Store("ssh")
    store.apply(result)
    index = findings_for(store.snapshot(), Thresholds())
    fs = [f for f in index if f.object.startswith("fs/")]
    full = [f for f in fs if f.code == "fs_target_full"]
    inactive = [f for f in fs if f.code == "fs_target_inactive"]
    offline = [f for f in fs if f.code == "fs_target_unreachable"]
    assert len(full) == 1 and full[0].object == "fs/scratch/scratch-OST0006" and full[0].severity is Severity.ERROR
    assert len(inactive) == 1 and "2 of 4 nodes: node[0005,0008]" in inactive[0].message
    assert sorted(f.object for f in offline) == ["fs/beegfs/storage:3011", "fs/beegfs/storage:3012",
                                                 "fs/scratch/scratch-OST0003"]
    evicted = next(f for f in offline if f.object == "fs/scratch/scratch-OST0003")
    assert "unreachable (import EVICTED) from 1 of 4 nodes: node0006" in evicted.message, evicted.message
    assert all("4 of 4 nodes" in f.message for f in offline if f is not evicted)
    seen_from = {m.target: m for m in (result.mounts or {})[EVICTED_FROM]}["/lustre/scratch"]
    ost3 = {t.name: t for t in seen_from.targets}["scratch-OST0003"]
    assert ost3.state is TargetState.ERROR and ost3.used_pct is not None, "lctl's state over lfs df's usage"
