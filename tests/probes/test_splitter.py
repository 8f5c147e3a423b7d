"""RecordSplitter: complete records out of a byte stream; bad input costs one record with a warning."""

from __future__ import annotations

from hpctui.sources.ssh.probe.record import RecordSplitter, split_sections


def rec(seq: int, body: str = "hello") -> bytes:
    return (f"@@hpctui begin {seq} 1700000000000000000 1\n@@hpctui section res 0 0 \n{body}\n\n"
            f"@@hpctui end {seq}\n").encode()


def test_records_split_across_arbitrary_chunks():
    data = rec(1) + rec(2, "a\nb") + rec(3)
    for size in (1, 2, 7, 64, len(data)):
        sp = RecordSplitter()
        out = []
        for i in range(0, len(data), size):
            out += sp.feed(data[i:i + size])
        assert len(out) == 3 and sp.warnings == []
        seq, epoch, secs = split_sections(out[1])
        assert seq == 2 and epoch == 1700000000.0 and secs["res"].text == "a\nb" and secs["res"].rc == 0


def test_garbage_before_between_records_is_dropped_with_warning():
    sp = RecordSplitter()
    out = sp.feed(b"motd banner\n" + rec(1) + b"\x00\xff junk\n" + rec(2))
    assert len(out) == 2
    assert len(sp.take_warnings()) == 2 and sp.warnings == []


def test_binary_and_invalid_utf8_cost_only_that_record():
    sp = RecordSplitter()
    out = sp.feed(rec(1) + rec(2, "bin\x00ary") + rec(3) + rec(4, "x").replace(b"x\n", b"\xc3\x28\n") + rec(5))
    seqs = [split_sections(t)[0] for t in out]
    assert seqs == [1, 3, 5]
    assert any("NUL" in w for w in sp.warnings) and any("UTF-8" in w for w in sp.warnings)


def test_cut_record_then_resync():
    cut = rec(1).split(b"\n@@hpctui end")[0] + b"\n"  # the loop restarted mid-record
    sp = RecordSplitter()
    out = sp.feed(cut + rec(2))
    assert [split_sections(t)[0] for t in out] == [2]
    assert any("cut" in w for w in sp.warnings)


def test_stream_that_ends_mid_line_drops_the_partial_record():
    sp = RecordSplitter()
    assert sp.feed(rec(1) + rec(2)[:-25]) and sp.warnings == []
    sp.end_of_stream()
    assert any("cut" in w for w in sp.take_warnings())
    assert [split_sections(t)[0] for t in sp.feed(rec(3))] == [3]


def test_mismatched_end_is_dropped():
    bad = rec(1).replace(b"end 1", b"end 9")
    sp = RecordSplitter()
    assert sp.feed(bad + rec(2)) and len(sp.warnings) == 1


def test_oversized_record_is_dropped_and_stream_recovers():
    sp = RecordSplitter(max_record_bytes=1000)
    out = sp.feed(b"@@hpctui begin 1 1 1\n" + b"x" * 5000 + b"\n")
    out += sp.feed(rec(2))
    assert [split_sections(t)[0] for t in out] == [2]
    assert any("larger" in w for w in sp.warnings)


def test_marker_inside_a_line_is_not_a_marker():
    body = "text @@hpctui end 1 inside a line"
    sp = RecordSplitter()
    (text,) = sp.feed(rec(1, body))
    assert split_sections(text)[2]["res"].text == body
