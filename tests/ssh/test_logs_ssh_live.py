"""Log reads against the real sshd bed: a real file's tail (and its follow), plain "no such file",
a bounded read of a big file, and the journal window fanned out to several nodes through the
journalctl shim (tests/testbed/nodeshims), folded, with an unreachable node listed apart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sshbed import SshBed
from test_ssh_transport_live import settings_for

from hpctui.core.logs import LogService
from hpctui.core.store import Store
from hpctui.sources.ssh.probe.script import ProbeOptions
from hpctui.sources.ssh.source import SshSource

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "nodeshims"))
from nodeshims import NodeSpec, build_shim_root

pytestmark = pytest.mark.live


def _source(bed: SshBed, **kw: object) -> SshSource:
    return SshSource(settings_for(bed, connect_timeout_s=2.0, **kw))  # type: ignore[arg-type]


async def test_tail_follow_and_plain_errors_of_a_real_file(ssh_bed: SshBed, tmp_path: Path) -> None:
    src = _source(ssh_bed)
    odd = tmp_path / "out dir $(touch pwned)"
    odd.mkdir()
    f = odd / "slurm-42.out"
    f.write_text("epoch 1 loss 3.2\nepoch 2 loss 2.9\n")
    first = await src.read_file("node0001", str(f))
    assert first.error is None, first.error
    assert first.lines == ("epoch 1 loss 3.2", "epoch 2 loss 2.9") and first.offset == f.stat().st_size
    with f.open("a") as out:
        out.write("epoch 3 loss 2.7\n\x1b]0;owned\x07done\n")
    more = await src.read_file("node0001", str(f), first.offset)
    assert more.lines == ("epoch 3 loss 2.7", "\ufffddone") and not more.cut  # only what was added, sanitised
    assert not (Path.cwd() / "pwned").exists() and not (odd.parent / "pwned").exists()
    f.write_text("new\n")  # truncated (a requeued job starts its file again)
    again = await src.read_file("node0001", str(f), more.offset)
    assert again.restarted and again.lines == ("new",)

    missing = await src.read_file("node0001", str(tmp_path / "nope.out"))
    assert missing.error == "no such file" and missing.where.endswith("nope.out")
    gone = await src.read_file("node0003", str(f))  # the bed's unreachable node
    assert gone.error == "connection refused"
    if os.getuid() != 0:  # root reads everything: permission errors are proven only as another user
        f.chmod(0)
        denied = await src.read_file("node0001", str(f))
        assert denied.error == "permission denied"


async def test_a_big_file_is_read_within_the_bound(ssh_bed: SshBed, tmp_path: Path) -> None:
    src = _source(ssh_bed)
    f = tmp_path / "big.out"
    f.write_text("".join(f"line {i:06d}\n" for i in range(50_000)))  # 600 KB
    chunk = await src.read_file("node0002", str(f), None, max_bytes=1200)
    assert chunk.cut and chunk.lines[-1] == "line 049999" and len(chunk.lines) <= 100
    assert chunk.lines[0].startswith("line 0499")  # whole lines from the end


async def test_journal_window_fans_out_through_the_shim_and_folds(ssh_bed: SshBed, tmp_path: Path) -> None:
    nodes = {n.name: n for n in ssh_bed.nodes}
    specs = {nodes["node0001"].address: NodeSpec(variant="h100", faults={"xid"}),
             nodes["node0002"].address: NodeSpec(variant="h100", faults={"xid"}),
             nodes["node0004"].address: NodeSpec(variant="h100", faults={"svc-failed"}),
             nodes["node0005"].address: NodeSpec(variant="cpu")}
    root = build_shim_root(tmp_path / "shims", specs)
    src = _source(ssh_bed, probe=ProbeOptions(shim_root=str(root)))
    store = Store("bed")
    logs = LogService(lambda: [src], lambda: store)
    now = time.time()
    hosts = ["node0001", "node0002", "node0003", "node0004", "node0005"]
    read = await logs.journal(hosts, now - 600, now + 5, kernel=True)
    assert read is not None
    by = {o.label: o for o in read.outputs}
    assert by["node0003"].error == "connection refused"
    assert "NVRM: Xid" in by["node0001"].output and "NVRM: Xid" in by["node0002"].output
    assert by["node0005"].output == "" and by["node0005"].rc == 0  # a quiet node: nothing under -q
    assert "FAILED node0003 (1): connection refused" in read.folded
    xids = [ln for ln in read.lines if "Xid" in ln.message]
    assert xids and {ln.host for ln in xids} == {"node0001", "node0002"}
    assert read.added_events == len(read.lines)
    assert {e.object for e in store.snapshot().events if e.source == "journal"} == {"node/node0001", "node/node0002"}

    # a unit's journal in its own window, filtered: the fabric manager's failure on node0004 only
    t = 1_796_112_001  # 2026-12-01T08:00:01Z, the shim's recorded-format unit lines
    unit = await logs.journal(["node0004", "node0005"], t - 60, t + 60, kernel=False,
                              units=("nvidia-fabricmanager",), grep="failed")
    assert unit is not None
    assert [ln.ident for ln in unit.lines] == ["nv-fabricmanager", "systemd"]
    assert all(ln.time == t for ln in unit.lines)
    assert "node0005" in unit.folded  # its (empty after the filter) block is listed


def _cli(*argv: str, env_home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_STATE_HOME": str(env_home), "HOME": str(env_home)}
    return subprocess.run([sys.executable, "-m", "hpctui", *argv], capture_output=True, text=True, timeout=120,
                          env=env, check=False)


def test_installed_cli_node_journal_and_report_with_journal(ssh_bed: SshBed, tmp_path: Path) -> None:
    """``hpctui logs node`` and ``hpctui report --journal`` from a config file, through the real sshd and the
    journalctl shim: folded output with the unreachable node apart; the Xid lines in the report's timeline."""
    nodes = {n.name: n for n in ssh_bed.nodes}
    specs = {nodes["node0001"].address: NodeSpec(variant="h100", faults={"xid"}),
             nodes["node0002"].address: NodeSpec(variant="cpu")}
    root = build_shim_root(tmp_path / "shims", specs)
    config = tmp_path / "config.toml"
    config.write_text(f"""
[clusters.bed]
[[clusters.bed.sources]]
kind = "ssh"
nodes = "node[0001-0002]"
from_snapshot = false
ssh_config = ["{ssh_bed.ssh_config}"]
known_hosts = ["{ssh_bed.known_hosts}"]
connect_timeout_s = 2.0
keepalive_s = 0
[clusters.bed.sources.probe]
shim_root = "{root}"
""")
    got = _cli("logs", "node", "node[0001-0003]", "--since", "30m", "--grep", "xid", "--config", str(config),
               env_home=tmp_path)
    assert got.returncode == 0, got.stderr
    assert "journalctl --no-pager -q -o short-unix" in got.stderr and "(filter: xid)" in got.stderr
    assert got.stdout.startswith("---------------- node0001 (1) ----------------\n")
    assert "NVRM: Xid" in got.stdout and "FAILED node0003 (1): connection refused" in got.stdout

    report = _cli("report", "--nodes", "node[0001-0002]", "--since", "30m", "--journal", "-o", str(tmp_path / "r"),
                  "--config", str(config), env_home=tmp_path)
    assert (tmp_path / "r" / "report.json").exists(), report.stderr
    doc = json.loads((tmp_path / "r" / "report.json").read_text())
    journal = [r for r in doc["timeline"] if r["source"] == "journal"]
    assert journal and all(r["object"] == "node/node0001" for r in journal)
    assert any("NVRM: Xid" in r["message"] for r in journal)
    markdown = (tmp_path / "r" / "report.md").read_text()
    assert "| journal |" in markdown and "Xid" in markdown
