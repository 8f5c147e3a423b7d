"""Issue #6 §1/§2: no cluster string reaches the terminal raw; one bad record never blanks a source.

Hostile names/reasons go through every source path (CLI JSON, CLI text, REST, pyslurm mapping,
accounting, demo) into the model, the ``snapshot`` table and the drawn screen (Pilot + SVG export).
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading
import unicodedata
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import msgspec
import pytest

from hpctui.base.sanitize import PLACEHOLDER, clean_text, is_clean
from hpctui.cli.snapshot import render_table
from hpctui.core.runtime import Runtime
from hpctui.findings.health import Thresholds
from hpctui.model import SourceResult
from hpctui.sources.slurm import SlurmSettings, build_slurm_source, parse
from hpctui.sources.slurm.parse.pyslurm_map import job_from_pyslurm, node_from_pyslurm

FIX = Path(__file__).parent / "fixtures" / "slurm"

HOSTILE = [
    "T\x1b]0;PWNED\x07X",  # retitles the window
    "\x1b]52;c;aGk=\x1b\\",  # OSC 52: writes the clipboard
    "\x1b[2J\x1b[31mdrained",  # clears the screen
    "\x1bP1$r\x1b\\dcs",  # DCS
    "c1\x9b2Jcsi",  # 8-bit CSI
    "bidi\u202eevil\u2066x\u2069",  # bidi overrides/isolates
    "zero\u200bwidth\ufeff",  # zero-width
    "sur\udcffrogate",  # an undecodable byte kept by surrogateescape
    "[red]markup[/red]",  # Rich markup must stay literal (it is not a control)
]
_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")


def strings(obj: Any) -> Iterator[str]:
    """Every str inside a model object (structs, dicts, tuples, frozensets)."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, msgspec.Struct):
        for f in obj.__struct_fields__:
            yield from strings(getattr(obj, f))
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from strings(k)
            yield from strings(v)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            yield from strings(v)


def assert_clean(obj: Any) -> None:
    bad = [s for s in strings(obj) if not is_clean(s)]
    assert not bad, f"raw control/format characters reached the model: {bad[:3]!r}"


# -- the sanitiser ----------------------------------------------------------------------------
@pytest.mark.parametrize("value", HOSTILE[:-1])
def test_hostile_strings_lose_every_control(value: str) -> None:
    out = clean_text(value)
    assert is_clean(out) and not _RAW.search(out)
    assert PLACEHOLDER in out  # visible: the operator sees something was there


def test_whole_sequences_become_one_placeholder() -> None:
    assert clean_text("T\x1b]0;PWNED\x07X") == f"T{PLACEHOLDER}X"
    assert clean_text("\x1b[2J\x1b[31mdrained") == f"{PLACEHOLDER}{PLACEHOLDER}drained"
    assert clean_text("a\x1bP1$r\x1b\\b") == f"a{PLACEHOLDER}b"
    assert clean_text("a\x1b]52;c;aGk=\x1b\\b") == f"a{PLACEHOLDER}b"


def test_markup_and_ordinary_unicode_are_kept() -> None:
    for s in ("[red]markup[/red]", "Grüße 日本 ⚠", "PSU failure [root@2026-11-29]"):
        assert clean_text(s) is s


def test_newlines_only_kept_on_request() -> None:
    assert clean_text("a\nb\tc") == f"a{PLACEHOLDER}b{PLACEHOLDER}c"
    assert clean_text("a\nb\tc\x1b[2J", keep_newlines=True) == f"a\nb\tc{PLACEHOLDER}"


def test_every_control_and_format_code_point_is_caught() -> None:
    """The character class covers all of Cc, Cf, Cs, Zl, Zp of this Python's Unicode."""
    missed = [hex(cp) for cp in range(sys.maxunicode + 1)
              if unicodedata.category(chr(cp)) in ("Cc", "Cf", "Cs", "Zl", "Zp") and is_clean(chr(cp))]
    assert not missed


# -- every parser ----------------------------------------------------------------------------
def _hostile_jobs(doc: dict[str, Any]) -> dict[str, Any]:
    for i, job in enumerate(doc["jobs"]):
        job["name"] = HOSTILE[i % len(HOSTILE)]
        job["state_reason"] = HOSTILE[(i + 1) % len(HOSTILE)]
        job["account"] = HOSTILE[(i + 2) % len(HOSTILE)]
    return doc


def _hostile_nodes(doc: dict[str, Any]) -> dict[str, Any]:
    for i, node in enumerate(doc["nodes"]):
        node["reason"] = HOSTILE[i % len(HOSTILE)]
        node["features"] = [HOSTILE[(i + 3) % len(HOSTILE)]]
    return doc


def _dumps(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc).encode("utf-8", "surrogatepass")


@pytest.mark.parametrize("version", ["v0.0.36", "v0.0.37", "v0.0.38", "v0.0.40", "v0.0.44"])
def test_rest_documents_of_every_version_come_out_clean(version: str) -> None:
    synth = "synth_" if version in ("v0.0.40", "v0.0.44") else ""
    jobs_doc = _hostile_jobs(json.loads((FIX / f"{synth}rest_{version}_jobs.json").read_text()))
    nodes_doc = _hostile_nodes(json.loads((FIX / f"{synth}rest_{version}_nodes.json").read_text()))
    jobs = parse.parse_jobs_json(_dumps(jobs_doc), include_finished=True)
    nodes = parse.parse_nodes_json(_dumps(nodes_doc))
    assert jobs and nodes
    assert_clean((jobs, nodes))
    assert jobs[0].name == f"T{PLACEHOLDER}X"


def test_cli_json_with_raw_bytes_costs_one_character_not_the_document() -> None:
    """``sbatch -J $'x\\xff\\ny'``: Slurm writes the raw byte (and may write raw controls)."""
    doc = json.loads((FIX / "cli_squeue.json").read_text())
    doc["jobs"][0]["name"] = "NAME_A"
    doc["jobs"][1]["name"] = "NAME_B"
    raw = json.dumps(doc).encode().replace(b"NAME_A", b"x\xff\\ny").replace(b"NAME_B", b"T\x1b]0;PWNED\x07X")
    with pytest.raises(msgspec.DecodeError):
        msgspec.json.decode(raw)  # what blanked the source before
    jobs = parse.parse_jobs_json(raw)
    assert len(jobs) == len(parse.parse_jobs_json((FIX / "cli_squeue.json").read_bytes()))
    assert_clean(jobs)
    names = {j.job_id: j.name for j in jobs}
    assert names[doc["jobs"][0]["job_id"]] == f"x{PLACEHOLDER}{PLACEHOLDER}y"
    nodes_raw = (FIX / "cli_sinfo.json").read_bytes().replace(b'"cpu04"', b'"cpu04", "reason": "r\xfe\x1b[2J"', 1)
    nodes = parse.parse_nodes_json(nodes_raw)
    assert len(nodes) == 8
    assert_clean(nodes)


def _squeue_text(name_of: dict[str, str]) -> str:
    lines = []
    for line in (FIX / "cli_squeue_parsable.txt").read_text().splitlines():
        cols = line.split("|")
        cols[5] = name_of.get(cols[5], cols[5])
        lines.append(parse.SEP.join(cols))
    return "\n".join(lines) + "\n"


def test_squeue_text_drops_only_the_broken_records() -> None:
    good = parse.parse_squeue_text(_squeue_text({}))
    hostile = {"dep-job": "a\x1fb", "held-job": "x\ny", "cpu-exclusive": "T\x1b]0;PWNED\x07X",
               "on-cpu01": "r\x1er\x1cs"}
    with pytest.raises(parse.SlurmParseError):
        parse.parse_squeue_text(_squeue_text(hostile))  # strict mode still says what is wrong
    dropped: list[str] = []
    jobs = parse.parse_squeue_text(_squeue_text(hostile), on_invalid=dropped.append)
    assert len(jobs) == len(good) - 2  # \x1f and \n names cost their own record only
    assert len(dropped) == 3  # the \x1f line, and both halves of the \n line
    assert_clean(jobs)
    names = {j.name for j in jobs}
    assert f"T{PLACEHOLDER}X" in names and f"r{PLACEHOLDER}r{PLACEHOLDER}s" in names


def test_scontrol_text_with_newline_in_a_reason_keeps_the_other_nodes() -> None:
    text = (FIX / "cli_scontrol_show_node_oneliner.txt").read_text()
    n = len(parse.parse_scontrol_nodes(text))
    hostile = text.replace("State=MIXED", "State=MIXED Reason=a\x1b[2J\nb", 1)
    with pytest.raises(parse.SlurmParseError):
        parse.parse_scontrol_nodes(hostile)
    dropped: list[str] = []
    nodes = parse.parse_scontrol_nodes(hostile, on_invalid=dropped.append)
    assert len(nodes) == n and len(dropped) == 1
    assert_clean(nodes)


def test_scontrol_jobs_and_sinfo_text_come_out_clean() -> None:
    jobs_text = (FIX / "cli_scontrol_show_job_detail_oneliner.txt").read_text()
    jobs_text = re.sub(r"JobName=\S+", "JobName=T\x1b]0;PWNED\x07X", jobs_text)
    jobs = parse.parse_scontrol_jobs(jobs_text, include_finished=True)
    assert jobs and all(j.name == f"T{PLACEHOLDER}X" for j in jobs)
    jobs2 = parse.parse_scontrol_jobs(jobs_text.replace("JobName=", "JobName=a\nb", 1), include_finished=True,
                                      on_invalid=lambda m: None)
    assert len(jobs2) == len(jobs) - 1
    sinfo = (FIX / "cli_sinfo_parsable.txt").read_text()
    cols = sinfo.splitlines()[0].split("|")
    cols[10] = "\x1b[2J\x1b[31mdrained"
    nodes = parse.parse_sinfo_text("|".join(cols) + "\n", sep="|")
    assert_clean(nodes)


def test_accounting_text_comes_out_clean() -> None:
    sshare = (FIX / "cli_sshare_Pl.txt").read_text().replace("alice", "al\x1b]0;x\x07ice")
    qos = (FIX / "cli_sacctmgr_qos.txt").read_text().replace("normal", "nor\x1b[2Jmal")
    assoc = (FIX / "cli_sacctmgr_assoc.txt").read_text().replace("alice", "al\u202eice")
    out = (parse.parse_sshare_text(sshare), parse.parse_sacctmgr_qos_text(qos), parse.parse_sacctmgr_assoc_text(assoc))
    assert all(out)
    assert_clean(out)


def test_pyslurm_objects_come_out_clean() -> None:
    class Obj:
        def __init__(self, **kw: Any) -> None:
            self.__dict__.update(kw)

    node = node_from_pyslurm(Obj(name="gpu01", state="MIXED+DRAIN", reason="\x1b[2Jx", reason_user="r\x9bq",
                                 partitions=["gpu\x1b[0m"], active_features=["a\u200b"],
                                 configured_gres={"gpu:h1\x1b[0m00": 8}))
    job = job_from_pyslurm(Obj(id=5, state="RUNNING", name="T\x1b]0;PWNED\x07X", user_name="u\u202e",
                               account="a\x07", state_reason="\x1b[31mx", nodes="gpu01"))
    assert_clean((node, job))


def test_rest_errors_and_cli_messages_are_clean() -> None:
    msgs = parse.parse_rest_errors(b'{"errors": [{"error": "bad \\u001b]0;x\\u0007", "description": "\\u001b[2J"}]}')
    assert msgs and all(is_clean(m) for m in msgs)
    from hpctui.sources.slurm.runner import RunResult

    res = RunResult(argv=("scontrol",), rc=1, stdout=b"", stderr="Invalid node name \x1b[2Jgpu", duration_s=0)
    assert is_clean(res.message)


# -- whole sources: CLI (JSON and text), REST, demo → model, snapshot table, the drawn screen --
def _tool(bin_dir: Path, name: str, script: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(0o755)


def _cli_bin(tmp_path: Path, *, json_ok: bool) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    nodes = _hostile_nodes(json.loads((FIX / "cli_sinfo.json").read_text()))
    jobs = _hostile_jobs(json.loads((FIX / "cli_squeue.json").read_text()))
    (tmp_path / "sinfo.json").write_bytes(_dumps(nodes))
    (tmp_path / "squeue.json").write_bytes(_dumps(jobs))
    scontrol = (FIX / "cli_scontrol_show_node_oneliner.txt").read_text().replace(
        "State=MIXED", "State=MIXED Reason=\x1b[2J\x1b[31mdrained", 1)
    (tmp_path / "scontrol.txt").write_text(scontrol, encoding="utf-8", errors="surrogateescape")
    (tmp_path / "squeue.txt").write_text(
        _squeue_text({"cpu-exclusive": "T\x1b]0;PWNED\x07X", "dep-job": "\x1b]52;c;aGk=\x1b\\", "held-job": "a\x1fb"}))
    if json_ok:
        _tool(bin_dir, "sinfo", f'cat "{tmp_path}/sinfo.json"')
        _tool(bin_dir, "squeue", f'cat "{tmp_path}/squeue.json"')
    else:
        _tool(bin_dir, "sinfo", 'echo "sinfo: unrecognized option \'--json\'" >&2; exit 1')
        _tool(bin_dir, "squeue", f'[ "$1" = "--json" ] && {{ echo "squeue: unrecognized option" >&2; exit 1; }}\n'
                                 f'cat "{tmp_path}/squeue.txt"')
    _tool(bin_dir, "scontrol", f'cat "{tmp_path}/scontrol.txt"')
    _tool(bin_dir, "sdiag", 'printf "sdiag: \\033]0;PWNED\\007 Access denied\\n" >&2; exit 1')
    return bin_dir


class _Rest(BaseHTTPRequestHandler):
    docs: dict[str, bytes] = {}

    def do_GET(self) -> None:
        body = self.docs.get(self.path)
        status = 200 if body is not None else 500
        body = body if body is not None else b'{"errors": [{"error": "\\u001b]0;PWNED\\u0007nope"}]}'
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def _runtime(sources: list[Any]) -> Runtime:
    return Runtime("lab", sources, read_only=True)


async def _screen_of(runtime: Runtime) -> str:
    from hpctui.ui.app import HpcApp

    app = HpcApp(runtime, theme="dark")
    async with app.run_test(size=(200, 60)) as pilot:
        await runtime.collect_once()
        app.refresh_from_store()
        await pilot.pause()
        return app.export_screenshot()


def _check_everything(runtime: Runtime, expect_visible: str) -> None:
    asyncio.run(runtime.collect_once())
    snap = runtime.store.snapshot()
    assert snap.nodes and snap.jobs, snap.sources
    assert_clean(snap)
    table = render_table(snap, Thresholds())
    assert not _RAW.search(table.replace("\n", ""))
    assert "\x1b" not in render_table(snap, Thresholds())
    svg = asyncio.run(_screen_of(runtime))
    assert "\x1b" not in svg and "\x9b" not in svg and "\x07" not in svg
    assert expect_visible in svg  # the hostile job was drawn, harmlessly


def test_cli_json_source_end_to_end(tmp_path: Path) -> None:
    source = build_slurm_source(SlurmSettings(backend="cli", bin_dir=str(_cli_bin(tmp_path, json_ok=True))))
    runtime = _runtime([source])
    asyncio.run(runtime.collect_once())
    assert any("controller health unavailable" in w for w in runtime.store.snapshot().sources["slurm"].warnings)
    _check_everything(runtime, "T\ufffdX")


def test_cli_text_source_end_to_end(tmp_path: Path) -> None:
    source = build_slurm_source(SlurmSettings(backend="cli", bin_dir=str(_cli_bin(tmp_path, json_ok=False))))
    runtime = _runtime([source])
    asyncio.run(runtime.collect_once())
    warnings = runtime.store.snapshot().sources["slurm"].warnings
    assert any("unreadable job record" in w for w in warnings), warnings  # the \x1f name, dropped
    _check_everything(runtime, "T\ufffdX")


def test_rest_source_end_to_end() -> None:
    version = "v0.0.40"
    _Rest.docs = {
        "/openapi/v3": json.dumps({"paths": {f"/slurm/{version}/jobs": {}}}).encode(),
        f"/slurm/{version}/nodes": _dumps(_hostile_nodes(json.loads((FIX / f"synth_rest_{version}_nodes.json").read_text()))),
        f"/slurm/{version}/jobs": _dumps(_hostile_jobs(json.loads((FIX / f"synth_rest_{version}_jobs.json").read_text()))),
    }  # diag answers 500 with a hostile error text
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Rest)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        source = build_slurm_source(SlurmSettings(backend="rest", rest_url=f"http://127.0.0.1:{server.server_port}"))
        runtime = _runtime([source])
        _check_everything(runtime, "T\ufffdX")
        asyncio.run(source.close())
    finally:
        server.shutdown()


def test_demo_source_end_to_end() -> None:
    from hpctui.sources.demo.source import DemoSource

    source = DemoSource(size=8, seed=1)
    jobs = sorted((j for j in source.sim.workload.jobs.values() if j.state == "RUNNING"),
                  key=lambda j: -j.gpus_per_node * j.num_nodes)
    jobs[0].name = "T\x1b]0;PWNED\x07X"
    jobs[0].reason = "\x1b[2Jx"
    jobs[0].cached = None
    source.sim.workload.changed = True
    source.sim.drain(next(iter(source.sim.specs)).name, "\x1b]52;c;aGk=\x1b\\", "root", 0.0)
    runtime = _runtime([source])
    _check_everything(runtime, "T\ufffdX")


def test_nodes_still_shown_when_jobs_cannot_be_read_and_vice_versa(tmp_path: Path) -> None:
    bin_dir = _cli_bin(tmp_path, json_ok=True)
    _tool(bin_dir, "squeue", 'echo "squeue: error: Invalid user for SlurmUser" >&2; exit 1')
    source = build_slurm_source(SlurmSettings(backend="cli", bin_dir=str(bin_dir)))
    result: SourceResult = asyncio.run(source.collect())
    assert result.slurm_nodes and result.slurm_jobs is None
    assert any(w.startswith("jobs unavailable") for w in result.warnings)
    _tool(bin_dir, "squeue", f'cat "{tmp_path}/squeue.json"')
    _tool(bin_dir, "sinfo", 'echo "sinfo: error: oops" >&2; exit 1')
    _tool(bin_dir, "scontrol", 'echo "scontrol: error: oops" >&2; exit 1')
    result = asyncio.run(source.collect())
    assert result.slurm_jobs and result.slurm_nodes is None
    assert any(w.startswith("nodes unavailable") for w in result.warnings)
