"""What real Slurm 23.02–24.11 outputs need (issue #21 §1), on documents recorded from the
project's own 24.11 bed (tests/fixtures/slurm/*24.11*, see its README): node sets in
``sinfo --json``, ``meta.plugins`` (23.02), a data_parser newer than any known, GPUs asked
per task / socket, and the streamed ``squeue --json`` reader on other layouts."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from hpctui.sources.slurm import SlurmSettings, build_slurm_source
from hpctui.sources.slurm.parse import (
    SlurmParseError,
    detect_rest_version,
    parse_jobs_json,
    parse_nodes_json,
    parse_scontrol_jobs,
)
from hpctui.sources.slurm.parse.jobs_stream import JobReuse, parse_jobs_stream
from hpctui.sources.slurm.parse.nodes import NodeSetsDocument, is_node_sets_document
from hpctui.sources.slurm.parse.rest_versions import newer_versions_seen

FIX = Path(__file__).parent / "fixtures" / "slurm"
SINFO = FIX / "cli_24.11_sinfo.json"
SQUEUE = FIX / "cli_24.11_squeue.json"
NODES = FIX / "cli_24.11_scontrol_show_nodes.json"
# the bed's GPU jobs (README): 1 --gres=gpu:h100:2, 4 -N 2 --gres=gpu:h100:8, 7 -n 2 --gpus-per-task=1,
# 8 --gpus-per-node=h100:2, 9 --sockets-per-node=2 --gpus-per-socket=1, 10 -N 2 -n 4 --gpus-per-task=4
GPUS = {1: 2, 4: 16, 7: 2, 8: 2, 9: 2, 10: 16}


def raw(path: Path) -> bytes:
    return path.read_bytes()


def gpus(jobs: Any) -> dict[int, int]:
    return {j.job_id: j.gpus_requested for j in jobs if j.gpus_requested}


def tool(bin_dir: Path, name: str, script: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(0o755)


def fake_2411(bin_dir: Path, squeue: Path = SQUEUE) -> Path:
    """Fake tools answering with the 24.11 recordings; every call is logged to ``calls``."""
    log = bin_dir / "calls"
    tool(bin_dir, "sinfo", f'echo "sinfo $*" >> {log}; cat {SINFO}')
    tool(bin_dir, "squeue", f'echo "squeue $*" >> {log}; cat {squeue}')
    tool(bin_dir, "scontrol", f'echo "scontrol $*" >> {log}; [ "$1" = --json ] && cat {NODES}; exit 0')
    tool(bin_dir, "sdiag", f"cat {FIX / 'cli_sdiag.txt'}")
    return log


# -- sinfo --json: node sets ------------------------------------------------------------
def test_24_11_sinfo_json_is_recognised_as_node_sets() -> None:
    assert is_node_sets_document(raw(SINFO)) and not is_node_sets_document(raw(FIX / "cli_sinfo.json"))
    with pytest.raises(NodeSetsDocument, match="node sets"):
        parse_nodes_json(raw(SINFO))
    # one of its records holds two nodes: their allocation cannot be told apart from it
    assert any(len(r["nodes"]["nodes"]) > 1 for r in json.loads(raw(SINFO))["sinfo"])


def test_24_11_scontrol_json_nodes_are_per_node() -> None:
    nodes = parse_nodes_json(raw(NODES))
    assert sorted(nodes) == ["cpu01", "cpu02", "gpu01", "gpu02", "gpu03", "gpu04"]
    assert {n: (i.gpus_total, i.gpus_alloc) for n, i in nodes.items() if i.gpus_total} == {
        "gpu01": (8, 2), "gpu02": (8, 0), "gpu03": (4, 2), "gpu04": (4, 2)}
    assert nodes["gpu01"].partitions == ("gpu", "debug") and nodes["gpu03"].gpu_type == "a100"


def test_cli_reads_24_11_nodes_with_scontrol_json_and_says_so_once(tmp_path: Path) -> None:
    log = fake_2411(tmp_path)

    async def go() -> None:
        src = build_slurm_source(SlurmSettings(backend="cli", bin_dir=str(tmp_path)))
        first = await src.collect()
        assert first.slurm_nodes is not None and first.slurm_nodes["gpu04"].gpus_alloc == 2
        assert len(first.slurm_jobs or ()) == 10
        said = [w for w in src.warnings if "node sets" in w]
        assert len(said) == 1 and "scontrol --json show nodes" in said[0], src.warnings
        assert not any("unreadable" in w for w in src.warnings), src.warnings
        log.write_text("")
        second = await src.collect()
        assert second.slurm_nodes == first.slurm_nodes
        assert src.warnings == [], src.warnings
        calls = log.read_text().splitlines()
        assert "scontrol --json show nodes" in calls and not any(c.startswith("sinfo") for c in calls), calls

    asyncio.run(go())


# -- version detection -----------------------------------------------------------------------
def _as_23_02(doc: dict[str, Any]) -> dict[str, Any]:
    """The 24.11 document with 23.02's ``meta`` (``plugins``, as 23.02.6's squeue --json writes it)."""
    doc["meta"] = {"plugins": {"data_parser": "data_parser/v0.0.39", "accounting_storage": "accounting_storage/slurmdbd"},
                   "command": ["squeue", "--json"],
                   "Slurm": {"version": {"major": 23, "micro": 6, "minor": 2}, "release": "23.02.6"}}
    return doc


def test_23_02_meta_plugins_names_the_version() -> None:
    doc = _as_23_02(json.loads(raw(SQUEUE)))
    assert detect_rest_version(json.dumps(doc).encode()) == "v0.0.39"
    assert detect_rest_version(doc) == "v0.0.39"
    assert detect_rest_version(raw(SQUEUE)) == "v0.0.42"
    assert gpus(parse_jobs_json(json.dumps(doc).encode())) == GPUS


def _bumped(path: Path, version: str) -> bytes:
    doc = json.loads(raw(path))
    doc["meta"]["plugin"]["data_parser"] = f"data_parser/{version}"
    return json.dumps(doc, indent=2).encode()


def test_newer_data_parser_is_read_with_the_newest_known() -> None:
    bumped = _bumped(SQUEUE, "v0.0.46")
    assert parse_jobs_json(bumped) == parse_jobs_json(raw(SQUEUE))
    assert parse_jobs_stream([bumped]) == parse_jobs_json(raw(SQUEUE))
    assert parse_nodes_json(_bumped(NODES, "v0.0.46")) == parse_nodes_json(raw(NODES))
    assert "v0.0.46" in newer_versions_seen()
    with pytest.raises(SlurmParseError, match=r"unsupported Slurm REST version v0\.0\.35"):
        parse_jobs_json(_bumped(SQUEUE, "v0.0.35"))


def test_cli_says_once_that_a_newer_data_parser_is_read(tmp_path: Path) -> None:
    newer = tmp_path / "squeue.json"
    newer.write_bytes(_bumped(SQUEUE, "v0.0.47"))
    fake_2411(tmp_path, newer)

    async def go() -> None:
        src = build_slurm_source(SlurmSettings(backend="cli", bin_dir=str(tmp_path)))
        first = await src.collect()
        assert gpus(first.slurm_jobs) == GPUS
        said = [w for w in src.warnings if "v0.0.47" in w]
        assert len(said) == 1 and "newer than any" in said[0] and "v0.0.44" in said[0], src.warnings
        await src.collect()
        assert not any("v0.0.47" in w for w in src.warnings), src.warnings

    asyncio.run(go())


# -- GPUs asked per task / socket / node ---------------------------------------------------
def test_gpus_per_task_socket_node_without_gres_in_tres_req() -> None:
    jobs = parse_jobs_json(raw(SQUEUE))
    assert not any("gres/gpu" in j["tres_req_str"] for j in json.loads(raw(SQUEUE))["jobs"])
    assert gpus(jobs) == GPUS
    assert gpus(parse_jobs_json(raw(FIX / "rest_24.11_v0.0.42_jobs.json"))) == GPUS
    assert gpus(parse_jobs_stream([raw(SQUEUE)])) == GPUS


def test_gpus_per_task_socket_node_in_scontrol_text() -> None:
    jobs = parse_scontrol_jobs((FIX / "cli_24.11_scontrol_show_job_oneliner.txt").read_text())
    assert gpus(jobs) == GPUS
    by_id = {j.job_id: j for j in jobs}
    assert by_id[1].nodes == "gpu01" and by_id[8].nodes is None  # SchedNodeList= is its own field


# -- the streamed squeue --json on other layouts ------------------------------------------
def _one_job_per_line(doc: dict[str, Any]) -> bytes:
    jobs = ",\n".join("    " + json.dumps(j) for j in doc["jobs"])
    rest = {k: v for k, v in doc.items() if k != "jobs"}
    return ('{\n  "jobs": [\n' + jobs + "\n  ],\n" + json.dumps(rest, indent=2)[2:]).encode()


def _layouts() -> dict[str, bytes]:
    text = raw(SQUEUE)
    doc = json.loads(text)
    return {
        "reindented-1": json.dumps(doc, indent=1).encode(),
        "reindented-4": json.dumps(doc, indent=4).encode(),
        "reindented-flat-fields": json.dumps(doc, indent=2).replace("\n      ", "\n    ").encode(),
        "one-job-per-line": _one_job_per_line(doc),
        "compacted": json.dumps(doc, separators=(",", ":")).encode(),
        "crlf": text.replace(b"\n", b"\r\n"),
    }


@pytest.mark.parametrize("layout", list(_layouts()))
@pytest.mark.parametrize("chunk", [97, 4096, 1 << 20])
def test_jobs_stream_reads_other_layouts_whole(layout: str, chunk: int) -> None:
    data = _layouts()[layout]
    want = parse_jobs_json(raw(SQUEUE))
    pieces = [data[i:i + chunk] for i in range(0, len(data), chunk)]
    reuse = JobReuse()
    assert parse_jobs_stream(pieces, reuse) == want
    assert parse_jobs_stream(pieces, reuse) == want  # and again, with what the first read kept


def test_jobs_stream_still_reports_a_cut_document() -> None:
    data = raw(SQUEUE)
    with pytest.raises(SlurmParseError, match="slurm jobs JSON"):
        parse_jobs_stream([data[: len(data) // 2]])


def test_cli_stops_asking_for_json_in_a_refused_version(tmp_path: Path) -> None:
    """A document in a version this code refuses (older than any known) will not change on the
    next refresh: the source says so once and reads the text forms from then on."""
    old = tmp_path / "squeue.json"
    old.write_bytes(_bumped(SQUEUE, "v0.0.35"))
    log = fake_2411(tmp_path, old)
    tool(tmp_path, "squeue", f'echo "squeue $*" >> {log}; [ "$1" = --json ] && cat {old}; exit 0')

    async def go() -> None:
        src = build_slurm_source(SlurmSettings(backend="cli", bin_dir=str(tmp_path)))
        await src.collect()
        said = [w for w in src.warnings if "not asked for again" in w]
        assert len(said) == 1 and "v0.0.35" in said[0], src.warnings
        log.write_text("")
        await src.collect()
        assert not any("v0.0.35" in w for w in src.warnings), src.warnings
        assert "squeue --json" not in log.read_text().splitlines()

    asyncio.run(go())
