"""Data behind the views (issue #12/#10): squeue TIME/TIME_LEFT, Slurm priority on every path,
partitions from scontrol and slurmrestd, the demo's partitions, the audit trail's entries and filter."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from hpctui.actions.audit_view import AuditFilter, audit_entries, load_tail, parse_duration_s, read_tail, truncate
from hpctui.core.runtime import demo_runtime
from hpctui.model import SlurmJob, SlurmPartition
from hpctui.sources.slurm.parse import parse_jobs_json, parse_scontrol_jobs, parse_squeue_text
from hpctui.sources.slurm.parse.partitions import parse_partition_records_json, parse_scontrol_partitions
from hpctui.ui.fmt import job_time_left_text, job_time_text, squeue_duration

FIX = Path(__file__).parent / "fixtures" / "slurm"
NOW = 1_750_000_000.0


# -- TIME / TIME_LEFT ------------------------------------------------------------------------------
@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0:00"), (59, "0:59"), (61, "1:01"), (3600, "1:00:00"), (86399, "23:59:59"),
    (86400, "1-00:00:00"), (3 * 86400 + 4 * 3600 + 5 * 60 + 6, "3-04:05:06"), (None, "N/A"), (-5, "0:00"),
])
def test_squeue_duration(seconds: float | None, text: str) -> None:
    assert squeue_duration(seconds) == text


def test_time_of_a_pending_job_is_zero_and_its_time_left_na() -> None:
    assert job_time_text(None, "PENDING", NOW) == "0:00"
    assert job_time_left_text(None, "PENDING", 60, NOW) == "N/A"
    # a pending job with an *expected* start time (the backfill estimate) has not run either
    assert job_time_text(NOW + 600, "PENDING", NOW) == "0:00"
    assert job_time_left_text(NOW + 600, "PENDING", 60, NOW) == "N/A"


def test_running_job_elapsed_and_left_past_one_day() -> None:
    start = NOW - (86400 + 2 * 3600 + 3 * 60 + 4)  # 1 day 2:03:04 ago
    assert job_time_text(start, "RUNNING", NOW) == "1-02:03:04"
    assert job_time_left_text(start, "RUNNING", 3 * 1440, NOW) == "1-21:56:56"  # 3 days − elapsed
    assert job_time_left_text(start, "RUNNING", 60, NOW) == "0:00"  # over its limit: never negative
    assert job_time_left_text(start, "RUNNING", None, NOW) == "UNLIMITED"


def test_finished_job_time_is_start_to_end() -> None:
    assert job_time_text(NOW - 7200, "COMPLETED", NOW, end_time=NOW - 3600) == "1:00:00"


# -- PRIORITY on every Slurm path ---------------------------------------------------------------------
def _check_priorities(jobs: list[SlurmJob]) -> None:
    live = [j for j in jobs if j.state in ("PENDING", "RUNNING")]
    assert live and all(j.priority is not None for j in live), [(j.job_id, j.priority) for j in live]
    assert any((j.priority or 0) > 0 for j in live)
    held = [j for j in live if j.reason == "JobHeldUser"]
    assert all(j.priority == 0 for j in held)  # squeue shows 0 for a held job


@pytest.mark.parametrize("name", ["cli_squeue.json", "rest_v0.0.36_jobs.json", "rest_v0.0.37_jobs.json",
                                  "rest_v0.0.38_jobs.json", "synth_rest_v0.0.40_jobs.json",
                                  "synth_rest_v0.0.44_jobs.json"])
def test_priority_from_json(name: str) -> None:
    _check_priorities(list(parse_jobs_json((FIX / name).read_bytes())))


def test_priority_from_squeue_text_and_scontrol() -> None:
    _check_priorities(list(parse_squeue_text((FIX / "cli_squeue_parsable.txt").read_text(), sep="|")))
    jobs = parse_scontrol_jobs((FIX / "cli_scontrol_show_job_detail_oneliner.txt").read_text())
    assert jobs and all(j.priority is not None for j in jobs)


def test_priority_from_the_demo() -> None:
    rt = demo_runtime(size=64, seed=0, clock=lambda: NOW)
    asyncio.run(rt.collect_once())
    _check_priorities(list(rt.store.snapshot().jobs))


# -- partitions ---------------------------------------------------------------------------------------
def test_scontrol_partitions_real_capture() -> None:
    parts = {p.name: p for p in parse_scontrol_partitions((FIX / "cli_scontrol_show_partition_oneliner.txt").read_text())}
    assert parts["cpu"] == SlurmPartition(name="cpu", state="UP", default=True, max_time_min=None,
                                          max_time_unlimited=True, default_time_min=60, nodes="cpu[01-04]",
                                          total_nodes=4, total_cpus=128)
    assert (parts["gpu"].default, parts["gpu"].max_time_min, parts["gpu"].max_time_unlimited) == (False, 2880, False)
    assert parts["debug"].max_time_min == 30 and parts["debug"].nodes == "cpu[01-04],gpu[01-04]"


def test_scontrol_partitions_state_drop_and_sanitize() -> None:
    dropped: list[str] = []
    text = ("PartitionName=maint\x1b[31m State=DRAIN Default=NO MaxTime=1-00:00:00 Nodes=n[1-2] TotalNodes=2\n"
            "State=UP Default=YES\n")
    (p,) = parse_scontrol_partitions(text, on_invalid=dropped.append)
    assert p.state == "DRAIN" and "\x1b" not in p.name and p.max_time_min == 1440 and len(dropped) == 1


def test_rest_partitions_v0038_real_capture() -> None:
    parts = {p.name: p for p in parse_partition_records_json((FIX / "rest_v0.0.38_partitions.json").read_bytes())}
    assert parts["cpu"].state == "UP" and parts["cpu"].default is True and parts["cpu"].max_time_unlimited
    assert parts["cpu"].default_time_min == 60 and parts["cpu"].total_nodes == 4
    assert parts["gpu"].default is False and parts["gpu"].max_time_min == 2880


def test_rest_partitions_nested_shape() -> None:
    """v0.0.39+ shape (synthesized from the OpenAPI schema; no capture of a 23.02+ slurmrestd here)."""
    doc = {"meta": {"plugin": {"type": "openapi/slurmctld", "data_parser": "data_parser/v0.0.40"}}, "errors": [],
           "partitions": [{"name": "gpu", "partition": {"state": ["DOWN"]}, "flags": ["DEFAULT"],
                           "maximums": {"time": {"set": True, "infinite": False, "number": 2880}},
                           "defaults": {"time": {"set": True, "infinite": False, "number": 60}},
                           "nodes": {"configured": "gpu[01-04]", "total": 4}, "cpus": {"total": 256}},
                          {"name": "long", "partition": {"state": ["UP"]},
                           "maximums": {"time": {"set": True, "infinite": True, "number": 0}}}]}
    gpu, long = parse_partition_records_json(json.dumps(doc), "v0.0.40")
    assert (gpu.state, gpu.default, gpu.max_time_min, gpu.nodes, gpu.total_nodes, gpu.total_cpus) == (
        "DOWN", True, 2880, "gpu[01-04]", 4, 256)
    assert long.max_time_unlimited and long.default is None


def test_demo_reports_partitions_and_follows_partition_state() -> None:
    rt = demo_runtime(size=64, seed=0, clock=lambda: NOW)
    asyncio.run(rt.collect_once())
    parts = {p.name: p for p in rt.store.snapshot().partitions}
    assert set(parts) == {"h100", "h200", "debug", "cpu"} and parts["h100"].default
    assert parts["cpu"].max_time_unlimited and parts["h200"].state == "UP"
    source = rt.sources[0]
    source.partition_state["h200"] = "DRAIN"  # what an executed partition_state action leaves
    asyncio.run(rt.collect_once())
    assert {p.name: p.state for p in rt.store.snapshot().partitions}["h200"] == "DRAIN"


# -- audit trail ----------------------------------------------------------------------------------------
def _records() -> list[dict[str, object]]:
    base = {"cluster": "demo", "source": "demo", "commands": ["scontrol update NodeName=gpu[0001-0002] State=DRAIN"]}
    return [
        {**base, "phase": "intent", "id": "a1", "time": NOW - 7200, "user": "alice", "action": "drain",
         "targets": ["gpu0001", "gpu0002"], "params": {"reason": "xid 79"}},
        {**base, "phase": "outcome", "id": "a1", "time": NOW - 7200, "finished": NOW - 7199, "user": "alice",
         "action": "drain", "targets": ["gpu0001", "gpu0002"], "params": {"reason": "xid 79"}, "refused": None,
         "results": [{"target": "gpu0001", "ok": True, "message": "ok"},
                     {"target": "gpu0002", "ok": False, "message": "x" * 1000}]},
        {**base, "phase": "intent", "id": "b2", "time": NOW - 60, "user": "bob", "action": "resume",
         "targets": ["gpu[0010-0012]"], "params": {}},
        {**base, "phase": "outcome", "id": None, "time": NOW - 30, "finished": NOW - 30, "user": "bob",
         "action": "cancel_jobs", "targets": ["17"], "params": {}, "refused": "read-only mode", "results": []},
        {**base, "phase": "outcome", "id": "c3", "time": NOW - 10, "finished": NOW - 9, "user": "root\x1b[2J",
         "action": "partition_state", "targets": ["h200"], "params": {"state": "DRAIN"}, "refused": None,
         "results": [{"target": "h200", "ok": True, "message": "ok"}]},
        {**base, "phase": "outcome", "id": None, "time": NOW - 20000, "user": "carol", "action": "reboot",
         "targets": ["gpu0005"], "params": {}, "refused": None,
         "results": [{"target": "gpu0005", "ok": False, "message": "interrupted: outcome unknown, check the next"}]},
        {**base, "phase": "outcome", "id": "zz", "time": NOW, "cluster": "other", "user": "eve", "action": "drain",
         "targets": ["x1"], "params": {}, "results": []},
    ]


def test_audit_entries_join_intent_and_outcome() -> None:
    entries = audit_entries(_records(), "demo")
    assert [(e.action, e.result) for e in entries] == [
        ("partition_state", "ok"), ("cancel_jobs", "refused"), ("resume", "interrupted"), ("drain", "failed"),
        ("reboot", "interrupted")]
    drain = entries[-2]
    assert drain.reason == "xid 79" and len(drain.failed) == 1 and drain.finished == NOW - 7199
    assert "\x1b" not in entries[0].user  # the file is input: sanitized on the way in
    assert truncate("x" * 1000).endswith("(600 more characters)")


@pytest.mark.parametrize(("text", "actions"), [
    ("", ["partition_state", "cancel_jobs", "resume", "drain", "reboot"]),
    ("user:alice", ["drain"]),
    ("action:drain", ["drain"]),
    ("target:gpu0011", ["resume"]),  # inside the hostlist gpu[0010-0012]
    ("target:gpu[0002-0003]", ["drain"]),
    ("since:5m", ["partition_state", "cancel_jobs", "resume"]),
    ("since:1h user:bob", ["cancel_jobs", "resume"]),
    ("result:failed", ["drain"]),
    ("result:interrupted", ["resume", "reboot"]),
    ("xid", ["drain"]),
    ("h200 action:partition", ["partition_state"]),
])
def test_audit_filter(text: str, actions: list[str]) -> None:
    rule = AuditFilter.parse(text)
    assert rule.errors == ()
    assert [e.action for e in audit_entries(_records(), "demo") if rule.match(e, NOW)] == actions


def test_audit_filter_errors_are_reported_not_raised() -> None:
    rule = AuditFilter.parse("since:soon result:maybe user:")
    assert len(rule.errors) == 3 and rule.since_s is None and rule.result is None
    assert parse_duration_s("90s") == 90 and parse_duration_s("2d") == 172800 and parse_duration_s("1x") is None


def _big_audit_file(path: Path, *, megabytes: int = 50) -> int:
    """An audit file of ``megabytes`` MB: drain records of about 10 KB each, numbered by ``seq``."""
    pad = "p" * 10_000
    lines = []
    size = 0
    seq = 0
    while size < megabytes << 20:
        rec = {"phase": "outcome", "id": f"r{seq}", "time": NOW + seq, "cluster": "demo", "user": "alice",
               "action": "drain", "source": "demo", "targets": [f"gpu{seq:06d}"], "params": {"reason": pad},
               "commands": [], "refused": None, "results": [{"target": f"gpu{seq:06d}", "ok": True, "message": "ok"}]}
        line = json.dumps(rec) + "\n"
        lines.append(line)
        size += len(line)
        seq += 1
    path.write_text("".join(lines))
    return seq


def test_audit_tail_of_a_huge_file_reads_only_its_end(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    total = _big_audit_file(path)  # 50 MB, ~5,200 records
    stamp, records, cut = read_tail(path)
    assert cut and 0 < len(records) <= (4 << 20) // 10_000 + 1  # only the newest 4 MB were parsed
    assert records[-1]["id"] == f"r{total - 1}"  # the newest record is there
    seqs = [int(str(r["id"])[1:]) for r in records]
    assert seqs == list(range(total - len(records), total))  # a contiguous tail; the cut first line skipped
    tail = load_tail(path, "demo")
    assert tail is not None and tail.cut and tail.records == len(records)
    assert tail.entries[0].targets == (f"gpu{total - 1:06d}",)  # newest first
    assert load_tail(path, "demo", tail.stamp) is None  # unchanged: nothing read
    assert load_tail(path, "demo", stamp) is None and stamp == tail.stamp
    _, few, few_cut = read_tail(path, max_records=10)
    assert few_cut and [r["id"] for r in few] == [f"r{i}" for i in range(total - 10, total)]


def test_audit_tail_small_file_missing_file_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    tail = load_tail(path, "demo")
    assert tail is not None and tail.entries == [] and tail.stamp == (0, 0)  # nothing audited yet: no error
    assert load_tail(path, "demo", (0, 0)) is None
    path.write_text("".join(json.dumps(r) + "\n" for r in _records()) + '{"phase": "outc')  # torn by a crash
    tail = load_tail(path, "demo")
    assert tail is not None and not tail.cut
    assert [e.action for e in tail.entries] == [e.action for e in audit_entries(_records(), "demo")]


# -- partitions through the Slurm source (fake CLI tools, a fake slurmrestd) --------------------------
def _tool(bin_dir: Path, name: str, script: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(0o755)


def test_cli_source_reads_partitions_with_one_scontrol_call(tmp_path: Path) -> None:
    from hpctui.sources.slurm import SlurmSettings, build_slurm_source

    _tool(tmp_path, "sinfo", f"cat {FIX / 'cli_sinfo.json'}")
    _tool(tmp_path, "squeue", f"cat {FIX / 'cli_squeue.json'}")
    _tool(tmp_path, "sdiag", f"cat {FIX / 'cli_sdiag.txt'}")
    _tool(tmp_path, "scontrol", f'[ "$*" = "-o show partition" ] && exec cat {FIX / "cli_scontrol_show_partition_oneliner.txt"}'
                                "\nexit 1")

    async def go() -> None:
        src = build_slurm_source(SlurmSettings(backend="cli", bin_dir=str(tmp_path), queue_read="json"))
        r = await src.collect()  # (queue_read auto would add the hybrid's text call to the first refresh)
        assert [p.name for p in r.partitions or ()] == ["cpu", "gpu", "debug"]
        assert src.calls.count("scontrol -o show partition") == 1 and len(src.calls) == 6  # + reservations, the topology (once)
        _tool(tmp_path, "scontrol", "echo 'slurm_load_partitions: Access denied' >&2; exit 1")
        r = await src.collect()  # partitions are optional: nodes and jobs stay, a warning says why
        assert r.partitions is None and r.slurm_nodes and r.slurm_jobs
        assert any("partitions unavailable" in w for w in src.warnings)

    asyncio.run(go())


def test_rest_source_reads_partitions() -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from hpctui.sources.slurm import SlurmSettings, build_slurm_source

    docs = {"/openapi/v3": json.dumps({"paths": {"/slurm/v0.0.38/jobs": {}}}).encode()}
    for what in ("nodes", "jobs", "diag", "partitions"):
        docs[f"/slurm/v0.0.38/{what}"] = (FIX / f"rest_v0.0.38_{what}.json").read_bytes()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = docs.get(self.path.rstrip("/"), b"{}")
            self.send_response(200 if self.path.rstrip("/") in docs else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        async def go() -> None:
            src = build_slurm_source(SlurmSettings(backend="rest", rest_url=f"http://127.0.0.1:{server.server_port}"))
            try:
                r = await src.collect()
                parts = {p.name: p for p in r.partitions or ()}
                assert set(parts) == {"cpu", "gpu", "debug"} and parts["cpu"].default and parts["gpu"].state == "UP"
                assert sum(c.endswith("/partitions") for c in src.calls) == 1
            finally:
                await src.close()

        asyncio.run(go())
    finally:
        server.shutdown()


# -- hostlist folding is remembered across snapshots -----------------------------------------------------
def test_unchanged_node_sets_are_not_refolded_on_the_next_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    import msgspec

    import hpctui.model.hostlist as hl
    from hpctui.ui.screens.drained import drained_rows
    from hpctui.ui.screens.partitions import partition_rows

    real = hl._hostlist.collect_hostlist
    calls: list[int] = []

    def counting(names: list[str]) -> str:
        calls.append(len(names))
        return str(real(names))

    monkeypatch.setattr(hl._hostlist, "collect_hostlist", counting)
    hl._collect_tuple.cache_clear()  # what other tests folded before does not count
    t = [NOW]
    rt = demo_runtime(size=64, seed=0, clock=lambda: t[0])
    sim = rt.sources[0].sim  # type: ignore[attr-defined]
    for i in range(10, 40):
        sim.drain(f"gpu{i:04d}", "mass drain", "ops", NOW)
    asyncio.run(rt.collect_once())
    first = rt.store.snapshot()
    rows = drained_rows(msgspec.structs.replace(first, partitions=()))
    parts = partition_rows(msgspec.structs.replace(first, partitions=()))  # no declared lists: folded here
    mass = next(r for r in rows if r.reason == "mass drain")
    assert mass.nodelist == "gpu[0010-0039]" and len(mass.nodes) == 30
    assert calls and any(r.nodelist for r in parts)
    calls.clear()
    t[0] += 2.0
    asyncio.run(rt.collect_once())  # the next poll: new snapshot objects, the same node sets
    second = rt.store.snapshot()
    assert second is not first
    assert [r.nodelist for r in drained_rows(second)] == [r.nodelist for r in rows]
    assert [r.nodelist for r in partition_rows(msgspec.structs.replace(second, partitions=()))] == [
        r.nodelist for r in parts]
    assert calls == []  # nothing folded again
    sim.drain("gpu0050", "mass drain", "ops", NOW)  # the set changed: folded once more
    t[0] += 2.0
    asyncio.run(rt.collect_once())
    assert "gpu[0010-0039,0050]" in [r.nodelist for r in drained_rows(rt.store.snapshot())]
    assert calls
