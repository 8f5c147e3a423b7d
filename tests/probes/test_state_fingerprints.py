"""A node's parser state remembers what each cached section looked like by fingerprint, not by text:
1,024 nodes of ~26 KiB of kept section texts each was a fifth of the SSH source's memory. The caches
still tell an unchanged section from a changed one (a changed text of the same length included). GPU
processes (gpu-apps + gpu-procs) are parsed again only when one of them, or the GPUs' UUIDs, changed. Nodes
that read the same NVLink state or lfs df answer share the objects."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hpctui.sources.ssh.probe.record import ProbeState, RecordSplitter, fingerprint, parse_record

LOOP = Path(__file__).resolve().parent.parent / "fixtures" / "probes" / "loop"
BUSY = Path(__file__).resolve().parents[1] / "testbed" / "sshfarm" / "streams" / "h100-busy.stream"


def _texts(path: Path) -> list[str]:
    return RecordSplitter().feed(path.read_bytes())


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (tuple, list)):
        return [s for v in value for s in _strings(v)]
    return []


def test_state_keeps_no_section_text() -> None:
    for path in (LOOP / "gpu-faulty.stream", BUSY):
        state = ProbeState()
        for text in _texts(path):
            parse_record("n1", text, state, 0.0)
        for f in dataclasses.fields(state):
            if f.name.endswith(("_text", "_texts", "_key")):
                assert all(len(s) < 64 for s in _strings(getattr(state, f.name))), f.name
        assert state.ib_text is not None and state.nvlink_texts != (None, None) and state.gpu_key is not None


def test_same_length_change_is_seen() -> None:
    """A counter that moves without changing the text's length (0 -> 7) is a change, not a cache hit."""
    texts = _texts(LOOP / "gpu-faulty.stream")
    first = texts[0]
    assert "\t Link 0: CRC Errors: 0\n" in first
    changed = first.replace("\t Link 0: CRC Errors: 0\n", "\t Link 0: CRC Errors: 7\n", 1)
    changed = changed.replace("@@hpctui begin 1 ", "@@hpctui begin 2 ", 1).replace("@@hpctui end 1", "@@hpctui end 2")
    assert len(changed) == len(first) and fingerprint(changed) != fingerprint(first)
    state = ProbeState()
    parse_record("n1", first, state, 0.0)
    reading = parse_record("n1", changed, state, 1.0)
    gpu0 = next(g for g in reading.gpus or () if g.index == 0)
    link0 = next(link for link in gpu0.nvlinks if link.link == 0)
    assert link0.crc_errors == 7 and link0.deltas == {"crc": 7}


def _procs(reading: object) -> dict[int, tuple[object, ...]]:
    return {g.index: g.processes for g in getattr(reading, "gpus", None) or ()}


def test_unchanged_processes_are_the_same_objects_and_a_change_is_seen() -> None:
    texts = _texts(LOOP / "gpu-faulty.stream")
    state = ProbeState()
    first, second = (parse_record("n1", t, state, 0.0) for t in texts[:2])
    one, two = _procs(first), _procs(second)
    assert any(one.values()) and all(two[i] is one[i] for i in one)  # not parsed again
    assert one[0][0].slurm_job_id == "1234" and one[0][0].command == "python train.py --epochs 10"
    changed = texts[2].replace("cgroup 0::/system.slice/slurmstepd.scope/job_1234/",
                               "cgroup 0::/system.slice/slurmstepd.scope/job_5678/", 1)
    assert changed != texts[2]
    three = _procs(parse_record("n1", changed, state, 1.0))
    assert three[0][0].slurm_job_id == "5678" and three[0] is not one[0]
    assert three[1] == one[1]


def test_nodes_that_read_the_same_share_links_and_targets() -> None:
    """Two nodes with the same NVLink state and the same lfs df answer hold the same objects (memory at
    1,024 nodes); a link whose CRC count rose is that node's own, with its delta."""
    texts = _texts(BUSY)
    a, b = ProbeState(), ProbeState()
    ra, rb = parse_record("a", texts[0], a, 0.0), parse_record("b", texts[0], b, 0.0)
    links_a = [link for g in ra.gpus or () for link in g.nvlinks]
    links_b = [link for g in rb.gpus or () for link in g.nvlinks]
    assert len(links_a) == 144 and all(x is y for x, y in zip(links_a, links_b, strict=True))
    targets_a = [m.targets for m in ra.mounts or () if m.targets]
    targets_b = [m.targets for m in rb.mounts or () if m.targets]
    assert targets_a and all(x is y for x, y in zip(targets_a, targets_b, strict=True))
    # the next slow record (NVLink is read every slow_every records), with one CRC count risen
    rose = texts[0].replace("\t Link 3: CRC Errors: 0\n", "\t Link 3: CRC Errors: 5\n", 1)
    rose = rose.replace("@@hpctui begin 1 ", "@@hpctui begin 6 ", 1).replace("@@hpctui end 1\n", "@@hpctui end 6\n")
    assert rose != texts[0]
    for t in texts[1:]:
        parse_record("b", t, b, 1.0)
    rb2 = parse_record("b", rose, b, 2.0)
    gpu0 = next(g for g in rb2.gpus or () if g.index == 0)
    link3 = next(link for link in gpu0.nvlinks if link.link == 3)
    assert link3.deltas == {"crc": 5} and link3 is not next(x for x in links_a[:18] if x.link == 3)
