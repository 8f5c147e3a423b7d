"""Issue #27 §1 end to end: real sshd, the probe loop, and the SSH source's background fabric read running the
``ibnetdiscover`` shim (the real recorded SwitchIB EDR fat-tree output) on the first node with an HCA: the
topology arrives as the source's ``fabric`` part, through the store, to the snapshot."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from sshbed import SshBed
from test_ssh_transport_live import collect_until, settings_for

from hpctui.core.store import Store
from hpctui.sources.registry import SourceContext
from hpctui.sources.ssh.probe.script import ProbeOptions
from hpctui.sources.ssh.settings import FabricSettings
from hpctui.sources.ssh.source import SshSource

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "nodeshims"))

nodeshims = pytest.importorskip("nodeshims", reason="tests/testbed/nodeshims not present")

pytestmark = pytest.mark.live


async def test_ibnetdiscover_over_ssh_gives_the_cluster_its_fabric(ssh_bed: SshBed, tmp_path: Path) -> None:
    specs = {n.address: nodeshims.NodeSpec(variant="h100") for n in ssh_bed.nodes}
    root = nodeshims.build_shim_root(tmp_path / "shims", specs)
    store = Store("ssh")
    probe = ProbeOptions(shim_root=str(root), probe_timeout_s=4, mount_timeout_s=4, slow_every=2)
    source = SshSource(settings_for(ssh_bed, nodes="node[0004-0005]", interval_s=1.0, stale_after_s=20.0, probe=probe,
                                    fabric=FabricSettings(interval_s=600)),
                       SourceContext(cluster="ssh", snapshot=store.snapshot))

    def ready(r: Any) -> bool:
        store.apply(r)
        return r.fabric is not None

    try:
        result = await collect_until(source, ready, rounds=60)
        assert ready(result), result.warnings
    finally:
        await source.close()
    fabric = store.snapshot().fabric
    assert fabric is not None and fabric.source == "ibnetdiscover"
    # the recording: two unnamed SwitchIB switches (named by GUID), gpu045's HCA cabled to port 13 of the first
    assert list(fabric.switches) == ["0xec0d9a0300ec8480", "0xec0d9a0300ec81e0"]
    far = fabric.remote("gpu045", "HCA-1", 1)
    assert far is not None and far.port == 13 and fabric.leaf_of["gpu045"] == far.switch
