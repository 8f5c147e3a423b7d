"""The log parsers (issue 26) under mutation: Slurm output paths from ``scontrol``, the tail read's answer,
``journalctl -o short-unix`` lines, pods/log timestamps and Loki answers. Each returns clean model values
or raises only its declared error."""

from __future__ import annotations

from fuzzkit import check, clean_message, mutated_bytes, mutated_text, seed_bytes
from hypothesis import given
from hypothesis import strategies as st

from hpctui.base.sanitize import decode_output
from hpctui.model.output import NodeOutput
from hpctui.sources.k8s.source import split_log_timestamps
from hpctui.sources.loki.parse import LokiAnswerError, parse_query_range
from hpctui.sources.slurm.outpath import paths_from_scontrol
from hpctui.sources.ssh.logs import parse_journal, parse_tail

SCONTROL = [decode_output(seed_bytes("logs/scontrol_show_job_outpaths_22.05.txt"))]
JOURNAL = [decode_output(seed_bytes("logs/journalctl_short_unix_252.txt"))]
TAIL = ["HPCTUI-LOG size=12 start=0 restart=0\na\nb", "HPCTUI-LOG error=no such file",
        "HPCTUI-LOG size=900 start=100 restart=1\nrtial\nc"]
PODLOG = ["2026-12-02T03:00:00.1Z first\n2026-12-02T03:00:00.12Z second\n2026-12-02T03:00:01Z third\n"]
LOKI = [seed_bytes("loki/query_range_streams.json"), seed_bytes("loki/query_range_categorized.json")]


@given(mutated_text(SCONTROL))
def test_scontrol_output_paths(text: str) -> None:
    check(lambda: paths_from_scontrol(text))


@given(mutated_text(TAIL), st.one_of(st.none(), st.integers(min_value=0, max_value=1 << 40)))
def test_tail_answer(text: str, offset: int | None) -> None:
    from hpctui.model.output import clean_output

    out = NodeOutput(label="n", output=clean_output(text.encode("utf-8", "surrogatepass")), rc=0)
    check(lambda: parse_tail(out, "n:/x", offset))


@given(mutated_text(JOURNAL))
def test_journal_lines(text: str) -> None:
    check(lambda: parse_journal(text, "gpu01"))


@given(mutated_text(PODLOG), st.one_of(st.none(), st.just("2026-12-02T03:00:00.1Z")))
def test_pod_log_timestamps(text: str, since: str | None) -> None:
    check(lambda: split_log_timestamps(text, since))


@given(mutated_bytes(LOKI))
def test_loki_answers(body: bytes) -> None:
    try:
        check(lambda: parse_query_range(body), raises=())
    except LokiAnswerError as exc:
        clean_message(exc)
