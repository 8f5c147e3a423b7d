"""Slurm JSON (squeue/sinfo/scontrol --json, slurmrestd answers) under mutation: SlurmParseError or clean models.

Declared error: every Slurm parser raises :class:`SlurmParseError` on bad input (parse/__init__.py),
and the backends catch exactly that. The streamed jobs reader (jobs_stream.py) must also give the
same result as the whole-document parse, however the pipe cuts the bytes and whatever it reuses.
"""

from __future__ import annotations

from typing import Any

from fuzzkit import (
    assert_clean,
    check,
    chunked,
    clean_message,
    dump_json,
    mutated_bytes,
    mutated_json,
    seed_bytes,
    seed_json,
    time_bound,
)
from hypothesis import example, given
from hypothesis import strategies as st

from hpctui.sources.slurm import parse
from hpctui.sources.slurm.parse.jobs_stream import JobReuse, JobsStream
from hpctui.sources.slurm.parse.partitions import parse_partition_records_json

JOBS = ["slurm/cli_squeue.json", "slurm/rest_v0.0.36_jobs.json", "slurm/rest_v0.0.37_jobs.json",
        "slurm/synth_rest_v0.0.40_jobs.json", "slurm/synth_rest_v0.0.44_jobs.json", "slurm/rest_v0.0.38_job_1.json"]
NODES = ["slurm/cli_sinfo.json", "slurm/rest_v0.0.36_nodes.json", "slurm/synth_rest_v0.0.40_nodes.json",
         "slurm/synth_rest_v0.0.44_nodes.json", "slurm/rest_v0.0.38_node_gpu01.json"]
PARTITIONS = ["slurm/rest_v0.0.38_partitions.json", "slurm/rest_v0.0.38_partition_gpu.json"]
DIAG = ["slurm/rest_v0.0.38_diag.json", "slurm/synth_rest_v0.0.40_diag.json", "slurm/synth_rest_v0.0.44_diag.json"]
ERRORS = ["slurm/rest_v0.0.38_job_unknown_http500.json"]

ALL = JOBS + NODES + PARTITIONS + DIAG + ERRORS
BYTES = [seed_bytes(f) for f in ALL]
DOCS = [seed_json(f) for f in ALL]
JOB_DOCS = [seed_json(f) for f in JOBS]


def _dropped() -> tuple[list[str], Any]:
    got: list[str] = []
    return got, got.append


def documents() -> st.SearchStrategy[bytes]:
    """A recorded document mutated as bytes, or decoded, mutated as JSON and re-encoded (pretty or compact)."""
    return st.one_of(
        mutated_bytes(BYTES),
        st.tuples(mutated_json(DOCS), st.sampled_from((2, None))).map(lambda d: dump_json(*d)),
    )


def _every_parser(data: bytes) -> None:
    for fn in (parse.parse_nodes_json, parse.parse_partitions_json, parse_partition_records_json,
               parse.parse_diag_json, parse.parse_jobs_json, parse.detect_rest_version):
        try:
            check(lambda fn=fn: fn(data), raises=())
        except parse.SlurmParseError as exc:
            clean_message(exc)
    for lenient in (parse.parse_nodes_json, parse.parse_jobs_json):
        dropped, on_invalid = _dropped()
        try:
            check(lambda fn=lenient, cb=on_invalid: fn(data, on_invalid=cb), raises=())
        except parse.SlurmParseError as exc:
            clean_message(exc)
        assert_clean(dropped)
    check(lambda: parse.parse_rest_errors(data))  # never raises: a body that is not JSON is one message


# Found by this test: a REST body that is not JSON came back from parse_rest_errors as the
# error message, terminal escapes and all (it is shown in the status line).
@example(b"\x1b]0;owned\x07 Authentication failure")
@given(documents())
def test_slurm_json_parsers_raise_only_slurm_parse_error(data: bytes) -> None:
    _every_parser(data)


@given(documents(), st.sampled_from(("v0.0.38", "v0.0.40", "v0.0.44", "v0.0.99", "")))
def test_slurm_json_parsers_with_a_version(data: bytes, version: str) -> None:
    for fn in (parse.parse_nodes_json, parse.parse_jobs_json, parse.parse_diag_json, parse_partition_records_json):
        try:
            check(lambda fn=fn: fn(data, version or None), raises=())
        except parse.SlurmParseError as exc:
            clean_message(exc)


def _whole(data: bytes) -> tuple[Any, ...] | type[parse.SlurmParseError]:
    try:
        return parse.parse_jobs_json(data, on_invalid=lambda _m: None)
    except parse.SlurmParseError:
        return parse.SlurmParseError


def _streamed(chunks: list[bytes], reuse: JobReuse | None) -> tuple[Any, ...] | type[parse.SlurmParseError]:
    stream = JobsStream(reuse, on_invalid=lambda _m: None)
    try:
        for chunk in chunks:
            stream.feed(chunk)
        return stream.finish()
    except parse.SlurmParseError:
        return parse.SlurmParseError


@st.composite
def job_streams(draw: st.DrawFn) -> tuple[bytes, list[bytes], bytes, list[bytes]]:
    """Two consecutive ``squeue --json`` documents (the second a mutation of the first), each cut at random."""
    first = draw(st.one_of(st.sampled_from([dump_json(d) for d in JOB_DOCS]),
                           mutated_json(JOB_DOCS, max_edits=2).map(dump_json)))
    second = draw(st.one_of(mutated_bytes([first], max_edits=3), mutated_json(JOB_DOCS).map(dump_json)))
    return first, draw(chunked(first)), second, draw(chunked(second))


@given(job_streams())
def test_streamed_jobs_equal_the_whole_document_parse(docs: tuple[bytes, list[bytes], bytes, list[bytes]]) -> None:
    """Whatever the cut and whatever the previous document left to reuse: the same jobs (or the same
    refusal) as parse_jobs_json on the whole document, never another exception, never a hang."""
    first, first_chunks, second, second_chunks = docs
    reuse = JobReuse()
    with time_bound():
        assert _streamed(first_chunks, reuse) == _whole(first)
        got = _streamed(second_chunks, reuse)
    assert got == _whole(second)
    assert_clean(got)
