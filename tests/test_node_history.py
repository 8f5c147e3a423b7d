"""Node history, repeat offenders and accounting on demand (issue 24, parts 2 and 3).

Parsers read real captures (tests/fixtures/slurm: Slurm 22.05.8 and 25.11.7 beds with slurmdbd);
the queries run against fake tools printing them (tests/test_slurm_accounting.py's fake_tool);
merging, wording and the preview's advice are checked on hand-made events and on the demo.
The live counterpart is tests/slurm/test_live_node_history.py.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import msgspec
import pytest
from test_slurm_accounting import DBD_DOWN, calls, fake_tool, src

from hpctui.actions.events import audit_node_events
from hpctui.cli.main import main
from hpctui.core.runtime import demo_runtime
from hpctui.findings.nodehistory import (
    cause,
    merge_events,
    rank_offenders,
    release_advice,
    stored_node_events,
    summary,
)
from hpctui.model import Event, Severity
from hpctui.model.action import ActionKind
from hpctui.model.nodehistory import AcctQuery, NodeEvent, NodeRecord
from hpctui.sources.slurm import history
from hpctui.sources.slurm.accounting import ABSENT
from hpctui.sources.slurm.parse.acct import parse_events_text, parse_sacct_text, parse_sreport_gpu_text
from hpctui.sources.slurm.parse.errors import SlurmParseError

FIX = Path(__file__).parent / "fixtures" / "slurm"
DAY = 86400.0
T0 = 1_800_000_000.0


def fx(name: str) -> str:
    return (FIX / name).read_text()


# -- parsers on real captures ---------------------------------------------------------------------
@pytest.mark.parametrize("name", ["cli_sacctmgr_show_event_P.txt", "cli_25.11_sacctmgr_show_event_P.txt"])
def test_events_real_capture(name: str) -> None:
    events = parse_events_text(fx(name))
    by = {(e.node, e.reason): e for e in events}
    assert not any(e.reason == "cold-start" for e in events)  # slurmctld's UNK registration events
    gpu02 = [e for e in events if e.node == "gpu02"]
    assert len(gpu02) >= 2 and all(e.kind == "drain" and e.user == "root" and e.state == "DRAIN" for e in gpu02)
    assert gpu02[0].reason == "Xid 79 GPU fell off the bus (round 0)" and gpu02[0].end is not None
    down = by[("gpu03", "ECC|uncorrectable")]  # a '|' in the reason, the last field: kept whole
    assert down.kind == "down" and down.end is None and down.state == "DRAIN"  # StateRaw 513 = DOWN|DRAIN
    assert by[("cpu01", "Not responding")].kind == "down"  # 2049 = DOWN|NO_RESPOND (a killed slurmd)


def test_events_22_05_pipe_reason_in_the_middle_is_refused() -> None:
    """The first capture put Reason mid-format: its '|' shifted the columns. The format hpctui asks
    for ends with Reason; an answer in any other column order is refused, not misread."""
    with pytest.raises(SlurmParseError, match="unexpected columns"):
        parse_events_text(fx("cli_sacctmgr_show_event_P_reason_mid.txt"))
    assert "ECC|uncorrectable|root(0)" in fx("cli_sacctmgr_show_event_P_reason_mid.txt")


def test_events_short_row_costs_one_row() -> None:
    text = fx("cli_sacctmgr_show_event_P.txt") + "hpctuilab|gpu09|garbage\n"
    said: list[str] = []
    events = parse_events_text(text, on_invalid=said.append)
    assert len(events) == len(parse_events_text(fx("cli_sacctmgr_show_event_P.txt")))
    assert len(said) == 1 and "3 of 9 fields" in said[0]


def test_sacct_text_real_22_05() -> None:
    jobs = {j.job_id: j for j in parse_sacct_text(fx("cli_sacct_P_all.txt"))}
    assert (jobs["1"].state, jobs["1"].exit_code, jobs["1"].signal) == ("FAILED", 3, None)  # exit 3
    assert (jobs["3"].exit_code, jobs["3"].signal) == (None, 9)  # kill -9 $$
    assert jobs["2"].state == "TIMEOUT" and jobs["2"].elapsed_s == 76 and jobs["2"].gpus == 2
    assert jobs["6"].state == "CANCELLED"  # "CANCELLED by 0"
    assert jobs["7"].state == "NODE_FAIL" and jobs["7"].name == "pipe|name" and jobs["7"].nodes == "cpu01"
    assert jobs["5"].user == "alice" and jobs["5"].account == "physics" and jobs["7"].gpus is None


def test_sacct_text_real_25_11_and_why_not_json_on_22_05() -> None:
    jobs = {j.job_id: j for j in parse_sacct_text(fx("cli_25.11_sacct_P_all.txt"))}
    assert (jobs["1"].exit_code, jobs["2"].signal, jobs["4"].state, jobs["4"].exit_code) == (3, 9, "NODE_FAIL", 1)
    old = {j["job_id"]: j for j in json.loads(fx("cli_sacct_dead.json"))["jobs"]}
    assert old[1]["name"] == "fails" and old[1]["exit_code"] == {"status": "SUCCESS", "return_code": 0}  # wrong
    new = {j["job_id"]: j for j in json.loads(fx("cli_25.11_sacct_dead.json"))["jobs"]}
    assert new[1]["exit_code"]["return_code"]["number"] == 3  # fixed by 25.11, the text form is right on both


def test_sreport_real() -> None:
    usage = parse_sreport_gpu_text(fx("cli_sreport_gpu_acct_by_user.txt"))
    rows = {(u.account, u.user): u.gpu_hours for u in usage}
    assert rows[("ml", None)] == pytest.approx(1 / 60) and rows[("ml", "root")] == pytest.approx(1 / 60)
    assert rows[("physics", "alice")] == 0.0 and all(u.cluster == "hpctuilab" for u in usage)
    assert parse_sreport_gpu_text(fx("cli_25.11_sreport_gpu_acct_by_user_empty.txt")) == []  # not rolled up yet


# -- bounded queries against fake tools -------------------------------------------------------------
def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def test_sacct_query_argv_and_rows(tmp_path: Path) -> None:
    fake_tool(tmp_path, "sacct", stdout=fx("cli_sacct_P_dead.txt"))
    q = AcctQuery(start=T0 - DAY, end=T0, nodes="gpu01,cpu01", user="root", account="ml",
                  states=("failed", "NODE_FAIL"), limit=3)
    res = run(src(tmp_path).acct_jobs(q))
    assert res.available and [j.job_id for j in res.jobs] == ["1", "2", "3"]
    assert res.truncated and res.detail is not None and "more than 3 rows" in res.detail  # 4 rows, cap 3
    (argv,) = calls(tmp_path)
    start, end = history.slurm_time(T0 - DAY), history.slurm_time(T0)
    assert argv == (f"-P -X -a -N gpu01,cpu01 -u root -A ml -s FAILED,NODE_FAIL -S {start} -E {end} "
                    f"--format={history.SACCT_FORMAT}")


def test_sacct_errors_are_answers(tmp_path: Path) -> None:
    fake_tool(tmp_path, "sacct", stderr=fx("cli_sacct_unknown_user.err.txt").splitlines()[0], rc=1)
    res = run(src(tmp_path).acct_jobs(AcctQuery(start=T0 - DAY, end=T0, user="nosuchuser")))
    assert not res.jobs and res.detail == "sacct failed: sacct: error: Invalid user id: nosuchuser"
    fake_tool(tmp_path, "sacct", stderr=fx("cli_sacctmgr_no_accounting.txt"), rc=1)
    res = run(src(tmp_path).acct_jobs(AcctQuery(start=T0 - DAY, end=T0)))
    assert not res.available and res.detail == ABSENT


@pytest.mark.parametrize("bad", [
    {"user": "a b"}, {"account": "-x"}, {"nodes": "gpu[01-"}, {"nodes": "a;b"}, {"states": ("BOGUS",)},
    {"start": T0, "end": T0}, {"start": T0 - 400 * DAY},
])
def test_bad_filters_never_reach_an_argv(tmp_path: Path, bad: dict[str, object]) -> None:
    fake_tool(tmp_path, "sacct", stdout="")
    fields = {"start": T0 - DAY, "end": T0, **bad}
    with pytest.raises(ValueError):
        run(src(tmp_path).acct_jobs(AcctQuery(**fields)))  # type: ignore[arg-type]
    assert calls(tmp_path) == []


def test_output_cap_stops_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    row = fx("cli_sacct_P_all.txt").splitlines()[1] + "\n"
    fake_tool(tmp_path, "sacct", stdout=fx("cli_sacct_P_all.txt").splitlines()[0] + "\n" + row * 5000)
    monkeypatch.setattr(history, "MAX_OUTPUT", 4096)
    res = run(src(tmp_path).acct_jobs(AcctQuery(start=T0 - DAY, end=T0, limit=5000)))
    assert res.available and res.truncated and 0 < len(res.jobs) < 5000


def test_events_and_sreport_queries(tmp_path: Path) -> None:
    fake_tool(tmp_path, "sacctmgr", stdout=fx("cli_sacctmgr_show_event_P.txt"))
    fake_tool(tmp_path, "sreport", stdout=fx("cli_sreport_gpu_acct_by_user.txt"))
    s = src(tmp_path)
    ev = run(s.node_events("gpu[02-03]", T0 - DAY, T0))
    assert ev.available and len(ev.events) == 8 and ev.detail is None
    use = run(s.gpu_usage(T0 - DAY, T0, account="ml"))
    assert len(use.usage) == 5
    start, end = history.slurm_time(T0 - DAY), history.slurm_time(T0)
    assert calls(tmp_path) == sorted([
        f"-P show event event=node nodes=gpu[02-03] start={start} end={end} format={history.EVENT_FORMAT}",
        f"-P -T gres/gpu -t Minutes cluster AccountUtilizationByUser start={start} end={end} accounts=ml"])
    fake_tool(tmp_path, "sacctmgr", stderr=DBD_DOWN, rc=1)
    down = run(s.node_events(None, T0 - DAY, T0))
    assert down.available and down.detail is not None and down.detail.startswith("slurmdbd unreachable")


# -- merging, wording, ranking, advice -----------------------------------------------------------------
def ev(node: str, kind: str, t: float, reason: str | None = None, user: str | None = None,
       origin: str = "slurmdbd") -> NodeEvent:
    return NodeEvent(node=node, kind=kind, time=t, reason=reason, user=user, origin=origin)


def test_cause() -> None:
    assert cause("NHC: xid 79 on gpu3") == cause("GPU fell off the bus (Xid 79)") == cause("xid:79") == "Xid 79"
    assert cause("Not responding") == "Not responding" and cause(None) is None


def test_merge_folds_one_happening_seen_twice() -> None:
    dbd = [ev("g1", "drain", T0, "Xid 79", "root")]
    audit = [ev("g1", "drain", T0 + 3, "Xid 79", "alice", "audit"), ev("g1", "resume", T0 + 500, user="alice",
                                                                          origin="audit")]
    seen = [ev("g1", "drain", T0 + 60, origin="events"), ev("g1", "drain", T0 + 1000, origin="events")]
    merged = merge_events([dbd, audit, seen])
    assert [(e.kind, e.time, e.origin) for e in merged] == [
        ("drain", T0 + 1000, "events"), ("resume", T0 + 500, "audit"), ("drain", T0, "slurmdbd+audit+events")]
    assert merged[-1].user == "root"  # the first source's record wins, gaps filled from the later ones


def test_merge_pairs_each_record_with_its_nearest_twin() -> None:
    """Three drains 4 s apart (a real bed run): each audit record folds into its own slurmdbd event."""
    dbd = [ev("g", "drain", T0 + 4 * i, f"r{i}") for i in range(3)]
    audit = [ev("g", "drain", T0 + 4 * i + 1, user="alice", origin="audit") for i in range(3)]
    merged = merge_events([dbd, audit])
    assert [(e.reason, e.origin) for e in merged] == [(f"r{i}", "slurmdbd+audit") for i in (2, 1, 0)]


def test_merge_never_lends_a_reason_to_another_drain() -> None:
    """A real 25.11 bed run: slurmdbd never recorded the first of three drains 2.4 s apart (it came in
    the same second as the controller's registration). Each audit record folds only into the slurmdbd
    event with its own reason; the unrecorded drain stays, from the audit log alone, with its reason."""
    dbd = [ev("g", "drain", T0 + 2 + 2 * i, f"Xid 79 [{i}]") for i in (1, 2)]
    audit = [ev("g", "drain", T0 + 2.5 * i + 0.9, f"Xid 79 [{i}]", "alice", "audit") for i in range(3)]
    merged = merge_events([dbd, audit])
    assert sorted((e.reason, e.origin) for e in merged) == [
        ("Xid 79 [0]", "audit"), ("Xid 79 [1]", "slurmdbd+audit"), ("Xid 79 [2]", "slurmdbd+audit")]
    # a reason cut short by a display still folds; a missing one too
    cut = merge_events([[ev("g", "drain", T0, "Xid 79 GPU fell off the bus")],
                        [ev("g", "drain", T0 + 1, "xid 79 gpu fell", origin="audit")],
                        [ev("g", "drain", T0 + 2, origin="events")]])
    assert [(e.reason, e.origin) for e in cut] == [("Xid 79 GPU fell off the bus", "slurmdbd+audit+events")]


def test_summary_in_words() -> None:
    evs = [ev("g1", "drain", T0 - i * DAY, "Xid 79" if i < 3 else "NHC failed") for i in range(5)]
    evs += [ev("g1", "resume", T0 - i * DAY + 60, user="alice", origin="audit") for i in (1, 2)]
    rec = NodeRecord(node="g1", start=T0 - 30 * DAY, end=T0, events=evs)
    assert summary(rec) == "drained 5× in 30 days, 3× Xid 79, 2× NHC failed; resumed by alice twice"
    assert summary(NodeRecord(node="g2", start=T0 - 7 * DAY, end=T0)) == "nothing recorded this week"


def test_ranking_by_faults_then_recency_and_by_kind() -> None:
    evs = [ev("a", "drain", T0 - 1), ev("a", "down", T0 - 2), ev("b", "drain", T0 - 3), ev("b", "drain", T0 - 4),
           ev("c", "cordon", T0 - 5, origin="k8s"), ev("d", "resume", T0 - 6), ev("old", "drain", T0 - 40 * DAY)]
    ranked = rank_offenders(evs, T0 - 30 * DAY, T0)
    assert [(o.node, o.faults) for o in ranked] == [("a", 2), ("b", 2), ("c", 1)]
    assert [o.node for o in rank_offenders(evs, T0 - 30 * DAY, T0, kind="drain")] == ["b", "a"]


def test_release_advice() -> None:
    evs = [ev("g1", "drain", T0 - 5 * DAY, "Xid 79"), ev("g1", "resume", T0 - 4.9 * DAY, user="alice"),
           ev("g1", "drain", T0 - 2 * DAY, "NHC: xid 79"), ev("g1", "resume", T0 - 1.9 * DAY, user="alice"),
           ev("g1", "drain", T0 - 3600, "xid 79 again")]
    assert release_advice("g1", evs, T0) == "g1: resumed twice this week after Xid 79 — consider RMA"
    two = [ev("g2", "down", T0 - DAY, "Not responding"), ev("g2", "drain", T0 - 100, "Xid 48")]
    assert release_advice("g2", two, T0) == "g2: drained/down twice this week (1× Not responding, 1× Xid 48) — it keeps failing"
    assert release_advice("g3", [ev("g3", "drain", T0 - 100, "Xid 79")], T0) is None
    assert release_advice("g1", evs, T0 + 30 * DAY) is None  # a month later the week is clean


def test_stored_events_kubelet_cordons_and_slurm_drains() -> None:
    evs = [Event(time=T0, source="k8s", object="node/g1", severity=Severity.INFO,
                 message="NodeNotSchedulable: Node g1 status is now: NodeNotSchedulable"),
           Event(time=T0 + 9, source="k8s", object="node/g1", severity=Severity.INFO,
                 message="NodeSchedulable: Node g1 status is now: NodeSchedulable"),
           Event(time=T0, source="slurm", object="node/g2", severity=Severity.WARNING, message="drained by root: Xid 79"),
           Event(time=T0, source="gpu", object="gpu/g2/3", severity=Severity.ERROR, message="Xid 79")]
    got = [(e.node, e.kind, e.user, e.reason) for e in stored_node_events(evs)]
    assert got == [("g1", "cordon", None, "Node g1 status is now: NodeNotSchedulable"),
                   ("g1", "uncordon", None, "Node g1 status is now: NodeSchedulable"), ("g2", "drain", "root", "Xid 79")]


def test_audit_records_become_node_events() -> None:
    records = [
        {"phase": "outcome", "cluster": "c", "user": "alice", "action": "resume", "finished": T0,
         "targets": ["g[1-2]"], "params": {}, "results": [{"target": "g1", "ok": True}, {"target": "g2", "ok": False}]},
        {"phase": "outcome", "cluster": "c", "user": "bob", "action": "drain", "finished": T0, "refused": "read-only",
         "targets": ["g3"], "params": {"reason": "x"}, "results": []},
        {"phase": "outcome", "cluster": "other", "user": "bob", "action": "cordon", "finished": T0,
         "results": [{"target": "g4", "ok": True}]},
        {"phase": "outcome", "cluster": "c", "user": "bob", "action": "k8s_drain", "finished": "soon"},
        {"phase": "outcome", "cluster": "c", "user": "root", "action": "drain", "finished": T0 + 1,
         "params": {"reason": "Xid 79"}, "results": [{"target": "g5", "ok": True}]},
    ]
    got = [(e.node, e.kind, e.user, e.reason) for e in audit_node_events(records, "c")]
    assert got == [("g1", "resume", "alice", None), ("g5", "drain", "root", "Xid 79")]


# -- the demo, end to end: the history, the ranking, the resume preview, the audit ---------------------------------
def test_demo_node_history_ranking_and_resume_preview(tmp_path: Path) -> None:
    rt = demo_runtime(size=64, seed=1, clock=lambda: T0 + 100, start_time=T0, audit_path=tmp_path / "audit.jsonl")

    async def go() -> None:
        await rt.collect_once()
        x = rt.sources[0].sim.place.xid_node  # type: ignore[attr-defined]
        before = rt.plan_action(ActionKind.RESUME_NODES, [x], {})
        assert not any("consider RMA" in w for w in before.warnings)  # nothing read yet: no advice
        rec = await rt.node_record(x, 30 * DAY)
        assert summary(rec).startswith("drained 4× + down once in 30 days, 4× Xid 79; resumed by alice twice")
        assert len(rec.dead_jobs) == 6 and rec.problems == []
        ranked, problems, _ = await rt.offenders(30 * DAY)
        assert ranked[0].node == x and ranked[0].causes["Xid 79"] == 4 and problems == []
        assert ranked[0].dead_jobs == 6  # one sacct over every node, counted per node
        await rt.node_records.prefetch()
        plan = rt.plan_action(ActionKind.RESUME_NODES, [x], {})
        assert f"{x}: resumed twice this week after Xid 79 — consider RMA" in plan.warnings
        other = rt.plan_action(ActionKind.RESUME_NODES, ["gpu0001"], {})
        assert not any("consider RMA" in w for w in other.warnings)
        # an action run through the executor shows up in the history, with who ran it
        drain = rt.plan_action(ActionKind.DRAIN_NODES, ["gpu0001"], {"reason": "Xid 79 test"})
        result = await rt.executor.execute(drain, confirmation=True)
        assert result.ok
        mine = await rt.node_record("gpu0001", DAY)
        assert [(e.kind, e.user, e.reason, e.origin) for e in mine.events] == [
            ("drain", rt.executor.user, "Xid 79 test", "audit")]
        await rt.stop()

    asyncio.run(go())


def test_cli_history_sacct_gpu_hours_on_the_demo(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", "--demo", "--seed", "1", "--rank"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("NODE") and "4× Xid 79" in out.splitlines()[1]
    node = out.splitlines()[1].split()[0]
    assert main(["history", node, "--demo", "--seed", "1", "--json"]) == 0
    rec = msgspec.json.decode(capsys.readouterr().out, type=NodeRecord)
    assert rec.node == node and len(rec.dead_jobs) == 6
    assert main(["sacct", "--demo", "--seed", "1", "--since", "30d", "--state", "NODE_FAIL,FAILED"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(("NODE_FAIL" in ln or "FAILED" in ln) for ln in lines)
    assert any("signal 9" in ln for ln in lines) and any("exit 134" in ln for ln in lines)
    assert main(["gpu-hours", "--demo", "--since", "1d"]) == 0
    assert "GPU-HOURS" in capsys.readouterr().out
    assert main(["sacct", "--demo", "--user", "a;b"]) == 2
    assert "invalid user name" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["history", "--demo"])
    assert exc.value.code == 2


def test_incident_report_carries_node_history_and_dead_jobs(tmp_path: Path) -> None:
    from hpctui.model.nodehistory import AcctJob
    from hpctui.report.incident import build_report, render_html, render_markdown

    rt = demo_runtime(size=64, seed=1, clock=lambda: T0 + 100, start_time=T0, audit_path=tmp_path / "audit.jsonl")
    asyncio.run(rt.collect_once())
    hostile = NodeRecord(node="gpu0001", start=T0 - 30 * DAY, end=T0, events=[
        ev("gpu0001", "drain", T0 - DAY, "see [ticket](http://evil.example) <b>now</b>", "root")],
        dead_jobs=[AcctJob(job_id="7", state="NODE_FAIL", exit_code=1, nodes="gpu0001", end=T0 - 10)],
        problems=["sacct: slurmdbd unreachable"])
    doc = build_report(rt.store.snapshot(), nodes=["gpu0001"], jobs=[], since_s=3600, node_records=[hostile])
    assert doc["node_history"][0]["summary"] == "drained once in 30 days; 1 job died there"
    assert doc["dead_jobs"][0]["exit"] == "exit 1" and doc["node_events"][0]["user"] == "root"
    md, page = render_markdown(doc), render_html(doc)
    assert "## Jobs that died on these nodes" in md and "slurmdbd unreachable" in md
    assert "](http" not in md and "<b>" not in page and "&lt;b&gt;" in page


def test_cli_report_includes_the_demo_xid_node_history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", "--demo", "--rank"]) == 0
    node = capsys.readouterr().out.splitlines()[1].split()[0]
    assert main(["report", "--demo", "--nodes", node, "-o", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "report.json").read_text())
    assert doc["node_history"][0]["summary"].startswith("drained 4×") and len(doc["dead_jobs"]) == 6


def test_act_resume_preview_warns_from_the_history(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", "--demo", "--rank"]) == 0
    node = capsys.readouterr().out.splitlines()[1].split()[0]
    main(["act", "resume", "--targets", node, "--demo", "--dry-run"])
    out = capsys.readouterr().out
    assert f"{node}: resumed twice this week after Xid 79 — consider RMA" in out


def test_extra_event_sources_join_the_merge_and_a_broken_one_costs_only_itself(tmp_path: Path) -> None:
    """The merge point for more kinds of record (tracked health-check results)."""
    rt = demo_runtime(size=64, seed=1, clock=lambda: T0 + 100, start_time=T0, audit_path=tmp_path / "audit.jsonl")

    def health(nodes: str | None, start: float, end: float) -> list[NodeEvent]:
        return [ev("gpu0001", "health", T0 - 60, "dcgmi diag -r 2 failed: PCIe", origin="health")]

    def broken(nodes: str | None, start: float, end: float) -> list[NodeEvent]:
        raise OSError("health store unreadable")

    rt.node_records.extra_sources += [health, broken]

    async def go() -> None:
        await rt.collect_once()
        rec = await rt.node_record("gpu0001", DAY)
        assert [(e.kind, e.origin) for e in rec.events] == [("health", "health")]
        assert rec.problems == ["broken: health store unreadable"]
        assert summary(rec).startswith("failed a health check once in 1 day")
        rt.node_records.start()  # the background prefetch: a task, cancelled by stop()
        assert rt.node_records._task is not None
        await rt.stop()
        assert rt.node_records._task is None

    asyncio.run(go())


def test_current_state_is_an_event_source() -> None:
    """Without slurmdbd, a node drained now still has a history: its reason, who and when; a
    Kubernetes cordon with the taint's timeAdded likewise."""
    from hpctui.findings.nodehistory import current_node_events
    from hpctui.model import ClusterSnapshot, Node
    from hpctui.model.node import K8sNodeInfo, SlurmNodeInfo, Taint

    nodes = {
        "g1": Node(name="g1", slurm=SlurmNodeInfo(base_state="IDLE", flags=frozenset({"DRAIN"}),
                                                 reason="Xid 79", reason_user="root", reason_time=T0)),
        "g2": Node(name="g2", slurm=SlurmNodeInfo(base_state="DOWN", reason="Not responding",
                                                 reason_user="slurm", reason_time=T0 + 1)),
        "g3": Node(name="g3", slurm=SlurmNodeInfo(base_state="IDLE", reason_time=T0)),  # not drained
        "k1": Node(name="k1", k8s=K8sNodeInfo(name="k1", unschedulable=True, taints=(
            Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule", time_added=T0 + 2),))),
        "k2": Node(name="k2", k8s=K8sNodeInfo(name="k2", unschedulable=True)),  # no timeAdded: no time to say
    }
    got = [(e.node, e.kind, e.user, e.reason, e.origin) for e in current_node_events(
        ClusterSnapshot(cluster="c", time=T0 + 9, nodes=nodes))]
    assert got == [("g1", "drain", "root", "Xid 79", "slurm"), ("g2", "down", "slurm", "Not responding", "slurm"),
                   ("k1", "cordon", None, "cordoned (unschedulable)", "k8s")]
