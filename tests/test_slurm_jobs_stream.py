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
