"""``scontrol -o show nodes|jobs``: every key scontrol prints splits, values with spaces and ``=`` stay whole,
and whole records come out field by field.

The key lists are the keys scontrol prints in ``-o`` output of Slurm 22.05–25.11 (scontrol(1), the recorded
outputs in tests/fixtures/slurm and Slurm's ``scontrol/info_node.c``/``info_job.c``).
"""

from __future__ import annotations

import datetime as dt

import pytest

from hpctui.model import SlurmJob, SlurmNodeInfo
from hpctui.sources.slurm.parse import SlurmParseError, parse_scontrol_jobs, parse_scontrol_nodes
from hpctui.sources.slurm.parse.scontrol import _JOB_SPLIT, _NODE_SPLIT, split_pairs

F = frozenset
NODE_KEYS = [
    "NodeName", "Arch", "CoresPerSocket", "CPUAlloc", "CPUEfctv", "CPUTot", "CPULoad", "AvailableFeatures",
    "ActiveFeatures", "Gres", "GresDrain", "GresUsed", "NodeAddr", "NodeHostName", "Port", "Version", "OS",
    "RealMemory", "AllocMem", "FreeMem", "Sockets", "Boards", "State", "ThreadsPerCore", "TmpDisk", "Weight",
    "Owner", "MCS_label", "Partitions", "BootTime", "SlurmdStartTime", "LastBusyTime", "ResumeAfterTime", "CfgTRES",
    "AllocTRES", "CapWatts", "CurrentWatts", "AveWatts", "ExtSensorsJoules", "ExtSensorsWatts", "ExtSensorsTemp",
    "Reason", "Comment", "Extra", "NextState", "InstanceId", "InstanceType", "CoreSpecCount", "CPUSpecList",
    "MemSpecLimit", "Topology", "Reservation", "LastBusy", "ResvInfo", "GresReserved",
]
JOB_KEYS = [
    "JobId", "ArrayJobId", "ArrayTaskId", "ArrayTaskThrottle", "HetJobId", "HetJobOffset", "HetJobIdSet", "JobName",
    "UserId", "GroupId", "MCS_label", "Priority", "Nice", "Account", "QOS", "JobState", "Reason", "Dependency",
    "Requeue", "Restarts", "BatchFlag", "Reboot", "ExitCode", "DerivedExitCode", "RunTime", "TimeLimit", "TimeMin",
    "SubmitTime", "EligibleTime", "AccrueTime", "StartTime", "EndTime", "Deadline", "SuspendTime", "SecsPreSuspend",
    "LastSchedEval", "Scheduler", "Partition", "AllocNode:Sid", "ReqNodeList", "ExcNodeList", "NodeList",
    "BatchHost", "NumNodes", "NumCPUs", "NumTasks", "CPUs/Task", "ReqB:S:C:T", "TRES", "Socks/Node",
    "NtasksPerN:B:S:C", "CoreSpec", "JOB_GRES", "Nodes", "CPU_IDs", "Mem", "GRES", "MinCPUsNode", "MinMemoryNode",
    "MinMemoryCPU", "MinTmpDiskNode", "Features", "DelayBoot", "OverSubscribe", "Contiguous", "Licenses", "Network",
    "Command", "WorkDir", "Comment", "AdminComment", "SystemComment", "StdErr", "StdIn", "StdOut", "Power",
    "TresPerNode", "TresPerJob", "TresPerTask", "TresPerSocket", "CpusPerTres", "MemPerTres", "TresBind", "TresFreq",
    "MailUser", "MailType", "Container", "ContainerID", "Prefer", "Partitions", "Reservation", "Extra", "ResizeTime",
    "PreemptEligibleTime", "PreemptTime", "CronJob", "CrontabSpec", "LicensesAlloc", "BurstBuffer",
    "BurstBufferState", "NtasksPerTRES", "Cluster", "ClusterFeatures", "KillOInInvalidDependent", "SegmentSize",
    "ReqNodes", "ReqGRES", "StepMgrEnabled",
]


def local(s: str) -> float:
    """scontrol prints local time without a zone."""
    return dt.datetime.fromisoformat(s).timestamp()


@pytest.mark.parametrize(("keys", "pattern"), [(NODE_KEYS, _NODE_SPLIT), (JOB_KEYS, _JOB_SPLIT)], ids=["node", "job"])
def test_every_key_splits(keys: list[str], pattern: object) -> None:
    line = " ".join(f"{k}=v{i} x" for i, k in enumerate(keys))  # values with a space in them
    assert split_pairs(line, pattern) == [(k, f"v{i} x") for i, k in enumerate(keys)]  # type: ignore[arg-type]


def test_unknown_keys_and_equals_stay_in_the_value() -> None:
    line = "NodeName=gpu01 OS=Linux 6.1 #1 SMP Foo=bar CfgTRES=cpu=8,mem=64G Reason=a=b [root@2026-01-02T03:04:05]"
    assert split_pairs(line, _NODE_SPLIT) == [
        ("NodeName", "gpu01"), ("OS", "Linux 6.1 #1 SMP Foo=bar"), ("CfgTRES", "cpu=8,mem=64G"),
        ("Reason", "a=b [root@2026-01-02T03:04:05]")]
    assert split_pairs("XNodeName=a NodeName=b", _NODE_SPLIT) == [("NodeName", "b")], "a key starts at a word"
    assert split_pairs("", _NODE_SPLIT) == []


NODE_LINE = ("NodeName=gpu01 Arch=x86_64 CoresPerSocket=32 CPUAlloc=8 CPUEfctv=64 CPUTot=64 CPULoad=1.00 "
             "AvailableFeatures=h100,ib,nvl ActiveFeatures=h100,ib Gres=gpu:h100:8(S:0-1) NodeAddr=10.0.0.1 "
             "NodeHostName=gpu01 Version=25.11.0 OS=Linux 6.1 #1 SMP RealMemory=512000 AllocMem=65536 "
             "FreeMem=400000 Sockets=2 Boards=1 State=MIXED+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A "
             "MCS_label=N/A Partitions=gpu,debug BootTime=2026-11-29T16:35:21 SlurmdStartTime=2026-11-29T17:12:30 "
             "CfgTRES=cpu=64,mem=500G,gres/gpu=8 AllocTRES=cpu=8,mem=64G,gres/gpu=2 "
             "Reason=ECC errors on GPU3 [root@2026-11-29T17:12:33]")


@pytest.mark.parametrize(("line", "expected"), [
    (NODE_LINE,
     SlurmNodeInfo(base_state="MIXED", flags=F({"DRAIN"}), reason="ECC errors on GPU3", reason_user="root",
                   reason_time=local("2026-11-29T17:12:33"), partitions=("gpu", "debug"), features=("h100", "ib"),
                   cpus_total=64, cpus_alloc=8, memory_total_mb=512000, memory_alloc_mb=65536, gpus_total=8,
                   gpus_alloc=2, gpu_type="h100", gres="gpu:h100:8(S:0-1)")),
    # -d output: GresUsed wins over AllocTRES; only AvailableFeatures; a reason without [user@time]
    ("NodeName=gpu02 CPUAlloc=0 CPUTot=64 AvailableFeatures=a100 Gres=gpu:a100:4 GresUsed=gpu:a100:1(IDX:0) "
     "RealMemory=256000 AllocMem=0 State=IDLE AllocTRES=cpu=8,gres/gpu=3 Reason=maintenance",
     SlurmNodeInfo(base_state="IDLE", reason="maintenance", features=("a100",), cpus_total=64, cpus_alloc=0,
                   memory_total_mb=256000, memory_alloc_mb=0, gpus_total=4, gpus_alloc=1, gpu_type="a100",
                   gres="gpu:a100:4", gres_used="gpu:a100:1(IDX:0)")),
    # no GresUsed and an AllocTRES without GPUs: 0 in use; no AllocTRES at all: not known
    ("NodeName=gpu03 Gres=gpu:8 State=ALLOCATED AllocTRES=cpu=8",
     SlurmNodeInfo(base_state="ALLOCATED", gpus_total=8, gpus_alloc=0, gres="gpu:8")),
    ("NodeName=cpu01 Gres=(null) State=DOWN* Reason=Not responding [slurm@2026-11-29T17:00:00] Partitions=(null)",
     SlurmNodeInfo(base_state="DOWN", flags=F({"NOT_RESPONDING"}), reason="Not responding", reason_user="slurm",
                   reason_time=local("2026-11-29T17:00:00"), gpus_total=0)),
    ("NodeName=cpu02 State=IDLE Reason=disk check [root@garbage]",
     SlurmNodeInfo(base_state="IDLE", reason="disk check", reason_user="root")),
    ("NodeName=cpu03 State=IDLE Reason= [root@2026-11-29T17:00:00]",
     SlurmNodeInfo(base_state="IDLE", reason_user="root", reason_time=local("2026-11-29T17:00:00"))),
])
def test_scontrol_node_records(line: str, expected: SlurmNodeInfo) -> None:
    (name,) = parse_scontrol_nodes(line)
    assert parse_scontrol_nodes(line)[name] == expected


def test_scontrol_nodes_several_lines_and_the_empty_answer() -> None:
    text = "\nNodeName=a1 State=IDLE\n\n   \nNodeName=a2 State=DOWN\n"
    assert {n: i.base_state for n, i in parse_scontrol_nodes(text).items()} == {"a1": "IDLE", "a2": "DOWN"}
    assert parse_scontrol_nodes("No nodes in the system\n") == {}
    assert parse_scontrol_nodes("") == {}


@pytest.mark.parametrize(("line", "words"), [
    ("NodeName=bad_name State=IDLE", "scontrol nodes: invalid node name 'bad_name' on line 1"),
    ("State=IDLE", "scontrol nodes: line 1 lacks NodeName= or State="),
    ("NodeName=gpu01 CPUTot=8", "scontrol nodes: line 1 lacks NodeName= or State="),
    ("NodeName=a1 State=IDLE\nNodeName= State=IDLE", "line 2 lacks"),
])
def test_bad_scontrol_nodes(line: str, words: str) -> None:
    with pytest.raises(SlurmParseError) as info:
        parse_scontrol_nodes(line)
    assert words in str(info.value)


JOB_LINE = ("JobId=1 JobName=train llm UserId=alice(1001) GroupId=alice(1001) MCS_label=N/A Priority=11000 Nice=0 "
            "Account=ml QOS=high JobState=RUNNING Reason=None Dependency=(null) Requeue=1 Restarts=2 BatchFlag=1 "
            "Reboot=0 ExitCode=0:0 DerivedExitCode=0:0 RunTime=00:00:04 TimeLimit=12:00:00 TimeMin=N/A "
            "SubmitTime=2026-11-29T17:12:31 EligibleTime=2026-11-29T17:12:31 StartTime=2026-11-29T17:12:33 "
            "EndTime=2026-11-30T05:12:33 Partition=gpu NodeList=gpu[01-02] BatchHost=gpu01 NumNodes=2-2 NumCPUs=16 "
            "TRES=cpu=16,mem=128G,node=2,billing=16,gres/gpu=4 JOB_GRES=gpu:h100:4 "
            "Nodes=gpu01 CPU_IDs=0-7 Mem=65536 GRES=gpu:h100:2(IDX:0-1) "
            "Nodes=gpu02 CPU_IDs=0-7 Mem=65536 GRES=gpu:h100:2(IDX:4,6) "
            "Comment=llama ft TresPerNode=gres:gpu:h100:2")


@pytest.mark.parametrize(("line", "expected"), [
    (JOB_LINE,
     SlurmJob(job_id=1, name="train llm", user="alice", account="ml", partition="gpu", qos="high", state="RUNNING",
              reason=None, nodes="gpu[01-02]", num_nodes=2, gpus_requested=4,
              gpus_alloc={"gpu01": "0-1", "gpu02": "4,6"}, submit_time=local("2026-11-29T17:12:31"),
              start_time=local("2026-11-29T17:12:33"), end_time=local("2026-11-30T05:12:33"), time_limit_min=720,
              exit_code=0, exit_signal=None, restart_count=2, batch=True, requeueable=True, priority=11000)),
    # a pending array remainder; reason with scontrol's underscores; GPUs from TresPerJob
    ("JobId=9 ArrayJobId=9 ArrayTaskId=2-5%2 JobName=sweep UserId=bob(1002) JobState=PENDING "
     "Reason=launch_failed_requeued_held Requeue=0 BatchFlag=0 ExitCode=0:15 TimeLimit=UNLIMITED NumNodes=1 "
     "TresPerJob=gres:gpu:3",
     SlurmJob(job_id=9, array_job_id=9, array_task_str="2-5%2", name="sweep", user="bob", state="PENDING",
              reason="launch failed requeued held", num_nodes=1, gpus_requested=3, exit_signal=15, batch=False,
              requeueable=False)),
    # one array task; GPUs per node × nodes; times not set
    ("JobId=16 ArrayJobId=9 ArrayTaskId=0 JobState=COMPLETING NumNodes=2 TresPerNode=gres:gpu:2 "
     "SubmitTime=Unknown StartTime=None EndTime=N/A ExitCode=3:0 UserId=(null)",
     SlurmJob(job_id=16, array_job_id=9, array_task_id=0, state="COMPLETING", num_nodes=2, gpus_requested=4,
              exit_code=3)),
    # not an array: the task id is ignored; per-node GPUs with an unknown node count count once
    ("JobId=17 ArrayTaskId=4 JobState=PENDING TresPerNode=gres:gpu:8 TRES=cpu=1,node=1",
     SlurmJob(job_id=17, state="PENDING", gpus_requested=8)),
    ("JobId=18 ArrayTaskId=1-3 JobState=PENDING", SlurmJob(job_id=18, state="PENDING")),
    # the allocated TRES count wins over what was asked per node
    ("JobId=19 JobState=RUNNING NumNodes=2 TRES=cpu=2,node=2,gres/gpu=3 TresPerNode=gres:gpu:1",
     SlurmJob(job_id=19, state="RUNNING", num_nodes=2, gpus_requested=3)),
    ("JobId=20 JobState=RUNNING TRES=cpu=2,node=1 TresPerJob=gres:gpu:5", SlurmJob(job_id=20, state="RUNNING",
                                                                                  gpus_requested=5)),
])
def test_scontrol_job_records(line: str, expected: SlurmJob) -> None:
    assert parse_scontrol_jobs(line) == (expected,)


def test_scontrol_jobs_state_filter() -> None:
    text = ("JobId=1 JobState=RUNNING\nJobId=2 JobState=COMPLETED\nJobId=3 JobState=FAILED ExitCode=1:0\n"
            "JobId=4 JobState=CANCELLED\nJobId=5 JobState=PENDING\n")
    assert [j.job_id for j in parse_scontrol_jobs(text)] == [1, 5]
    everything = parse_scontrol_jobs(text, include_finished=True)
    assert [(j.job_id, j.state) for j in everything] == [
        (1, "RUNNING"), (2, "COMPLETED"), (3, "FAILED"), (4, "CANCELLED"), (5, "PENDING")]
    assert everything[2].exit_code == 1
    assert parse_scontrol_jobs("No jobs in the system\n") == ()


@pytest.mark.parametrize(("line", "words"), [
    ("JobName=x JobState=RUNNING", "scontrol jobs: line 1 lacks JobId= or JobState="),
    ("JobId=abc JobState=RUNNING", "line 1 lacks JobId="),
    ("JobId=3", "line 1 lacks"),
    ("JobId=3 JobState=RUNNING NodeList=gpu[01-", "scontrol jobs:"),
    ("JobId=3 JobState=RUNNING Nodes=gpu[0-", "on line 1"),
])
def test_bad_scontrol_jobs(line: str, words: str) -> None:
    with pytest.raises(SlurmParseError) as info:
        parse_scontrol_jobs(line)
    assert words in str(info.value)
