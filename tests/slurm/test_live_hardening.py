"""Issue #6 on the real test bed: hostile jobs from an unprivileged user, a hostile node reason,
and a ``kill -9`` in the middle of an action (slowed ``scontrol`` via ``bin_dir``).

Every read path (sinfo/squeue --json, the text fallbacks, slurmrestd) must keep every job and
every node, and nothing raw may reach the model, the ``snapshot`` table or the drawn screen.
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from slurm_helpers import run, source
from slurmlab import SlurmLab

from hpctui.base.sanitize import is_clean
from hpctui.core.config import load_config
from hpctui.core.runtime import runtime_from_config
from hpctui.ui.app import HpcApp

pytestmark = [pytest.mark.live, pytest.mark.slurm]

HOSTILE_NAMES = [
    b"T\x1b]0;PWNED\x07X",  # window title
    b"\x1b]52;c;aGk=\x1b\\",  # clipboard
    b"x\xff\ny",  # invalid UTF-8 + newline: blanked the whole source before
    b"a\x1fb",  # the text fallback's separator
    b"r\x1er\x1cs",  # record/file separators (str.splitlines() splits on them)
    b"\xe2\x80\xaebidi",  # U+202E
]
NODE_REASON = "\x1b[2J\x1b[31mdrained"


def _unprivileged(lab: SlurmLab) -> tuple[str, int, int]:  # (name, uid, gid)
    """A user without privileges that the bed lets submit (alice has an association)."""
    name = "alice" if lab.accounting else "nobody"
    pw = pwd.getpwnam(name)
    return name, pw.pw_uid, pw.pw_gid


def _submit_as(lab: SlurmLab, user: str, gid: int, name: bytes) -> str:
    argv = lab.as_user(user, gid, [b"sbatch", b"--parsable", b"-D", b"/tmp", b"-o", b"/dev/null", b"-p", b"cpu",
                                   b"-n", b"1", b"-J", name, b"--wrap", b"sleep 300"])
    res = subprocess.run(argv, env=lab.env, capture_output=True, timeout=30, check=False)
    assert res.returncode == 0, res.stderr
    return res.stdout.decode().strip().split(";")[0]


def _all_clean(obj: object) -> list[str]:
    import msgspec

    out: list[str] = []

    def walk(o: object) -> None:
        if isinstance(o, str):
            if not is_clean(o):
                out.append(o)
        elif isinstance(o, msgspec.Struct):
            for f in o.__struct_fields__:
                walk(getattr(o, f))
        elif isinstance(o, dict):
            for k, v in o.items():
                walk(k)
                walk(v)
        elif isinstance(o, (list, tuple, set, frozenset)):
            for v in o:
                walk(v)

    walk(obj)
    return out


@pytest.fixture()
def hostile(lab: SlurmLab) -> list[str]:
    if shutil.which("setpriv") is None:
        pytest.fail("setpriv (util-linux) is needed to submit as an unprivileged user")
    user, _, gid = _unprivileged(lab)
    ids = [_submit_as(lab, user, gid, n) for n in HOSTILE_NAMES]
    lab.run("scontrol", "update", "NodeName=gpu04", "State=DRAIN", f"Reason={NODE_REASON}")
    return ids


@pytest.mark.parametrize("backend", ["cli", "rest-unix"])
def test_hostile_jobs_keep_the_source_and_come_out_clean(lab: SlurmLab, hostile: list[str], backend: str) -> None:
    src = source(lab, backend)
    try:
        result = run(src.collect())
    finally:
        run(src.close())
    assert result.slurm_nodes and len(result.slurm_nodes) == 6, result.warnings
    got = {str(j.job_id) for j in result.slurm_jobs or ()}
    assert set(hostile) <= got, (hostile, got, result.warnings)
    assert not _all_clean(result), _all_clean(result)[:3]
    assert result.slurm_nodes["gpu04"].reason == "\ufffd\ufffddrained"


def test_text_fallback_drops_only_the_broken_records(lab: SlurmLab, hostile: list[str], tmp_path: Path) -> None:
    """Slurm without --json (older builds): the text forms; names with a separator or a newline
    cost their own record (with a warning), never the source."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sinfo", "squeue"):
        real = shutil.which(tool, path=lab.env["PATH"])
        (bin_dir / tool).write_text(f'#!/bin/sh\n[ "$1" = "--json" ] && {{ echo "{tool}: unrecognized option '
                                    f"'--json'\" >&2; exit 1; }}\nexec {real} \"$@\"\n")
        (bin_dir / tool).chmod(0o755)
    src = source(lab, "cli", bin_dir=str(bin_dir))
    result = run(src.collect())
    assert result.slurm_nodes and len(result.slurm_nodes) == 6
    got = {str(j.job_id) for j in result.slurm_jobs or ()}
    assert len(set(hostile) & got) >= len(hostile) - 2, result.warnings  # \x1f and \n names may be dropped
    assert any("unreadable job record" in w for w in result.warnings), result.warnings
    assert not _all_clean(result)


def test_snapshot_table_and_screen_hold_no_escape(lab: SlurmLab, hostile: list[str], tmp_path: Path) -> None:
    cfg = tmp_path / "lab.toml"
    cfg.write_text(f'[clusters.lab]\nsources = [{{ kind = "slurm", backend = "cli", slurm_conf = "{lab.slurm_conf}" }}]\n')
    res = subprocess.run([sys.executable, "-m", "hpctui.cli.main", "snapshot", "--config", str(cfg)], env=lab.env,
                         capture_output=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    assert b"\x1b" not in res.stdout and b"\x07" not in res.stdout
    assert f"jobs {len(hostile)}".encode() in res.stdout.split(b"\n")[0]

    async def screen() -> str:
        runtime = runtime_from_config(load_config(cfg), "lab", read_only=True)
        app = HpcApp(runtime, autostart=False)
        async with app.run_test(size=(200, 60)) as pilot:
            await runtime.collect_once()
            app.refresh_from_store()
            await pilot.pause()
            return app.export_screenshot()

    svg = asyncio.run(screen())
    assert "\x1b" not in svg and "\x07" not in svg
    assert "T\ufffdX" in svg


ACT = """
import asyncio, sys
from pathlib import Path
from hpctui.model.action import ActionKind
from hpctui.core.config import load_config
from hpctui.core.runtime import runtime_from_config

async def main() -> None:
    rt = runtime_from_config(load_config(Path(sys.argv[1])), "lab")
    await rt.collect_once()
    plan = rt.executor.plan(ActionKind.DRAIN_NODES, ["cpu02"], {"reason": "kill -9 test"}, rt.store.snapshot())
    assert plan.runnable, plan.errors
    await rt.executor.execute(plan, confirmation=True)

asyncio.run(main())
"""


def test_kill_9_mid_action_leaves_the_intent_record(lab: SlurmLab, tmp_path: Path) -> None:
    """A slowed scontrol (wrapper via bin_dir) is mid-drain when the acting process gets SIGKILL."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real = shutil.which("scontrol", path=lab.env["PATH"])
    started = tmp_path / "scontrol.pid"
    (bin_dir / "scontrol").write_text(
        f'#!/bin/sh\ncase "$*" in *State=DRAIN*) echo $$ > "{started}"; sleep 3;; esac\nexec {real} "$@"\n')
    (bin_dir / "scontrol").chmod(0o755)
    cfg = tmp_path / "lab.toml"
    cfg.write_text(f'audit_log = "{tmp_path / "audit.jsonl"}"\n[clusters.lab]\nsources = [{{ kind = "slurm", '
                   f'backend = "cli", slurm_conf = "{lab.slurm_conf}", bin_dir = "{bin_dir}" }}]\n')
    proc = subprocess.Popen([sys.executable, "-c", ACT, str(cfg)], env=lab.env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (started.exists() and started.read_text().strip()):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
            assert time.monotonic() < deadline, "scontrol never started"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        pgid = int(started.read_text())
        deadline = time.monotonic() + 20  # the wrapper goes on alone (kill -9 cleans nothing): let it end
        while True:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                break
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [r["phase"] for r in records] == ["intent"]
    assert records[0]["targets"] == ["cpu02"] and "State=DRAIN" in records[0]["commands"][0]
    assert records[0]["user"] == pwd.getpwuid(os.getuid()).pw_name
