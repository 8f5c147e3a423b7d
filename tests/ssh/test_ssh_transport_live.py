"""The SSH transport against a real sshd bed: pool, streaming, faults, backoff, ProxyJump.

These use a stand-in probe (tests/testbed/ssh/standin.sh) so the transport is tested on its
own; test_ssh_probe_live.py runs the real probe script against the node shims.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sshbed import SshBed
from standin import StandinCodec

from hpctui.model import SourceResult
from hpctui.sources.ssh.settings import SshSettings
from hpctui.sources.ssh.source import INSECURE_WARNING, SshSource

pytestmark = pytest.mark.live


def settings_for(bed: SshBed, **kw: Any) -> SshSettings:
    base: dict[str, Any] = {
        "nodes": f"{bed.prefix}[0001-{bed.n_nodes:04d}]", "from_snapshot": False,
        "ssh_config": [str(bed.ssh_config)], "known_hosts": [str(bed.known_hosts)],
        "interval_s": 0.5, "connect_timeout_s": 5.0, "stale_after_s": 8.0,
        "backoff_initial_s": 30.0, "keepalive_s": 0,
    }
    base.update(kw)
    return SshSettings(**base)


async def collect_until(source: SshSource, done: Callable[[SourceResult], bool], rounds: int = 60) -> SourceResult:
    """Collect every interval until ``done`` holds (bounded by ``rounds``, not a timed assertion)."""
    result = await asyncio.wait_for(source.collect(), timeout=source.timeout_s)
    for _ in range(rounds):
        if done(result):
            return result
        await asyncio.sleep(source.interval_s)
        result = await asyncio.wait_for(source.collect(), timeout=source.timeout_s)
    return result


HEALTHY_FAULTS = {"dies"}  # faults after which the node still delivers fresh records


async def test_round_with_faulty_nodes(ssh_bed: SshBed) -> None:
    source = SshSource(settings_for(ssh_bed), codec=StandinCodec(0.5))
    try:
        # the first round returns within the source's timeout, with every node listed
        result = await asyncio.wait_for(source.collect(), timeout=source.timeout_s)
        assert len(result.probes or {}) == 64
        assert all(p.reachable or p.error for p in (result.probes or {}).values())
        healthy = [n for n in ssh_bed.nodes if n.fault is None or n.fault in HEALTHY_FAULTS]
        faulty = [n for n in ssh_bed.nodes if n.fault not in (None, *HEALTHY_FAULTS)]
        assert len(faulty) / len(ssh_bed.nodes) >= 0.09
        result = await collect_until(source, lambda r: all(
            (r.probes or {})[n.name].reachable for n in healthy) and all(
            source.runners[n.name].error for n in faulty))
        probes = result.probes or {}
        for n in healthy:
            st = probes[n.name]
            assert st.reachable and st.last_ok is not None, (n.name, st)
            # the parsed value is this node's own: the address it was dialled on
            assert source.runners[n.name].latest.address == n.address
        errors = {n.fault: probes[n.name].error or "" for n in faulty}
        assert all(not probes[n.name].reachable for n in faulty)
        assert "connection refused" in errors["unreachable"]
        assert "timed out" in errors["silent"]
        assert "authentication refused" in errors["auth"]
        assert "host key not verified" in errors["hostkey_unknown"]
        assert "host key not verified" in errors["hostkey_changed"]
        assert "no probe record" in errors["hang"]
        # unreachable nodes back off: a next retry in the future, not retried every refresh
        for fault in ("unreachable", "silent", "auth", "hostkey_unknown"):
            st = probes[next(n.name for n in faulty if n.fault == fault)]
            assert st.next_retry is not None and st.last_ok is None
            assert st.next_retry > result.time + 10
        assert not any(w == INSECURE_WARNING for w in result.warnings)
        # persistent connections: one handshake per reachable node, not one per refresh
        reachable_nodes = len([n for n in ssh_bed.nodes if n.fault not in ("unreachable", "silent", "auth",
                                                                           "hostkey_unknown", "hostkey_changed")])
        assert source.pool is not None and source.pool.handshakes_done >= reachable_nodes
        assert all(source.runners[n.name].reconnects == 0 for n in healthy)
        assert all(source.runners[n.name].streams_started == 1 for n in healthy if n.fault is None)
    finally:
        await source.close()


async def test_stream_that_dies_comes_back(ssh_bed: SshBed) -> None:
    settings = settings_for(ssh_bed, nodes="node[0041-0042]")
    source = SshSource(settings, codec=StandinCodec(0.5))
    try:
        dies = "node0042"
        await collect_until(source, lambda r: source.runners[dies].streams_started >= 3)
        runner = source.runners[dies]
        assert runner.streams_started >= 3  # restarted after each death, on the same connection
        assert runner.reconnects == 0 and source.pool is not None and source.pool.handshakes_done == 2
        result = await collect_until(source, lambda r: (r.probes or {})[dies].reachable)
        assert (result.probes or {})[dies].reachable
        assert source.runners["node0041"].streams_started == 1
    finally:
        await source.close()


async def test_hanging_probe_is_restarted(ssh_bed: SshBed) -> None:
    source = SshSource(settings_for(ssh_bed, nodes="node[0031]", stale_after_s=3.0), codec=StandinCodec(0.5))
    try:
        result = await collect_until(source, lambda r: source.runners["node0031"].streams_started >= 2)
        runner = source.runners["node0031"]
        assert runner.streams_started >= 2 and runner.records == 0
        st = (result.probes or {})["node0031"]
        assert not st.reachable and "no probe record for 3 s" in (st.error or "")
    finally:
        await source.close()


async def test_garbage_and_cut_records(garbage_bed: SshBed) -> None:
    bed = garbage_bed
    source = SshSource(settings_for(bed), codec=StandinCodec(0.5))
    try:
        result = await collect_until(source, lambda r: source.runners["node0001"].records >= 3
                                     and source.runners["node0002"].streams_started >= 2)
        probes = result.probes or {}
        assert probes["node0001"].reachable and probes["node0003"].reachable
        assert source.runners["node0001"].latest.address == bed.node("node0001").address
        # a cut record is never parsed as a whole one; the stream is restarted
        assert source.runners["node0002"].records == 0
    finally:
        await source.close()


async def test_proxy_jump_through_bastion(ssh_bed: SshBed, tmp_path: Path) -> None:
    config = ssh_bed.write_ssh_config(proxy_jump=True, path=tmp_path / "ssh_config")
    settings = settings_for(ssh_bed, nodes="node[0001-0002,0004-0006,0012-0018]", ssh_config=[str(config)],
                            max_handshakes=4)
    source = SshSource(settings, codec=StandinCodec(0.5))
    try:
        result = await collect_until(source, lambda r: all(p.reachable for p in (r.probes or {}).values()))
        assert len(result.probes or {}) == 12 and all(p.reachable for p in (result.probes or {}).values())
        for name, runner in source.runners.items():
            assert runner.latest.address == ssh_bed.node(name).address
        assert source.pool is not None and list(source.pool._jumps) == ["bastion"]  # one shared bastion connection
    finally:
        await source.close()


async def test_explicit_insecure_opt_out_warns(ssh_bed: SshBed) -> None:
    settings = settings_for(ssh_bed, nodes="node[0019,0023]", known_hosts=[], insecure_skip_host_key_check=True)
    source = SshSource(settings, codec=StandinCodec(0.5))
    try:
        result = await collect_until(source, lambda r: all(p.reachable for p in (r.probes or {}).values()))
        assert all(p.reachable for p in (result.probes or {}).values())
        assert result.warnings[0] == INSECURE_WARNING  # first: the one the status line shows
    finally:
        await source.close()


async def test_template_address_and_hostile_names(ssh_bed: SshBed, tmp_path: Path) -> None:
    """A node name with shell metacharacters is never dialled, never formatted into anything."""
    marker = tmp_path / "pwned"
    n1 = ssh_bed.node("node0001")

    class Ctx:
        def snapshot(self) -> Any:
            from hpctui.model import ClusterSnapshot, Node
            from hpctui.model.node import SlurmNodeInfo

            names = [n1.address, f"x;touch {marker}", "$(touch " + str(marker) + ")"]
            nodes = {n: Node(name=n, slurm=SlurmNodeInfo(base_state="IDLE")) for n in names}
            nodes["ssh-only"] = Node(name="ssh-only")  # known only through a probe: not dialled from here
            return ClusterSnapshot(cluster="t", time=0, nodes=nodes)

    settings = settings_for(ssh_bed, nodes=None, from_snapshot=True, ssh_config=[], host="{node}",
                            port=ssh_bed.port, user=ssh_bed.user, identity_files=[str(ssh_bed.client_key)])
    source = SshSource(settings, Ctx(), codec=StandinCodec(0.5))  # type: ignore[arg-type]
    try:
        result = await collect_until(source, lambda r: (r.probes or {}).get(n1.address) is not None
                                     and (r.probes or {})[n1.address].reachable)
        probes = result.probes or {}
        assert probes[n1.address].reachable
        bad = [p for name, p in probes.items() if name != n1.address]
        assert len(bad) == 2 and all("not a valid host name" in (p.error or "") for p in bad)
        assert "ssh-only" not in probes
        assert not marker.exists()
    finally:
        await source.close()


async def test_dead_bastion_marks_nodes_behind_it(ssh_bed: SshBed, tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port with no listener
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    settings = settings_for(ssh_bed, nodes="node[0001-0008]", proxy_jump=f"{ssh_bed.user}@127.0.0.1:{dead}")
    source = SshSource(settings, codec=StandinCodec(0.5))
    try:
        result = await collect_until(source, lambda r: all(p.error and "jump" in p.error
                                                            for p in (r.probes or {}).values()))
        for st in (result.probes or {}).values():
            assert not st.reachable and st.error == f"jump host {ssh_bed.user}@127.0.0.1:{dead}: connection refused"
            assert st.next_retry is not None
        assert source.pool is not None and source.pool.handshakes_done == 0
    finally:
        await source.close()
