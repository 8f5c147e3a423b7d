"""The hybrid queue read (hpctui.sources.slurm.parse.hybrid): squeue text for the whole queue, JSON
for the jobs holding nodes, merged by job id — checked against the JSON read of the same queue on
real 22.05 captures (``cli_squeue_parsable.txt`` and ``cli_squeue.json`` of one scenario), for the
races between the two calls, hostile names, and through the CLI backend with a fake ``squeue``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from hpctui.model.jobs import SlurmJob
from hpctui.sources.slurm import SlurmSettings, build_slurm_source, parse
from hpctui.sources.slurm.cli import CliBackend
from hpctui.sources.slurm.parse.hybrid import JSON_ONLY_FIELDS, JSON_STATE_SET, JSON_STATES, merge_queue
from hpctui.sources.slurm.parse.jobs import job_display_state
from hpctui.sources.slurm.runner import Runner

FIX = Path(__file__).parent / "fixtures" / "slurm"


def _text(name_of: dict[str, str] | None = None, extra: str = "") -> str:
    """The captured ``squeue -t all -o SQUEUE_FORMAT`` (captured with ``|``), with SEP, names replaced."""
    lines = []
    for line in (FIX / "cli_squeue_parsable.txt").read_text().splitlines():
        cols = line.split("|")
        cols[5] = (name_of or {}).get(cols[5], cols[5])
        lines.append(parse.SEP.join(cols))
    return "\n".join(lines) + "\n" + extra


def _doc() -> dict[str, Any]:
    return json.loads((FIX / "cli_squeue.json").read_text())


def _subset(doc: dict[str, Any]) -> dict[str, Any]:
    """What ``squeue --json -t JSON_STATES`` answers where it filters (23.02+): the JSON-state jobs."""
    out = dict(doc)
    out["jobs"] = [j for j in doc["jobs"] if job_display_state(j["job_state"]) in JSON_STATE_SET]
    return out


def _pretty(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, indent=2).encode()


def _fields(job: SlurmJob) -> dict[str, Any]:
    return msgspec.structs.asdict(job)


def assert_hybrid_equals_json(hybrid: tuple[SlurmJob, ...], full: tuple[SlurmJob, ...]) -> None:
    """Same jobs; a JSON-state job field by field; any other job but for the JSON-only fields."""
    by_id = {j.job_id: j for j in full}
    assert sorted(j.job_id for j in hybrid) == sorted(by_id)
    for job in hybrid:
        want = _fields(by_id[job.job_id])
        got = _fields(job)
        if job.state in JSON_STATE_SET:
            assert got == want, job.job_id
        else:
            differ = {k for k in want if got[k] != want[k]}
            assert differ <= set(JSON_ONLY_FIELDS), (job.job_id, {k: (got[k], want[k]) for k in differ})
            assert all(got[k] in (None, {}) for k in JSON_ONLY_FIELDS), job.job_id


def test_hybrid_of_real_captures_equals_the_json_read() -> None:
    full = parse.parse_jobs_json((FIX / "cli_squeue.json").read_bytes())
    text_jobs = parse.parse_squeue_text(_text())
    subset = parse.parse_jobs_json(_pretty(_subset(_doc())))
    assert {j.state for j in subset} == {"RUNNING"} and len(subset) == 8
    jobs, whole = merge_queue(text_jobs, subset)
    assert not whole
    assert_hybrid_equals_json(jobs, full)
    by_id = {j.job_id: j for j in jobs}
    assert by_id[1].gpus_alloc == {"gpu01": "0-1"} and by_id[2].gpus_alloc == {"gpu03": "0-3"}  # the heatmap's
    assert by_id[9].display_id == "9_[2-5%2]" and by_id[16].display_id == "9_0"  # the array, both ways
    # pending jobs: exactly the documented fields are missing (the capture has them all set in JSON)
    pending = {j.job_id: j for j in full if j.state == "PENDING"}
    assert pending and all(by_id[k].exit_code is None and by_id[k].batch is None for k in pending)
    assert by_id[5].restart_count is None and pending[5].restart_count == 1  # the requeued one
    assert by_id[6].gpus_requested == pending[6].gpus_requested == 16  # per node: in the text too


def test_where_json_ignores_t_the_json_is_the_answer() -> None:
    """22.05: ``squeue --json -t R`` lists every job: the JSON read's answer, said by ``whole``."""
    full = parse.parse_jobs_json((FIX / "cli_squeue.json").read_bytes())
    jobs, whole = merge_queue(parse.parse_squeue_text(_text()), full)
    assert whole and jobs == full
    running = tuple(j for j in full if j.state == "RUNNING")
    assert merge_queue([], running, unfiltered=True) == (running, True)  # a finished job seen: the same


def test_races_between_the_two_calls() -> None:
    text_jobs = {j.job_id: j for j in parse.parse_squeue_text(_text())}
    subset = {j.job_id: j for j in parse.parse_jobs_json(_pretty(_subset(_doc())))}
    del subset[4]  # running in the text, gone from the later JSON: it ended in between
    started = msgspec.structs.replace(subset[1], job_id=99, name="new")  # submitted + started in between
    now_running = msgspec.structs.replace(subset[1], job_id=7, name="held-job")  # pending in the text
    jobs, whole = merge_queue(text_jobs.values(), [*subset.values(), started, now_running])
    assert not whole
    by_id = {j.job_id: j for j in jobs}
    assert 4 not in by_id and by_id[99] is started and by_id[7] is now_running
    assert [j.job_id for j in jobs].count(7) == 1 and len(jobs) == len(text_jobs)  # -4, +99
    assert jobs[-1] is started  # the text's order, the JSON-only jobs after it


def test_hostile_names_cost_their_own_record() -> None:
    """A \\x1f or newline in a name breaks its text line only. A running such job is still there from
    its JSON record; a pending one is dropped and reported (the JSON read would have it)."""
    hostile = {"train-llm": "a\x1fb", "on-cpu01": "x\ny", "held-job": "p\x1fq"}
    dropped: list[str] = []
    text_jobs = parse.parse_squeue_text(_text(hostile), on_invalid=dropped.append)
    assert len(dropped) == 4  # train-llm, both halves of on-cpu01, held-job
    doc = _doc()
    for j in doc["jobs"]:
        j["name"] = hostile.get(j["name"], j["name"])
    full = parse.parse_jobs_json(_pretty(doc))
    jobs, _ = merge_queue(text_jobs, parse.parse_jobs_json(_pretty(_subset(doc))))
    by_id = {j.job_id: j for j in jobs}
    assert by_id[1] == next(j for j in full if j.job_id == 1)  # running, from its JSON record
    assert by_id[4] == next(j for j in full if j.job_id == 4)
    assert 7 not in by_id and sorted(by_id) == sorted(j.job_id for j in full if j.job_id != 7)


def test_a_forged_line_cannot_fake_a_running_job_nor_shadow_a_real_one() -> None:
    """A name with a newline can shape a line that reads as a record of its own: a running one the
    JSON has not is left out; a job id seen twice is dropped (both records) unless the JSON has it."""
    sep = parse.SEP
    fake_running = sep.join(["777", "777", "777", "N/A", "gpu", "fake", "alice", "ml", "high", "RUNNING", "None",
                             "0:04", "1:00:00", "1", "8", "gpu01", "gres:gpu:h100:8", "2026-11-29T17:12:33",
                             "2026-11-29T17:12:31", "1"])
    shadow_pending = sep.join(["8", "8", "8", "N/A", "cpu", "shadow", "alice", "ml", "normal", "PENDING", "None",
                               "0:00", "1:00:00", "1", "1", "", "N/A", "N/A", "2026-11-29T17:12:33", "1"])
    shadow_running = shadow_pending.replace("shadow", "shadow1").replace(f"{sep}8{sep}", f"{sep}1{sep}", 1)
    shadow_running = sep.join(["1", "1", "1", *shadow_running.split(sep)[3:]])
    forged = "\n".join([fake_running, shadow_pending, shadow_running]) + "\n"
    text_jobs = parse.parse_squeue_text(_text(extra=forged))
    assert {777, 8, 1} <= {j.job_id for j in text_jobs}
    dropped: list[str] = []
    jobs, _ = merge_queue(text_jobs, parse.parse_jobs_json(_pretty(_subset(_doc()))), dropped.append)
    by_id = {j.job_id: j for j in jobs}
    assert 777 not in by_id and 8 not in by_id  # the fake running job; both records of job 8
    assert by_id[1].name == "train-llm"  # the JSON record wins over a shadow of a running job
    assert len(jobs) == len(by_id) and len(dropped) == 2 and "seen twice" in dropped[0]


# -- through the CLI backend, with a fake squeue on PATH ---------------------------------------------
def _bin(tmp_path: Path, *, filters: bool, subset: dict[str, Any] | None = None,
         by_id: dict[str, Any] | None = None) -> Path:
    """A fake ``squeue``: text for ``-o``; for ``--json -t ...`` the JSON-state jobs (or ``subset``)
    where it ``filters`` (24.05.1+), the whole document otherwise (22.05); ``by_id`` for ``--json -j``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "full.json").write_bytes(_pretty(_doc()))
    (tmp_path / "subset.json").write_bytes(_pretty(subset or _subset(_doc())) if filters else _pretty(_doc()))
    (tmp_path / "by_id.json").write_bytes(_pretty(by_id or {**_doc(), "jobs": []}))
    (tmp_path / "queue.txt").write_text(_text())
    script = f"""#!/bin/sh
echo "$*" >> "{tmp_path}/calls.log"
case "$*" in
  "--json -t "*) cat "{tmp_path}/subset.json" ;;
  "--json -j "*) cat "{tmp_path}/by_id.json" ;;
  "--json") cat "{tmp_path}/full.json" ;;
  *) cat "{tmp_path}/queue.txt" ;;
esac
"""
    path = bin_dir / "squeue"
    path.write_text(script)
    path.chmod(0o755)
    return bin_dir


def _read(cli: CliBackend, times: int) -> list[tuple[tuple[SlurmJob, ...], list[str], list[str]]]:
    async def go() -> list[tuple[tuple[SlurmJob, ...], list[str], list[str]]]:
        out = []
        for _ in range(times):
            cli.reset_calls()
            warnings: list[str] = []
            jobs = await cli.read_jobs(warnings)
            out.append((jobs, list(cli.calls), warnings))
        return out

    return asyncio.run(go())


def test_cli_auto_reads_a_big_queue_hybrid_and_a_small_one_as_json(tmp_path: Path) -> None:
    bin_dir = _bin(tmp_path, filters=True)
    full = parse.parse_jobs_json((FIX / "cli_squeue.json").read_bytes())
    cli = CliBackend(Runner(timeout_s=10, bin_dir=str(bin_dir)), "auto", hybrid_min_jobs=10)
    reads = _read(cli, 3)
    (first, calls1, w1), (second, calls2, _), (third, calls3, _) = reads
    assert calls1 == [f"squeue -h -o {parse.SQUEUE_FORMAT}", f"squeue --json -t {','.join(JSON_STATES)}"]
    assert not w1
    assert_hybrid_equals_json(first, full)
    # 14 jobs > 10: hybrid again; the same jobs hold nodes in the same states: the last JSON records, no JSON call
    assert second == first and calls2 == calls1[:1]
    assert all(a is b for a, b in zip(first, second, strict=True) if a.state == "RUNNING")
    cli.hybrid_min_jobs = 100  # a small queue: the JSON read
    assert _read(cli, 1)[0][1] == ["squeue --json"]
    assert calls3 == calls1[:1] and third == first


def test_cli_steady_hybrid_asks_the_json_when_a_job_holding_nodes_changes_and_every_few_reads(
        tmp_path: Path) -> None:
    """A steady queue: the text only (one job-table read of slurmctld a refresh, like the JSON read); a job
    that starts, ends or changes state in the text brings the JSON call back, as does every
    HYBRID_JSON_EVERY-th read (what may move under an unchanged state is that many reads old at most)."""
    from hpctui.sources.slurm.parse.hybrid import HYBRID_JSON_EVERY

    bin_dir = _bin(tmp_path, filters=True)
    queue = tmp_path / "queue.txt"  # one more pending job whose name holds the separator: dropped every read
    pending = next(line for line in queue.read_text().splitlines() if "\x1fPENDING\x1f" in line).split("\x1f")
    pending[0] = pending[1] = "999"
    pending[5] = "a\x1fb"
    queue.write_text(queue.read_text() + "\x1f".join(pending) + "\n")
    cli = CliBackend(Runner(timeout_s=10, bin_dir=str(bin_dir)), "hybrid")
    reads = _read(cli, HYBRID_JSON_EVERY + 1)
    assert any("dropped" in w for w in reads[0][2]), reads[0][2]
    with_json = [i for i, (_, calls, _) in enumerate(reads) if any("--json" in c for c in calls)]
    assert with_json == [0, HYBRID_JSON_EVERY], [r[1] for r in reads]
    assert all(jobs == reads[0][0] for jobs, _, _ in reads)
    assert all(w == reads[0][2] for _, _, w in reads), "a steady read reports what the text dropped, as the others"
    # job 1 (running in the JSON) is suspended in the text: the JSON is asked
    lines = queue.read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if line.split("\x1f")[1] == "1")
    lines[i] = lines[i].replace("\x1fRUNNING\x1f", "\x1fSUSPENDED\x1f", 1)
    assert "SUSPENDED" in lines[i]
    queue.write_text("\n".join(lines) + "\n")
    ((_, calls, _),) = _read(cli, 1)
    assert any("--json" in c for c in calls), calls


def test_cli_json_and_hybrid_modes(tmp_path: Path) -> None:
    bin_dir = _bin(tmp_path, filters=True)
    json_cli = CliBackend(Runner(timeout_s=10, bin_dir=str(bin_dir)), "json")
    hybrid = CliBackend(Runner(timeout_s=10, bin_dir=str(bin_dir)), "hybrid", hybrid_min_jobs=10**6)
    (jobs_j, calls_j, _), = _read(json_cli, 1)
    (jobs_h, calls_h, _), = _read(hybrid, 1)
    assert calls_j == ["squeue --json"] and len(calls_h) == 2
    assert_hybrid_equals_json(jobs_h, jobs_j)


def test_cli_where_json_ignores_t_gives_the_json_read_and_stops_the_hybrid(tmp_path: Path) -> None:
    bin_dir = _bin(tmp_path, filters=False)
    full = parse.parse_jobs_json((FIX / "cli_squeue.json").read_bytes())
    cli = CliBackend(Runner(timeout_s=10, bin_dir=str(bin_dir)), "auto", hybrid_min_jobs=0)
    (first, calls1, w1), (second, calls2, w2) = _read(cli, 2)
    assert len(calls1) == 2 and first == full and "ignores -t" in w1[0]
    assert calls2 == ["squeue --json"] and second == full and not w2  # said once
    assert all(a is b for a, b in zip(first, second, strict=True))  # the whole document's reuse kept


def test_cli_hybrid_failure_falls_back_to_json(tmp_path: Path) -> None:
    bin_dir = _bin(tmp_path, filters=True)
    (bin_dir / "squeue").write_text((bin_dir / "squeue").read_text().replace(
        '"--json -t "*) cat', '"--json -t "*) echo "squeue: error: Invalid job state specified: SO" >&2; exit 1; cat'))
    cli = CliBackend(Runner(timeout_s=10, bin_dir=str(bin_dir)), "hybrid")
    (jobs, calls, warnings), (_, calls2, _) = _read(cli, 2)
    assert calls[-1] == "squeue --json" and "Invalid job state" in warnings[0]
    assert jobs == parse.parse_jobs_json((FIX / "cli_squeue.json").read_bytes())
    assert calls2 == ["squeue --json"]


@pytest.mark.parametrize("still_running", [True, False])
def test_cli_asks_again_by_id_for_a_running_job_the_json_lacks(tmp_path: Path, still_running: bool) -> None:
    """Job 4 runs in the text, not in ``--json -t ...``: asked with ``--json -j 4``. There (it runs with a
    state flag -t does not match): kept, from that JSON; not there (it ended in between): left out."""
    doc = _doc()
    subset = _subset(doc)
    subset["jobs"] = [j for j in subset["jobs"] if j["job_id"] != 4]
    by_id = {**doc, "jobs": [j for j in doc["jobs"] if j["job_id"] == 4] if still_running else []}
    bin_dir = _bin(tmp_path, filters=True, subset=subset, by_id=by_id)
    full = parse.parse_jobs_json((FIX / "cli_squeue.json").read_bytes())
    cli = CliBackend(Runner(timeout_s=10, bin_dir=str(bin_dir)), "hybrid")
    ((jobs, calls, warnings),) = _read(cli, 1)
    assert calls[-1] == "squeue --json -j 4" and len(calls) == 3 and not warnings
    if still_running:
        assert_hybrid_equals_json(jobs, full)
    else:
        assert sorted(j.job_id for j in jobs) == sorted(j.job_id for j in full if j.job_id != 4)


def test_queue_read_setting() -> None:
    src = build_slurm_source(SlurmSettings(backend="cli", queue_read="hybrid", hybrid_min_jobs=7))
    assert (src.cli.queue_read, src.cli.hybrid_min_jobs) == ("hybrid", 7)
    assert build_slurm_source(SlurmSettings()).cli.queue_read == "auto"
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"queue_read": "text"}, SlurmSettings)


def test_fast_text_reader_gives_what_the_reference_gives() -> None:
    """parse_squeue_text's per-parse caches and inline bounds (_SqueueText) against _squeue_job +
    checked, on the capture and on records with odd values (sentinels, padding, huge numbers)."""
    from hpctui.model.validate import SLURM_JOB_BOUNDS, Drops, checked
    from hpctui.sources.slurm.parse.text import SQUEUE_FIELDS, _rows, _squeue_job

    sep = parse.SEP
    base = _text().splitlines()[3].split(sep)  # job 3: RUNNING on cpu[02-03]
    odd = []
    for col, value in ((1, " 3 "), (19, "65534"), (19, "4294967295"), (19, "9" * 30), (13, "99999999999"),
                       (17, "N/A"), (18, "2026-11-29 17:12:33"), (18, "garbage"), (12, "UNLIMITED"),
                       (12, "1-02:03:04"), (16, "gres/gpu:7"), (2, "17"), (3, "4-9%2"), (3, "7"),
                       (5, "(null)"), (10, "None"), (17, "99999-01-01T00:00:00"), (1, "65534")):
        cols = list(base)
        cols[col] = value
        odd.append(sep.join(cols))
    for text_in in (_text(), _text({"train-llm": "a\x1bb"}), "\n".join(odd) + "\n"):
        ref_drops, drops = Drops(), Drops()
        ref_errors: list[str] = []
        ref = []
        for cols in _rows(text_in, sep, len(SQUEUE_FIELDS), "squeue text", ref_errors.append):
            try:
                job = _squeue_job(cols, False)
            except parse.SlurmParseError as exc:
                ref_errors.append(str(exc))
                continue
            if job is not None:
                ref.append(checked(job, SLURM_JOB_BOUNDS, ref_drops, f"job {job.job_id}"))
        errors: list[str] = []
        assert parse.parse_squeue_text(text_in, on_invalid=errors.append, drops=drops) == tuple(ref)
        assert errors == ref_errors and drops.warnings() == ref_drops.warnings()


def test_job_detail_reads_what_a_hybrid_pending_record_lacks_on_demand() -> None:
    """After a hybrid read the outlook of a pending job also reads ``scontrol -o show job``; the detail
    screen fills the JSON-only fields from it (job 5 of the 22.05 capture: requeued once)."""
    from hpctui.sources.slurm.outlook import query_outlook
    from hpctui.ui.screens.job_detail import filled
    from tests.test_slurm_scheduler import ScriptedRunner

    line = next(x for x in (FIX / "cli_scontrol_show_job_detail_oneliner.txt").read_text().splitlines()
                if x.startswith("JobId=5 "))
    runner = ScriptedRunner({("sprio",): (0, (FIX / "cli_sprio_j_parsable.txt").read_text(), ""),
                             ("squeue",): (0, "", ""), ("scontrol",): (0, line + "\n", "")})
    outlook = asyncio.run(query_outlook(runner, "5", with_job=True))  # type: ignore[arg-type]
    assert runner.argvs[-1] == ("scontrol", "-o", "show", "job", "5") and outlook.job is not None
    text_job = next(j for j in parse.parse_squeue_text(_text()) if j.job_id == 5)
    json_job = next(j for j in parse.parse_jobs_json((FIX / "cli_squeue.json").read_bytes()) if j.job_id == 5)
    assert text_job.restart_count is None and text_job.batch is None
    whole = filled(text_job, outlook.job)
    assert (whole.restart_count, whole.batch, whole.requeueable, whole.exit_code) == (
        json_job.restart_count, json_job.batch, json_job.requeueable, json_job.exit_code) == (1, True, True, 0)
    assert filled(json_job, outlook.job) is json_job  # nothing lacking: the same object
    assert asyncio.run(query_outlook(runner, "5")).job is None  # a JSON read: two commands, no job


def test_text_reuse_gives_the_same_objects_and_reports_faults_again() -> None:
    from hpctui.model.validate import Drops
    from hpctui.sources.slurm.parse.text import TextReuse

    reuse = TextReuse()
    sep = parse.SEP
    absurd = _text().splitlines()[3].split(sep)
    absurd[1] = absurd[2] = "991"
    absurd[13] = "99999999999"  # an implausible node count: None, reported every read
    text_in = _text({"held-job": "a\x1fb"}) + sep.join(absurd) + "\n"
    reads = []
    for _ in range(2):
        errors: list[str] = []
        drops = Drops()
        reads.append((parse.parse_squeue_text(text_in, on_invalid=errors.append, drops=drops, reuse=reuse), errors,
                      drops.values))
    (first, e1, d1), (second, e2, d2) = reads
    assert first == second and len(e1) == len(e2) == 1 and d1 == d2 == 1
    assert all(a is b for a, b in zip(first, second, strict=True) if a.job_id != 991)
    assert reuse.hits == len(_text().splitlines()) - 1  # every line but the broken and the absurd one
    assert parse.parse_squeue_text(_text(), reuse=reuse) == parse.parse_squeue_text(_text())


def test_cli_auto_first_read_of_a_small_queue_is_the_json_read(tmp_path: Path) -> None:
    """auto's first read asks the text; a queue of no more than hybrid_min_jobs lines is then read as JSON (every
    field, hostile-named pending jobs kept), and the next reads are JSON reads."""
    bin_dir = _bin(tmp_path, filters=True)
    full = parse.parse_jobs_json((FIX / "cli_squeue.json").read_bytes())
    cli = CliBackend(Runner(timeout_s=10, bin_dir=str(bin_dir)), "auto", hybrid_min_jobs=100)
    (first, calls1, w1), (second, calls2, _) = _read(cli, 2)
    assert calls1 == [f"squeue -h -o {parse.SQUEUE_FORMAT}", "squeue --json"] and not w1
    assert first == full and second == full and calls2 == ["squeue --json"]
    assert not cli.last_read_hybrid
