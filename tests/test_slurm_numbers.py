"""Hostile numbers from Slurm (issue #19 item 4): a 300-digit CPU count, an exabyte of memory or a
negative count in sinfo/scontrol/REST node records, and in squeue/REST job records, is N/A with one
warning naming the field and the node or job; the record and its other values stay. Node names keep
Slurm's own rule (tests in test_slurm_json_tables)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from hpctui.model.validate import Drops
from hpctui.sources.slurm import SlurmSettings, build_slurm_source
from hpctui.sources.slurm.backend import Dropped
from hpctui.sources.slurm.parse import (
    LIVE_JOB_STATES,
    parse_jobs_json,
    parse_nodes_json,
    parse_scontrol_jobs,
    parse_scontrol_nodes,
    parse_squeue_text,
)
from hpctui.sources.slurm.parse.jobs_stream import JobReuse, parse_jobs_stream
from hpctui.sources.slurm.parse.text import SEP, SQUEUE_FIELDS

HUGE = int("1" + "0" * 300)


def nodes_doc(*nodes: dict[str, object]) -> bytes:
    meta = {"plugin": {"data_parser": "data_parser/v0.0.40"}}
    return json.dumps({"meta": meta, "errors": [], "nodes": list(nodes)}).encode()


def test_json_node_counts_beyond_reason_are_na_with_one_warning() -> None:
    n = {"set": True, "infinite": False, "number": 0}
    data = nodes_doc(
        {"name": "gpu01", "state": ["IDLE"], "cpus": HUGE, "alloc_cpus": 8, "real_memory": 2**50,
         "alloc_memory": {**n, "number": 1024}, "gres": "gpu:h100:8"},
        {"name": "gpu02", "state": ["IDLE"], "cpus": 64, "alloc_cpus": -1, "real_memory": 512000},
    )
    dropped = Dropped("node")
    out = parse_nodes_json(data, on_invalid=dropped, drops=dropped.values)
    a, b = out["gpu01"], out["gpu02"]
    assert (a.cpus_total, a.memory_total_mb) == (None, None)
    assert (a.cpus_alloc, a.memory_alloc_mb, a.gpus_total) == (8, 1024, 8)  # the rest of the node intact
    assert (b.cpus_total, b.cpus_alloc, b.memory_total_mb) == (64, None, 512000)  # -1: N/A, never shown
    warnings: list[str] = []
    dropped.report(warnings)
    assert warnings == ["2 implausible value(s) dropped, shown as N/A "
                        "(cpus_total=301-digit number on gpu01, memory_total_mb=1125899906842624 on gpu01)"]


def test_scontrol_negative_and_huge_counts_are_na_with_one_warning() -> None:
    text = (f"NodeName=gpu01 State=IDLE CPUTot={HUGE} CPUAlloc=-1 RealMemory=512000 AllocMem=0\n"
            "NodeName=gpu02 State=IDLE CPUTot=64 CPUAlloc=4 RealMemory=-5 AllocMem=0\n")
    dropped = Dropped("node")
    out = parse_scontrol_nodes(text, on_invalid=dropped, drops=dropped.values)
    assert (out["gpu01"].cpus_total, out["gpu01"].cpus_alloc, out["gpu01"].memory_total_mb) == (None, None, 512000)
    assert (out["gpu02"].cpus_total, out["gpu02"].cpus_alloc, out["gpu02"].memory_total_mb) == (64, 4, None)
    assert dropped.values.warnings()[0].startswith("3 implausible value(s) dropped, shown as N/A "
                                                  "(cpus_total=301-digit number on gpu01, cpus_alloc=-1 on gpu01, ")


# -- jobs: squeue --json (whole and streamed), REST v0.0.40+, squeue/scontrol text ----------------
FIX = Path(__file__).parent / "fixtures" / "slurm"


def squeue_doc() -> dict[str, Any]:
    return json.loads((FIX / "cli_squeue.json").read_bytes())


def bad_squeue() -> tuple[bytes, list[int]]:
    """The 22.05 document (pretty, as squeue prints it) with absurd numbers in two live jobs and
    an impossible id in a third; the ids of the two jobs, in order."""
    d = squeue_doc()
    live = [j for j in d["jobs"] if j["job_state"] in LIVE_JOB_STATES]
    a, b, c = live[0], live[1], live[2]
    a.update(node_count=HUGE, restart_cnt=-1, priority=2**63)
    b.update(submit_time=-5, time_limit=2**40, tres_req_str="cpu=1,gres/gpu=" + "9" * 30)
    c["job_id"] = -7
    return json.dumps(d, indent=2).encode(), [a["job_id"], b["job_id"]]


def test_json_job_numbers_beyond_reason_are_na_with_one_warning_naming_field_and_job() -> None:
    data, (a_id, b_id) = bad_squeue()
    good = {j.job_id: j for j in parse_jobs_json((FIX / "cli_squeue.json").read_bytes())}
    dropped = Dropped("job")
    jobs = {j.job_id: j for j in parse_jobs_json(data, on_invalid=dropped, drops=dropped.values)}
    a, b = jobs[a_id], jobs[b_id]
    assert (a.num_nodes, a.restart_count, a.priority) == (None, None, None)
    assert (b.submit_time, b.time_limit_min, b.gpus_requested) == (None, None, None)
    assert (a.name, a.user, a.state, a.submit_time) == (good[a_id].name, good[a_id].user, good[a_id].state,
                                                         good[a_id].submit_time)  # the rest of the job intact
    assert len(jobs) == len(good) - 1  # the job with id -7 is unreadable: dropped, reported
    warnings: list[str] = []
    dropped.report(warnings)
    assert warnings[0].startswith("1 unreadable job record(s) dropped: job id -7 out of range")
    assert warnings[1] == ("6 implausible value(s) dropped, shown as N/A (num_nodes=301-digit number on "
                           f"job {a_id}, restart_count=-1 on job {a_id}, priority=19-digit number on job {a_id}, …)")
    assert len(warnings) == 2


def test_streamed_squeue_keeps_the_warning_while_the_value_stays_bad() -> None:
    """Unchanged jobs are reused by the stream reader; one with a bad value is read (and reported) again."""
    data, (a_id, _) = bad_squeue()
    reuse = JobReuse()
    for _ in range(2):
        dropped = Dropped("job")
        jobs = parse_jobs_stream([data[i:i + 997] for i in range(0, len(data), 997)], reuse, on_invalid=dropped,
                                 drops=dropped.values)
        assert jobs == parse_jobs_json(data, on_invalid=lambda _m: None)
        assert next(j for j in jobs if j.job_id == a_id).num_nodes is None
        assert dropped.values.values == 6 and dropped.count == 1
    assert reuse.hits > 0  # the plausible jobs were reused


def test_rest_wrapped_job_numbers_beyond_reason_are_na() -> None:
    n = {"set": True, "infinite": False}
    job = {"job_id": 5, "job_state": ["RUNNING"], "node_count": {**n, "number": 2**64 + 1},
           "priority": {**n, "number": -3}, "start_time": {**n, "number": 1e300},
           "array_job_id": {**n, "number": 0}, "restart_cnt": {"set": False, "infinite": False, "number": 0},
           "exit_code": {"status": ["EXITED"], "return_code": {**n, "number": 2**40}}}
    meta = {"plugin": {"data_parser": "data_parser/v0.0.40"}}
    drops = Drops()
    (out,) = parse_jobs_json(json.dumps({"meta": meta, "errors": [], "jobs": [job]}), drops=drops)
    assert (out.num_nodes, out.priority, out.start_time, out.exit_code, out.restart_count) == (None,) * 5
    assert drops.values == 4 and "node_count" not in drops.warnings()[0]
    assert drops.warnings() == ["4 implausible value(s) dropped, shown as N/A (exit_code=1099511627776 on job 5, "
                                "num_nodes=20-digit number on job 5, start_time=1e+300 on job 5, …)"]


def test_squeue_and_scontrol_text_job_numbers_beyond_reason_are_na() -> None:
    cols = ["7", "7", "N/A", "N/A", "gpu", "train", "alice", "ml", "normal", "RUNNING", "None", "1:00", "1:00:00",
            "-2", "8", "gpu01", "gres/gpu:2", "2026-11-29T17:12:33", "2026-11-29T17:12:30", str(HUGE)]
    assert len(cols) == len(SQUEUE_FIELDS)
    drops = Drops()
    (job,) = parse_squeue_text(SEP.join(cols) + "\n", drops=drops)
    assert (job.num_nodes, job.priority, job.gpus_requested, job.user) == (None, None, None, "alice")
    assert drops.warnings()[0].startswith("3 implausible value(s) dropped, shown as N/A (num_nodes=-2 on job 7, ")
    drops = Drops()
    text = (f"JobId=8 JobName=x UserId=bob(1) JobState=RUNNING NumNodes={HUGE} Restarts=-1 Priority=10 "
            "NodeList=gpu01\n")
    (job,) = parse_scontrol_jobs(text, drops=drops)
    assert (job.num_nodes, job.restart_count, job.priority) == (None, None, 10)
    assert drops.values == 2 and "restart_count=-1 on job 8" in drops.warnings()[0]


def test_cli_source_shows_one_warning_for_absurd_job_numbers(tmp_path: Path) -> None:
    data, (a_id, _) = bad_squeue()
    (tmp_path / "j.json").write_bytes(data)
    for name, script in (("squeue", f"cat {tmp_path / 'j.json'}"), ("sinfo", f"cat {FIX / 'cli_sinfo.json'}"),
                         ("sdiag", f"cat {FIX / 'cli_sdiag.txt'}")):
        (tmp_path / name).write_text("#!/bin/sh\n" + script + "\n")
        (tmp_path / name).chmod(0o755)

    async def go() -> None:
        src = build_slurm_source(SlurmSettings(backend="cli", bin_dir=str(tmp_path)))
        for _ in range(2):  # the second read reuses the unchanged jobs: the warning stays
            r = await src.collect()
            assert next(j for j in r.slurm_jobs or () if j.job_id == a_id).num_nodes is None
            assert [w for w in src.warnings if "implausible" in w] == [
                w for w in src.warnings if w.startswith("6 implausible value(s) dropped") and f"on job {a_id}" in w]
            assert sum("implausible" in w for w in src.warnings) == 1

    asyncio.run(go())
