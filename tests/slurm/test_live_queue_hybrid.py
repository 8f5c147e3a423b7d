"""The hybrid queue read on the real beds: the same live queue (running GPU job, array, pending,
held, hostile names) read as ``squeue --json`` and as the hybrid (``squeue`` text + ``squeue --json
-t RUNNING,...``) gives the same jobs — field by field for the running ones, all but the documented
JSON-only fields for the pending ones (hpctui.sources.slurm.parse.hybrid).

22.05 ignores ``-t`` with ``--json``: there the CLI backend's hybrid sees the whole document, says
so once and gives the JSON read's answer; the merge itself is checked on the real text and JSON of
the bed with the JSON filtered as 24.05.1+ filters it. On 24.11 (and 25.11) the real ``-t`` is used.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from slurm_helpers import run
from slurmlab import SlurmLab, scenario

from hpctui.model.jobs import SlurmJob
from hpctui.sources.slurm import parse
from hpctui.sources.slurm.cli import CliBackend
from hpctui.sources.slurm.parse.hybrid import JSON_ONLY_FIELDS, JSON_STATE_SET, merge_queue
from hpctui.sources.slurm.runner import Runner

pytestmark = [pytest.mark.live, pytest.mark.slurm, pytest.mark.slurm2511]

RUNNING_EVIL = "evil\x1fname"  # the separator in a running job's name: its text line is unreadable
PENDING_EVIL = "bad\nname"  # a newline in a held job's name: both halves of its text line


def _backend(lab: SlurmLab, mode: str) -> CliBackend:
    bin_dir = getattr(lab, "bin_dir", None)
    runner = Runner(timeout_s=15, slurm_conf=lab.slurm_conf, bin_dir=None if bin_dir is None else str(bin_dir))
    return CliBackend(runner, mode, hybrid_min_jobs=0)  # type: ignore[arg-type]


def _fields(job: SlurmJob) -> dict[str, Any]:
    return msgspec.structs.asdict(job)


def _differences(hybrid: tuple[SlurmJob, ...], full: tuple[SlurmJob, ...],
                 missing_ok: frozenset[int] = frozenset()) -> list[str]:
    """What breaks the promise: other ids, a JSON-state job not equal, a pending job differing in
    more than the JSON-only fields (or with one of them set)."""
    by_id = {j.job_id: j for j in full}
    got = {j.job_id: j for j in hybrid}
    out = [f"ids: only json {sorted(by_id.keys() - got.keys() - missing_ok)}, only hybrid {sorted(got.keys() - by_id.keys())}"
           ] if (by_id.keys() - missing_ok) != got.keys() else []
    for job_id, job in got.items():
        if job_id not in by_id:
            continue
        want, have = _fields(by_id[job_id]), _fields(job)
        if job.state in JSON_STATE_SET:
            if have != want:
                out.append(f"{job_id}: {[(k, have[k], want[k]) for k in want if have[k] != want[k]]}")
        else:
            bad = [k for k in want if have[k] != want[k] and k not in JSON_ONLY_FIELDS]
            bad += [k for k in JSON_ONLY_FIELDS if have[k] not in (None, {})]
            if bad:
                out.append(f"{job_id} (pending): {[(k, have[k], want[k]) for k in bad]}")
    return out


def _queue(lab: SlurmLab) -> dict[str, str]:
    ids = scenario(lab)
    ids["evil_running"] = lab.sbatch("-p", "cpu", "-n", "1", "-J", RUNNING_EVIL)
    ids["evil_pending"] = lab.sbatch("-p", "cpu", "-n", "1", "--hold", "-J", PENDING_EVIL)
    ids["pending_array"] = lab.sbatch("-p", "gpu", "--hold", "--array=0-5", "--gpus-per-node=1", "-J", "held-sweep")
    lab.wait_state(ids["evil_running"], "RUNNING")
    return ids


def test_hybrid_and_json_reads_of_the_same_live_queue_agree(lab: SlurmLab) -> None:
    ids = _queue(lab)
    json_cli, hybrid_cli = _backend(lab, "json"), _backend(lab, "hybrid")

    async def reads() -> tuple[tuple[SlurmJob, ...], tuple[SlurmJob, ...], tuple[SlurmJob, ...], list[str], list[str]]:
        before = await json_cli.read_jobs([])
        hybrid_cli.reset_calls()
        warnings: list[str] = []
        hybrid = await hybrid_cli.read_jobs(warnings)
        after = await json_cli.read_jobs([])
        return before, hybrid, after, warnings, list(hybrid_cli.calls)

    # the scheduler may move a pending job's reason between passes: retry until the queue held still
    for _ in range(5):
        before, hybrid, after, warnings, calls = run(reads())
        if before == after:
            break
    assert before == after, "the queue never held still for one read"
    evil_pending = int(ids["evil_pending"])
    names = {j.job_id: j.name for j in before}
    assert names[int(ids["evil_running"])] and names[evil_pending]  # the JSON read has both hostile jobs
    if lab.version == "22.05":  # --json ignores -t: the whole document came back, used as is
        assert any("ignores -t" in w for w in warnings), warnings
        assert hybrid == before
        assert hybrid_cli.json_filters is False
        assert run(hybrid_cli.read_jobs([])) == before and hybrid_cli.calls[-1] == "squeue --json"
    else:
        assert calls[:2] == [f"squeue -h -o {parse.SQUEUE_FORMAT}", "squeue --json -t " + ",".join(
            ("RUNNING", "COMPLETING", "SUSPENDED", "CONFIGURING", "STAGE_OUT", "SIGNALING", "RESIZING", "STOPPED"))]
        assert hybrid_cli.json_filters is True
        assert any("dropped" in w for w in warnings), warnings  # the newline-named pending job
        assert not _differences(hybrid, before, frozenset({evil_pending})), _differences(
            hybrid, before, frozenset({evil_pending}))
        by_id = {j.job_id: j for j in hybrid}
        assert by_id[int(ids["evil_running"])] == next(j for j in before if j.job_id == int(ids["evil_running"]))
        gpu = by_id[int(ids["gpu"])]
        assert gpu.gpus_alloc == {"gpu01": "0-1"}  # what the heatmap maps GPUs to jobs with
        assert evil_pending not in by_id


def test_merge_of_the_beds_own_text_and_json(lab: SlurmLab) -> None:
    """The merge on this bed's real outputs, the JSON filtered to JSON_STATES as 24.05.1+ does it:
    the text form and the JSON agree on every field the text carries (22.05 included)."""
    evil = frozenset({int(_queue(lab)["evil_pending"])})
    cli = _backend(lab, "json")
    for _ in range(5):
        res = lab.run("squeue", "-h", "-o", parse.SQUEUE_FORMAT)
        dropped: list[str] = []
        text_jobs = parse.parse_squeue_text(res.stdout, on_invalid=dropped.append)
        full = run(cli.read_jobs([]))
        subset = tuple(j for j in full if j.state in JSON_STATE_SET)
        jobs, whole = merge_queue(text_jobs, subset)
        if not whole and not _differences(jobs, full, evil):
            break
    assert not whole
    assert len(dropped) == 3  # the \x1f line, both halves of the \n line
    assert not _differences(jobs, full, evil), _differences(jobs, full, evil)
    pending_array = [j for j in jobs if j.name == "held-sweep"]
    assert pending_array and all(j.array_job_id is not None for j in pending_array)


def test_job_detail_reads_the_json_only_fields_of_a_pending_job_on_demand(lab: SlurmLab) -> None:
    """After a hybrid read (24.11+: a real one) the outlook of a pending job carries the job read whole."""
    from slurm_helpers import source

    from hpctui.ui.screens.job_detail import filled

    ids = _queue(lab)

    async def go() -> tuple[SlurmJob | None, SlurmJob | None]:
        src = source(lab, "cli", queue_read="hybrid")
        try:
            result = await src.collect()
            held = next(j for j in result.slurm_jobs or () if j.job_id == int(ids["held"]))
            outlook = await src.job_outlook(ids["held"])
            return held, outlook.job if src.cli.last_read_hybrid else held
        finally:
            await src.close()

    held, whole = run(go())
    assert held is not None and whole is not None
    if lab.version != "22.05":  # 22.05's hybrid read is the JSON read: nothing lacking
        assert held.batch is None and held.restart_count is None
        assert filled(held, whole).batch is True and filled(held, whole).restart_count == 0


def _rpcs(lab: SlurmLab) -> tuple[int, dict[str, int]]:
    """slurmctld's count of our user's RPCs, and its counts by message type (sdiag; its own RPC included)."""
    import os
    import pwd

    from hpctui.sources.slurm.parse.diag import parse_sdiag_text

    stats = parse_sdiag_text(lab.run("sdiag").stdout).stats
    assert stats is not None and stats.rpc_by_user
    me = pwd.getpwuid(os.geteuid()).pw_name
    return (next((r.count for r in stats.rpc_by_user if r.name == me), 0),
            {r.name: r.count for r in stats.rpc_by_type})


def test_rpcs_of_one_queue_read_json_vs_hybrid(lab: SlurmLab) -> None:
    """What one queue read costs slurmctld (sdiag before/after, less the second sdiag's own RPC):
    printed for the report; the hybrid costs its extra squeue's RPCs, never per job."""
    import sys

    _queue(lab)
    counts: dict[str, tuple[int, dict[str, int]]] = {}
    for mode in ("json", "hybrid", "json", "hybrid"):  # the second of each: warm (no first-read probes)
        cli = _backend(lab, mode)
        run(cli.read_jobs([]))  # the first read of a backend (22.05's hybrid falls back on it)
        before, types0 = _rpcs(lab)
        run(cli.read_jobs([]))
        after, types1 = _rpcs(lab)
        diff = {k: v - types0.get(k, 0) for k, v in types1.items() if v != types0.get(k, 0)}
        counts[mode] = (after - before - 1, diff)
    for mode, (n, by_type) in counts.items():
        print(f"\n[queue rpcs] slurm {lab.version} {mode}: {n} RPCs per read {sorted(by_type.items())}", file=sys.stderr)
    json_n, hybrid_n = counts["json"][0], counts["hybrid"][0]
    assert 1 <= json_n <= 4 and hybrid_n <= 3 * json_n + 2, counts
    if lab.version != "22.05":  # a steady queue: the hybrid reads slurmctld's job table once a refresh, like JSON
        assert counts["hybrid"][1].get("REQUEST_JOB_INFO") == counts["json"][1].get("REQUEST_JOB_INFO") == 1, counts
