"""Health checks: the parsers on real recorded outputs, the per-node records, the check backend and the resume gate.

The transport here is a test double that answers with the recorded outputs (tests/fixtures/checks);
the real sshd path is tests/ssh/test_checks_ssh_live.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import msgspec
import pytest

from hpctui.actions.audit import AuditLog
from hpctui.actions.checks.backend import CheckBackend, pairs_of
from hpctui.actions.checks.gate import gate_messages
from hpctui.actions.checks.ledger import CheckLedger
from hpctui.actions.checks.parse import parse_custom, parse_dcgm, parse_nccl, parse_nhc
from hpctui.actions.checks.settings import HealthCheckSettings
from hpctui.actions.executor import ActionExecutor
from hpctui.findings.health import Finding
from hpctui.model import ClusterSnapshot, Gpu, Node, Severity
from hpctui.model.action import ActionKind, ActionPlan, CommandRun, TargetResult
from hpctui.model.checks import CheckResult, CheckStatus, Domain
from hpctui.model.output import NodeOutput

FIX = Path(__file__).parent / "fixtures" / "checks"


def fixture(name: str) -> str:
    return (FIX / name).read_text()


# -- parsers ----------------------------------------------------------------------------------------

def test_dcgm3_real_level1_passes_despite_the_nulls() -> None:
    v = parse_dcgm(fixture("dcgm3-r1-pass.json"), 0, 1)
    assert v.status is CheckStatus.PASSED and v.summary == "diag r1 passed (10 tests)"


def test_dcgm4_real_gb10_failure_names_the_test_and_dcgm_words() -> None:
    v = parse_dcgm(fixture("dcgm4-r1-gb10-fail.json"), 226, 1)
    assert v.status is CheckStatus.FAILED
    assert v.summary == "diag r1 failed: software GPU 0"
    [d] = v.details
    assert d.gpu == 0 and d.message.startswith("Persistence Mode: Persistence mode for GPU 0 is disabled")


def test_dcgm4_memory_failure_on_gpu3() -> None:
    v = parse_dcgm(fixture("dcgm4-r2-h100-fail.json"), 226, 2)
    assert v.status is CheckStatus.FAILED and v.summary == "diag r2 failed: memory GPU 3"
    assert v.details[0].message == "Detected 2 volatile double-bit ECC error(s) in GPU 3."
    ok = parse_dcgm(fixture("dcgm4-r2-h100-pass.json"), 0, 2)
    assert ok.status is CheckStatus.PASSED and ok.summary == "diag r2 passed (4 tests)"


def test_dcgm_banner_before_the_document_and_unreadable_output() -> None:
    text = "Successfully ran diagnostic for group.\n" + fixture("dcgm3-r1-pass.json")
    assert parse_dcgm(text, 0, 1).status is CheckStatus.PASSED
    bad = parse_dcgm("Error: unable to establish a connection to the specified host: localhost\n", 255, 2)
    assert bad.status is CheckStatus.ERROR and "no result document: Error: unable to establish" in bad.summary
    runtime = parse_dcgm('{"DCGM GPU Diagnostic": {"runtime_error": "Cannot run diagnostic: GPUs are in use"}}', 1, 3)
    assert runtime.status is CheckStatus.ERROR and runtime.summary.endswith("GPUs are in use")


def test_dcgm_an_unknown_status_word_is_not_a_pass_and_skips_alone_prove_nothing() -> None:
    doc = {"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [
        {"name": "memory", "results": [{"entity_group": "GPU", "entity_id": 0, "status": "Inconclusive"}]}]}]}}
    assert parse_dcgm(json.dumps(doc), 0, 2).status is CheckStatus.ERROR
    skipped = {"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [
        {"name": "memory", "results": [{"entity_group": "GPU", "entity_id": 0, "status": "Skip"}]}]}]}}
    assert parse_dcgm(json.dumps(skipped), 0, 2).status is CheckStatus.ERROR


def test_dcgm_hostile_text_is_sanitised() -> None:
    doc = {"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [
        {"name": "mem\x1b[2J", "results": [{"entity_id": 1, "status": "Fail",
                                           "warnings": [{"warning": "bad\x1b]0;pwned\x07 \u202egpu"}]}]}]}]}}
    v = parse_dcgm(json.dumps(doc), 1, 2)
    text = v.summary + "".join(d.test + d.message for d in v.details)
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text


def test_nccl_real_outputs_against_expectations() -> None:
    single = parse_nccl(fixture("nccl-h100-single.txt"), 0, 350.0)
    assert single.status is CheckStatus.PASSED and single.busbw_gbs == pytest.approx(448.212)
    assert single.summary == "NCCL 448 GB/s (expected ≥ 350)"
    pair = parse_nccl(fixture("nccl-h100-pair.txt"), 0, 150.0)
    assert pair.status is CheckStatus.PASSED and pair.busbw_gbs == pytest.approx(194.675)
    slow = parse_nccl(fixture("nccl-efa-mpi-slow.txt"), 0, 150.0)  # mpirun prefixes
    assert slow.status is CheckStatus.FAILED and slow.summary == "NCCL 1 GB/s (expected ≥ 150): too slow"
    assert parse_nccl(fixture("nccl-h100-single.txt"), 0, None).summary == "NCCL 448 GB/s"


def test_nccl_wrong_values_and_a_run_that_never_finished() -> None:
    wrong = fixture("nccl-h100-single.txt").replace("470.73      0", "470.73      3", 1)
    v = parse_nccl(wrong, 1, 350.0)
    assert v.status is CheckStatus.FAILED and "3 wrong values" in v.summary
    cut = "\n".join(fixture("nccl-h100-single.txt").splitlines()[:18])
    assert parse_nccl(cut, None, 350.0).status is CheckStatus.ERROR


def test_nhc_real_lines() -> None:
    assert parse_nhc(fixture("nhc-pass.txt"), 0).status is CheckStatus.PASSED
    v = parse_nhc(fixture("nhc-fail-ecc.txt"), 1)
    assert v.status is CheckStatus.FAILED and v.summary == "NHC failed: check_ecc: GPU id 3: SRAM Uncorrectable ECC"
    s = parse_nhc(fixture("nhc-fail-service.txt"), 1)
    assert s.details[0].test == "check_ps_service" and s.details[0].message.startswith("Service chronyd")
    assert parse_nhc("", 1).status is CheckStatus.FAILED
    assert parse_nhc("sudo: a password is required\n", 1).summary == "NHC exited 1: sudo: a password is required"


def test_custom_check_patterns() -> None:
    assert parse_custom("ib", "port 1 Active\n", 0, pass_pattern="Active", fail_pattern=None).status is CheckStatus.PASSED
    assert parse_custom("ib", "port 1 Down\n", 0, pass_pattern="Active", fail_pattern=None).status is CheckStatus.ERROR
    assert parse_custom("ib", "link ok\nFAIL: lane 3\n", 0, pass_pattern=None,
                        fail_pattern="^FAIL").summary == "ib failed: FAIL: lane 3"
    assert parse_custom("ib", "", 2, pass_pattern=None, fail_pattern=None).status is CheckStatus.FAILED


# -- settings -------------------------------------------------------------------------------------

def test_settings_gate_domains_and_clearing_checks() -> None:
    s = HealthCheckSettings()
    assert s.gates("gpu/n1/3", "xid79", Severity.CRITICAL) is Domain.GPU
    assert s.gates("gpu/n1/3", "xid94", Severity.WARNING) is Domain.GPU  # contained ECC: listed
    assert s.gates("gpu/n1/3", "temp", Severity.ERROR) is None
    assert s.gates("gpu/n1/3", "fabric", Severity.CRITICAL) is Domain.FABRIC
    assert s.gates("nvswitch/n1/sw0", "sxid20034", Severity.CRITICAL) is Domain.FABRIC
    assert s.gates("nvswitch/n1/sw0", "sxid20012", Severity.WARNING) is None  # non-fatal
    assert s.gates("ib/n1/mlx5_0:1", "ib_down", Severity.ERROR) is Domain.FABRIC
    assert s.clears("dcgm-r2") == (Domain.GPU,) and s.clears("dcgm-r1") == ()
    assert s.clears("nccl") == (Domain.FABRIC, Domain.GPU)
    assert s.expected_gbs("nccl", "NVIDIA H100 80GB HBM3") == 350.0
    assert s.expected_gbs("nccl-pair", "NVIDIA H200") == 150.0
    assert s.expected_gbs("nccl", "Tesla V100") is None
    custom = msgspec.convert({"custom": [{"name": "ibcheck", "command": "ibcheck {node}", "clears": ["fabric"]}]},
                             HealthCheckSettings)
    assert "custom:ibcheck" in custom.check_ids() and custom.clears("custom:ibcheck") == (Domain.FABRIC,)
    with pytest.raises(msgspec.ValidationError, match="bad pattern"):
        msgspec.convert({"custom": [{"name": "x", "command": "x", "fail_pattern": "("}]}, HealthCheckSettings)


def test_pairs_cover_every_node() -> None:
    assert pairs_of(["a", "b", "c", "d"]) == [("a", "b"), ("c", "d")]
    assert pairs_of(["a", "b", "c"]) == [("a", "b"), ("c", "a")]


# -- the records ------------------------------------------------------------------------------------

def result(node: str, check: str, status: CheckStatus, at: float) -> CheckResult:
    return CheckResult(node=node, check=check, status=status, summary=f"{check} {status.value}", time=at)


def test_ledger_survives_a_restart_and_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "checks" / "c.json"
    ledger = CheckLedger(path, keep_per_node=3)
    assert ledger.add([result("n1", "dcgm-r2", CheckStatus.PASSED, t) for t in range(5)]) is None
    assert (path.stat().st_mode & 0o777) == 0o600
    again = CheckLedger(path, keep_per_node=3)
    assert [r.time for r in again.results("n1")] == [4, 3, 2]
    again.add([result("n1", "nhc", CheckStatus.FAILED, 10)])
    assert [r.check for r in again.latest("n1")] == ["nhc", "dcgm-r2"]


def test_ledger_corrupt_file_is_set_aside_and_said(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text("{not json")
    ledger = CheckLedger(path)
    assert ledger.results("n1") == []
    assert ledger.warnings and "unreadable" in ledger.warnings[0]
    assert (tmp_path / "c.json.corrupt").exists()


def test_ledger_write_failure_comes_back_as_a_line_and_keeps_the_results(tmp_path: Path) -> None:
    blocked = tmp_path / "state"
    blocked.write_text("a file where the directory should be")  # like a full or read-only state dir: OSError
    ledger = CheckLedger(blocked / "checks" / "c.json")
    problem = ledger.add([result("n1", "nhc", CheckStatus.PASSED, 1)])
    assert problem is not None and "not written" in problem
    assert ledger.results("n1")[0].check == "nhc"


def finding(node: str, code: str = "xid79", sev: Severity = Severity.CRITICAL) -> Finding:
    return Finding(severity=sev, object=f"gpu/{node}/3", code=code, message=f"GPU 3 Xid 79 on {node}")


def test_marks_and_the_gate_rule() -> None:
    now = [100.0]
    ledger = CheckLedger(None, clock=lambda: now[0])
    s = HealthCheckSettings()
    ledger.observe([finding("n1"), finding("n2", "temp", Severity.ERROR)], s)
    assert [m.key for m in ledger.marks("n1")] == ["gpu/n1/3#xid79"] and ledger.marks("n2") == []
    ledger.add([result("n1", "dcgm-r2", CheckStatus.PASSED, 90.0)])  # older than the finding: does not count
    assert ledger.blocking("n1", s)
    ledger.add([result("n1", "dcgm-r1", CheckStatus.PASSED, 110.0)])  # r1 clears nothing
    ledger.add([result("n1", "dcgm-r2", CheckStatus.FAILED, 111.0)])
    assert ledger.blocking("n1", s)
    ledger.add([result("n1", "dcgm-r2", CheckStatus.PASSED, 120.0)])
    assert ledger.blocking("n1", s) == []
    now[0] = 130.0
    ledger.observe([finding("n1")], s)  # still there: the same occurrence, still cleared
    assert ledger.blocking("n1", s) == []
    now[0] = 1000.0
    ledger.observe([finding("n1")], s)  # gone for a while, back again: a new occurrence
    assert ledger.blocking("n1", s)


def test_gate_messages_override_and_off() -> None:
    ledger = CheckLedger(None, clock=lambda: 100.0)
    s = HealthCheckSettings()
    out = gate_messages(["n[1-2]"], [finding("n1")], ledger, s, "", 160.0)
    [err] = out.errors
    assert err.startswith("n1: GPU 3 Xid 79 on n1 (first seen 60 s ago); no passing gpu check since: run "
                          "dcgm-r2 or dcgm-r3 or nccl first")
    assert out.held == ["n1"]
    over = gate_messages(["n1"], None, ledger, s, "RMA ticket 4411: vendor says fine", 160.0)
    assert not over.errors and over.warnings[0].endswith("resume gate overridden: RMA ticket 4411: vendor says fine")
    assert gate_messages(["n1"], None, ledger, s, "bad\x1b[31m", 160.0).errors[0].startswith("override:")
    off = gate_messages(["n1"], None, ledger, msgspec.structs.replace(s, gate=False), "", 160.0)
    assert not off.errors and off.warnings[0].endswith("(the resume gate is off)")


# -- the executor: resume refused, then allowed ---------------------------------------------------------

class Resumer:
    name = "rec"

    def __init__(self) -> None:
        self.ran: list[ActionPlan] = []

    @property
    def action_kinds(self) -> frozenset[ActionKind]:
        return frozenset({ActionKind.RESUME_NODES, ActionKind.UNCORDON_NODES})

    def plan(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str],
             snapshot: ClusterSnapshot) -> ActionPlan:
        assert "override" not in params  # the gate's parameter never reaches a backend
        return ActionPlan(kind=kind, source=self.name, targets=targets, params=params, commands=("resume",))

    async def execute(self, plan: ActionPlan) -> tuple[TargetResult, ...]:
        self.ran.append(plan)
        return tuple(TargetResult(target=t, ok=True) for t in plan.targets)


def xid_snapshot(xid: bool = True) -> ClusterSnapshot:
    gpus = {"gpu01": (Gpu(node="gpu01", index=3, uuid="GPU-3", last_xid=79 if xid else None),)}
    return ClusterSnapshot(cluster="c", time=0.0, nodes={"gpu01": Node(name="gpu01"), "gpu02": Node(name="gpu02")},
                           gpus=gpus)


async def test_xid_then_resume_refused_then_check_passes_then_resume_allowed(tmp_path: Path) -> None:
    now = [1000.0]
    ledger = CheckLedger(tmp_path / "checks.json", clock=lambda: now[0])
    backend = Resumer()
    audit = AuditLog(tmp_path / "audit.jsonl")
    ex = ActionExecutor([backend], audit, cluster="c", user="alice", clock=lambda: now[0], checks=ledger)
    plan = ex.plan(ActionKind.RESUME_NODES, ["gpu01"], {}, xid_snapshot())
    assert not plan.runnable and "no passing gpu check since" in plan.errors[0]
    refused = await ex.execute(plan, confirmation=True)
    assert refused.refused is not None and not backend.ran
    # after a reboot the Xid is gone from the readings: the gate still remembers it
    now[0] = 2000.0
    assert not ex.plan(ActionKind.RESUME_NODES, ["gpu01"], {}, xid_snapshot(xid=False)).runnable
    ledger.add([result("gpu01", "dcgm-r2", CheckStatus.PASSED, 2100.0)])
    now[0] = 2200.0
    plan = ex.plan(ActionKind.RESUME_NODES, ["gpu01"], {}, xid_snapshot(xid=False))
    assert plan.runnable, plan.errors
    assert (await ex.execute(plan, confirmation=True)).ok and backend.ran


async def test_override_is_audited(tmp_path: Path) -> None:
    ledger = CheckLedger(None, clock=lambda: 5.0)
    audit = AuditLog(tmp_path / "audit.jsonl")
    ex = ActionExecutor([Resumer()], audit, cluster="c", user="alice", clock=lambda: 5.0, checks=ledger)
    plan = ex.plan(ActionKind.UNCORDON_NODES, ["gpu01"], {"override": "vendor swapped the GPU, diag at 14:00"},
                   xid_snapshot())
    assert plan.runnable and plan.params["override"] == "vendor swapped the GPU, diag at 14:00"
    assert any("resume gate overridden" in w for w in plan.warnings)
    await ex.execute(plan, confirmation=True)
    records = audit.read()
    assert records[-1]["params"]["override"] == "vendor swapped the GPU, diag at 14:00"


# -- the backend, on a transport double that answers with the recorded outputs ----------------------------

class Answers:
    """A CommandRunner double: each host answers with a recorded output and exit status."""

    name = "ssh"

    def __init__(self, answers: dict[str, tuple[str, int]]) -> None:
        self.answers = answers
        self.seen: list[CommandRun] = []

    def command_runner(self) -> Answers:
        return self

    async def resolve(self, hosts: Sequence[str]) -> None:
        return None

    async def run(self, run: CommandRun, timeout_s: float, limit: int) -> NodeOutput:
        self.seen.append(run)
        await asyncio.sleep(0)
        if run.host not in self.answers:
            return NodeOutput(label=run.label, error="connection refused")
        text, rc = self.answers[run.host]
        return NodeOutput(label=run.label, output=text, rc=rc, duration_s=1.0)

    async def close(self) -> None:
        return None


def gpu_snapshot(*nodes: str) -> ClusterSnapshot:
    gpus = {n: tuple(Gpu(node=n, index=i, model="NVIDIA H100 80GB HBM3") for i in range(8)) for n in nodes}
    return ClusterSnapshot(cluster="c", time=0.0, nodes={n: Node(name=n) for n in nodes}, gpus=gpus)


async def test_backend_runs_dcgm_records_results_and_answers_per_node(tmp_path: Path) -> None:
    ledger = CheckLedger(tmp_path / "c.json")
    runner = Answers({"gpu01": (fixture("dcgm4-r2-h100-pass.json"), 0),
                      "gpu02": (fixture("dcgm4-r2-h100-fail.json"), 226)})
    backend = CheckBackend(HealthCheckSettings, lambda: ledger, [runner])  # type: ignore[list-item]
    ex = ActionExecutor([backend], AuditLog(tmp_path / "audit.jsonl"), cluster="c", user="alice")
    plan = ex.plan(ActionKind.HEALTH_CHECK, ["gpu[01-03]"], {"check": "dcgm-r2"}, gpu_snapshot("gpu01", "gpu02",
                                                                                               "gpu03"))
    assert plan.runnable and plan.commands == ("ssh gpu[01-03] (3): dcgmi diag -r 2 -j",)
    res = await ex.execute(plan, confirmation="check-3" if plan.confirm_word else True)
    by = {r.target: r for r in res.results}
    assert by["gpu01"].ok and by["gpu01"].message == "passed: diag r2 passed (4 tests)"
    assert not by["gpu02"].ok and by["gpu02"].message == "failed: diag r2 failed: memory GPU 3"
    assert by["gpu03"].message == "error: dcgm-r2 did not run: connection refused"
    failed = ledger.latest("gpu02")[0]
    assert failed.failure_reason() == ("health check dcgm-r2 failed: memory GPU 3: Detected 2 volatile double-bit "
                                       "ECC error(s) in GPU 3.")
    assert CheckLedger(tmp_path / "c.json").latest("gpu01")[0].clears == (Domain.GPU,)


async def test_backend_nccl_pairs_and_single_with_expectations(tmp_path: Path) -> None:
    ledger = CheckLedger(None)
    runner = Answers({"gpu01": (fixture("nccl-h100-pair.txt"), 0), "gpu03": (fixture("nccl-efa-mpi-slow.txt"), 0)})
    backend = CheckBackend(HealthCheckSettings, lambda: ledger, [runner])  # type: ignore[list-item]
    snap = gpu_snapshot("gpu01", "gpu02", "gpu03")
    plan = backend.plan(ActionKind.HEALTH_CHECK, ("gpu[01-03]",), {"check": "nccl-pair"}, snap)
    assert not plan.errors
    assert [r.argv[:6] for r in plan.command.runs] == [  # type: ignore[union-attr]
        ("mpirun", "-np", "16", "-H", "gpu01:8,gpu02:8", "all_reduce_perf"),
        ("mpirun", "-np", "16", "-H", "gpu03:8,gpu01:8", "all_reduce_perf")]
    results = {r.target: r for r in await backend.execute(plan)}
    assert results["gpu02"].ok and results["gpu02"].message == "passed: NCCL 195 GB/s (expected ≥ 150)"
    assert not results["gpu03"].ok and "too slow" in results["gpu03"].message
    assert ledger.latest("gpu02")[0].peer == "gpu01"
    single = backend.plan(ActionKind.HEALTH_CHECK, ("gpu01",), {"check": "nccl"}, snap)
    assert single.command.runs[0].argv[-2:] == ("-g", "8")  # type: ignore[union-attr]


def test_backend_plan_errors_and_warnings() -> None:
    backend = CheckBackend(HealthCheckSettings, lambda: CheckLedger(None), [])
    plan = backend.plan(ActionKind.HEALTH_CHECK, ("gpu01",), {"check": "dcgm-r9"}, gpu_snapshot("gpu01"))
    assert any("unknown check" in e for e in plan.errors) and any("no ssh source" in e for e in plan.errors)
    runner = Answers({})
    backend = CheckBackend(HealthCheckSettings, lambda: CheckLedger(None), [runner])  # type: ignore[list-item]
    plan = backend.plan(ActionKind.HEALTH_CHECK, ("gpu01",), {"check": "nccl-pair"}, gpu_snapshot("gpu01"))
    assert plan.errors == ("nccl-pair needs at least two nodes (mark them with space)",)
    hostile = backend.plan(ActionKind.HEALTH_CHECK, ("gpu01",), {"check": "custom:x;rm -rf /"}, gpu_snapshot("gpu01"))
    assert hostile.errors and not hostile.command.runs  # type: ignore[union-attr]


# -- the demo: the whole walk without a cluster ------------------------------------------------------

async def test_demo_walk_gate_check_fails_reboot_check_passes_resume(tmp_path: Path) -> None:
    """The built-in demo answers the check tools with the recorded outputs: the node with a critical GPU
    finding fails diag on its bad GPU; after the demo's reboot clears the incident, diag passes and the gate
    opens."""
    from hpctui.cli.act import run_act
    from hpctui.core.runtime import demo_runtime

    now = [1_796_000_000.0]
    rt = demo_runtime(size=64, seed=0, clock=lambda: now[0], start_time=now[0], audit_path=tmp_path / "audit.jsonl")
    out: list[str] = []
    await rt.collect_once()
    snap = rt.store.snapshot()
    s = rt.health_settings
    bad = sorted({f.object.split("/")[1] for f in rt.findings(snap)
                  if f.object.startswith("gpu/") and s.gates(f.object, f.code, f.severity) is not None})
    assert bad, "the demo has a node with a critical GPU finding"
    node = bad[0]
    rc = await run_act(rt, ActionKind.RESUME_NODES, [node], {}, dry_run=False, yes=True, as_json=False,
                       interactive=False, out=out.append, err=out.append)
    assert rc == 2 and "no passing gpu check since" in out[-1]
    rc = await run_act(rt, ActionKind.HEALTH_CHECK, [node], {"check": "dcgm-r2"}, dry_run=False, yes=True,
                       as_json=False, interactive=False, out=out.append, err=out.append)
    text = "".join(out[-3:])
    assert rc == 1 and f"{node}: failed: diag r2 failed: memory GPU" in text and "to drain the failed node(s)" in text
    rc = await run_act(rt, ActionKind.REBOOT_NODES, [node], {"reason": "xid: reboot"}, dry_run=False, yes=True,
                       as_json=False, interactive=False, out=out.append, err=out.append)
    assert rc == 0, out[-1]
    for _ in range(8):  # the demo's reboot takes a few ticks
        now[0] += 2.0
        await rt.collect_once()
    now[0] += 1.0
    rc = await run_act(rt, ActionKind.HEALTH_CHECK, [node], {"check": "dcgm-r2"}, dry_run=False, yes=True,
                       as_json=False, interactive=False, out=out.append, err=out.append)
    assert rc == 0, out[-1]
    plan = rt.executor.plan(ActionKind.RESUME_NODES, [node], {}, rt.store.snapshot())
    assert not any("no passing gpu check" in e for e in plan.errors), plan.errors


async def test_check_results_are_in_the_node_history(tmp_path: Path) -> None:
    """The node history view (hpctui.core.nodehistory) lists the kept checks: a failure as a fault, a pass too."""
    from hpctui.core.runtime import demo_runtime

    now = 1_796_000_000.0
    rt = demo_runtime(size=8, seed=1, clock=lambda: now, start_time=now, audit_path=tmp_path / "audit.jsonl")
    await rt.collect_once()
    rt.checks.add([result("gpu0003", "dcgm-r2", CheckStatus.FAILED, now - 60),
                   result("gpu0003", "nccl", CheckStatus.PASSED, now - 30)])
    record = await rt.node_records.record("gpu0003", 86_400)
    checks = [(e.kind, e.reason) for e in record.events if e.origin == "checks"]
    assert checks == [("check", "nccl: nccl passed"), ("health", "dcgm-r2: dcgm-r2 failed")]


def test_reboot_of_a_held_node_warns_that_it_comes_back_unchecked() -> None:
    ledger = CheckLedger(None, clock=lambda: 5.0)

    class Rebooter(Resumer):
        @property
        def action_kinds(self) -> frozenset[ActionKind]:
            return frozenset({ActionKind.REBOOT_NODES, ActionKind.RESUME_NODES})

    ex = ActionExecutor([Rebooter()], None, cluster="c", user="alice", clock=lambda: 5.0, checks=ledger)
    ledger.observe([finding("gpu01")], HealthCheckSettings())
    plan = ex.plan(ActionKind.REBOOT_NODES, ["gpu[01-02]"], {"reason": "xid 79"}, xid_snapshot())
    [warning] = [w for w in plan.warnings if "health-check gate" in w]
    assert warning.startswith("gpu01: held by the health-check gate") and "nextstate=RESUME" in warning


def test_a_read_only_session_reads_the_records_but_never_writes_them(tmp_path: Path) -> None:
    """A wall display or read-only session remembers what it sees for its own gate, in memory only."""
    path = tmp_path / "checks" / "c.json"
    writer = CheckLedger(path)
    writer.observe([finding("n1")], HealthCheckSettings())
    before = path.read_bytes()
    wall = CheckLedger(path, read_only=True)
    assert wall.observe([finding("n2")], HealthCheckSettings()) is None
    assert path.read_bytes() == before  # the file is the writer's
    assert [m.node for m in wall.marks("n1")] == ["n1"] and [m.node for m in wall.marks("n2")] == ["n2"]
    fresh = CheckLedger(tmp_path / "none" / "c.json", read_only=True)
    fresh.observe([finding("n1")], HealthCheckSettings())
    assert not (tmp_path / "none").exists()
