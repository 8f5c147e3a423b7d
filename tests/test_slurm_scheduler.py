"""Issue #24 §4–5 without a bed: reservations, sdiag statistics, sprio and squeue --start parsed from
real recorded outputs (Slurm 22.05.8 and 25.11.7, tests/fixtures/slurm/README.md), the CLI's
``--json``→text fallback, the read-back, the findings and the controller's session trends."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hpctui.core.store import Store
from hpctui.findings.health import Thresholds
from hpctui.findings.index import findings_for
from hpctui.findings.scheduler import CONTROLLER_KEY, controller_findings
from hpctui.model import ClusterSnapshot, ControllerHealth, Node, SlurmNodeInfo, SourceResult
from hpctui.model.scheduler import CTLD_TRENDS, CTLD_USER_RPCS, Reservation, SchedulerStats
from hpctui.sources.slurm import SlurmSettings, build_slurm_source
from hpctui.sources.slurm.cli import CliBackend
from hpctui.sources.slurm.outlook import query_outlook
from hpctui.sources.slurm.parse import parse_diag_json, parse_sdiag_text
from hpctui.sources.slurm.parse.priority import parse_sprio, parse_squeue_start
from hpctui.sources.slurm.parse.reservations import parse_reservations_json, parse_scontrol_reservations
from hpctui.sources.slurm.runner import RunResult

FIX = Path(__file__).parent / "fixtures" / "slurm"


def fix(name: str) -> str:
    return (FIX / name).read_text()


# -- reservations: the same two reservations, four documents, two versions --------------------
@pytest.mark.parametrize("name", ["cli_scontrol_show_reservation_oneliner.txt",
                                  "cli_25.11_scontrol_show_reservation_oneliner.txt",
                                  "rest_v0.0.38_reservations.json", "cli_25.11_scontrol_show_reservation.json",
                                  "rest_25.11_v0.0.44_reservations.json"])
def test_reservations_of_every_form_read_alike(name: str) -> None:
    text = fix(name)
    resvs = parse_reservations_json(text) if name.endswith(".json") else parse_scontrol_reservations(text)
    maint, team = resvs
    assert (maint.name, maint.nodes, maint.node_count, maint.users) == ("maint_gpu03", "gpu[03-04]", 2, ("root",))
    assert maint.flags == ("MAINT", "IGNORE_JOBS", "SPEC_NODES") and maint.maintenance
    assert maint.end_time is not None and maint.start_time is not None and maint.end_time - maint.start_time == 7200
    assert (team.name, team.nodes, team.users, team.maintenance) == ("ml_team", "cpu02", ("alice", "bob"), False)
    assert team.end_time is not None and team.start_time is not None and team.end_time - team.start_time == 86_400
    now = team.start_time + 5
    assert team.active(now) and not maint.active(now)  # 25.11's JSON has no state: the times decide
    if not name.endswith(".json"):
        assert (maint.state, team.state) == ("INACTIVE", "ACTIVE")


def test_hostile_reservation_text_is_cleaned_and_a_bad_node_list_costs_the_nodes_only() -> None:
    line = fix("cli_scontrol_show_reservation_oneliner.txt").splitlines()[0]
    line = line.replace("ReservationName=maint_gpu03", "ReservationName=evil\x1b[31m").replace(
        "Nodes=gpu[03-04]", "Nodes=gpu[04-03")
    dropped: list[str] = []
    (resv,) = parse_scontrol_reservations(line + "\n", on_invalid=dropped.append)
    assert "\x1b" not in resv.name and resv.nodes is None and dropped
    assert parse_scontrol_reservations("No reservations in the system\n") == ()


# -- sdiag: text (22.05, 25.11), sdiag --json (25.11), REST diag (v0.0.38, v0.0.44) ------------------
def test_sdiag_text_gives_rpcs_by_type_and_user_and_backfill() -> None:
    health = parse_sdiag_text(fix("cli_sdiag_hammer.txt"))
    stats = health.stats
    assert stats is not None and stats.server_thread_count == 3 and stats.agent_queue_size == 0
    assert stats.rpc_by_user[0].name == "alice" and stats.rpc_by_user[0].count == 122  # the bed's squeue loop
    assert stats.rpc_by_user[0].ave_time_us == 270 and stats.rpc_by_user[0].id == 1001
    assert stats.rpc_by_type[0].count >= stats.rpc_by_type[-1].count
    assert {r.name for r in stats.rpc_by_type} >= {"REQUEST_JOB_INFO", "REQUEST_CREATE_RESERVATION"}
    assert stats.bf_cycles == 1 and stats.bf_cycle_last_us == 718 and stats.bf_last_cycle_time == 1796180327.0
    assert (stats.time, stats.since) == (1796180329.0, 1796180323.0)
    assert health.last_backfill_cycle_s == pytest.approx(718e-6)


def test_sdiag_25_11_text_json_and_rest_agree() -> None:
    text = parse_sdiag_text(fix("cli_25.11_sdiag.txt")).stats
    cli_json = parse_diag_json(fix("cli_25.11_sdiag.json")).stats
    rest = parse_diag_json(fix("rest_25.11_v0.0.44_diag.json")).stats
    assert text is not None and cli_json is not None and rest is not None
    assert text.bf_cycle_last_us == cli_json.bf_cycle_last_us == 296
    assert text.bf_last_cycle_time == cli_json.bf_last_cycle_time == rest.bf_last_cycle_time
    assert {r.name for r in text.rpc_by_type} <= {r.name for r in rest.rpc_by_type}
    assert any(r.name == "ACCOUNTING_UPDATE_MSG" and r.id == 10001 for r in text.rpc_by_type)  # "(10001)": no pad
    assert cli_json.rpc_by_user[0].name == "root" and cli_json.rpc_by_user[0].ave_time_us == 115  # wrapped number


def test_rest_v0_0_38_diag_has_the_hammering_user() -> None:
    stats = parse_diag_json(fix("rest_v0.0.38_diag_hammer.json")).stats
    assert stats is not None and stats.rpc_by_user[0].name == "alice" and stats.rpc_by_user[0].count == 122
    assert stats.time is not None and stats.since is not None


# -- sprio / squeue --start ---------------------------------------------------------------
@pytest.mark.parametrize("prefix", ["cli_", "cli_25.11_"])
def test_sprio_and_expected_start(prefix: str) -> None:
    (f,) = parse_sprio(fix(f"{prefix}sprio_j_parsable.txt"))
    assert (f.job_id, f.user, f.priority, f.fairshare, f.qos, f.age, f.tres) == ("4", "root", 11000, 1000, 10000, 0, None)
    starts = {s.job_id: s for s in parse_squeue_start(fix(f"{prefix}squeue_start_parsable.txt"))}
    assert starts["4"].start_time is not None and starts["4"].sched_nodes == "gpu[01-02]"
    assert starts["4"].reason == "Resources" and starts["3"].start_time is None  # N/A: held


class ScriptedRunner:
    """argv prefix → (rc, stdout, stderr); records the calls."""

    def __init__(self, answers: dict[tuple[str, ...], tuple[int, str, str]]) -> None:
        self.answers = answers
        self.argvs: list[tuple[str, ...]] = []
        self.calls: list[str] = []

    async def run(self, argv: list[str], *, timeout_s: float | None = None) -> RunResult:
        self.argvs.append(tuple(argv))
        self.calls.append(" ".join(argv))
        rc, out, err = next((v for k, v in self.answers.items() if tuple(argv[:len(k)]) == k), (1, "", "no answer"))
        return RunResult(argv=tuple(argv), rc=rc, stdout=out.encode(), stderr=err, duration_s=0.0)

    def reset_calls(self) -> None:
        self.calls.clear()


def test_job_outlook_runs_sprio_and_squeue_start_and_checks_the_id() -> None:
    runner = ScriptedRunner({("sprio",): (0, fix("cli_sprio_j_parsable.txt"), ""),
                             ("squeue",): (0, fix("cli_squeue_start_parsable.txt"), "")})
    outlook = asyncio.run(query_outlook(runner, "4"))  # type: ignore[arg-type]
    assert outlook.factors is not None and outlook.factors.qos == 10000
    assert outlook.start is not None and outlook.start.sched_nodes == "gpu[01-02]" and outlook.detail is None
    assert runner.argvs[0] == ("sprio", "-h", "-j", "4", "-o", "%i|%u|%Y|%A|%F|%J|%P|%Q|%N|%T|%S")
    with pytest.raises(ValueError):
        asyncio.run(query_outlook(runner, "4;id"))  # type: ignore[arg-type]
    running = ScriptedRunner({("sprio",): (1, "", "Unable to find jobs matching user/id(s) specified"),
                              ("squeue",): (0, "", "")})
    outlook = asyncio.run(query_outlook(running, "7"))  # type: ignore[arg-type]
    assert outlook.factors is None and outlook.detail and "sprio failed" in outlook.detail


# -- the CLI backend: scontrol --json where it exists, text otherwise (22.05) --------------------
def test_cli_reservations_fall_back_to_text_once_on_22_05() -> None:
    runner = ScriptedRunner({
        ("scontrol", "--json"): (1, "", fix("cli_scontrol_show_reservation_json_unrecognized.txt")),
        ("scontrol", "-o", "show", "reservation"): (0, fix("cli_scontrol_show_reservation_oneliner.txt"), ""),
    })
    cli = CliBackend(runner)  # type: ignore[arg-type]
    warnings: list[str] = []
    first = asyncio.run(cli.read_reservations(warnings))
    again = asyncio.run(cli.read_reservations(warnings))
    assert first is not None and again is not None and [r.name for r in first] == ["maint_gpu03", "ml_team"]
    assert [a[:2] for a in runner.argvs] == [("scontrol", "--json"), ("scontrol", "-o"), ("scontrol", "-o")]
    assert warnings == ["scontrol has no --json here: reservations read as scontrol -o text"]


def test_cli_reservations_json_on_25_11_and_a_failure_is_a_warning() -> None:
    runner = ScriptedRunner({("scontrol", "--json"): (0, fix("cli_25.11_scontrol_show_reservation.json"), "")})
    warnings: list[str] = []
    got = asyncio.run(CliBackend(runner).read_reservations(warnings))  # type: ignore[arg-type]
    assert got is not None and len(got) == 2 and not warnings
    broken = ScriptedRunner({("scontrol",): (1, "", "slurm_load_reservations: Access denied")})
    assert asyncio.run(CliBackend(broken).read_reservations(warnings)) is None  # type: ignore[arg-type]
    assert any("reservations unavailable" in w for w in warnings)


def test_the_source_reads_reservations_every_interval_and_after_an_action(tmp_path: Path) -> None:
    def tool(name: str, script: str) -> None:
        path = tmp_path / name
        path.write_text("#!/bin/sh\n" + script + "\n")
        path.chmod(0o755)

    tool("sinfo", f"cat {FIX / 'cli_sinfo.json'}")
    tool("squeue", f"cat {FIX / 'cli_squeue.json'}")
    tool("sdiag", f"cat {FIX / 'cli_sdiag_hammer.txt'}")
    tool("scontrol", f'case "$*" in *"--json show reservation"*) cat {FIX / "cli_25.11_scontrol_show_reservation.json"};; '
                     f'*"show partition"*) cat {FIX / "cli_scontrol_show_partition_oneliner.txt"};; *) exit 1;; esac')
    src = build_slurm_source(SlurmSettings(backend="cli", bin_dir=str(tmp_path), reservations_interval_s=3600))

    async def go() -> None:
        first = await src.collect()
        assert first.reservations is not None and [r.name for r in first.reservations] == ["maint_gpu03", "ml_team"]
        assert first.controller is not None and first.controller.stats is not None
        second = await src.collect()
        assert second.reservations is None  # not due: the store keeps the last read
        src._reservations_at = None  # what execute() does after a reservation action
        assert (await src.collect()).reservations is not None

    asyncio.run(go())


# -- findings --------------------------------------------------------------------------------
def _snap(reservations: tuple[Reservation, ...], now: float, drained: str = "gpu03",
          controller: ControllerHealth | None = None) -> ClusterSnapshot:
    nodes = {n: Node(name=n, slurm=SlurmNodeInfo(base_state="IDLE", flags=("DRAIN",) if n == drained else ()))
             for n in ("gpu01", "gpu02", "gpu03", "gpu04", "cpu02")}
    return ClusterSnapshot(cluster="t", time=now, nodes=nodes, reservations=reservations, controller=controller,
                           collected_at={"reservations": now})


def test_reservation_over_a_drained_node_and_maintenance_soon_are_findings() -> None:
    resvs = parse_scontrol_reservations(fix("cli_scontrol_show_reservation_oneliner.txt"))
    start = resvs[0].start_time
    assert start is not None
    idx = findings_for(_snap(resvs, start - 3600), Thresholds())
    gpu03 = {f.code: f for f in idx.node("gpu03")}
    assert "resv_unusable" in gpu03 and "maintenance reservation maint_gpu03" in gpu03["resv_unusable"].message
    assert "starts in 1h00m" in gpu03["resv_maint_soon"].message
    assert [f.code for f in idx.node("gpu04")] == ["resv_maint_soon"] and idx.node("gpu01") == ()
    far = findings_for(_snap(resvs, start - 3600), Thresholds(maint_window_s=600))
    assert [f.code for f in far.node("gpu04")] == []
    team = findings_for(_snap(resvs, start - 3600, drained="cpu02"), Thresholds())
    msg = {f.code: f.message for f in team.node("cpu02")}["resv_unusable"]
    assert msg.startswith("drained node in reservation ml_team (active)") and "alice,bob get one node less" in msg


def test_controller_findings_from_thresholds() -> None:
    stats = SchedulerStats(time=1000.0, since=900.0,
                           rpc_by_user=parse_sdiag_text(fix("cli_sdiag_hammer.txt")).stats.rpc_by_user)  # type: ignore[union-attr]
    ctl = ControllerHealth(reachable=True, agent_queue_size=250, server_thread_count=3, last_backfill_cycle_s=45.0,
                           stats=stats)
    codes = {f.code: f for f in controller_findings(_snap((), 1000.0, controller=ctl), Thresholds())}
    assert set(codes) == {"ctld_agent_queue", "ctld_backfill_slow"}  # alice: 122 RPCs in 100 s < 20/s
    codes = {f.code for f in controller_findings(_snap((), 1000.0, controller=ctl),
                                                 Thresholds(rpc_user_rate_warn=1.0, agent_queue_warn=1000,
                                                            backfill_interval_s=60))}
    assert codes == {"ctld_rpc_user"}
    idx = findings_for(_snap((), 1000.0, controller=ctl), Thresholds())
    assert {f.code for f in idx.cluster} == {"ctld_agent_queue", "ctld_backfill_slow"}
    assert CONTROLLER_KEY not in idx.by_node and {"ctld_agent_queue"} <= {f.code for f in idx}


def test_store_records_the_controller_trends_and_keeps_reservations() -> None:
    store = Store("t")
    health = parse_sdiag_text(fix("cli_sdiag_hammer.txt"))
    resvs = parse_scontrol_reservations(fix("cli_scontrol_show_reservation_oneliner.txt"))
    store.apply(SourceResult(source="s", time=10.0, controller=health, reservations=resvs))
    store.apply(SourceResult(source="s", time=15.0, controller=health))  # reservations not re-read: kept
    assert store.snapshot().reservations == resvs
    assert [v for _, v in store.ctld_history.get(CTLD_USER_RPCS + "alice")] == [122.0, 122.0]
    assert len(store.ctld_history.get(CTLD_TRENDS["bf_cycle_s"])) == 2


def test_pyslurm_statistics_map_to_the_same_stats() -> None:
    """Attribute names as pyslurm 25.11's slurmctld/stats.pxd declares them (RPC tables are dicts)."""
    from types import SimpleNamespace

    from hpctui.sources.slurm.parse import health_from_pyslurm

    rpc_type = SimpleNamespace(id=2003, name="REQUEST_JOB_INFO", count=63, time=18282, average_time=290)
    rpc_user = SimpleNamespace(user_id=1001, user_name="alice", count=122, time=33041, average_time=270)
    stats = SimpleNamespace(request_time=1796180329, data_since=1796180323, server_thread_count=3,
                            agent_queue_size=0, backfill_cycle_last=718, backfill_cycle_counter=1,
                            backfill_cycle_last_when=1796180327, backfill_active=False,
                            rpcs_by_type={"REQUEST_JOB_INFO": rpc_type}, rpcs_by_user={"alice": rpc_user})
    got = health_from_pyslurm(stats).stats
    assert got is not None and got.rpc_by_user[0].name == "alice" and got.rpc_by_user[0].id == 1001
    assert got.rpc_by_type[0].total_time_us == 18282 and got.bf_last_cycle_time == 1796180327.0
    assert got.since == 1796180323.0 and got.bf_active is False
