"""The SSH farm (tests/testbed/sshfarm: one asyncssh server on many loopback addresses) as the
benchmark uses it, at 16 addresses: the real SSH source gets the recorded probe records of every
node, plain commands get their canned answers (through hpctui's command runner and through
OpenSSH's ``ssh -F``, as pdsh and clush reach it), and stopping the farm leaves no process behind."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "sshfarm"))

from farm import SshFarm
from test_ssh_transport_live import collect_until

from hpctui.model.action import CommandRun
from hpctui.model.probe import ServiceStatus
from hpctui.sources.ssh.settings import SshSettings
from hpctui.sources.ssh.source import SshSource

pytestmark = pytest.mark.live

MIX = ("h100-busy", "gpu-faulty", "gpu-mig", "cpu-ro")
GPUS = {"h100-busy": 8, "gpu-faulty": 8, "gpu-mig": 1, "cpu-ro": 0}  # what each recording holds


@pytest.fixture()
def farm(tmp_path: Path) -> Iterator[SshFarm]:
    f = SshFarm(n_nodes=16, mix=MIX, dir=tmp_path / "farm")
    try:
        f.start()
        yield f
    finally:
        f.stop()


def farm_settings(farm: SshFarm, **kw: object) -> SshSettings:
    return SshSettings(nodes=farm.hostlist, from_snapshot=False, ssh_config=[str(farm.ssh_config)],
                       known_hosts=[str(farm.known_hosts)], interval_s=0.5, connect_timeout_s=10.0,
                       stale_after_s=10.0, keepalive_s=0, max_handshakes=4, **kw)  # type: ignore[arg-type]


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def test_source_reads_every_farm_node(farm: SshFarm) -> None:
    source = SshSource(farm_settings(farm))
    try:
        result = await collect_until(source, lambda r: all(run.records >= 2 for run in source.runners.values()))
        probes = result.probes or {}
        assert sorted(probes) == farm.names
        assert all(p.reachable and p.error is None for p in probes.values()), probes
        gpus = result.gpus or {}
        for i, node in enumerate(farm.names):
            assert len(gpus.get(node, ())) == GPUS[farm.kind_of(i)], node
            assert source.runners[node].latest.seq >= 2  # renumbered records keep coming
        assert result.resources is not None and set(result.resources) == set(farm.names)
        assert source.pool is not None and source.pool.handshakes_done == 16
        assert sum(r.bad_records for r in source.runners.values()) == 0
        # the faulty recording's faults arrive as recorded: a failed service on each such node
        faulty = [n for i, n in enumerate(farm.names) if farm.kind_of(i) == "gpu-faulty"]
        services = result.services or {}
        assert all(any(s.status is ServiceStatus.FAILED for s in services[n]) for n in faulty)
    finally:
        await source.close()


async def test_plain_commands_answered_by_node(farm: SshFarm) -> None:
    runner = SshSource(farm_settings(farm)).command_runner()
    try:
        await runner.resolve(farm.names[:3])
        outs = await asyncio.gather(*(runner.run(CommandRun(label=n, argv=("hostname",), host=n), 10, 4096)
                                      for n in farm.names[:3]))
        assert [(o.rc, o.output.strip()) for o in outs] == [(0, n) for n in farm.names[:3]]
        gpus = await runner.run(CommandRun(label="x", argv=("nvidia-smi", "-L"), host=farm.names[0]), 10, 65536)
        assert gpus.rc == 0 and gpus.output.startswith("GPU 0: NVIDIA H100")
        missing = await runner.run(CommandRun(label="x", argv=("no-such-tool",), host=farm.names[0]), 10, 4096)
        assert missing.rc == 127 and "not found" in missing.output
    finally:
        await runner.close()


@pytest.mark.skipif(shutil.which("ssh") is None, reason="OpenSSH client not installed (bash .ci/ssh-deps.sh)")
def test_openssh_client_reaches_the_farm(farm: SshFarm) -> None:
    """pdsh and clush run OpenSSH's ssh: the farm's ssh_config, key and known_hosts are enough for it."""
    out = subprocess.run(["ssh", "-F", str(farm.ssh_config), farm.names[5], "hostname"],
                         capture_output=True, timeout=30, check=False, stdin=subprocess.DEVNULL)
    assert (out.returncode, out.stdout.decode().strip()) == (0, farm.names[5]), out.stderr


def test_stop_leaves_no_process(tmp_path: Path) -> None:
    f = SshFarm(n_nodes=4, dir=tmp_path / "farm")
    f.start()
    pid = f.pid
    assert _alive(pid) and f.session_pids() == [pid]
    f.stop()
    assert not _alive(pid)
    assert not (tmp_path / "farm").exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
