"""No cluster needed: the Slurm source under load, partial failures, odd targets, stuck peers.

Fake Slurm tools (shell scripts put first on PATH via ``bin_dir``) stand in for the CLI.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import threading
import types
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from hpctui.actions.executor import ActionExecutor
from hpctui.core.poller import Poller
from hpctui.core.store import Store
from hpctui.model import ClusterSnapshot, Node, SlurmJob, SlurmNodeInfo
from hpctui.model.action import ActionKind
from hpctui.sources.base import SourceError
from hpctui.sources.slurm import SlurmSettings, build_slurm_source
from hpctui.sources.slurm import actions as slurm_actions
from hpctui.sources.slurm import backend as slurm_backend
from hpctui.sources.slurm import runner as slurm_runner
from hpctui.sources.slurm.backend import Collected, parse_off_loop
from hpctui.sources.slurm.jwt import JwtProvider
from hpctui.sources.slurm.rest import RestBackend
from hpctui.sources.slurm.runner import CommandTimeout, Runner
from hpctui.sources.slurm.verify import JobRow, rows_for, still_alive

FIX = Path(__file__).parent / "fixtures" / "slurm"


def tool(bin_dir: Path, name: str, script: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(0o755)


def cli_source(bin_dir: Path, **kw: Any) -> Any:
    return build_slurm_source(SlurmSettings(backend="cli", bin_dir=str(bin_dir), **kw))


# -- 1. parsing off the event loop --------------------------------------------------------
def test_big_documents_are_parsed_in_a_worker_thread() -> None:
    seen: list[int] = []

    def fn(data: bytes) -> int:
        seen.append(threading.get_ident())
        return len(data)

    async def go() -> None:
        assert await parse_off_loop(fn, b"x" * 100) == 100
        assert await parse_off_loop(fn, b"x" * (slurm_backend.PARSE_IN_THREAD_BYTES + 1)) > 0

    asyncio.run(go())
    assert seen[0] == threading.get_ident() and seen[1] != threading.get_ident()


def test_cli_big_squeue_json_is_parsed_in_a_thread(tmp_path: Path) -> None:
    """A big squeue --json goes to worker threads; the small sinfo/sdiag documents do not."""
    doc = json.loads((FIX / "cli_squeue.json").read_bytes())
    doc["jobs"] = doc["jobs"] * 400
    big = tmp_path / "squeue.json"
    big.write_text(json.dumps(doc))
    assert big.stat().st_size > slurm_backend.PARSE_IN_THREAD_BYTES
    tool(tmp_path, "sinfo", f"cat {FIX / 'cli_sinfo.json'}")
    tool(tmp_path, "squeue", f"cat {big}")
    tool(tmp_path, "sdiag", f"cat {FIX / 'cli_sdiag.txt'}")
    threads: list[str] = []
    real = slurm_backend.asyncio.to_thread

    async def spy(fn: Any, *args: Any) -> Any:
        threads.append(getattr(fn, "__name__", "?"))
        return await real(fn, *args)

    async def go() -> None:
        src = cli_source(tmp_path, queue_read="json")  # the JSON read (the hybrid's text parse goes to a thread too)
        slurm_backend.asyncio.to_thread = spy  # type: ignore[assignment]
        try:
            r = await src.collect()
        finally:
            slurm_backend.asyncio.to_thread = real
        assert len(r.slurm_jobs or ()) == 14 * 400 and r.slurm_nodes
        assert r.controller is not None and r.controller.reachable

    asyncio.run(go())
    # only the big squeue document went to threads: read as it arrives (feed), then checked (finish)
    assert set(threads) == {"feed", "finish"}


# -- 1. cancel verification reads only the targets ------------------------------------------
def test_cli_cancel_verifies_only_the_target_jobs(tmp_path: Path) -> None:
    log = tmp_path / "log"
    tool(tmp_path, "scancel", f'echo "scancel $*" >> {log}')
    tool(tmp_path, "squeue", f'echo "squeue $*" >> {log}\necho "41|41|CANCELLED"\necho "50|42_[3-4]|CANCELLED"')

    async def go() -> None:
        src = cli_source(tmp_path)
        res = await src.cli.act(ActionKind.CANCEL_JOBS, ("41", "42_[3-4]"), {})
        assert [r.ok for r in res] == [True, True], res
        assert all("verified" in r.message for r in res)

    asyncio.run(go())
    assert log.read_text().splitlines() == [
        "scancel 41", "scancel 42_[3-4]", "squeue -h -t all -j 41,42 -o %A|%i|%T"]


def test_cli_cancel_that_did_not_happen_is_a_failure(tmp_path: Path) -> None:
    tool(tmp_path, "scancel", "exit 0")
    tool(tmp_path, "squeue", 'echo "41|41|RUNNING"')

    async def go() -> None:
        res = await cli_source(tmp_path).cli.act(ActionKind.CANCEL_JOBS, ("41",), {})
        assert not res[0].ok and res[0].message == "scancel returned 0 but job is still RUNNING"

    asyncio.run(go())


def test_cli_cancel_of_a_purged_job_counts_as_gone(tmp_path: Path) -> None:
    tool(tmp_path, "scancel", "exit 0")
    tool(tmp_path, "squeue", 'echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1')

    async def go() -> None:
        res = await cli_source(tmp_path).cli.act(ActionKind.CANCEL_JOBS, ("41",), {})
        assert res[0].ok and "verified" in res[0].message

    asyncio.run(go())


def test_verify_rows_of_plain_jobs_tasks_and_ranges() -> None:
    rows = [JobRow("41", "41", "RUNNING"), JobRow("60", "50_1", "CANCELLED"), JobRow("50", "50_[2-9%2]", "PENDING"),
            JobRow("61", "51_7", "COMPLETED")]
    assert still_alive("41", rows) == "RUNNING"
    assert still_alive("50", rows) == "PENDING"  # a bare array id: every task must be gone
    assert still_alive("50_1", rows) is None
    assert still_alive("50_[5-6]", rows) == "PENDING" and still_alive("50_[10-12]", rows) is None
    assert still_alive("61", rows) is None and [r.display_id for r in rows_for("60", rows)] == ["50_1"]
    assert still_alive("99", rows) is None


# -- 2. the whole-refresh budget ---------------------------------------------------------------
def test_refresh_budget_matches_the_poller_guard_and_names_the_cause() -> None:
    src = build_slurm_source(SlurmSettings(backend="cli", timeout_s=0.1))
    assert src.timeout_s == pytest.approx(0.3)
    store = Store("t")
    poller = Poller([src], store)
    assert poller._timeout_for(src) == pytest.approx(0.3 + 0.15)

    class Hung:
        name = "cli"
        calls = ["sinfo --json"]

        def reset_calls(self) -> None:
            pass

        async def collect(self) -> Collected:
            await asyncio.sleep(30)
            raise AssertionError

        async def close(self) -> None:
            pass

    src.cli = Hung()
    src.backend = src.cli

    async def go() -> None:
        assert not await poller.poll_once(src)  # the source's own budget fired (the error below names it)

    asyncio.run(go())
    err = store.health()[src.name].last_error or ""
    assert "slurmctld unreachable: no complete answer within 0.3s (last call: sinfo --json)" in err, err


# -- 3. optional data never sinks a refresh ----------------------------------------------------
def test_sdiag_refused_keeps_nodes_and_jobs(tmp_path: Path) -> None:
    tool(tmp_path, "sinfo", f"cat {FIX / 'cli_sinfo.json'}")
    tool(tmp_path, "squeue", f"cat {FIX / 'cli_squeue.json'}")
    tool(tmp_path, "sdiag", "echo 'slurm_get_statistics: Access/permission denied' >&2; exit 1")

    async def go() -> None:
        src = cli_source(tmp_path)
        r = await src.collect()
        assert len(r.slurm_nodes or {}) == 8 and len(r.slurm_jobs or ()) == 14
        assert r.controller is not None and r.controller.reachable and "permission denied" in (r.controller.detail or "")
        assert any("controller health unavailable" in w for w in src.warnings)

    asyncio.run(go())


def test_dead_controller_still_fails_the_refresh(tmp_path: Path) -> None:
    for name in ("sinfo", "squeue", "sdiag"):
        tool(tmp_path, name, "echo 'Unable to contact slurm controller (connect failure)' >&2; exit 1")

    async def go() -> None:
        with pytest.raises(SourceError, match="slurmctld unreachable"):
            await cli_source(tmp_path).collect()

    asyncio.run(go())


def test_one_unreadable_job_or_node_is_dropped_with_a_warning(tmp_path: Path) -> None:
    nodes = json.loads((FIX / "cli_sinfo.json").read_bytes())
    nodes["nodes"][0]["name"] = "cpu01;rm -rf /"
    jobs = json.loads((FIX / "cli_squeue.json").read_bytes())
    jobs["jobs"][0]["nodes"] = "gpu[01-"
    (tmp_path / "n.json").write_text(json.dumps(nodes))
    (tmp_path / "j.json").write_text(json.dumps(jobs))
    tool(tmp_path, "sinfo", f"cat {tmp_path / 'n.json'}")
    tool(tmp_path, "squeue", f"cat {tmp_path / 'j.json'}")
    tool(tmp_path, "sdiag", f"cat {FIX / 'cli_sdiag.txt'}")

    async def go() -> None:
        src = cli_source(tmp_path)
        r = await src.collect()
        assert len(r.slurm_nodes or {}) == 7 and len(r.slurm_jobs or ()) == 13
        assert any("1 unreadable node record(s) dropped" in w and "cpu01;rm" in w for w in src.warnings), src.warnings
        assert any("1 unreadable job record(s) dropped" in w for w in src.warnings)
        assert "scontrol -o show nodes" not in src.calls  # no text fallback for one bad record

    asyncio.run(go())


# -- 4. one index for "jobs on nodes", cached per snapshot ----------------------------------
def _snap(jobs: tuple[SlurmJob, ...]) -> ClusterSnapshot:
    nodes = {n: Node(name=n, slurm=SlurmNodeInfo(base_state="MIXED", partitions=("gpu",), gpus_total=8))
             for n in ("gpu01", "gpu02")}
    return ClusterSnapshot(cluster="t", time=0.0, nodes=nodes, jobs=jobs)


def test_drain_affects_and_on_nodes_agree_and_plans_reuse_the_index() -> None:
    jobs = (SlurmJob(job_id=7, state="RUNNING", nodes="gpu01"), SlurmJob(job_id=8, state="STAGE_OUT", nodes="gpu02"),
            SlurmJob(job_id=9, state="PENDING"))
    snap = _snap(jobs)
    src = build_slurm_source(SlurmSettings(backend="cli"))
    plan = src.plan(ActionKind.DRAIN_NODES, ("gpu[01-02]",), {"reason": "x"}, snap)
    index = slurm_actions._job_index(snap)
    assert [a.split(" (")[0] for a in plan.affected] == ["job 7", "job 8"]
    ex = ActionExecutor([src], None, cluster="t")
    plan = ex.plan(ActionKind.CANCEL_JOBS, (), {"on_nodes": "gpu[01-02]"}, snap)
    assert sorted(plan.targets) == ["7", "8"] and "on_nodes" not in plan.params
    assert slurm_actions._job_index(snap) is index  # not rebuilt for the second plan


def test_backend_no_longer_expands_on_nodes() -> None:
    snap = _snap((SlurmJob(job_id=7, state="RUNNING", nodes="gpu01"),))
    plan = build_slurm_source(SlurmSettings(backend="cli")).plan(ActionKind.CANCEL_JOBS, (), {"on_nodes": "gpu01"}, snap)
    assert plan.targets == ()


# -- 5. pending array remainders and whole arrays ----------------------------------------------
def _array_snap() -> ClusterSnapshot:
    return _snap((
        SlurmJob(job_id=1234, array_job_id=1234, array_task_str="4-9%2", state="PENDING", user="bob", name="sweep"),
        SlurmJob(job_id=1240, array_job_id=1234, array_task_id=2, state="RUNNING", nodes="gpu01"),
        SlurmJob(job_id=1241, array_job_id=1234, array_task_id=3, state="RUNNING", nodes="gpu02"),
        SlurmJob(job_id=77, state="RUNNING", nodes="gpu01"),
    ))


def test_array_remainder_row_key_is_a_valid_target() -> None:
    src = build_slurm_source(SlurmSettings(backend="cli"))
    snap = _array_snap()
    plan = src.plan(ActionKind.HOLD_JOBS, ("1234_[4-9%2]",), {}, snap)
    assert plan.runnable, plan.errors
    assert plan.targets == ("1234_[4-9]",) and plan.commands == ("scontrol hold '1234_[4-9]'",)
    assert plan.affected == ("job 1234_[4-9%2] (bob, sweep) PENDING",)
    plan = src.plan(ActionKind.CANCEL_JOBS, ("1234_[2-3,5]",), {}, snap)
    assert plan.runnable and plan.commands == ("scancel '1234_[2-3,5]'",) and len(plan.affected) == 3
    for bad in ("1234_[4-9;ls]", "1234_[9-4]", "1234_[]", "1234_[4-9%]", "1234_[ 4]", "1234_[4-9]x", "1234_[1-20]"):
        plan = src.plan(ActionKind.CANCEL_JOBS, (bad,), {}, snap)
        assert not plan.runnable and plan.rejected_targets == (bad,), bad


def test_bare_array_id_says_it_hits_every_task() -> None:
    plan = build_slurm_source(SlurmSettings(backend="cli")).plan(ActionKind.CANCEL_JOBS, ("1234",), {}, _array_snap())
    assert plan.runnable and plan.targets == ("1234",)
    assert plan.affected[0].startswith("job array 1234: every task of the array (3 record(s)")
    assert {a.split(" (")[0] for a in plan.affected[1:]} == {"job 1234_[4-9%2]", "job 1234_2", "job 1234_3"}
    plan = build_slurm_source(SlurmSettings(backend="cli")).plan(ActionKind.CANCEL_JOBS, ("1240",), {}, _array_snap())
    assert plan.affected == ("job 1234_2 (?, ?) RUNNING on gpu01",)  # one task by its own job id


# -- 6. a child that SIGKILL cannot end --------------------------------------------------------
def test_unkillable_child_does_not_hang_the_action(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slurm_runner, "_kill_group", lambda proc: None)  # as if stuck in D state
    monkeypatch.setattr(slurm_runner, "KILL_WAIT_S", 0.3)

    async def go() -> None:
        with pytest.raises(CommandTimeout, match=r"unkillable: pid \d+ still there 0.3s after SIGKILL") as info:
            await Runner(timeout_s=0.2).run(["sleep", "30"])  # gave up after the bounded wait
        m = re.search(r"pid (\d+)", str(info.value))
        assert m
        os.kill(int(m.group(1)), signal.SIGKILL)
        await asyncio.sleep(0.3)  # let asyncio reap it and close its transport within this loop

    asyncio.run(go())


# -- 7. no token in errors; no control characters in reasons --------------------------------
@pytest.mark.parametrize(("script", "expect"), [
    ("echo SLURM_JWT=eyJsecret.eyJsecret.sig; exit 1", "exit status 1"),
    ("echo eyJsecret.eyJsecret.sig", "not shown"),
    ("echo 'scontrol: error: JWT authentication: not configured' >&2; echo eyJsecret; exit 1", "not configured"),
])
def test_scontrol_token_output_never_in_errors(tmp_path: Path, script: str, expect: str) -> None:
    tool(tmp_path, "scontrol", script)
    jwt = JwtProvider(token=None, from_scontrol=True, lifespan_s=60, runner=Runner(bin_dir=str(tmp_path)))

    async def go() -> None:
        with pytest.raises(SourceError) as info:
            await jwt.token()
        assert "secret" not in str(info.value) and expect in str(info.value), str(info.value)

    asyncio.run(go())


@pytest.mark.parametrize("reason", ["bad\x7f", "next\x85line", "a\u2028b", "a\u2029b", "tab\there", "nl\n"])
def test_reason_rejects_control_and_separator_characters(reason: str) -> None:
    snap = _snap(())
    plan = build_slurm_source(SlurmSettings(backend="cli")).plan(ActionKind.DRAIN_NODES, ("gpu01",), {"reason": reason}, snap)
    assert "reason must be a single line of printable text" in plan.errors


def test_reason_keeps_ordinary_unicode() -> None:
    plan = build_slurm_source(SlurmSettings(backend="cli")).plan(
        ActionKind.DRAIN_NODES, ("gpu01",), {"reason": "Xid 79 — GPU3 ü (ticket #42)"}, _snap(()))
    assert plan.runnable, plan.errors


# -- 8. a session from an old event loop is closed, not leaked --------------------------------
def test_rest_session_of_a_finished_loop_is_retired() -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            body = b"{}"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        settings = SlurmSettings(backend="rest", rest_url=f"http://127.0.0.1:{server.server_port}", rest_version="v0.0.38")
        rest = RestBackend(settings, JwtProvider(token=None, from_scontrol=False, lifespan_s=60, runner=Runner()))
        assert asyncio.run(rest.request("GET", "/x"))[0] == 200
        first = rest._session
        assert first is not None and not first.closed
        assert first.connector is not None
        socks = [p.transport.get_extra_info("socket") for conns in first.connector._conns.values() for p, _ in conns]
        assert socks and all(s.fileno() >= 0 for s in socks)  # a kept-alive connection of the finished loop

        async def second() -> int:
            status = (await rest.request("GET", "/x"))[0]
            await rest.close()
            return status

        assert asyncio.run(second()) == 200
        assert first.closed and rest._session is None
        assert all(s.fileno() == -1 for s in socks)  # its sockets were closed, not left to the GC
    finally:
        server.shutdown()


# -- 9. pyslurm: one worker thread, no pile-up behind a hung libslurm -------------------------
def test_pyslurm_hung_call_skips_polls_instead_of_piling_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    mod = types.ModuleType("pyslurm")
    mod.__version__ = "25.11.1"  # type: ignore[attr-defined]

    class Nodes(dict):  # type: ignore[type-arg]
        @classmethod
        def load(cls) -> Nodes:
            release.wait(10)
            return cls()

    class Jobs(dict):  # type: ignore[type-arg]
        @classmethod
        def load(cls) -> Jobs:
            return cls()

    mod.Nodes, mod.Jobs = Nodes, Jobs  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyslurm", mod)

    async def go() -> None:
        src = build_slurm_source(SlurmSettings(backend="pyslurm"))
        before = threading.active_count()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(src.collect(), timeout=0.2)
        for _ in range(5):
            with pytest.raises(SourceError, match="previous pyslurm call still running"):
                await src.collect()
        assert threading.active_count() <= before + 1
        release.set()
        for _ in range(50):
            try:
                r = await src.collect()
                break
            except SourceError:
                await asyncio.sleep(0.05)
        else:
            raise AssertionError("pyslurm backend never recovered")
        assert r.slurm_nodes == {} and r.slurm_jobs == ()
        await src.close()

    try:
        asyncio.run(go())
    finally:
        release.set()


def test_rest_sends_array_range_holds_to_the_cli_and_says_so() -> None:
    src = build_slurm_source(SlurmSettings(backend="rest", rest_url="http://127.0.0.1:1", rest_version="v0.0.38"))
    assert src.rest is not None
    src.backend = src.rest
    plan = src.plan(ActionKind.HOLD_JOBS, ("1234_[4-9%2]",), {}, _array_snap())
    assert plan.commands == ("scontrol hold '1234_[4-9]'",) and "misreports hold of array ranges" in plan.notes[0]
    plan = src.plan(ActionKind.CANCEL_JOBS, ("1234_[4-9%2]",), {}, _array_snap())
    assert plan.commands == ("DELETE /slurm/v0.0.38/job/1234_%5B4-9%5D",)  # DELETE of a range works on 22.05
    plan = src.plan(ActionKind.HOLD_JOBS, ("1240",), {}, _array_snap())
    assert plan.commands == ('POST /slurm/v0.0.38/job/1240 {"hold": true}',)


def test_cli_reuses_unchanged_jobs_between_refreshes(tmp_path: Path) -> None:
    """Slurm's pretty squeue --json is read as a stream; a second refresh of the same queue
    hands the store the same job objects (so everything downstream can skip them by identity)."""
    tool(tmp_path, "sinfo", f"cat {FIX / 'cli_sinfo.json'}")
    tool(tmp_path, "squeue", f"cat {FIX / 'cli_squeue.json'}")
    tool(tmp_path, "sdiag", f"cat {FIX / 'cli_sdiag.txt'}")

    async def go() -> tuple[Any, Any]:
        src = cli_source(tmp_path)
        return await src.collect(), await src.collect()

    first, second = asyncio.run(go())
    assert first.slurm_jobs and len(first.slurm_jobs) == len(second.slurm_jobs)
    assert all(a is b for a, b in zip(first.slurm_jobs, second.slurm_jobs, strict=True))


def test_garbage_is_not_repaired_whole() -> None:
    """Issue #19 §5: a document whose structure is broken (garbage after a '{') is refused by a
    skim, not run through the whole-text repair (~0.5 s per MB with the GIL held) first."""
    import random

    from hpctui.sources.slurm.parse.errors import repair_json

    rng = random.Random(19)
    garbage = b'{"jobs": [' + bytes(rng.randrange(256) for _ in range(200_000))
    assert repair_json(garbage) is None
    assert repair_json(garbage.decode("utf-8", "replace")) is None
    # a real repairable fault (an invalid UTF-8 byte in a job name) is still repaired
    assert repair_json(b'{"jobs": [{"name": "x\xff"}]}') == '{"jobs": [{"name": "x\ufffd"}]}'
