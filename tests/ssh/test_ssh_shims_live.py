"""The whole chain on 64 node addresses: real sshd, the real probe loop, the node shims
(tests/testbed/nodeshims: nvidia-smi, sysfs, mountinfo, journal per dialled address), the ssh
source. ~11% of nodes have transport faults and a dozen more have node-side faults."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sshbed import SshBed
from test_ssh_transport_live import collect_until, settings_for

from hpctui.model.mount import MountState
from hpctui.model.probe import ServiceStatus
from hpctui.sources.ssh.probe.script import ProbeOptions
from hpctui.sources.ssh.source import SshSource

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "nodeshims"))

nodeshims = pytest.importorskip("nodeshims", reason="tests/testbed/nodeshims (from the probes branch) not merged yet")
NodeSpec, build_shim_root, gpu_uuid = nodeshims.NodeSpec, nodeshims.build_shim_root, nodeshims.gpu_uuid

pytestmark = pytest.mark.live

VARIANTS = ("h100", "h200", "h200-mig", "cpu")
GPUS = {"h100": 8, "h200": 8, "h200-mig": 1, "cpu": 0}
NODE_FAULTS = {
    "node0013": "hang-nvidia-smi",
    "node0017": "garbage",
    "node0029": "cut-once",
    "node0037": "mount-hang",
    "node0043": "svc-failed",
    "node0047": "ib-down",
    "node0053": "xid",
}
TRANSPORT = ("unreachable", "silent", "auth", "hostkey_unknown", "hostkey_changed")
# 15 of the bed's 64 nodes (a full probe loop with shims on 64 nodes is too heavy for a shared 2-core
# test machine): each variant, each node-side fault, and two transport faults (unreachable, auth)
PROBED = "node[0001-0006,0011,0013,0017,0029,0037,0043,0047,0053]"


def variant(i: int) -> str:
    return VARIANTS[i % 4]


@pytest.fixture(scope="module")
def shims(ssh_bed: SshBed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    specs = {}
    for i, n in enumerate(ssh_bed.nodes):
        fault = NODE_FAULTS.get(n.name)
        v = "h100" if fault in ("hang-nvidia-smi", "garbage", "xid") else variant(i)
        specs[n.address] = NodeSpec(variant=v, faults={fault} if fault else set())
    yield build_shim_root(tmp_path_factory.mktemp("shims"), specs)


def probe_options(root: Path) -> ProbeOptions:
    return ProbeOptions(shim_root=str(root), probe_timeout_s=4, mount_timeout_s=4, slow_every=2,
                        expected_mounts=("/lustre/scratch",))


async def test_every_node_through_the_shims(ssh_bed: SshBed, shims: Path) -> None:
    source = SshSource(settings_for(ssh_bed, nodes=PROBED, interval_s=2.0, stale_after_s=20.0, probe=probe_options(shims)))
    from hpctui.model.hostlist import expand

    probed = set(expand(PROBED))
    nodes = [n for n in ssh_bed.nodes if n.name in probed]
    healthy = [n for n in nodes if n.fault not in TRANSPORT and n.name not in NODE_FAULTS]
    seen_warnings: list[str] = []  # a dropped record is warned about in the round it arrives, not later ones
    try:
        def ready(r: Any) -> bool:
            seen_warnings.extend(r.warnings)
            probes = r.probes or {}
            nodes_ok = all(probes[n.name].reachable and n.name in (r.ib or {}) and n.name in (r.mounts or {})
                           for n in healthy)
            marked = all(source.runners[n.name].error for n in nodes if n.fault in TRANSPORT)
            faults = (probes["node0013"].late_probes and "node0037" in (r.mounts or {})
                      and "node0043" in (r.services or {}) and "node0047" in (r.ib or {})
                      and source.runners["node0017"].bad_records and probes["node0029"].reachable)
            return bool(nodes_ok and marked and faults and "node0053" in _xid_nodes(source))

        result = await collect_until(source, ready, rounds=60)
        probes = result.probes or {}
        gpus, ib, mounts = result.gpus or {}, result.ib or {}, result.mounts or {}
        for i, n in enumerate(ssh_bed.nodes):
            if n.name not in probed or n.fault in TRANSPORT or n.name in NODE_FAULTS:
                continue
            st = probes[n.name]
            assert st.reachable, (n.name, st)  # (a probe may be late on this busy 2-core machine)
            v = variant(i)
            node_gpus = gpus.get(n.name, ())  # a node without nvidia-smi: no GPU part
            assert len(node_gpus) == GPUS[v], (n.name, v)
            # each node's own values: UUIDs derived from the address it was dialled on
            assert {g.uuid for g in node_gpus} == {gpu_uuid(n.address, k) for k in range(GPUS[v])}
            assert all(g.node == n.name for g in node_gpus)
            if v == "h200-mig":
                assert node_gpus[0].mig_mode_current is True
            assert len(ib[n.name]) >= 8 and all(p.node == n.name for p in ib[n.name])
            assert sum(p.state == "ACTIVE" for p in ib[n.name]) >= 8
            targets = {m.target: m for m in mounts[n.name]}
            assert targets["/lustre/scratch"].state is MountState.OK
        # transport faults: marked, with why
        assert len(probes) == len(probed)
        for n in nodes:
            if n.fault in TRANSPORT:
                assert not probes[n.name].reachable and probes[n.name].error
        # node-side faults: the node is still fresh, the fault shows where it belongs
        assert "gpu" in " ".join(probes["node0013"].late_probes)
        # binary garbage from nvidia-smi: the splitter drops such records whole (hpctui.sources.ssh.probe), so the
        # node is fresh only if a clean record came through; either way it says why
        garbage = probes["node0017"]
        assert garbage.reachable or "binary" in (garbage.error or "") or "unreadable" in (garbage.error or "")
        assert any("unreadable probe record" in w for w in seen_warnings)
        assert probes["node0029"].reachable
        hung = {m.target: m.state for m in mounts["node0037"]}
        assert hung["/mnt/nfs/test"] is MountState.HUNG
        svc = {s.name: s for s in (result.services or {})["node0043"]}
        assert svc["nvidia-fabricmanager"].status is ServiceStatus.FAILED and svc["nvidia-fabricmanager"].detail
        down = [p for p in ib["node0047"] if p.device == "mlx5_4" and p.port == 1]
        assert down and down[0].state == "DOWN"
    finally:
        await source.close()


def _xid_nodes(source: SshSource) -> set[str]:
    out = set()
    for name, r in source.runners.items():
        view = r.latest
        if view is not None and any(g.xid_events for g in (view.gpus or ())):
            out.add(name)
    return out
