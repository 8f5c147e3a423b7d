"""The bounded-read helpers (hpctui/sources/bounded.py) and redact_url (issue #19 §5/§6)."""

from __future__ import annotations

import time

import pytest

from hpctui.base.sanitize import redact_url
from hpctui.sources.bounded import AnswerTooLarge, LineTooLong, gather_capped, json_fault, split_lines


def test_split_lines_keeps_lines_across_chunks_and_drops_an_unfinished_tail() -> None:
    chunks = [b'{"a":', b'1}\n{"b"', b":2}\n\n", b"tail"]
    assert list(split_lines(chunks, 100)) == [b'{"a":1}', b'{"b":2}', b""]


def test_a_line_without_end_stops_at_the_cap_in_linear_time() -> None:
    def endless() -> object:
        while True:
            yield b"x" * 65536
    started = time.perf_counter()
    with pytest.raises(LineTooLong, match="a line over 8 MiB without a newline"):
        list(split_lines(endless(), 8 * 1024 * 1024))  # type: ignore[arg-type]
    assert time.perf_counter() - started < 2.0  # the old bytes += chunk / find() loop was quadratic


def test_gather_capped_stops_past_the_cap() -> None:
    assert gather_capped([b"ab", b"cd"], 4) == b"abcd"
    with pytest.raises(AnswerTooLarge, match="answer over 3 B"):
        gather_capped([b"ab", b"cd"], 3)


@pytest.mark.parametrize(("body", "fault"), [
    (b"garbage", "invalid JSON at byte 0"),
    (b'{"a": 1, x}', "invalid JSON at byte 9"),
    (b'{"a": [1,', "invalid JSON: the answer ends in the middle of a value"),
    (b"", "an empty answer"),
    (b'{"a": "ok"}', None),
    (b'{"a": "x\x01"}', None),  # a raw control byte: the Slurm parsers repair it
    (b'{"a": "\\udcff"}', None),  # a lone surrogate escape: repaired too
    (b'{"a": "x\xff"}', None),  # invalid UTF-8: repaired too
])
def test_json_fault_refuses_only_what_no_repair_can_fix(body: bytes, fault: str | None) -> None:
    assert json_fault(body) == fault


@pytest.mark.parametrize(("text", "shown"), [
    ("http://admin:S3cretPW@prom:9090/x", "http://***@prom:9090/x"),
    ("cannot reach https://u:p@ss@h:1: refused", "cannot reach https://***@h:1: refused"),
    ("URL('http://user@h')", "URL('http://***@h')"),
    ("https://h/p?x=a@b", "https://h/p?x=a@b"),
    ("mail root@node1", "mail root@node1"),
    ("unix:///run/slurmrestd.sock", "unix:///run/slurmrestd.sock"),
])
def test_redact_url(text: str, shown: str) -> None:
    assert redact_url(text) == shown
