"""A shell in a running job's allocation against the real Slurm bed: ``srun --jobid=N --overlap
--pty SHELL`` as the Slurm source builds it, run on a pseudo-terminal — the shell runs inside the
job (its id and node in the environment, a pty of its own), and its exit status comes back; then
the same through the executor with the job from a real snapshot, audited."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest
from ptyrun import run_in_pty
from slurm_helpers import settings, snapshot
from slurmlab import SlurmLab

from hpctui.actions.audit import AuditLog
from hpctui.actions.executor import ActionExecutor
from hpctui.actions.shells import ShellBackend, ShellSettings, audit_fields
from hpctui.model.action import ActionKind
from hpctui.sources.slurm.source import SlurmSource

pytestmark = [pytest.mark.live, pytest.mark.slurm]

TYPED = b"echo job=$SLURM_JOB_ID node=$SLURMD_NODENAME tty=$(tty); exit 6\n"


def _source(lab: SlurmLab) -> SlurmSource:
    return SlurmSource(settings(lab, "cli"))


def test_srun_overlap_pty_joins_the_running_job(lab: SlurmLab) -> None:
    jid = lab.sbatch("-p", "cpu", "-n", "1", "-J", "holds-the-cpus")
    lab.wait_state(jid, "RUNNING")
    argv = _source(lab).job_shell_argv(jid, "/bin/sh")
    assert argv[-4:] == (f"--jobid={jid}", "--overlap", "--pty", "/bin/sh")
    status, out = run_in_pty(argv, [(b"", TYPED)], timeout=60)
    assert status == 6, out
    assert f"job={jid}" in out and "tty=/dev/pts/" in out, out
    assert lab.state(jid) == "RUNNING"  # the shell's step ended; the job goes on


class PtyTerminal:
    def __init__(self) -> None:
        self.out = ""

    def unavailable(self) -> str | None:
        return None

    async def run(self, argv: Sequence[str]) -> int:
        status, self.out = await asyncio.to_thread(run_in_pty, argv, [(b"", TYPED)], timeout=60)
        return status


async def test_through_the_executor_with_the_job_from_a_real_snapshot(lab: SlurmLab, tmp_path: Path) -> None:
    jid = lab.sbatch("-p", "cpu", "-n", "1", "-J", "shell-target")
    lab.wait_state(jid, "RUNNING")
    src = _source(lab)
    _, snap = await snapshot(src)
    terminal = PtyTerminal()
    backend = ShellBackend(ShellSettings(), terminal, jobs=[src])
    executor = ActionExecutor([], AuditLog(tmp_path / "audit.jsonl"), cluster="lab")
    plan = backend.plan(ActionKind.SHELL_JOB, (jid,), {}, snap)
    assert plan.runnable, plan.errors
    result = await executor.execute(plan, confirmation=True, extra=audit_fields, via=backend)
    assert result.results[0].message == "exit status 6", terminal.out
    [outcome] = AuditLog(tmp_path / "audit.jsonl").read()
    assert outcome["session"]["exit_status"] == 6 and f"--jobid={jid}" in outcome["commands"][0]
