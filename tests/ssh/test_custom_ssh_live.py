"""Custom actions with ``run = "ssh"`` against the real sshd bed: one run per node, folded
by identical output, unreachable/hung nodes listed apart, placeholders literal on the far side."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import msgspec
import pytest
from sshbed import SshBed

from hpctui.actions.custom import CustomActionSettings, CustomRun, plan_custom
from hpctui.actions.fold import fold, render
from hpctui.core.runtime import demo_runtime
from hpctui.sources.ssh.settings import SshSettings

pytestmark = pytest.mark.live

# The node answers with its "rack" (a file per address: what `cat /etc/hostname`-like commands differ by);
# a node marked "hang" in the bed's faults never answers.
SCRIPT = """#!/bin/sh
set -- $SSH_CONNECTION
addr=$3
fault=$(awk -v a="$addr" '$1 == a { print $2 }' "$HPCTUI_BED_FAULTS" 2>/dev/null)
[ "$fault" = hang ] && exec sleep 3600
cat "$HPCTUI_BED_DIR/custom-rack.$addr"
"""
HOSTILE = ["; touch /tmp/hpctui-ssh-pwned", "$(touch /tmp/hpctui-ssh-pwned)", "`id`", "a\nb", "it's \"q\" \\"]


def _settings(bed: SshBed) -> SshSettings:
    return SshSettings(ssh_config=[str(bed.ssh_config)], known_hosts=[str(bed.known_hosts)], connect_timeout_s=2.0,
                       keepalive_s=0, from_snapshot=False)


def _prepare(bed: SshBed) -> Path:
    script = bed.dir / "custom.sh"
    script.write_text(SCRIPT)
    for i, node in enumerate(bed.nodes):
        (bed.dir / f"custom-rack.{node.address}").write_text(f"rack {'ABA'[i // 4 % 3]}\n")
    return script


async def _run(tmp_path: Path, bed: SshBed, action: CustomActionSettings, targets: list[str]) -> CustomRun:
    rt = demo_runtime(size=4, audit_path=tmp_path / "audit.jsonl")
    plan = plan_custom(action, targets, None)
    assert plan.runnable, plan.errors
    seen: list[int] = []
    run = CustomRun(rt, plan, True, ssh=_settings(bed), on_update=lambda r: seen.append(len(r.outputs)))
    await run.start()
    assert seen[-1] == len(plan.invocations)  # one update per node as it answered
    return run


async def test_ssh_run_folds_by_output_and_lists_failures_apart(ssh_bed: SshBed, tmp_path: Path) -> None:
    script = _prepare(ssh_bed)
    action = msgspec.convert({"name": "rack", "run": "ssh", "command": ["sh", str(script)], "timeout_s": 3},
                             CustomActionSettings)
    run = await _run(tmp_path, ssh_bed, action, ["node[0001-0012]", "node0031"])
    assert run.result is not None
    outs = {o.label: o for o in run.result.outputs}
    assert len(outs) == 13
    folds = [(f.labels, f.text) for f in fold(run.result.outputs)]
    assert folds == [
        (("node0001", "node0002", "node0004", "node0009", "node0010", "node0012"), "rack A"),
        (("node0005", "node0006", "node0008"), "rack B"),
    ]
    assert outs["node0003"].error == "connection refused"  # unreachable
    assert outs["node0007"].error == "connect timed out after 2 s"  # listens, never speaks
    assert outs["node0011"].error is not None and outs["node0011"].error.startswith("authentication refused")
    assert outs["node0031"].error == "timed out after 3 s"  # the command hung
    text = render(run.result.outputs)
    assert text.startswith("---------------- node[0001-0002,0004,0009-0010,0012] (6) ----------------\nrack A\n")
    assert "FAILED node0031 (1): timed out after 3 s" in text
    outcome = run.runtime.executor.audit.read()[-1]  # type: ignore[union-attr]
    assert outcome["custom"]["folds"][0]["nodes"] == "node[0001-0002,0004,0009-0010,0012]"
    assert {f["nodes"] for f in outcome["custom"]["failed"]} >= {"node0003", "node0031"}


async def test_placeholders_and_literals_arrive_as_one_argument_over_ssh(ssh_bed: SshBed, tmp_path: Path) -> None:
    argv = [sys.executable, "-c", "import json, sys; print(json.dumps(sys.argv[1:]))", "{nodes}", "{node}x", *HOSTILE]
    action = msgspec.convert({"name": "argv", "run": "ssh", "command": argv}, CustomActionSettings)
    run = await _run(tmp_path, ssh_bed, action, ["node[0001-0002]"])
    assert run.result is not None and run.result.ok
    for out in run.result.outputs:
        assert json.loads(out.output) == ["node[0001-0002]", f"{out.label}x", *HOSTILE]
    assert not Path("/tmp/hpctui-ssh-pwned").exists()  # noqa: ASYNC240


def test_act_custom_over_ssh_end_to_end(ssh_bed: SshBed, tmp_path: Path) -> None:
    """The installed command with an ``ssh`` source in the config: its connection settings are used."""
    import shutil
    import subprocess

    script = _prepare(ssh_bed)
    config = tmp_path / "config.toml"
    config.write_text(f"""audit_log = "{tmp_path / 'audit.jsonl'}"
[[clusters.bed.sources]]
kind = "ssh"
nodes = "node[0001-0008]"
from_snapshot = false
connect_timeout_s = 2
ssh_config = ["{ssh_bed.ssh_config}"]
known_hosts = ["{ssh_bed.known_hosts}"]
[[custom_actions]]
name = "rack"
run = "ssh"
command = ["sh", "{script}"]
read_only_ok = true
""")
    exe = shutil.which("hpctui", path=str(Path(sys.executable).parent)) or "hpctui"
    proc = subprocess.run([exe, "act", "custom", "--config", str(config), "--param", "name=rack", "--targets",
                           "node[0001-0008]", "--yes", "--read-only"], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 1, proc.stderr  # node0003 and node0007 do not answer
    assert "---------------- node[0001-0002,0004] (3) ----------------\nrack A\n" in proc.stdout
    assert "---------------- node[0005-0006,0008] (3) ----------------\nrack B\n" in proc.stdout
    assert "FAILED node0003 (1): connection refused" in proc.stdout
    assert "FAILED node0007 (1): connect timed out after 2 s" in proc.stdout
