"""``scontrol -o show nodes`` / ``scontrol -o [-d] show jobs`` → model (the text fallback).

Lines are ``Key=Value`` pairs separated by spaces, but values may contain spaces
(``OS=Linux 6.18 #1 SMP``, ``Reason=PSU failure [root@2026-11-29T17:12:33]``,
``Comment=llama ft``) and ``=`` (``TRES=cpu=8,mem=64G``). A new key starts at a space
followed by a *known* scontrol key and ``=``; anything else stays in the current value.
Keys repeat in ``-d`` job output (one ``Nodes=… GRES=…`` group per node set), so a line
is read as a list of pairs, not a dict.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hpctui.base.digits import is_uint
from hpctui.model.hostlist import HostlistError, expand, is_valid_hostname
from hpctui.model.jobs import SlurmJob
from hpctui.model.node import SlurmNodeInfo
from hpctui.model.validate import SLURM_JOB_BOUNDS, Drops, checked
from hpctui.sources.slurm.parse.errors import SlurmParseError
from hpctui.sources.slurm.parse.exitcode import decode_exit_pair
from hpctui.sources.slurm.parse.gres import (
    gpu_indices,
    gpus_from_tres_str,
    parse_gres,
    parse_gres_used,
)
from hpctui.sources.slurm.parse.jobs import LIVE_JOB_STATES, job_display_state, requested_gpus
from hpctui.sources.slurm.parse.nodes import checked_node
from hpctui.sources.slurm.parse.states import normalize_node_state
from hpctui.sources.slurm.parse.values import parse_cli_time, parse_duration_min, split_list, text, to_int

_NODE_KEYS = [
    "NodeName",
    "Arch",
    "CoresPerSocket",
    "CPUAlloc",
    "CPUEfctv",
    "CPUTot",
    "CPULoad",
    "AvailableFeatures",
    "ActiveFeatures",
    "Gres",
    "GresDrain",
    "GresUsed",
    "NodeAddr",
    "NodeHostName",
    "Port",
    "Version",
    "OS",
    "RealMemory",
    "AllocMem",
    "FreeMem",
    "Sockets",
    "Boards",
    "State",
    "ThreadsPerCore",
    "TmpDisk",
    "Weight",
    "Owner",
    "MCS_label",
    "Partitions",
    "BootTime",
    "SlurmdStartTime",
    "LastBusyTime",
    "ResumeAfterTime",
    "CfgTRES",
    "AllocTRES",
    "CapWatts",
    "CurrentWatts",
    "AveWatts",
    "ExtSensorsJoules",
    "ExtSensorsWatts",
    "ExtSensorsTemp",
    "Reason",
    "Comment",
    "Extra",
    "NextState",
    "InstanceId",
    "InstanceType",
    "CoreSpecCount",
    "CPUSpecList",
    "MemSpecLimit",
    "Topology",
    "Reservation",
    "LastBusy",
    "ResvInfo",
    "GresReserved",
]
_JOB_KEYS = [
    "JobId",
    "ArrayJobId",
    "ArrayTaskId",
    "ArrayTaskThrottle",
    "HetJobId",
    "HetJobOffset",
    "HetJobIdSet",
    "JobName",
    "UserId",
    "GroupId",
    "MCS_label",
    "Priority",
    "Nice",
    "Account",
    "QOS",
    "JobState",
    "Reason",
    "Dependency",
    "Requeue",
    "Restarts",
    "BatchFlag",
    "Reboot",
    "ExitCode",
    "DerivedExitCode",
    "RunTime",
    "TimeLimit",
    "TimeMin",
    "SubmitTime",
    "EligibleTime",
    "AccrueTime",
    "StartTime",
    "EndTime",
    "Deadline",
    "SuspendTime",
    "SecsPreSuspend",
    "LastSchedEval",
    "Scheduler",
    "Partition",
    "AllocNode:Sid",
    "ReqNodeList",
    "ExcNodeList",
    "NodeList",
    "SchedNodeList",  # 24.11: a pending job's planned nodes
    "BatchHost",
    "NumNodes",
    "NumCPUs",
    "NumTasks",
    "CPUs/Task",
    "ReqB:S:C:T",
    "TRES",
    "ReqTRES",  # 23.02+: TRES= became ReqTRES= and AllocTRES=
    "AllocTRES",
    "Socks/Node",
    "NtasksPerN:B:S:C",
    "CoreSpec",
    "JOB_GRES",
    "Nodes",
    "CPU_IDs",
    "Mem",
    "GRES",
    "MinCPUsNode",
    "MinMemoryNode",
    "MinMemoryCPU",
    "MinTmpDiskNode",
    "Features",
    "DelayBoot",
    "OverSubscribe",
    "Contiguous",
    "Licenses",
    "Network",
    "Command",
    "WorkDir",
    "Comment",
    "AdminComment",
    "SystemComment",
    "StdErr",
    "StdIn",
    "StdOut",
    "Power",
    "TresPerNode",
    "TresPerJob",
    "TresPerTask",
    "TresPerSocket",
    "CpusPerTres",
    "MemPerTres",
    "TresBind",
    "TresFreq",
    "MailUser",
    "MailType",
    "Container",
    "ContainerID",
    "Prefer",
    "Partitions",
    "Reservation",
    "Extra",
    "ResizeTime",
    "PreemptEligibleTime",
    "PreemptTime",
    "CronJob",
    "CrontabSpec",
    "LicensesAlloc",
    "BurstBuffer",
    "BurstBufferState",
    "NtasksPerTRES",
    "Cluster",
    "ClusterFeatures",
    "KillOInInvalidDependent",
    "SegmentSize",
    "ReqNodes",
    "ReqGRES",
    "StepMgrEnabled",
]


def _splitter(keys: list[str]) -> re.Pattern[str]:
    alt = "|".join(re.escape(k) for k in sorted(keys, key=len, reverse=True))
    return re.compile(rf"(?:^|\s)({alt})=")


_NODE_SPLIT = _splitter(_NODE_KEYS)
_JOB_SPLIT = _splitter(_JOB_KEYS)


def split_pairs(line: str, pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    """One ``scontrol -o`` line → [(key, value), ...] in order (values stripped)."""
    matches = list(pattern.finditer(line))
    pairs = []
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
        pairs.append((m.group(1), line[m.end() : end].strip()))
    return pairs


_REASON = re.compile(r"^(.*?)\s*\[([^\]@]*)@([^\]]*)\]\s*$")


def _node_reason(value: str | None) -> tuple[str | None, str | None, float | None]:
    """``PSU failure [root@2026-11-29T17:12:33]`` → ("PSU failure", "root", epoch)."""
    v = text(value)
    if v is None:
        return None, None, None
    m = _REASON.match(v)
    if not m:
        return v, None, None
    return text(m.group(1)), text(m.group(2)), parse_cli_time(m.group(3))


OnInvalid = Callable[[str], None]


def _lines(text_in: str) -> list[str]:
    # only LF ends a record: str.splitlines() would also split on \x1c-\x1e, \x85, U+2028
    return [ln for ln in text_in.split("\n") if ln.strip()]


def _invalid(msg: str, on_invalid: OnInvalid | None) -> None:
    if on_invalid is None:
        raise SlurmParseError(msg)
    on_invalid(msg)


def parse_scontrol_nodes(text_in: str, *, on_invalid: OnInvalid | None = None,
                         drops: Drops | None = None) -> dict[str, SlurmNodeInfo]:
    """``scontrol -o show nodes`` → {name: SlurmNodeInfo}. GPUs in use come from
    ``GresUsed`` (``-d``) or, failing that, ``AllocTRES`` ``gres/gpu=N``.

    A reason holding a newline splits its node's line: with ``on_invalid`` the unreadable
    fragment is dropped and reported (the node keeps the reason's first line)."""
    out: dict[str, SlurmNodeInfo] = {}
    for lineno, line in enumerate(_lines(text_in), 1):
        if line.startswith("No nodes in the system"):
            continue
        d = dict(split_pairs(line, _NODE_SPLIT))
        name = d.get("NodeName")
        if not name or "State" not in d:
            _invalid(f"scontrol nodes: line {lineno} lacks NodeName= or State=: {line[:60]!r}", on_invalid)
            continue
        if not is_valid_hostname(name):
            _invalid(f"scontrol nodes: invalid node name {name!r} on line {lineno}", on_invalid)
            continue
        base, flags = normalize_node_state(d["State"])
        gpu_type, gpus_total = parse_gres(d.get("Gres"))
        if "GresUsed" in d:
            gpus_alloc, _ = parse_gres_used(d["GresUsed"])
        elif "AllocTRES" in d:
            gpus_alloc = gpus_from_tres_str(d["AllocTRES"]) or 0
        else:
            gpus_alloc = None
        reason, user, when = _node_reason(d.get("Reason"))
        out[name] = checked_node(name, SlurmNodeInfo(
            base_state=base,
            flags=flags,
            reason=reason,
            reason_user=user,
            reason_time=when,
            partitions=split_list(d.get("Partitions")),
            features=split_list(d.get("ActiveFeatures") or d.get("AvailableFeatures")),
            cpus_total=to_int(d.get("CPUTot")),
            cpus_alloc=to_int(d.get("CPUAlloc")),
            memory_total_mb=to_int(d.get("RealMemory")),
            memory_alloc_mb=to_int(d.get("AllocMem")),
            gpus_total=gpus_total,
            gpus_alloc=gpus_alloc,
            gpu_type=gpu_type,
            gres=text(d.get("Gres")),
            gres_used=text(d.get("GresUsed")),
        ), drops)
    return out


def _user(value: str | None) -> str | None:
    """``alice(1001)`` → ``alice``."""
    v = text(value)
    return v.split("(", 1)[0] or None if v else None


def _array_task(value: str | None) -> tuple[int | None, str | None]:
    v = text(value)
    if v is None:
        return None, None
    return (int(v), None) if is_uint(v) else (None, v)


def parse_scontrol_jobs(text_in: str, *, include_finished: bool = False,
                        on_invalid: OnInvalid | None = None, drops: Drops | None = None) -> tuple[SlurmJob, ...]:
    """``scontrol -o [-d] show jobs`` → live jobs (same state filter as parse_jobs_json).

    A job name holding a newline splits its line: with ``on_invalid`` the fragments that
    cannot be read are dropped and reported instead of failing the whole document. A number
    outside its field's plausible range (hpctui.model.validate.SLURM_JOB_BOUNDS) is None, in ``drops``."""
    drops = drops if drops is not None else Drops()
    out: list[SlurmJob] = []
    for lineno, line in enumerate(_lines(text_in), 1):
        if line.startswith("No jobs in the system"):
            continue
        pairs = split_pairs(line, _JOB_SPLIT)
        d = dict(pairs)
        job_id = to_int(d.get("JobId"))
        if job_id is None or not 0 <= job_id <= 0xFFFFFFFF or "JobState" not in d:
            _invalid(f"scontrol jobs: line {lineno} lacks JobId= or JobState=: {line[:60]!r}", on_invalid)
            continue
        state = job_display_state(d["JobState"])
        if not include_finished and state not in LIVE_JOB_STATES:
            continue
        nodes = text(d.get("NodeList"))
        gpus_alloc: dict[str, str] = {}
        try:
            if nodes:
                expand(nodes)
            cur_nodes: list[str] = []
            for key, value in pairs:  # -d: "Nodes=gpu[01-02] CPU_IDs=... GRES=gpu:h100:2(IDX:0-1)"
                if key == "Nodes":
                    cur_nodes = expand(value)
                elif key == "GRES" and cur_nodes:
                    idx = gpu_indices(value)
                    if idx:
                        gpus_alloc.update(dict.fromkeys(cur_nodes, idx))
        except HostlistError as exc:
            if on_invalid is None:
                raise SlurmParseError(f"scontrol jobs: {exc} on line {lineno}") from exc
            on_invalid(f"scontrol jobs: {exc} on line {lineno}")
            continue
        num_nodes_s = (d.get("NumNodes") or "").split("-", 1)[0]
        num_nodes = to_int(num_nodes_s)
        array_job = to_int(d.get("ArrayJobId"))
        task_id, task_str = _array_task(d.get("ArrayTaskId"))
        gpus_req = _requested_gpus_text(d, num_nodes)
        code, sig = decode_exit_pair(d.get("ExitCode"))
        reason = text(d.get("Reason"))
        out.append(checked(
            SlurmJob(
                job_id=job_id,
                array_job_id=array_job,
                array_task_id=task_id if array_job else None,
                array_task_str=task_str if array_job else None,
                name=text(d.get("JobName")),
                user=_user(d.get("UserId")),
                account=text(d.get("Account")),
                partition=text(d.get("Partition")),
                qos=text(d.get("QOS")),
                state=state,
                reason=reason.replace("_", " ") if reason else None,  # scontrol writes spaces as "_"
                nodes=nodes,
                num_nodes=num_nodes,
                gpus_requested=gpus_req,
                gpus_alloc=gpus_alloc,
                submit_time=parse_cli_time(d.get("SubmitTime")),
                start_time=parse_cli_time(d.get("StartTime")),
                end_time=parse_cli_time(d.get("EndTime")),
                time_limit_min=parse_duration_min(d.get("TimeLimit")),
                exit_code=code,
                exit_signal=sig,
                restart_count=to_int(d.get("Restarts")),
                batch=_flag(d.get("BatchFlag")),
                requeueable=_flag(d.get("Requeue")),
                priority=to_int(d.get("Priority")),
            ), SLURM_JOB_BOUNDS, drops, f"job {job_id}"))
    return tuple(out)


def _flag(value: str | None) -> bool | None:
    v = to_int(value)
    return None if v is None else bool(v)


def _requested_gpus_text(d: dict[str, str], num_nodes: int | None) -> int | None:
    """GPUs a job asked for, from its ``scontrol show job`` fields (the rule of
    :func:`~hpctui.sources.slurm.parse.jobs.requested_gpus`): TRES (``ReqTRES`` on 23.02+)
    when it names gres/gpu, else TresPerJob, TresPerNode × nodes, TresPerTask × NumTasks,
    TresPerSocket × Socks/Node × nodes."""
    tres = d.get("TRES") or d.get("ReqTRES") or ""
    return requested_gpus(tres if "gres/gpu" in tres else None, d.get("TresPerJob"), d.get("TresPerNode"),
                          num_nodes, d.get("TresPerTask"), to_int(d.get("NumTasks")), d.get("TresPerSocket"),
                          to_int(d.get("Socks/Node")))
