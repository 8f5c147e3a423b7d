"""JobsStream: ``squeue --json`` read piece by piece must give exactly what parse_jobs_json gives,
reuse unchanged jobs by identity, and fail (not guess) on a cut or malformed document."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from hpctui.sources.slurm.parse import SlurmParseError, parse_jobs_json
from hpctui.sources.slurm.parse.jobs_stream import JobReuse, JobsStream, parse_jobs_stream
from hpctui.sources.slurm.runner import Runner

FIX = Path(__file__).parent / "fixtures" / "slurm"
REAL = (FIX / "cli_squeue.json").read_bytes()  # Slurm 22.05's own layout


def pretty(doc: dict[str, Any]) -> bytes:
    """Slurm's layout: two spaces per level (json.dumps gives the same shape)."""
    return json.dumps(doc, indent=2).encode()


def pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def doc() -> dict[str, Any]:
    return json.loads(REAL)


@pytest.mark.parametrize("size", [1, 7, 64, 1000, 4096, len(REAL)])
def test_real_document_in_any_pieces_equals_the_whole_parse(size: int) -> None:
    assert parse_jobs_stream(pieces(REAL, size)) == parse_jobs_json(REAL)


def test_real_document_is_read_incrementally_not_kept_whole() -> None:
    stream = JobsStream()
    for piece in pieces(REAL, 512)[:-1]:
        stream.feed(piece)
        assert len(stream._buf) < 8192  # at most one unfinished job (~4 KB) is held
    stream.feed(pieces(REAL, 512)[-1])
    assert stream.finish() == parse_jobs_json(REAL)


def test_unchanged_jobs_are_reused_by_identity_and_a_changed_one_is_decoded() -> None:
    reuse = JobReuse()
    first = parse_jobs_stream(pieces(REAL, 4096), reuse)
    total = len(doc()["jobs"])
    assert (reuse.hits, reuse.misses) == (0, total)
    d = doc()
    d["jobs"][0]["name"] = "renamed"
    changed_id = d["jobs"][0]["job_id"]
    data = pretty(d)
    second = parse_jobs_stream(pieces(data, 4096), reuse)
    assert second == parse_jobs_json(data)
    by_id = {j.job_id: j for j in first}
    for job in second:
        if job.job_id == changed_id:
            assert job.name == "renamed" and job is not by_id.get(job.job_id)
    # every other job's bytes differ only in layout from REAL (json.dumps vs Slurm), so
    # a third read of the same bytes reuses all of them, finished jobs included
    hits = reuse.hits
    third = parse_jobs_stream(pieces(data, 4096), reuse)
    assert reuse.hits - hits == total
    assert all(a is b for a, b in zip(second, third, strict=True))


def test_finished_jobs_stay_dropped_when_reused() -> None:
    d = doc()
    states = {j["job_state"] for j in d["jobs"]}
    assert "COMPLETED" in states or "CANCELLED" in states or "FAILED" in states, "fixture has finished jobs"
    reuse = JobReuse()
    data = pretty(d)
    once = parse_jobs_stream([data], reuse)
    again = parse_jobs_stream([data], reuse)
    assert once == again == parse_jobs_json(data)
    assert len(once) < len(d["jobs"])


def test_an_invalid_job_is_reported_on_every_read_not_cached_away() -> None:
    d = doc()
    d["jobs"][0]["nodes"] = "gpu[9-"  # not a hostlist
    data = pretty(d)
    reuse = JobReuse()
    for _ in range(2):
        seen: list[str] = []
        jobs = parse_jobs_stream(pieces(data, 333), reuse, on_invalid=seen.append)
        assert len(seen) == 1 and "jobs[0].nodes" in seen[0]
        assert jobs == parse_jobs_json(data, on_invalid=lambda _m: None)


def test_hostile_strings_are_cleaned_as_in_the_whole_parse() -> None:
    d = doc()
    d["jobs"][1]["name"] = "evil\x1b]52;c;AAAA\x07\x1b[2Jname"
    data = pretty(d)
    streamed = parse_jobs_stream(pieces(data, 100))
    assert streamed == parse_jobs_json(data)
    assert all("\x1b" not in (j.name or "") for j in streamed)


def test_compact_json_falls_back_to_the_whole_parse() -> None:
    compact = json.dumps(doc()).encode()
    assert parse_jobs_stream(pieces(compact, 100)) == parse_jobs_json(compact)


def test_empty_queue() -> None:
    d = doc()
    d["jobs"] = []
    data = pretty(d).replace(b'"jobs": []', b'"jobs": [\n  ]')
    assert parse_jobs_stream(pieces(data, 5)) == ()


def test_a_cut_document_is_an_error() -> None:
    with pytest.raises(SlurmParseError, match="ends inside the jobs array"):
        parse_jobs_stream([REAL[: len(REAL) * 2 // 3]])


def test_garbage_between_jobs_is_an_error_not_skipped() -> None:
    d = pretty(doc())
    bad = d.replace(b"\n    },\n    {", b"\n    } junk,\n    {", 1)
    with pytest.raises(SlurmParseError):
        parse_jobs_stream([bad])


def test_a_malformed_job_names_its_position() -> None:
    d = doc()
    d["jobs"][2]["job_id"] = "not a number"
    with pytest.raises(SlurmParseError, match=r"jobs\[2\]"):
        parse_jobs_stream([pretty(d)])


def test_envelope_errors_are_raised_like_the_whole_parse() -> None:
    d = doc()
    d["errors"] = [{"error": "Unable to contact slurm controller", "error_number": 1001}]
    data = pretty(d)
    with pytest.raises(SlurmParseError) as whole:
        parse_jobs_json(data)
    with pytest.raises(SlurmParseError) as streamed:
        parse_jobs_stream(pieces(data, 64))
    assert str(streamed.value) == str(whole.value)


def test_runner_stream_feeds_pieces_and_kills_the_command_when_the_consumer_fails(tmp_path: Path) -> None:
    big = tmp_path / "out"
    big.write_bytes(os.urandom(3 << 20))
    pidfile = tmp_path / "pid"
    runner = Runner(timeout_s=20)
    got: list[bytes] = []

    async def whole() -> None:
        res = await runner.stream(["cat", str(big)], got.append)
        assert res.ok and res.stdout == b""

    asyncio.run(whole())
    assert b"".join(got) == big.read_bytes() and len(got) >= 3

    def refuse(_piece: bytes) -> None:
        raise SlurmParseError("no")

    async def failing() -> None:
        with pytest.raises(SlurmParseError):
            await runner.stream(["sh", "-c", f"echo $$ > {pidfile}; cat {big}; sleep 60"], refuse)

    asyncio.run(failing())
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):  # the command's group was killed, not left to sleep
        for _ in range(50):
            os.kill(pid, 0)
            asyncio.run(asyncio.sleep(0.1))


def test_bytes_slurm_copies_raw_cost_one_character_not_the_queue() -> None:
    """Job names with invalid UTF-8 and raw control characters (Slurm copies them byte for byte,
    as the live hardening test submits them) read as the whole-document parse reads them."""
    data = pretty(doc())
    name = b'"name": "'
    first = data.index(name, data.index(b'"jobs": [')) + len(name)
    second = data.index(name, first) + len(name)
    hostile = data[:first] + b"bad\xff\xfe" + data[first:second] + b"x\x1fy\x07z" + data[second:]
    whole = parse_jobs_json(hostile)
    for size in (50, 4096, len(hostile)):
        reuse = JobReuse()
        assert parse_jobs_stream(pieces(hostile, size), reuse) == whole
        assert parse_jobs_stream(pieces(hostile, size), reuse) == whole  # and again, reused
    names = {j.name or "" for j in whole}
    bad = [n for n in names if n.startswith("bad\ufffd")]
    controls = [n for n in names if n.startswith("x\ufffdy\ufffdz")]
    assert bad
    assert controls


# -- the fast paths: predicted boundaries, batches, splices ------------------------------------

_KEEP = ("account", "array_job_id", "array_task_id", "exit_code", "gres_detail", "job_id", "job_resources",
         "job_state", "name", "nodes", "node_count", "partition", "priority", "state_reason", "submit_time",
         "tres_req_str", "user_name")


def small_doc(n_jobs: int = 5) -> dict[str, Any]:
    """The real document cut to a few jobs with fewer fields (nested objects kept), so that
    splitting it at every byte stays quick."""
    d = doc()
    d["jobs"] = [{k: v for k, v in job.items() if k in _KEEP} for job in d["jobs"][:n_jobs]]
    d["jobs"][-1]["job_state"] = "COMPLETED"  # one finished job, dropped (and remembered as such)
    return d


@pytest.fixture
def tiny_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of 2 jobs and 16-byte splices: every path runs on a small document."""
    import hpctui.sources.slurm.parse.jobs_stream as js

    monkeypatch.setattr(js, "BATCH", 2)
    monkeypatch.setattr(js, "SPLICE", 16)


@pytest.mark.usefixtures("tiny_batches")
def test_a_document_cut_at_every_byte_reads_the_same_first_and_repeated() -> None:
    data = pretty(small_doc())
    whole = parse_jobs_json(data)
    assert len(whole) == 4
    primed = JobReuse()
    first = parse_jobs_stream([data], primed)
    for k in range(len(data) + 1):
        assert parse_jobs_stream([data[:k], data[k:]]) == whole, k
        reuse = JobReuse()
        reuse.replace(primed.lengths, primed.sigs, primed.jobs)
        again = parse_jobs_stream([data[:k], data[k:]], reuse)
        assert reuse.misses == 0, k  # every job (the finished one too) known by its bytes
        assert all(a is b for a, b in zip(again, first, strict=True)), k


@pytest.mark.usefixtures("tiny_batches")
def test_random_pieces_and_a_changing_queue_read_like_the_whole_parse() -> None:
    import random

    rng = random.Random(13)
    base = small_doc(8)
    reuse = JobReuse()
    before: dict[int, Any] = {}
    for _ in range(150):
        d = json.loads(json.dumps(base))
        jobs = d["jobs"]
        for job in rng.sample(jobs, rng.randrange(3)):  # a few change
            job["name"] = rng.choice(["a", "bb", "renamed", job.get("name", "")])
            job["job_state"] = rng.choice(["RUNNING", "PENDING", "COMPLETED"])
        if rng.random() < 0.3:
            del jobs[rng.randrange(len(jobs))]  # a job leaves
        if rng.random() < 0.3:
            new = dict(rng.choice(jobs), job_id=1000 + rng.randrange(1000))
            jobs.insert(rng.randrange(len(jobs) + 1), new)  # one arrives
        if rng.random() < 0.2:
            rng.shuffle(jobs)  # the order changes
        data = pretty(d)
        cuts = sorted(rng.sample(range(1, len(data)), 3))
        got = parse_jobs_stream([data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)], reuse)
        assert got == parse_jobs_json(data)
        for job in got:  # an unchanged job is the same object as in the read before
            old = before.get(job.job_id)
            if old is not None and old == job:
                assert old is job
        before = {j.job_id: j for j in got}


def test_an_unchanged_queue_is_read_without_decoding_and_a_changed_job_is_decoded_alone() -> None:
    d = doc()
    data = pretty(d)
    reuse = JobReuse()
    parse_jobs_stream(pieces(data, 4096), reuse)
    parse_jobs_stream(pieces(data, 4096), reuse)
    assert (reuse.hits, reuse.misses) == (17, 17)
    d["jobs"][4]["name"] = "renamed-and-longer"
    del d["jobs"][9]
    data = pretty(d)
    hits = reuse.hits
    assert parse_jobs_stream(pieces(data, 4096), reuse) == parse_jobs_json(data)
    assert (reuse.hits - hits, reuse.misses) == (15, 18)


def test_one_bad_job_in_a_batch_fails_alone_with_its_position() -> None:
    d = doc()
    d["jobs"][11]["node_count"] = "many"  # jobs 0-10 wait in a conversion batch when 11 fails
    with pytest.raises(SlurmParseError, match=r"jobs\[11\]"):
        parse_jobs_stream([pretty(d)])


def test_a_batch_with_an_invalid_node_list_drops_that_job_only() -> None:
    d = doc()
    d["jobs"][3]["nodes"] = "cpu[01-"
    data = pretty(d)
    seen: list[str] = []
    got = parse_jobs_stream([data], JobReuse(), on_invalid=seen.append)
    assert got == parse_jobs_json(data, on_invalid=lambda _m: None)
    assert len(seen) == 1 and "jobs[3].nodes" in seen[0]
    assert 4 not in {j.job_id for j in got} and len(got) == len(parse_jobs_json(REAL)) - 1


def test_two_jobs_on_one_cut_are_read_whole_not_misread() -> None:
    """``},{`` on one line: the cut at the jobs' indent holds two objects, which the job's
    decode refuses; the rest of the document is then parsed whole (issue #21), never one of
    the two objects read as the job."""
    bad = pretty(doc()).replace(b"\n    },\n    {", b"},{", 1)
    assert parse_jobs_stream([bad]) == parse_jobs_json(bad)


@pytest.mark.parametrize("indent", [1, 4, 8])
def test_other_pretty_indents_are_read_incrementally(indent: int) -> None:
    data = json.dumps(doc(), indent=indent).encode()
    stream = JobsStream()
    for piece in pieces(data, 300):
        stream.feed(piece)
    assert stream._state == "tail"  # cut job by job, not kept whole
    assert stream.finish() == parse_jobs_json(data)


def test_crlf_line_ends_read_like_the_whole_parse() -> None:
    data = pretty(doc()).replace(b"\n", b"\r\n")
    reuse = JobReuse()
    assert parse_jobs_stream(pieces(data, 777), reuse) == parse_jobs_json(data)
    assert parse_jobs_stream(pieces(data, 500), reuse) == parse_jobs_json(data)
    assert reuse.hits == 17


def test_a_job_longer_than_the_splice_across_pieces() -> None:
    import hpctui.sources.slurm.parse.jobs_stream as js

    d = doc()
    d["jobs"][2]["name"] = "x" * (2 * js.SPLICE)
    data = pretty(d)
    size = js.SPLICE + 5000
    reuse = JobReuse()
    first = parse_jobs_stream(pieces(data, size), reuse)
    assert first == parse_jobs_json(data)
    again = parse_jobs_stream(pieces(data, size + 1), reuse)
    assert all(a is b for a, b in zip(first, again, strict=True))


def test_jobs_are_not_tracked_by_the_cyclic_gc() -> None:
    """A 100k-job queue must not give full collections 100k objects to walk (GIL held: stalls)."""
    import gc

    assert not any(gc.is_tracked(j) for j in parse_jobs_stream([REAL]))


def test_a_node_list_fault_before_a_decode_fault_is_reported_first() -> None:
    """Jobs wait in a conversion batch; a later job that does not decode must not hide an
    earlier job's fault (the whole parse reports the first fault in the document)."""
    d = doc()
    d["jobs"][3]["nodes"] = "cpu[01-"
    d["jobs"][9]["job_id"] = "x"
    data = pretty(d)
    with pytest.raises(SlurmParseError) as whole:
        parse_jobs_json(data)
    with pytest.raises(SlurmParseError, match=r"jobs\[3\]\.nodes") as streamed:
        parse_jobs_stream([data])
    assert str(whole.value) == str(streamed.value)
