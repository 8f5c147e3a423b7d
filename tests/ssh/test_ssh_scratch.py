"""The per-host filtered ssh_config files are written to memory (/dev/shm) where it is usable: rewriting a
truncated file on ext4 is flushed on close, ~4 ms a node, which put 4 s before the first of 1,024 connects."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hpctui.sources.ssh.settings import SshSettings
from hpctui.sources.ssh.targets import Resolver


@pytest.mark.skipif(not (Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK)), reason="no writable /dev/shm")
def test_scratch_config_lives_in_dev_shm(tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text("Host n1\n  HostName 127.9.0.1\n  Port 2200\nHost n2\n  HostName 127.9.0.2\n")
    resolver = Resolver(SshSettings(nodes="n[1-2]", from_snapshot=False, ssh_config=[str(config)]))
    t1, t2 = resolver.resolve("n1"), resolver.resolve("n2")
    assert (t1.host, t1.port, t2.host, t2.port) == ("127.9.0.1", 2200, "127.9.0.2", 22)
    assert resolver._scratch is not None and resolver._scratch.parent == Path("/dev/shm")


def test_aliases_resolved_at_once_from_threads_each_get_their_own_block(tmp_path: Path) -> None:
    """The source resolves nodes in a worker thread while the event loop resolves a jump host; both write the
    same scratch files. Each alias must read back its own filtered block (CI once dialled ``bastion`` by name:
    the loop had read a node's block)."""
    from concurrent.futures import ThreadPoolExecutor

    config = tmp_path / "ssh_config"
    config.write_text("".join(f"Host n{i}\n  HostName 127.9.0.{i}\n" for i in range(1, 41)) +
                      "Host bastion\n  HostName 127.9.1.1\n")
    resolver = Resolver(SshSettings(nodes="n[1-40]", from_snapshot=False, ssh_config=[str(config)]))
    aliases = [f"n{i}" for i in range(1, 41)] * 5 + ["bastion"] * 40
    with ThreadPoolExecutor(8) as pool:
        hosts = list(pool.map(lambda a: (a, resolver.endpoint(a)[0]), aliases))
    wrong = [(a, h) for a, h in hosts if h != ("127.9.1.1" if a == "bastion" else f"127.9.0.{a[1:]}")]
    assert not wrong, wrong[:5]
