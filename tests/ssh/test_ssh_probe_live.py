"""The real probe loop (hpctui.sources.ssh.probe) streamed over real SSH by the ssh source."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from sshbed import SshBed
from test_ssh_transport_live import collect_until, settings_for

from hpctui.model.mount import MountState
from hpctui.sources.ssh.probe.script import ProbeOptions
from hpctui.sources.ssh.source import SshSource

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "nodeshims"))

nodeshims = pytest.importorskip("nodeshims", reason="tests/testbed/nodeshims not present")

pytestmark = pytest.mark.live


async def test_hostile_mount_path_stays_data(ssh_bed: SshBed, tmp_path: Path) -> None:
    """A mount path full of shell metacharacters reaches the node as data: nothing runs, and it
    comes back as the same (missing) expected mount."""
    marker = tmp_path / "pwned"
    hostile = (
        f"/mnt/a'; touch {marker}; echo '",
        f"/mnt/$(touch {marker})",
        f"/mnt/`touch {marker}`",
        f'/mnt/b" ; touch {marker} ; "',
        f"/mnt/c && touch {marker} || x",
    )
    probe = ProbeOptions(expected_mounts=hostile, probe_timeout_s=2, mount_timeout_s=2)
    source = SshSource(settings_for(ssh_bed, nodes="node[0001-0002]", interval_s=1.0, probe=probe))
    try:
        result = await collect_until(source, lambda r: len(r.mounts or {}) == 2)
        for node in ("node0001", "node0002"):
            mounts = {m.target: m for m in (result.mounts or {})[node]}
            for path in hostile:
                assert mounts[path].state is MountState.MISSING, (node, path)
        assert (result.probes or {})["node0001"].reachable
        await asyncio.sleep(1)
        assert not marker.exists()
    finally:
        await source.close()


async def test_real_probe_resources_and_services(ssh_bed: SshBed) -> None:
    source = SshSource(settings_for(ssh_bed, nodes="node[0001-0002,0004-0005]", interval_s=1.0))
    try:
        result = await collect_until(source, lambda r: len(r.resources or {}) == 4
                                     and all(x.cpu_busy_pct is not None for x in (r.resources or {}).values()))
        res: dict[str, Any] = result.resources or {}
        assert set(res) == {"node0001", "node0002", "node0004", "node0005"}
        for node, r in res.items():
            assert r.node == node and r.cpu_count and r.mem_total_mib and r.cpu_busy_pct is not None
        services = (result.services or {})["node0002"]
        assert {s.name for s in services} >= {"slurmd", "nvidia-fabricmanager"}
    finally:
        await source.close()


async def test_hgx_sxid_and_fabric_failure_end_to_end(ssh_bed: SshBed, tmp_path: Path) -> None:
    """Real sshd, the real probe loop, the node shims: a node whose kernel log holds the real NVSwitch SXid
    20034 lines and whose GPUs 5/6 report a stuck / failed NVLink fabric registration; a healthy peer."""
    from hpctui.findings.health import Thresholds
    from hpctui.findings.index import findings_for
    from hpctui.model import ClusterSnapshot, Severity

    a, b = ssh_bed.nodes[0], ssh_bed.nodes[1]
    root = nodeshims.build_shim_root(tmp_path / "shims", {
        a.address: nodeshims.NodeSpec(variant="h100", faults={"sxid", "fabric-fail"}),
        b.address: nodeshims.NodeSpec(variant="h100")})
    probe = ProbeOptions(shim_root=str(root), probe_timeout_s=4, mount_timeout_s=4, slow_every=2)
    source = SshSource(settings_for(ssh_bed, nodes=f"{a.name},{b.name}", interval_s=1.0, stale_after_s=20.0,
                                    probe=probe))
    try:
        result = await collect_until(source, lambda r: len((r.gpus or {}).get(a.name, ())) == 8
                                     and len((r.gpus or {}).get(b.name, ())) == 8
                                     and bool((r.nvswitches or {}).get(a.name)))
        switches = {s.name: s for s in (result.nvswitches or {})[a.name]}
        assert set(switches) == {"nvidia-nvswitch0", "nvidia-nvswitch1", "nvidia-nvswitch2"}
        assert {e.sxid for s in switches.values() for e in s.sxid_events} == {20034}
        assert not (result.nvswitches or {}).get(b.name)
        gpus = {g.index: g for g in (result.gpus or {})[a.name]}
        assert (gpus[5].fabric_state, gpus[6].fabric_status) == ("In Progress", "Insufficient Resources")
        assert gpus[0].fabric_state == "Completed" and not gpus[0].fabric_failed
        snap = ClusterSnapshot(cluster="c", time=result.time, gpus=result.gpus or {},
                               nvswitches=result.nvswitches or {})
        index = findings_for(snap, Thresholds())
        crit = {(f.object, f.code) for f in index.node(a.name) if f.severity is Severity.CRITICAL}
        assert (f"nvswitch/{a.name}/nvidia-nvswitch0", "sxid20034") in crit
        assert {(f"gpu/{a.name}/5", "fabric"), (f"gpu/{a.name}/6", "fabric")} <= crit
        assert not [f for f in index.node(b.name) if f.severity >= Severity.ERROR]
    finally:
        await source.close()
