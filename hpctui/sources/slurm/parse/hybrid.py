"""The hybrid queue read: the whole queue from ``squeue`` text, JSON only for the jobs that hold nodes.

A 100k-job ``squeue --json`` is 370 MB (22.05's shape) to 815 MB (24.11's) and costs 2-4 s of CPU
to read typed; the same queue as ``squeue -h -o SQUEUE_FORMAT`` is ~15 MB and ~0.6 s
(:func:`parse_squeue_text`; bench/results/squeue-first-read.md). The text form carries every :class:`~hpctui.model.jobs.SlurmJob` field but :data:`JSON_ONLY_FIELDS`.
Of those, only the GPU indices per node (``gres_detail``, which drive the GPU → job mapping of the
heatmap, the node panel and the idle-GPU findings) belong to jobs that hold nodes; so the hybrid
asks ``squeue --json -t`` :data:`JSON_STATES` (the live states a job can hold nodes in) and merges
by job id (:func:`merge_queue`).

What a job read this way carries, compared with the JSON read of the same queue:

* a job in :data:`JSON_STATES` (running, completing, suspended, ...): its JSON record, every field
  equal to the JSON read's;
* any other live job (PENDING, REQUEUED, REQUEUE_HOLD): the text record. Its fields are the JSON
  read's except :data:`JSON_ONLY_FIELDS`, which are left unset (None, ``{}``), and
  ``gpus_requested`` where the request was not per node (``--gpus``, ``--gpus-per-task``,
  ``--gpus-per-socket``: the text form has only ``%b``, tres_per_node; the JSON read counts
  ``tres_req_str``): None there. A pending job holds no GPUs, so ``gpus_alloc`` is ``{}`` either
  way; ``end_time`` is only set for a pending job that was requeued (its last run's end). The job
  detail reads them on demand (``scontrol -o show job ID`` with the job's outlook, after a hybrid
  read: hpctui.sources.slurm.outlook).

The set of jobs is the JSON read's: ``squeue --json`` honours squeue's filters from Slurm 24.05.1
on (SchedMD commit ff14834c, "Fix squeue --json not using filtering options"), so that without
``-t`` both forms pass squeue's default state filter (pending, running, stage-out, suspended,
completing) and then the same :data:`~hpctui.sources.slurm.parse.jobs.LIVE_JOB_STATES`; the text
is asked without ``-t`` like the text fallback. One difference is squeue's own: text output joins
the pending tasks of an array that were split into separate records (modified, or requeued) back
into one ``1234_[4-9]`` record; the JSON lists them apart.

The two calls are not one snapshot: the text is read first, then the JSON. :func:`merge_queue`
settles what changed in between so that no live job is lost and none is shown twice: a job in
both reads is taken from the JSON (the later read); a job only in the JSON (it started, or was
submitted and started, after the text was read) is added; a job the text shows in a JSON state
that the JSON lacks (:func:`unmatched`) is asked again by id (``squeue --json -j IDS``, the
caller's third call, only then): it is there if it runs with a state flag ``-t`` does not match
(``squeue -t RUNNING`` compares the whole state word, base and flags), and it is left out if
not: it ended in between, as the JSON read would show.

Hostile names: :func:`parse_squeue_text` drops a text line whose name holds the separator or a newline (one bad
record costs one record). Such a job in a JSON state is still in the hybrid, from its JSON record;
a pending one is not (the JSON read would keep it: the only other difference, reported as a
dropped record). A name with a newline can also shape a line that reads as a whole record of its
own; a forged record in a JSON state is left out (the JSON has no such job), and a job id seen twice
in the text is dropped with both its records and reported, unless the JSON has that job. A forged
PENDING record with a new id cannot be told from a real one in text: the text fallback has the
same limit, and the JSON read has none.

Before 24.05.1 (22.05 here: testbed/SLURM.md §7) ``squeue --json`` ignores ``-t`` and lists every
job. That is seen in the answer (a PENDING or a finished job in it, :func:`filters_ignored`): the
JSON is then the whole queue and is used as is — the JSON read's answer — and the caller stops
paying for the text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from hpctui.model.jobs import SlurmJob
from hpctui.sources.slurm.parse.jobs import LIVE_JOB_STATES

JSON_STATES = ("RUNNING", "COMPLETING", "SUSPENDED", "CONFIGURING", "STAGE_OUT", "SIGNALING", "RESIZING", "STOPPED")
"""The live states a job can hold nodes (and GPU indices) in: what the hybrid asks ``squeue --json -t``
for. ``squeue -t`` matches a flag state (COMPLETING, CONFIGURING, STAGE_OUT, ...) by its flag."""
JSON_STATE_SET = frozenset(JSON_STATES)
TEXT_STATES = LIVE_JOB_STATES - JSON_STATE_SET
"""The live states taken from the text alone: PENDING, REQUEUED, REQUEUE_HOLD."""

JSON_ONLY_FIELDS = ("gpus_alloc", "end_time", "exit_code", "exit_signal", "restart_count", "batch", "requeueable")
"""The :class:`SlurmJob` fields ``squeue -o SQUEUE_FORMAT`` does not carry (unset in a text record)."""

JSON_STATES_ARG = ",".join(JSON_STATES)
HYBRID_TEXT_ARGV = ("squeue", "-h", "-o")  # + SQUEUE_FORMAT: the text fallback's call
RECHECK_MAX = 256  # unmatched jobs asked again by id in one call; past it (a mass ending) left out
HYBRID_JSON_ARGV = ("squeue", "--json", "-t", JSON_STATES_ARG)
HYBRID_JSON_EVERY = 6
"""While the jobs holding nodes stay the same (ids and states, :func:`holding_nodes`), the JSON call is made on one
hybrid read in this many; the others reuse its records (CliBackend._steady_hybrid): a steady queue then costs
slurmctld one job-table read a refresh, like the JSON read."""


def holding_nodes(jobs: Iterable[SlurmJob]) -> frozenset[tuple[int, str]]:
    """(job id, state) of the jobs in :data:`JSON_STATES`: what decides whether the last JSON records still hold."""
    states = JSON_STATE_SET
    return frozenset((job.job_id, job.state) for job in jobs if job.state in states)


def filters_ignored(json_jobs: Iterable[SlurmJob], finished_seen: bool = False) -> bool:
    """Whether ``squeue --json -t JSON_STATES`` answered with the whole queue (Slurm before 24.05.1):
    a PENDING job in it, or a finished one (``finished_seen``, dropped by the parser)."""
    return finished_seen or any(job.state == "PENDING" for job in json_jobs)


def unmatched(text_jobs: Sequence[SlurmJob], json_jobs: Iterable[SlurmJob]) -> list[int]:
    """The job ids the text shows (once) in a JSON state that the JSON of those states lacks."""
    have = {job.job_id for job in json_jobs}
    json_states = JSON_STATE_SET
    wanted = [job.job_id for job in text_jobs if job.state in json_states and job.job_id not in have]
    if not wanted:
        return []
    ids = [job.job_id for job in text_jobs]
    if len(set(ids)) == len(ids):
        return wanted
    count: dict[int, int] = {}
    for job_id in ids:
        count[job_id] = count.get(job_id, 0) + 1
    return [job_id for job_id in wanted if count[job_id] == 1]


def merge_queue(text_jobs: Iterable[SlurmJob], json_jobs: Iterable[SlurmJob],
                on_invalid: Callable[[str], None] | None = None, *,
                unfiltered: bool = False) -> tuple[tuple[SlurmJob, ...], bool]:
    """The hybrid's jobs from the text read of the whole queue and the JSON reads (made after it)
    of its :data:`JSON_STATES` jobs and of the :func:`unmatched` ones, by the rules of the module
    docstring; and ``whole``: True when
    the JSON held a PENDING job or ``unfiltered`` (the caller saw a finished job in it), i.e. ``-t``
    was ignored and the JSON is the whole queue — then the JSON jobs are returned unchanged (the
    JSON read's answer, in its order).

    Otherwise the text order is kept, each job replaced by its JSON record where there is one, the
    jobs only the JSON has appended in its order. A job id the text holds twice (a forged line) is
    reported to ``on_invalid`` once and kept only from the JSON.
    """
    json_list = list(json_jobs)
    if unfiltered or filters_ignored(json_list):
        return tuple(json_list), True
    by_id = {job.job_id: job for job in json_list}
    text_list = list(text_jobs)
    ids = [job.job_id for job in text_list]
    json_states = JSON_STATE_SET
    if len(set(ids)) == len(ids):  # the usual case: each text job once
        json_ids = by_id.keys() & set(ids) if by_id else set()
        replaced = [by_id.pop(job.job_id, job) for job in text_list] if json_ids else text_list
        # a text record in a JSON state that no JSON record replaced: it ended in between
        kept = [job for job in replaced if job.state not in json_states or job.job_id in json_ids]
        kept.extend(by_id.values())  # only in the JSON: started (or submitted and started) since
        return tuple(kept), False
    seen = set(ids)
    twice = _twice(ids)
    out: list[SlurmJob] = []
    append = out.append
    for job in text_list:
        job_id = job.job_id
        fresh = by_id.pop(job_id, None)
        if fresh is not None:
            append(fresh)
        elif job_id in twice:
            if on_invalid is not None and job_id in seen:
                on_invalid(f"squeue text: job id {job_id} seen twice (a name holding a newline?): left out")
            seen.discard(job_id)
        elif job.state not in json_states:
            append(job)
        # else: running in the text, gone from the later JSON reads: it ended in between
    out.extend(by_id.values())
    return tuple(out), False


def _twice(ids: list[int]) -> set[int]:
    count: dict[int, int] = {}
    for job_id in ids:
        count[job_id] = count.get(job_id, 0) + 1
    return {job_id for job_id, k in count.items() if k > 1}


__all__ = ["HYBRID_JSON_EVERY", "JSON_ONLY_FIELDS", "JSON_STATES", "TEXT_STATES", "filters_ignored", "holding_nodes",
           "merge_queue", "unmatched"]
