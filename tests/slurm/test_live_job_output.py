"""A real Slurm job's output, end to end: the Slurm 22.05 bed runs the job (its slurmd writes the files
on this machine's filesystem), ``scontrol show job`` gives StdOut/StdErr (patterns partly filled in), the
rest of the patterns are filled here, and the files are read over the real sshd bed from the configured
login node (``log_host``: the bed's node0001 shares this filesystem on loopback) — from the log viewer,
with follow and the stdout/stderr switch, in a runtime built from a config file as the installed program
builds it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hpctui.core.config import load_config
from hpctui.core.runtime import runtime_from_config
from hpctui.sources.slurm.settings import SlurmSettings
from hpctui.sources.slurm.source import SlurmSource
from hpctui.ui.app import HpcApp
from hpctui.ui.screens.log_viewer import LogViewerScreen
from hpctui.ui.widgets.tables import QueueTable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "ssh"))
from slurmlab import SlurmLab
from sshbed import SshBed, sshd_missing

# The session's 22.05 bed (tests/slurm/conftest.py), not a bed of its own: two Slurm beds at once fight over
# ports and munged (a slurmdbd answered another version's slurmctld: "Incompatible versions")
pytestmark = [pytest.mark.live, pytest.mark.slurm, pytest.mark.slurm_versions("22.05")]
IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")


@pytest.fixture(scope="module")
def ssh_bed() -> Iterator[SshBed]:
    """A small sshd bed of this module's own (its node0001 is the login node sharing this filesystem)."""
    why_not = sshd_missing()
    if why_not:
        if IN_CI:
            pytest.fail(f"CI=true but the SSH test bed cannot run: {why_not}", pytrace=False)
        pytest.skip(why_not)
    bed = SshBed(n_nodes=2, faults={})
    try:
        bed.start()
        yield bed
    finally:
        bed.stop()


def _config(tmp_path: Path, lab: SlurmLab, bed: SshBed) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(f"""
audit_log = "{tmp_path / 'audit.jsonl'}"
[clusters.lab]
[[clusters.lab.sources]]
kind = "slurm"
backend = "cli"
slurm_conf = "{lab.slurm_conf}"
interval_s = 0.5
[[clusters.lab.sources]]
kind = "ssh"
name = "nodes"
from_snapshot = false
ssh_config = ["{bed.ssh_config}"]
known_hosts = ["{bed.known_hosts}"]
keepalive_s = 0
log_host = "node0001"
""")
    return path


async def _wait(pilot: object, pred: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.1)  # type: ignore[attr-defined]


async def test_job_stdout_resolved_read_followed_over_ssh(lab: SlurmLab, ssh_bed: SshBed, tmp_path: Path) -> None:
    jid = lab.sbatch("-p", "cpu", "-n", "1", "-J", "tail-me", "-o", "%x-%j.%N.out", "-e", "err-%u-%4j.txt",
                     wrap="echo step-1; echo to-stderr >&2; sleep 300")
    lab.wait_state(jid, "RUNNING")
    out_file = lab.dir / "jobs" / f"tail-me-{jid}.cpu01.out"
    deadline = time.monotonic() + 20
    while not (out_file.exists() and out_file.read_text()):
        assert time.monotonic() < deadline, f"{out_file} never written"
        await asyncio.sleep(0.1)

    runtime = runtime_from_config(load_config(_config(tmp_path, lab, ssh_bed)), "lab")
    paths = await runtime.logs.job_output_paths(jid)
    assert paths is not None and paths.host == "cpu01"
    assert paths.stdout == str(out_file)  # %N filled in here: scontrol 22.05 leaves it
    assert paths.stderr == str(lab.dir / "jobs" / f"err-{lab.run('id', '-un').stdout.strip()}-{int(jid):04d}.txt")
    assert runtime.logs.log_host(paths.host) == "node0001"
    assert await runtime.logs.job_output_paths("999999") is None  # Slurm does not know it

    app = HpcApp(runtime)
    async with app.run_test(size=(160, 50)) as pilot:
        queue = app.screen.query_one("#queue", QueueTable)
        await _wait(pilot, lambda: any(str(j.job_id) == jid for j in runtime.store.snapshot().jobs), "the job")
        queue.focus()
        queue.set_filter(jid)
        await _wait(pilot, lambda: queue.cursor_key == jid, "the job under the cursor")
        await pilot.press("L")
        await _wait(pilot, lambda: isinstance(app.screen, LogViewerScreen), "the log viewer")
        viewer = app.screen
        assert isinstance(viewer, LogViewerScreen)
        await _wait(pilot, lambda: viewer.loads >= 1, "the first read")
        assert list(viewer.lines) == ["step-1"], viewer.status
        assert f"node0001:{out_file}" in viewer.status

        await pilot.press("f")  # follow: what the job writes next appears
        with out_file.open("a") as f:
            f.write("step-2\n")
        await _wait(pilot, lambda: "step-2" in viewer.lines, "the followed line", timeout=15)
        assert list(viewer.lines) == ["step-1", "step-2"]
        await pilot.press("f")

        await pilot.press("o")  # stderr
        await _wait(pilot, lambda: viewer.stream == "stderr" and "to-stderr" in viewer.lines, "stderr")
        await pilot.press("escape")
        await _wait(pilot, lambda: not isinstance(app.screen, LogViewerScreen), "the viewer closed")
    await runtime.stop()

    # the installed command, the same config: stdout, stderr, and an unknown job said plainly
    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "XDG_STATE_HOME": str(tmp_path), "HOME": str(tmp_path)}
        return subprocess.run([sys.executable, "-m", "hpctui", "logs", *argv, "--config", str(tmp_path / "config.toml")],
                              capture_output=True, text=True, timeout=60, env=env, check=False)

    out = await asyncio.to_thread(cli, "job", jid)
    assert out.returncode == 0 and out.stdout == "step-1\nstep-2\n", out.stderr
    assert f"==> node0001:{out_file} <==" in out.stderr
    err = await asyncio.to_thread(cli, "job", jid, "--stderr")
    assert err.returncode == 0 and err.stdout == "to-stderr\n"
    unknown = await asyncio.to_thread(cli, "job", "999999")
    assert unknown.returncode == 1 and "Slurm does not know job 999999" in unknown.stderr

    # the slurmrestd route (raw patterns in the job record, all filled in here) finds the same files
    rest = SlurmSource(SlurmSettings(slurm_conf=lab.slurm_conf, backend="rest", rest_url=lab.rest_url_unix))
    try:
        await rest.resolve()
        assert rest.backend is rest.rest
        assert await rest.job_output_paths(jid) == paths
        assert await rest.job_output_paths("999999") is None
    finally:
        await rest.close()
    lab.run("scancel", jid)
