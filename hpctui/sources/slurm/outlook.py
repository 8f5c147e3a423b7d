"""On demand, for one job: its priority factors (``sprio -j``) and expected start (``squeue --start -j``).

Like accounting, read with the CLI whatever the refresh backend is (``sprio`` has no REST endpoint and
no ``--json`` in any version), both calls at once. A job that is not pending has no sprio row and no
expected start: that is said in ``detail``, never raised. The job id is validated before it goes into
an argv (:data:`hpctui.sources.slurm.actions.JOB_ID`): ``ValueError`` otherwise.
"""

from __future__ import annotations

import asyncio
import shlex

from hpctui.model.jobs import SlurmJob
from hpctui.model.scheduler import ExpectedStart, JobOutlook, PriorityFactors
from hpctui.sources.slurm.actions import JOB_ID
from hpctui.sources.slurm.parse.errors import SlurmParseError
from hpctui.sources.slurm.parse.priority import SPRIO_FORMAT, START_FORMAT, parse_sprio, parse_squeue_start
from hpctui.sources.slurm.parse.scontrol import parse_scontrol_jobs
from hpctui.sources.slurm.runner import CommandError, Runner, RunResult


def outlook_argvs(job_id: str, with_job: bool = False) -> dict[str, list[str]]:
    """The commands of one query (``job_id`` must already be checked): two, three ``with_job``."""
    cmds = {"sprio": ["sprio", "-h", "-j", job_id, "-o", SPRIO_FORMAT],
            "start": ["squeue", "--start", "-h", "-j", job_id, "-o", START_FORMAT]}
    if with_job:
        cmds["job"] = ["scontrol", "-o", "show", "job", job_id]
    return cmds


async def _run(runner: Runner, argv: list[str]) -> RunResult | str:
    try:
        return await runner.run(argv)
    except CommandError as exc:
        return str(exc)


def _why(res: RunResult | str) -> str | None:
    if isinstance(res, str):
        return res
    return None if res.ok else (res.message or f"{res.argv[0]} exit status {res.rc}")


async def query_outlook(runner: Runner, job_id: str, *, with_job: bool = False) -> JobOutlook:
    """sprio and squeue --start for ``job_id`` (a plain id; an array task's own id works too); ``with_job``:
    also the job itself (``scontrol -o show job``: exit code, restart count, batch/requeue flags, GPU
    request), for a queue read that lacked them (the hybrid read's pending jobs)."""
    if not JOB_ID.match(job_id):
        raise ValueError(f"not a job id: {job_id!r}")
    cmds = outlook_argvs(job_id, with_job)
    got = await asyncio.gather(*(_run(runner, argv) for argv in cmds.values()))
    res = dict(zip(cmds, got, strict=True))
    problems: list[str] = []
    factors: PriorityFactors | None = None
    start: ExpectedStart | None = None
    why = _why(res["sprio"])
    if why is not None:
        problems.append(f"sprio failed: {why}")
    else:
        try:
            rows = parse_sprio(_out(res["sprio"]))
        except SlurmParseError as exc:
            problems.append(f"sprio output unreadable: {exc}")
        else:
            factors = next((r for r in rows if r.job_id == job_id), rows[0] if rows else None)
            if factors is None:
                problems.append("sprio: no priority factors (the job is not pending, or priority/basic)")
    why = _why(res["start"])
    if why is not None:
        problems.append(f"squeue --start failed: {why}")
    else:
        try:
            starts = parse_squeue_start(_out(res["start"]))
        except SlurmParseError as exc:
            problems.append(f"squeue --start output unreadable: {exc}")
        else:
            start = next((r for r in starts if r.job_id == job_id), starts[0] if starts else None)
    job = _job(res["job"], job_id, problems) if "job" in res else None
    return JobOutlook(job_id=job_id, factors=factors, start=start, detail="; ".join(problems) or None,
                      commands=tuple(shlex.join(a) for a in cmds.values()), job=job)


def _job(res: RunResult | str, job_id: str, problems: list[str]) -> SlurmJob | None:
    """The job of ``scontrol -o show job ID`` (None, with a problem said, when it cannot be read)."""
    why = _why(res)
    if why is not None:
        problems.append(f"scontrol show job failed: {why}")
        return None
    jobs = parse_scontrol_jobs(_out(res), include_finished=True, on_invalid=lambda _msg: None)
    return next((j for j in jobs if j.display_id == job_id or str(j.job_id) == job_id), None)


def _out(res: RunResult | str) -> str:
    assert not isinstance(res, str)
    return res.stdout.decode(errors="replace")
