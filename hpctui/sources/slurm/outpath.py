"""A Slurm job's stdout/stderr paths: read from its record, filename patterns filled in.

sbatch(1) "filename pattern" (tests/fixtures/logs/sbatch_filename_pattern_22.05.man): ``%%`` ``%A``
``%a`` ``%J`` ``%j`` ``%N`` ``%n`` ``%s`` ``%t`` ``%u`` ``%x``, a number between ``%`` and the letter
zero-pads a numeric one (``%4j`` → ``0128``), and a backslash anywhere turns every symbol off.
Newer releases add ``%b`` (the array index modulo 10); it is filled in too.

``scontrol show job`` fills in some symbols itself and leaves others (22.05: ``%N`` and a padded
``%4j`` stay, see tests/fixtures/logs/README.md); ``squeue --json`` gives the raw pattern. Either
goes through :func:`expand_pattern`, which leaves an already filled-in path as it is.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

import msgspec

from hpctui.base.sanitize import clean_text
from hpctui.model.logs import JobOutputPaths
from hpctui.sources.slurm.parse.scontrol import _JOB_SPLIT, split_pairs

NO_VAL = 4294967294  # what %a is for a job that is not an array task (Slurm's NO_VAL)
_SYMBOL = re.compile(r"%(\d*)([%AabJjNnstux])")
_NUMERIC = frozenset("AabJjnst")


class JobPathFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What the patterns are filled from (one job's record)."""

    job_id: int
    array_job_id: int | None = None
    array_task_id: int | None = None
    name: str | None = None
    user: str | None = None
    batch_host: str | None = None
    work_dir: str | None = None


def expand_pattern(pattern: str, facts: JobPathFacts) -> str:
    """``pattern`` with its replacement symbols filled in for the batch step, relative to the job's
    working directory. A symbol that cannot be known (``%N`` of a job not started) is left as it is."""
    if "\\" in pattern:  # "Do not process any of the replacement symbols"
        path = pattern.replace("\\", "")
    else:
        def one(m: re.Match[str]) -> str:
            width, letter = m.group(1), m.group(2)
            value = _value(letter, facts)
            if value is None:
                return m.group(0)
            if letter in _NUMERIC and width and value.isdigit():
                return value.zfill(int(width))
            return value

        path = _SYMBOL.sub(one, pattern)
    if facts.work_dir and not path.startswith("/"):
        path = posixpath.join(facts.work_dir, path)
    return path


def _value(letter: str, f: JobPathFacts) -> str | None:
    array_task = f.array_task_id if f.array_job_id is not None else None
    values: dict[str, str | None] = {
        "%": "%",
        "A": str(f.array_job_id if f.array_job_id is not None else f.job_id),
        "a": str(array_task if array_task is not None else NO_VAL),
        "b": str(array_task % 10) if array_task is not None else None,
        "J": str(f.job_id),  # the batch step: no ".stepid"
        "j": str(f.job_id),
        "N": f.batch_host.split(".", 1)[0] if f.batch_host else None,
        "n": "0",
        "s": "batch",
        "t": "0",
        "u": f.user,
        "x": f.name,
    }
    return values[letter]


def _none(value: str | None) -> str | None:
    return None if value in (None, "", "(null)", "N/A") else value


def paths_from_scontrol(text: str) -> JobOutputPaths | None:
    """The first job of ``scontrol -o show job ID`` → its output paths (sanitised); None if no job."""
    for line in text.splitlines():
        d = dict(split_pairs(line, _JOB_SPLIT))
        job_id = d.get("JobId", "")
        if not job_id.isdigit():
            continue
        array_job = d.get("ArrayJobId", "")
        task = d.get("ArrayTaskId", "")
        facts = JobPathFacts(
            job_id=int(job_id),
            array_job_id=int(array_job) if array_job.isdigit() else None,
            array_task_id=int(task) if task.isdigit() else None,
            name=_none(d.get("JobName")),
            user=(_none(d.get("UserId")) or "").split("(", 1)[0] or None,
            batch_host=_none(d.get("BatchHost")),
            work_dir=_none(d.get("WorkDir")),
        )
        out, err = _none(d.get("StdOut")), _none(d.get("StdErr"))
        stdout = expand_pattern(out, facts) if out else None
        stderr = expand_pattern(err, facts) if err else None
        display = f"{facts.array_job_id}_{facts.array_task_id}" if facts.array_job_id is not None and \
            facts.array_task_id is not None else str(facts.job_id)
        return JobOutputPaths(job=display, stdout=clean_text(stdout) if stdout else None,
                              stderr=None if stderr is None or stderr == stdout else clean_text(stderr),
                              host=clean_text(facts.batch_host) if facts.batch_host else None,
                              work_dir=clean_text(facts.work_dir) if facts.work_dir else None)
    return None


def _number(value: Any) -> int | None:
    """A REST number: plain (v0.0.38) or ``{"set": true, "number": N}`` (v0.0.40 and later)."""
    if isinstance(value, dict):
        value = value.get("number") if value.get("set") else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def paths_from_job_json(doc: Any) -> JobOutputPaths | None:
    """The first job of a slurmrestd ``GET job/{id}`` answer (or ``squeue --json``) → its output paths: the
    raw ``standard_output``/``standard_error`` patterns filled in here. None without a job."""
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    if not isinstance(jobs, list) or not jobs or not isinstance(jobs[0], dict):
        return None
    j = jobs[0]
    job_id = _number(j.get("job_id"))
    if job_id is None:
        return None
    array_job = _number(j.get("array_job_id")) or None  # 0: not an array
    facts = JobPathFacts(job_id=job_id, array_job_id=array_job,
                         array_task_id=_number(j.get("array_task_id")) if array_job else None,
                         name=_none(_str(j.get("name"))), user=_none(_str(j.get("user_name"))),
                         batch_host=_none(_str(j.get("batch_host"))),
                         work_dir=_none(_str(j.get("current_working_directory"))))
    out, err = _none(_str(j.get("standard_output"))), _none(_str(j.get("standard_error")))
    stdout = expand_pattern(out, facts) if out else None
    stderr = expand_pattern(err, facts) if err else None
    display = f"{array_job}_{facts.array_task_id}" if array_job is not None and facts.array_task_id is not None \
        else str(job_id)
    return JobOutputPaths(job=display, stdout=clean_text(stdout) if stdout else None,
                          stderr=None if stderr is None or stderr == stdout else clean_text(stderr),
                          host=clean_text(facts.batch_host) if facts.batch_host else None,
                          work_dir=clean_text(facts.work_dir) if facts.work_dir else None)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
