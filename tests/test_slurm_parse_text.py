"""Text fallbacks (scontrol -o, sinfo/squeue -o, sdiag, sshare, sacctmgr) and pure helpers."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from hpctui.model.jobs import SlurmJob
from hpctui.sources.slurm.parse import (
    SEP,
    SINFO_FORMAT,
    SQUEUE_FORMAT,
    SlurmParseError,
    decode_exit_code,
    decode_exit_pair,
    explain_pending_reason,
    job_from_pyslurm,
    node_from_pyslurm,
    normalize_node_state,
    parse_gres,
    parse_gres_used,
    parse_sacctmgr_assoc_text,
    parse_sacctmgr_qos_text,
    parse_scontrol_jobs,
    parse_scontrol_nodes,
    parse_sdiag_text,
    parse_sinfo_text,
    parse_squeue_text,
    parse_sshare_text,
)

FIX = Path(__file__).parent / "fixtures" / "slurm"


def txt(name: str) -> str:
    return (FIX / name).read_text()


def test_scontrol_nodes() -> None:
    nodes = parse_scontrol_nodes(txt("cli_scontrol_show_node_oneliner.txt"))
    assert len(nodes) == 8
    g1 = nodes["gpu01"]
    assert (g1.display_state, g1.reason, g1.reason_user, g1.gpus_total, g1.gpus_alloc) == (
        "DRAINING", "ECC errors on GPU3", "root", 8, 2)
    assert g1.reason_time is not None and g1.partitions == ("gpu", "debug") and g1.memory_alloc_mb == 65536
    assert nodes["gpu04"].display_state == "DRAINED" and nodes["cpu04"].reason == "PSU failure"
    assert nodes["cpu01"].gres is None and nodes["cpu01"].gpus_total == 0


def test_scontrol_reason_with_equals_stays_whole() -> None:
    line = ("NodeName=gpu07 CPUAlloc=0 CPUTot=64 Gres=gpu:h100:8 OS=Linux 6.1 #1 SMP RealMemory=1 State=DOWN*+DRAIN "
            "Partitions=gpu AllocTRES= Reason=xid 79 gpu=3 fell off bus [ops@2026-01-02T03:04:05]")
    n = parse_scontrol_nodes(line)["gpu07"]
    assert n.reason == "xid 79 gpu=3 fell off bus" and n.reason_user == "ops"
    assert n.base_state == "DOWN" and n.flags == {"DRAIN", "NOT_RESPONDING"}
    with pytest.raises(SlurmParseError, match="invalid node name"):
        parse_scontrol_nodes("NodeName=bad_name State=IDLE")
    with pytest.raises(SlurmParseError, match="lacks"):
        parse_scontrol_nodes("NodeName=gpu01 CPUTot=")


def test_scontrol_jobs_detail() -> None:
    jobs = {j.job_id: j for j in parse_scontrol_jobs(txt("cli_scontrol_show_job_detail_oneliner.txt"))}
    assert sorted(jobs) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 17]
    assert jobs[1].gpus_alloc == {"gpu01": "0-1"} and jobs[1].user == "alice" and jobs[1].time_limit_min == 720
    assert jobs[6].reason == "ReqNodeNotAvail, UnavailableNodes:gpu[01,04]" and jobs[6].num_nodes == 2
    assert (jobs[9].array_job_id, jobs[9].array_task_str, jobs[16].array_task_id) == (9, "2-5%2", 0)
    assert jobs[5].restart_count == 1 and jobs[5].reason == "BeginTime"
    fin = {j.job_id: j for j in parse_scontrol_jobs(txt("cli_scontrol_show_job_detail_oneliner.txt"),
                                                     include_finished=True)}
    assert (fin[13].exit_code, fin[13].exit_signal) == (3, None)


def test_scontrol_multi_node_gres_groups() -> None:
    line = ("JobId=40 JobName=x UserId=a(1) JobState=RUNNING Reason=None NodeList=gpu[01-03] NumNodes=3 "
            "JOB_GRES=gpu:h100:6 Nodes=gpu[01-02] CPU_IDs=0-7 Mem=1 GRES=gpu:h100:2(IDX:0-1) "
            "Nodes=gpu03 CPU_IDs=0-3 Mem=1 GRES=gpu:h100:2(IDX:2,5) TresPerNode=gres:gpu:h100:2")
    (job,) = parse_scontrol_jobs(line)
    assert job.gpus_alloc == {"gpu01": "0-1", "gpu02": "0-1", "gpu03": "2,5"} and job.gpus_requested == 6


def test_sinfo_and_squeue_text() -> None:
    assert SINFO_FORMAT.count(SEP) == 12 and SQUEUE_FORMAT.count(SEP) == 19
    sample = txt("cli_sinfo_parsable.txt")
    nodes = parse_sinfo_text(sample.replace("|", SEP))
    assert nodes == parse_sinfo_text(sample, sep="|")
    assert nodes["gpu01"].display_state == "DRAINING" and nodes["gpu04"].display_state == "DRAINED"
    assert nodes["gpu01"].partitions == ("gpu", "debug") and nodes["cpu01"].partitions == ("cpu", "debug")
    assert nodes["gpu01"].cpus_alloc == 8 and nodes["gpu01"].gpus_total == 8 and nodes["gpu01"].gpus_alloc is None
    assert nodes["cpu04"].reason == "PSU failure" and nodes["gpu02"].reason is None
    jobs = {j.job_id: j for j in parse_squeue_text(txt("cli_squeue_parsable.txt"), sep="|")}
    assert sorted(jobs) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 17]
    assert jobs[9].display_id == "9_[2-5%2]" and jobs[16].display_id == "9_0" and jobs[3].array_job_id is None
    assert jobs[1].time_limit_min == 720 and jobs[1].gpus_requested == 2 and jobs[6].gpus_requested == 16
    with pytest.raises(SlurmParseError, match="fields"):
        parse_squeue_text("1|2|3", sep="|")


def test_sdiag_sshare_qos() -> None:
    h = parse_sdiag_text(txt("cli_sdiag.txt"))
    assert (h.server_thread_count, h.jobs_pending, h.mean_schedule_cycle_us) == (3, 5, 819.0)
    assert h.last_backfill_cycle_s == pytest.approx(133e-6)
    with pytest.raises(SlurmParseError):
        parse_sdiag_text("sdiag: error: slurm_get_statistics: Unable to contact slurm controller")
    rows = parse_sshare_text(txt("cli_sshare.txt"))
    assert [(r.account, r.user, r.depth) for r in rows][:4] == [
        ("root", None, 0), ("root", "root", 1), ("ml", None, 1), ("ml", "alice", 2)]
    assert rows[3].norm_shares == 0.5 and rows[3].fairshare == 1.0 and rows[0].fairshare is None
    piped = "Account|User|RawShares|NormShares|RawUsage|EffectvUsage|FairShare\nml|alice|1|0.5|10|0.25|0.8\n"
    assert parse_sshare_text(piped)[0].raw_usage == 10
    qos = {q.name: q for q in parse_sacctmgr_qos_text(txt("cli_sacctmgr_qos.txt"))}
    assert qos["high"].max_wall_min == 1440 and qos["low"].max_jobs_per_user == 2 and qos["normal"].priority == 100
    q = parse_sacctmgr_qos_text("Name|MaxTRESPU\ngpu|cpu=64,gres/gpu=8\n")[0]
    assert q.max_gpus_per_user == 8



def test_sshare_long_parsable_with_accounting() -> None:
    """``sshare -P -l -a`` from the bed with accounting: indentation kept, -l columns read."""
    rows = parse_sshare_text(txt("cli_sshare_Pl.txt"))
    assert [(r.account, r.user, r.depth) for r in rows] == [
        ("root", None, 0), ("root", "root", 1), ("ml", None, 1), ("ml", "alice", 2), ("ml", "root", 2),
        ("physics", None, 1), ("physics", "alice", 2), ("physics", "bob", 2), ("physics", "root", 2)]
    by = {(r.account, r.user): r for r in rows}
    assert by[("ml", None)].raw_shares == 60 and by[("physics", None)].norm_shares == pytest.approx(0.39604)
    alice = by[("physics", "alice")]
    assert (alice.raw_shares, alice.raw_usage, alice.fairshare, alice.norm_usage) == (30, 7, 1.0, 0.0)
    assert alice.level_fs == float("inf") and by[("root", None)].level_fs is None
    assert by[("physics", "bob")].norm_shares == pytest.approx(0.272727)
    one = parse_sshare_text(txt("cli_sshare_Pl_user_alice.txt"))  # -u alice: her rows + parent accounts
    assert [(r.account, r.user) for r in one if r.user] == [("ml", "alice"), ("physics", "alice")]
    assert parse_sshare_text("Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare\n") == []


def test_sacctmgr_qos_limits_and_assoc() -> None:
    qos = {q.name: q for q in parse_sacctmgr_qos_text(txt("cli_sacctmgr_qos_limits.txt"))}
    g = qos["gpu-limited"]
    assert (g.priority, g.max_wall_min, g.max_jobs_per_user, g.max_submit_per_user) == (50, 720, 2, 10)
    assert (g.max_tres_per_user, g.max_gpus_per_user) == ("gres/gpu=4", 4)
    assert qos["normal"].max_jobs_per_user is None and qos["normal"].max_gpus_per_user is None
    assoc = parse_sacctmgr_assoc_text(txt("cli_sacctmgr_assoc_alice.txt"))
    assert [(a.account, a.user, a.share, a.max_jobs) for a in assoc] == [
        ("physics", "alice", "30", 10), ("ml", "alice", "30", 10)]
    assert assoc[0].qos == ("gpu-limited", "normal") and assoc[0].default_qos == "normal"
    assert assoc[0].cluster == "hpctuilab" and assoc[0].partition is None and assoc[0].max_submit is None
    old = parse_sacctmgr_assoc_text(txt("cli_sacctmgr_assoc.txt"))  # 22.05 sample, fewer columns
    assert old[0].account == "root" and old[0].user is None and old[6].qos == ("low", "normal")
    with pytest.raises(SlurmParseError, match="Account"):
        parse_sacctmgr_assoc_text("Cluster|Account|User\nc1||alice\n")
    with pytest.raises(SlurmParseError, match="fields"):
        parse_sacctmgr_assoc_text("Cluster|Account|User\nc1\n")


@pytest.mark.parametrize(
    ("gres", "expected"),
    [("gpu:h100:8(S:0-1)", ("h100", 8)), ("gpu:8", (None, 8)), ("(null)", (None, 0)), ("", (None, 0)),
     (None, (None, None)), ("nic:2,gpu:h100:4(S:0),gpu:h100:4(S:1)", ("h100", 8)), ("gpu:a100:2,gpu:h100:4", ("a100,h100", 6)),
     ("gpu:h100:no_consume:8", ("h100", 8)), ("mps:400", (None, 0))],
)
def test_parse_gres(gres: str | None, expected: tuple[str | None, int | None]) -> None:
    assert parse_gres(gres) == expected


def test_parse_gres_used() -> None:
    assert parse_gres_used("gpu:h100:2(IDX:0-1)") == (2, {"h100": "0-1"})
    assert parse_gres_used("gpu:h100:3(IDX:0,2-3),gpu:a100:1(IDX:4)") == (4, {"h100": "0,2-3", "a100": "4"})
    assert parse_gres_used("gpu:h100:0(IDX:N/A)") == (0, {})
    assert parse_gres_used("gpu:0") == (0, {})
    assert parse_gres_used(None) == (None, {})


def test_exit_codes() -> None:
    assert decode_exit_code(256) == (1, None)
    assert decode_exit_code(768) == (3, None)
    assert decode_exit_code(9) == (None, 9)
    assert decode_exit_code(15) == (None, 15)
    assert decode_exit_code(0x80 | 11) == (None, 11)  # core dumped
    assert decode_exit_code(0) == (0, None)
    assert decode_exit_code(None) == (None, None) and decode_exit_code(0xFFFFFFFE) == (None, None)
    assert decode_exit_pair("3:0") == (3, None) and decode_exit_pair("0:9") == (None, 9)


def test_node_states() -> None:
    assert normalize_node_state("idle", ["DRAIN"]) == ("IDLE", frozenset({"DRAIN"}))
    assert normalize_node_state(["MIXED", "DRAIN", "COMPLETING"]) == ("MIXED", frozenset({"DRAIN", "COMPLETING"}))
    assert normalize_node_state("drained") == ("IDLE", frozenset({"DRAIN"}))
    assert normalize_node_state("drng") == ("ALLOCATED", frozenset({"DRAIN"}))
    assert normalize_node_state("mix*") == ("MIXED", frozenset({"NOT_RESPONDING"}))
    assert normalize_node_state("idle~") == ("IDLE", frozenset({"POWERED_DOWN"}))
    assert normalize_node_state("IDLE+PLANNED") == ("IDLE", frozenset({"PLANNED"}))
    assert normalize_node_state("planned") == ("PLANNED", frozenset())
    assert normalize_node_state("drain") == ("IDLE", frozenset({"DRAIN"}))


def test_pending_reasons() -> None:
    job = SlurmJob(job_id=5, qos="low", account="physics", user="bob", restart_count=1)
    assert "higher-priority" in explain_pending_reason("Priority")
    assert "resources" in explain_pending_reason("Resources")
    assert "eligible later" in explain_pending_reason("BeginTime", job) and "requeued 1" in explain_pending_reason(
        "BeginTime", job)
    assert "never be satisfied" in explain_pending_reason("DependencyNeverSatisfied")
    assert "user" in explain_pending_reason("JobHeldUser") and "administrator" in explain_pending_reason("JobHeldAdmin")
    assert explain_pending_reason("QOSMaxJobsPerUserLimit", job) == (
        "QOS 'low' limit reached: max jobs per user — waits until usage drops or the limit is raised")
    assert "association (account 'physics', user 'bob') limit reached: group GRES" in explain_pending_reason(
        "AssocGrpGRES", job)
    assert "QOS limit reached: group GRES (e.g. GPUs) running minutes" in explain_pending_reason("QOSGrpGRESRunMinutes")
    assert explain_pending_reason("ReqNodeNotAvail, UnavailableNodes:gpu[01,04]").endswith(": gpu[01,04]")
    assert explain_pending_reason("ReqNodeNotAvail,_UnavailableNodes:gpu[01,04]").endswith(": gpu[01,04]")
    assert "down, drained or reserved" in explain_pending_reason(
        "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions")
    assert "never start" in explain_pending_reason("PartitionTimeLimit")
    assert "requeued and held it" in explain_pending_reason("launch failed requeued held")
    assert explain_pending_reason("SomethingNew") == "Slurm reason: SomethingNew"
    assert explain_pending_reason(None) == "no reason given"


def test_pyslurm_mapping() -> None:
    node = SimpleNamespace(
        name="gpu01", state="MIXED+DRAIN", reason="ECC errors on GPU3", reason_user="root", reason_time=1795972353,
        partitions=["gpu", "debug"], available_features=["h100", "ib"], active_features=["h100", "ib"],
        configured_gres={"gpu:h100": 8}, allocated_gres={"gpu:h100": {"count": 2, "indexes": "0-1"}},
        total_cpus=64, alloc_cpus=8, real_memory=512000, alloc_memory=65536,
    )
    info = node_from_pyslurm(node)
    assert (info.display_state, info.gpus_total, info.gpus_alloc, info.gpu_type) == ("DRAINING", 8, 2, "h100")
    assert (info.reason_time, info.memory_alloc_mb, info.partitions) == (1795972353.0, 65536, ("gpu", "debug"))
    old = SimpleNamespace(name="gpu02", state="IDLE", alloc_memory="64G", configured_gres={}, total_cpus=64)
    assert node_from_pyslurm(old).memory_alloc_mb is None and node_from_pyslurm(old).gpus_total == 0
    job = SimpleNamespace(
        id=16, name="sweep", user_name="root", account="root", partition="debug", qos="normal", state="RUNNING",
        state_reason="None", nodes="gpu03", num_nodes=1, array_job_id=9, array_task_id=0, array_tasks_waiting=None,
        submit_time=1795972353, start_time=1795972354, end_time=1795972954, time_limit=10, exit_code=None,
        exit_code_signal=9, requeue_count=0, is_requeueable=True, is_batch_job=True, priority=2000,
        gres_per_node={"gpu:h100": 2},
    )
    j = job_from_pyslurm(job)
    assert (j.display_id, j.reason, j.exit_code, j.exit_signal, j.gpus_requested) == ("9_0", None, None, 9, 2)
    assert (j.requeueable, j.batch, j.restart_count, j.time_limit_min) == (True, True, 0, 10)
    with pytest.raises(SlurmParseError):
        node_from_pyslurm(SimpleNamespace(name="bad name", state="IDLE"))
    with pytest.raises(SlurmParseError):
        job_from_pyslurm(SimpleNamespace(name="x"))
