"""Maintenance reservations and partition state: plans (exact scontrol argv), validation, execution
through the executor with a recording runner, and the same actions on the demo cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpctui.actions.audit import AuditLog
from hpctui.actions.executor import ActionExecutor
from hpctui.core.runtime import demo_runtime
from hpctui.model import ClusterSnapshot, Node, SlurmJob, SlurmNodeInfo
from hpctui.model.action import ActionKind
from hpctui.sources.slurm import SlurmSettings, build_slurm_source
from hpctui.sources.slurm.runner import RunResult


def _snap() -> ClusterSnapshot:
    nodes = {n: Node(name=n, slurm=SlurmNodeInfo(base_state="MIXED" if n == "gpu01" else "IDLE",
                                                 partitions=("gpu",) if n != "cpu1" else ("cpu",), gpus_total=8))
             for n in ("gpu01", "gpu02", "cpu1")}
    jobs = (SlurmJob(job_id=7, name="train", user="alice", state="RUNNING", nodes="gpu01", partition="gpu"),
            SlurmJob(job_id=10, state="PENDING", partition="gpu"))
    return ClusterSnapshot(cluster="t", time=0.0, nodes=nodes, jobs=jobs)


FIX = Path(__file__).parent / "fixtures" / "slurm"


class RecordingRunner:
    """Answers every call alike, except the read-back of a reservation (``answers``: argv prefix → stdout)."""

    def __init__(self, rc: int = 0, stdout: bytes = b"", stderr: str = "",
                 answers: dict[tuple[str, ...], bytes] | None = None) -> None:
        self.argvs: list[tuple[str, ...]] = []
        self.rc, self.stdout, self.stderr = rc, stdout, stderr
        self.answers = answers or {}
        self.calls: list[str] = []

    async def run(self, argv: list[str], *, timeout_s: float | None = None) -> RunResult:
        self.argvs.append(tuple(argv))
        out = next((v for k, v in self.answers.items() if tuple(argv[:len(k)]) == k), self.stdout)
        return RunResult(argv=tuple(argv), rc=self.rc, stdout=out, stderr=self.stderr, duration_s=0.0)


# what 22.05 printed for a reservation like fw_upgrade (tests/fixtures/slurm/cli_scontrol_show_reservation_oneliner.txt)
READ_BACK = (b"ReservationName=fw_upgrade StartTime=2026-12-02T08:00:00 EndTime=2026-12-02T12:00:00 Duration=04:00:00 "
             b"Nodes=gpu[01-02] NodeCnt=2 CoreCnt=128 Features=(null) PartitionName=(null) "
             b"Flags=MAINT,IGNORE_JOBS,SPEC_NODES TRES=cpu=128 Users=root Groups=(null) Accounts=(null) "
             b"Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a MaxStartDelay=(null)\n")
SHOW_RESV = ("scontrol", "-o", "show", "reservation")


def _executor(tmp_path: Path, runner: RecordingRunner, read_only: bool = False) -> ActionExecutor:
    src = build_slurm_source(SlurmSettings())
    src.cli.runner = runner  # type: ignore[attr-defined]
    return ActionExecutor([src], AuditLog(tmp_path / "audit.jsonl"), cluster="t", user="ops", read_only=read_only)


async def test_maintenance_reservation_plan_and_run(tmp_path: Path) -> None:
    runner = RecordingRunner(stdout=b"Reservation created: fw_upgrade\n", answers={SHOW_RESV: READ_BACK})
    ex = _executor(tmp_path, runner)
    plan = ex.plan(ActionKind.RESERVE_MAINT, ["gpu[01-02]"],
                   {"name": "fw_upgrade", "start": "2026-12-02T08:00", "duration": "4:00:00"}, _snap())
    assert plan.runnable, plan.errors
    assert plan.targets == ("gpu01", "gpu02")
    assert plan.commands == ("scontrol create reservation ReservationName=fw_upgrade 'Nodes=gpu[01-02]' "
                             "StartTime=2026-12-02T08:00 Duration=4:00:00 Users=root Flags=MAINT,IGNORE_JOBS",)
    assert plan.affected == ("job 7 (alice, train) RUNNING on gpu01",)
    assert any("IGNORE_JOBS" in w for w in plan.warnings)
    assert plan.confirm_word == "reserve_maint-2"
    result = await ex.execute(plan, confirmation="reserve_maint-2")
    assert result.ok, [r.message for r in result.results]
    assert all(r.message.startswith("Reservation created: fw_upgrade; read back: fw_upgrade on gpu[01-02], ")
               and r.message.endswith("flags MAINT,IGNORE_JOBS,SPEC_NODES") for r in result.results)
    assert runner.argvs == [("scontrol", "create", "reservation", "ReservationName=fw_upgrade", "Nodes=gpu[01-02]",
                             "StartTime=2026-12-02T08:00", "Duration=4:00:00", "Users=root",
                             "Flags=MAINT,IGNORE_JOBS"), (*SHOW_RESV, "fw_upgrade")]
    [record] = AuditLog(tmp_path / "audit.jsonl").read()
    assert record["action"] == "reserve_maint" and record["commands"] == list(plan.commands)


async def test_reservation_not_read_back_is_a_failure(tmp_path: Path) -> None:
    """scontrol said "created" but Slurm shows no such reservation, or not on every node: not ok (old code: ok)."""
    runner = RecordingRunner(stdout=b"Reservation created: fw_upgrade\n",
                             answers={SHOW_RESV: b"No reservations in the system\n"})
    ex = _executor(tmp_path, runner)
    plan = ex.plan(ActionKind.RESERVE_MAINT, ["gpu[01-02]"], {"name": "fw_upgrade", "duration": "60"}, _snap())
    result = await ex.execute(plan, confirmation="reserve_maint-2")
    assert not result.ok and all("Slurm shows no reservation fw_upgrade" in r.message for r in result.results)
    runner.answers = {SHOW_RESV: READ_BACK.replace(b"Nodes=gpu[01-02] NodeCnt=2", b"Nodes=gpu01 NodeCnt=1")}
    result = await ex.execute(plan, confirmation="reserve_maint-2")
    by = {r.target: r for r in result.results}
    assert by["gpu01"].ok and not by["gpu02"].ok and "gpu02 is not in it" in by["gpu02"].message


async def test_reservation_defaults_end_time_and_failures(tmp_path: Path) -> None:
    runner = RecordingRunner(rc=1, stderr="Error creating the reservation: Requested nodes are busy")
    ex = _executor(tmp_path, runner)
    plan = ex.plan(ActionKind.RESERVE_MAINT, ["gpu02"], {}, _snap())
    assert "reserve_maint needs a duration or an end" in plan.errors
    plan = ex.plan(ActionKind.RESERVE_MAINT, ["gpu02"], {"end": "2026-12-02T12:00"}, _snap())
    assert plan.runnable and "EndTime=2026-12-02T12:00" in plan.commands[0] and "Duration" not in plan.commands[0]
    plan = ex.plan(ActionKind.RESERVE_MAINT, ["gpu02"], {"duration": "90"}, _snap())
    assert plan.params["name"] == "maint_gpu02" and plan.params["start"] == "now"
    assert plan.commands[0].endswith("StartTime=now Duration=90 Users=root Flags=MAINT,IGNORE_JOBS")
    result = await ex.execute(plan, confirmation=True)
    assert not result.ok and "Requested nodes are busy" in result.results[0].message


@pytest.mark.parametrize(("params", "error"), [
    ({"duration": "2h; rm -rf /"}, "bad duration"),
    ({"duration": "60", "start": "tomorrow"}, "bad start"),
    ({"duration": "60", "name": "a b"}, "bad reservation name"),
    ({"duration": "60", "users": "root;id"}, "bad users"),
    ({"duration": "60", "end": "later"}, "bad end"),
])
def test_reservation_params_are_validated(params: dict[str, str], error: str) -> None:
    src = build_slurm_source(SlurmSettings())
    plan = src.plan(ActionKind.RESERVE_MAINT, ("gpu01",), params, _snap())
    assert not plan.runnable and any(error in e for e in plan.errors), plan.errors
    plan = src.plan(ActionKind.RESERVE_MAINT, ("ghost",), {"duration": "60"}, _snap())
    assert plan.rejected_targets == ("ghost",)


async def test_delete_reservation_and_partition_state(tmp_path: Path) -> None:
    runner = RecordingRunner()
    ex = _executor(tmp_path, runner)
    plan = ex.plan(ActionKind.DELETE_RESERVATION, ["fw_upgrade"], {}, _snap())
    assert plan.commands == ("scontrol delete ReservationName=fw_upgrade",)
    assert (await ex.execute(plan, confirmation=True)).ok
    plan = ex.plan(ActionKind.PARTITION_STATE, ["gpu"], {"state": "down"}, _snap())
    assert plan.runnable and plan.params["state"] == "DOWN"
    assert plan.commands == ("scontrol update PartitionName=gpu State=DOWN",)
    assert "job 7 (alice, train) RUNNING on gpu01" in plan.affected
    assert "1 pending job(s) in gpu will not start" in plan.affected
    assert any("running jobs continue" in w for w in plan.warnings)
    assert (await ex.execute(plan, confirmation=True)).ok
    assert runner.argvs[-1] == ("scontrol", "update", "PartitionName=gpu", "State=DOWN")
    for state in ("UP", "DRAIN", "INACTIVE"):
        assert ex.plan(ActionKind.PARTITION_STATE, ["gpu"], {"state": state}, _snap()).runnable
    bad = ex.plan(ActionKind.PARTITION_STATE, ["gpu", "nosuch"], {"state": "OFF"}, _snap())
    assert not bad.runnable and bad.rejected_targets == ("nosuch",)
    assert any("must be one of UP, DOWN, DRAIN, INACTIVE" in e for e in bad.errors)
    assert ex.plan(ActionKind.PARTITION_STATE, ["gpu,cpu"], {"state": "UP"}, _snap()).rejected_targets


@pytest.mark.parametrize("kind", [ActionKind.RESERVE_MAINT, ActionKind.DELETE_RESERVATION,
                                  ActionKind.PARTITION_STATE])
async def test_read_only_refuses_admin_actions(tmp_path: Path, kind: ActionKind) -> None:
    runner = RecordingRunner()
    ex = _executor(tmp_path, runner, read_only=True)
    target = {"reserve_maint": "gpu01", "delete_reservation": "r1", "partition_state": "gpu"}[kind.value]
    plan = ex.plan(kind, [target], {"duration": "60", "state": "DOWN"}, _snap())
    assert "read-only mode: actions are disabled" in plan.errors
    assert (await ex.execute(plan, confirmation=True)).refused == "read-only mode"
    assert runner.argvs == []


async def test_demo_reservation_lifecycle_and_partition_state(tmp_path: Path) -> None:
    t = 1_796_000_000.0
    rt = demo_runtime(size=8, seed=1, clock=lambda: t, start_time=t, audit_path=tmp_path / "a.jsonl")
    await rt.collect_once()
    ex = rt.executor
    plan = ex.plan(ActionKind.RESERVE_MAINT, ["gpu[0007-0008]"], {"duration": "120", "name": "fw"},
                   rt.store.snapshot())
    assert plan.runnable and "Flags=MAINT,IGNORE_JOBS" in plan.commands[0]
    assert (await ex.execute(plan, confirmation="reserve_maint-2")).ok
    await rt.collect_once()
    snap = rt.store.snapshot()
    assert all("MAINTENANCE" in snap.nodes[n].slurm.flags for n in ("gpu0007", "gpu0008"))  # type: ignore[union-attr]
    assert "+MAINTENANCE" in snap.nodes["gpu0007"].slurm.display_state  # type: ignore[union-attr]
    again = await ex.execute(plan, confirmation="reserve_maint-2")
    assert not again.ok and "Duplicate reservation name" in again.results[0].message
    delete = ex.plan(ActionKind.DELETE_RESERVATION, ["fw"], {}, snap)
    assert (await ex.execute(delete, confirmation=True)).ok
    await rt.collect_once()
    assert "MAINTENANCE" not in rt.store.snapshot().nodes["gpu0007"].slurm.flags  # type: ignore[union-attr]
    part = ex.plan(ActionKind.PARTITION_STATE, ["h100"], {"state": "drain"}, rt.store.snapshot())
    assert part.runnable and part.commands == ("scontrol update PartitionName=h100 State=DRAIN",)
    assert (await ex.execute(part, confirmation=True)).ok
    source = rt.sources[0]
    assert source.partition_state == {"h100": "DRAIN"}  # type: ignore[attr-defined]
    await rt.stop()
    actions = [r["action"] for r in AuditLog(tmp_path / "a.jsonl").read()]
    assert actions == ["reserve_maint", "reserve_maint", "delete_reservation", "partition_state"]
