"""The SSH probe's record stream under mutation: splitter, record parser and the node runner around them.

Declared behaviour (probes/record.py, ssh/stream.py): one bad record costs that record only. The
splitter never raises (garbage, NUL bytes, invalid UTF-8, cut or oversized records are dropped with
a warning); the record parser turns whatever a record holds into a reading, a section it cannot
read left out or warned about, and never raises: an exception would cost every other section of
the node's record. The runner (``NodeRunner.on_data``, what the SSH channel calls) therefore never
reports "bad probe record dropped" or "probe output unreadable" (its net for a parser exception).
"""

from __future__ import annotations

from types import SimpleNamespace

from fuzzkit import assert_clean, check, chunked, mutated_bytes, mutated_text, seed_bytes, time_bound
from hypothesis import example, given
from hypothesis import strategies as st

from hpctui.sources.ssh.codec import ProbesCodec
from hpctui.sources.ssh.probe.record import ProbeState, RecordSplitter, parse_record
from hpctui.sources.ssh.settings import SshSettings
from hpctui.sources.ssh.stream import NodeRunner
from hpctui.sources.ssh.targets import Target

STREAM = seed_bytes("seeds/probe_records.txt")  # five records of the real loop against the node shims
RECORDS = RecordSplitter().feed(STREAM)
CODEC = ProbesCodec(SshSettings())
SECTION = "\n@@hpctui section "


@st.composite
def section_mutated(draw: st.DrawFn) -> str:
    """One record with one section's header or body mutated (byte flips on the whole stream rarely
    reach a parser's corner: this aims at one section at a time)."""
    rec = draw(st.sampled_from(RECORDS))
    parts = rec.split(SECTION)
    i = draw(st.integers(1, len(parts) - 1))
    head, nl, body = parts[i].partition("\n")
    if draw(st.booleans()):
        body = draw(mutated_text([body], max_edits=4))
    else:
        head = draw(mutated_text([head], max_edits=3))
    parts[i] = head + nl + body
    return SECTION.join(parts)


def _with(header: str = "", begin: str = "") -> str:
    """The first real record with one more section header (``name rc late``), or another begin line."""
    rec = RECORDS[0]
    if begin:
        rec = f"@@hpctui begin {begin}\n" + rec.partition("\n")[2]
    return rec.replace(SECTION + "gpu ", f"{SECTION}{header} \n{SECTION}gpu ", 1) if header else rec


# Found by this test (each raised out of parse_record, costing the node's whole record, or leaked):
@example([_with("\x1b[2J\x1bg 0 1")])  # a late section's name, escapes and all, in late_probes
@example([_with("gpu-x 0 \u00b2")])  # "²".isdigit() but int("²") raises ValueError
@example([_with("gpu-x --5 0")])  # "--5".lstrip("-").isdigit(), int("--5") raises
@example([_with(begin="9" * 5000 + " 1796156747713185747 1")])  # int() refuses over 4,300 digits
@example([_with(begin="1 " + "9" * 400 + " 1")])  # an epoch too large for a float: OverflowError
# The same isdigit()/int() trap in section bodies (found by reading the sites the fuzzer pointed at):
@example([RECORDS[0].replace("slow_ms 5000", "slow_ms \u00b2", 1)])  # float("²") raises
@example([RECORDS[0].replace("counters/symbol_error:0", "counters/symbol_error:\u00b2", 1)])
@example([RECORDS[0].replace("\n194 21 0:42 /", "\n\u00b2 21 0:42 /", 1)])  # mountinfo's mount id
@example([RECORDS[0].replace("stat.194 0 0 1796156747941470056", "stat.194 0 0 \u00b2", 1)])  # stat times
@given(st.lists(st.one_of(section_mutated(), mutated_text(RECORDS)), min_size=1, max_size=3))
def test_parse_record_never_raises_and_stays_clean(records: list[str]) -> None:
    state = ProbeState()  # shared: deltas, flaps, Xid de-duplication run across records
    for i, rec in enumerate(records):
        check(lambda rec=rec, i=i: parse_record("gpu01", rec, state, 1_796_156_747.0 + i))


@given(mutated_bytes([STREAM], max_edits=8).flatmap(chunked))
def test_splitter_never_raises(chunks: list[bytes]) -> None:
    splitter = RecordSplitter()
    with time_bound():
        records = [r for chunk in chunks for r in splitter.feed(chunk)]
        splitter.end_of_stream()
    assert all(isinstance(r, str) for r in records)
    assert_clean(splitter.take_warnings())


def _runner() -> NodeRunner:
    pool = SimpleNamespace(settings=SshSettings())
    runner = NodeRunner(Target(node="gpu01", host="127.0.0.1"), pool, CODEC)  # type: ignore[arg-type]
    runner._splitter = CODEC.splitter()  # what start() sets when the channel opens
    return runner


def _encode(rec: str) -> bytes:
    return rec.encode("utf-8", "surrogatepass")  # a lone surrogate: invalid UTF-8 on the wire


@given(st.one_of(
    mutated_bytes([STREAM], max_edits=8),
    st.lists(section_mutated(), min_size=1, max_size=3).map(lambda rs: b"".join(map(_encode, rs))),
).flatmap(chunked))
def test_node_runner_drops_bad_records_one_by_one(chunks: list[bytes]) -> None:
    runner = _runner()
    with time_bound():
        for chunk in chunks:
            runner.on_data(chunk)
    error = runner.error or ""
    assert not error.startswith(("bad probe record dropped", "probe output unreadable")), error
    assert_clean([runner.error, runner.last_drop, runner.latest])
