"""The argv of ``srun --jobid=N --overlap --pty SHELL``: a shell in a running job's allocation.

``--overlap`` lets the step share the job's CPUs and memory with the steps already running
(without it, srun waits for free resources in a full allocation: the shell would never start);
``--pty`` gives the step's first task a pseudo-terminal. Slurm runs it on the job's first node.

Locally the source's ``slurm_conf`` and ``bin_dir`` apply as they do to every Slurm command of
the source; on a login node over ssh (``[shells] job_login_node``) the login node's own Slurm
setup applies, and the shell is that node's ``$SHELL``.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from hpctui.sources.slurm.settings import SlurmSettings

_JOB_ID = re.compile(r"[1-9][0-9]{0,9}", re.ASCII)
_SHELL = re.compile(r"/[A-Za-z0-9._/+-]*", re.ASCII)  # an absolute path, no shell syntax
REMOTE_SHELL = '"${SHELL:-/bin/sh}"'  # the login node's shell, expanded there


def job_id_problem(job_id: str) -> str | None:
    """Why ``job_id`` cannot be passed to ``srun --jobid`` (a positive integer), or None."""
    return None if _JOB_ID.fullmatch(job_id) else f"job id {job_id[:40]!r} is not a Slurm job id"


def local_shell() -> str:
    """The shell a local srun starts: ``$SHELL`` when it is a plain absolute path, else /bin/sh."""
    shell = os.environ.get("SHELL", "")
    return shell if _SHELL.fullmatch(shell) else "/bin/sh"


def srun_argv(settings: SlurmSettings, job_id: str, shell: str) -> tuple[str, ...]:
    """The local argv: ``[env SLURM_CONF=...] [BIN_DIR/]srun --jobid=N --overlap --pty SHELL``;
    ValueError for a job id that is not one or a shell that is not an absolute path."""
    problem = job_id_problem(job_id) or (None if _SHELL.fullmatch(shell) else f"shell {shell!r} is not an absolute path")
    if problem:
        raise ValueError(problem)
    srun = str(Path(settings.bin_dir).expanduser() / "srun") if settings.bin_dir else "srun"
    prefix = ("env", f"SLURM_CONF={settings.slurm_conf}") if settings.slurm_conf else ()
    return (*prefix, srun, f"--jobid={job_id}", "--overlap", "--pty", shell)


def srun_remote_command(job_id: str) -> str:
    """The same step as one command line for a login node's shell (``ssh -t login '...'``)."""
    problem = job_id_problem(job_id)
    if problem:
        raise ValueError(problem)
    return f"{shlex.join(['srun', f'--jobid={job_id}', '--overlap', '--pty'])} {REMOTE_SHELL}"
