"""The real probe loop (hpctui.probes) streamed over real SSH by the ssh source."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from sshbed import SshBed
from test_ssh_transport_live import collect_until, settings_for

from hpctui.model.mount import MountState
from hpctui.probes.script import ProbeOptions
from hpctui.sources.ssh.source import SshSource

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
