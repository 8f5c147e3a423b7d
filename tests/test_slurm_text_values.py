"""Tables for the small Slurm value parsers (GRES, sentinels, durations, times), the sinfo/squeue text
rows and sdiag, whole records compared.

Formats from Slurm's gres.shtml, sinfo(1)/squeue(1) (``-o`` fields, time formats ``MM``, ``MM:SS``,
``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``), sdiag(1), and Slurm's sentinels NO_VAL
(0xfffffffe), INFINITE (0xffffffff) and their 16/64-bit twins.
"""

from __future__ import annotations

import datetime as dt

import msgspec
import pytest

from hpctui.model import ControllerHealth, SlurmJob, SlurmNodeInfo
from hpctui.sources.slurm.parse import (
    Association,
    FairShare,
    QosLimits,
    SlurmParseError,
    parse_sacctmgr_assoc_text,
    parse_sacctmgr_qos_text,
    parse_sdiag_text,
    parse_sinfo_text,
    parse_squeue_text,
    parse_sshare_text,
)
from hpctui.sources.slurm.parse.gres import (
    gpu_indices,
    gpus_from_gres_request,
    gpus_from_tres_str,
    parse_gres,
    parse_gres_used,
    split_top,
)
from hpctui.sources.slurm.parse.values import (
    Num,
    epoch,
    minutes,
    num,
    parse_cli_time,
    parse_duration_min,
    split_list,
    text,
    to_float,
    to_int,
)

F = frozenset


def local(s: str) -> float:
    return dt.datetime.fromisoformat(s).timestamp()


# -- GRES ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("value", "expected"), [
    ("a,b", ["a", "b"]), ("gpu:h100:2(IDX:0,2-3),mps:100", ["gpu:h100:2(IDX:0,2-3)", "mps:100"]),
    (" a , ,b ", ["a", "b"]), ("", []), ("(x,(y,z)),w", ["(x,(y,z))", "w"]), ("a),b", ["a)", "b"]),
    ("((a),b),c", ["((a),b)", "c"]),
])
def test_split_top(value: str, expected: list[str]) -> None:
    assert split_top(value) == expected


@pytest.mark.parametrize(("gres", "expected"), [
    (None, (None, None)),
    ("", (None, 0)), ("(null)", (None, 0)), ("N/A", (None, 0)), ("none", (None, 0)), ("  ", (None, 0)),
    ("gpu:h100:8", ("h100", 8)),
    ("gpu:8", (None, 8)),
    ("gpu", (None, 1)),
    ("gres:gpu:h100:8", ("h100", 8)),
    ("gpu:h100:8(S:0-1)", ("h100", 8)),
    ("gpu:h100:4(S:0),gpu:h100:4(S:1)", ("h100", 8)),
    ("gpu:h100:4,gpu:a100:2", ("h100,a100", 6)),
    ("gpu:h100:no_consume:8", ("h100", 8)),
    ("gpu:no_consume:8", (None, 8)),
    ("gpu:1K", (None, 1024)),
    ("gpu:2M", (None, 2 * 1024**2)),
    ("mps:400,gpu:h100:2", ("h100", 2)),
    ("mps:400", (None, 0)),
    ("gpu:h100", ("h100", None)),  # a type without a count: count unknown
    ("gpu:a100:2,gpu:h100", ("a100,h100", None)),
])
def test_parse_gres(gres: str | None, expected: tuple[str | None, int | None]) -> None:
    assert parse_gres(gres) == expected


@pytest.mark.parametrize(("used", "expected"), [
    (None, (None, {})),
    ("", (0, {})), ("(null)", (0, {})), ("N/A", (0, {})),
    ("gpu:h100:2(IDX:0-1)", (2, {"h100": "0-1"})),
    ("gpu:h100:0(IDX:N/A)", (0, {})),
    ("gpu:0", (0, {})),
    ("gpu:3(IDX:0,2-3)", (3, {"gpu": "0,2-3"})),
    ("gpu:h100:1(IDX:0),gpu:h100:1(IDX:5)", (2, {"h100": "0,5"})),
    ("gpu:h100:1(IDX:0),gpu:a100:2(IDX:1-2),mps:0", (3, {"h100": "0", "a100": "1-2"})),
    ("gpu:h100:2(S:0)", (2, {})),
    ("mps:100,gpu:h100:1(IDX:3)", (1, {"h100": "3"})),
    ("gpu:h100:2(IDX:)", (2, {})),
    ("gpu:h100:2(IDX: 4 )", (2, {"h100": "4"})),
])
def test_parse_gres_used(used: str | None, expected: tuple[int | None, dict[str, str]]) -> None:
    assert parse_gres_used(used) == expected


@pytest.mark.parametrize(("item", "expected"), [
    ("gpu:h100:2(IDX:0-1)", "0-1"), ("gpu:h100:1(IDX:0),gpu:a100:1(IDX:3)", "0,3"),
    ("gpu:h100:0(IDX:N/A)", None), ("(null)", None), ("", None),
])
def test_gpu_indices(item: str, expected: str | None) -> None:
    assert gpu_indices(item) == expected


@pytest.mark.parametrize(("tres", "expected"), [
    (None, None), ("", None), ("cpu=8,mem=64G", None),
    ("cpu=8,mem=64G,node=1,billing=8,gres/gpu=2", 2),
    ("gres/gpu=4,cpu=8", 4),
    ("cpu=8,gres/gpu:h100=2,gres/gpu:a100=1", 3),
    ("cpu=8,gres/gpu=4,gres/gpu:h100=4", 4),  # the untyped total wins
    ("cpu=8,gres/gpu:h100=0", 0),
    ("cpu=8,xgres/gpu=9", None),
])
def test_gpus_from_tres_str(tres: str | None, expected: int | None) -> None:
    assert gpus_from_tres_str(tres) == expected


@pytest.mark.parametrize(("spec", "expected"), [
    (None, None), ("", None), ("gres:gpu:h100:2", 2), ("gpu:2", 2), ("gres/gpu:4", 4), ("gres/gpu=3", 3),
    ("gres:gpu:h100:2,gres:gpu:a100:1", 3), ("gres:mps:100", None), ("gres:gpu:h100", None), ("gres:gpu", 1),
    ("gres:gpu:0", 0), ("gres:mps:100,gres:gpu:2", 2),
])
def test_gpus_from_gres_request(spec: str | None, expected: int | None) -> None:
    assert gpus_from_gres_request(spec) == expected


# -- sentinels, texts, numbers, times --------------------------------------------------------------------
@pytest.mark.parametrize(("value", "expected"), [
    (None, None), (0, 0), (7, 7), (7.9, 7), (-1, None), (0xFFFD, 0xFFFD), (0xFFFE, None), (0xFFFF, None),
    (0xFFFFFFFD, 0xFFFFFFFD), (0xFFFFFFFE, None), (0xFFFFFFFF, None), (0xFFFFFFFFFFFFFFFE, None),
    (0xFFFFFFFFFFFFFFFF, None),
    (Num(number=5), 5), (Num(set=False, number=5), None), (Num(infinite=True, number=5), None), (Num(), None),
    (Num(number=0xFFFFFFFE), None), (Num(number=2.5), 2),
])
def test_num(value: object, expected: int | None) -> None:
    assert num(value) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(("value", "expected"), [
    (None, None), (0, None), (1795972353, 1795972353.0), (Num(number=0), None), (0xFFFFFFFE, None),
])
def test_epoch(value: object, expected: float | None) -> None:
    got = epoch(value)  # type: ignore[arg-type]
    assert got == expected and (got is None or isinstance(got, float))


@pytest.mark.parametrize(("value", "expected"), [(None, None), (0, None), (720, 720), (0xFFFFFFFF, None)])
def test_minutes(value: object, expected: int | None) -> None:
    assert minutes(value) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(("value", "expected"), [
    (None, None), ("", None), ("  ", None), ("(null)", None), ("N/A", None), ("n/a", None), ("None", None),
    ("none", None), ("NONE", None), ("Unknown", None), ("UNKNOWN", None), (" ml ", "ml"), ("0", "0"),
    ("null", "null"),
])
def test_text(value: str | None, expected: str | None) -> None:
    assert text(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (None, None), ("", None), ("N/A", None), ("12", 12), (" 12 ", 12), ("-3", -3), ("4294967294", None),
    ("4294967295", None), ("65534", None), ("4294967293", 4294967293), ("1.5", None), ("x", None),
])
def test_to_int(value: str | None, expected: int | None) -> None:
    assert to_int(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (None, None), ("N/A", None), ("1.12", 1.12), ("3", 3.0), ("abc", None),
])
def test_to_float(value: str | None, expected: float | None) -> None:
    assert to_float(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (None, ()), ("", ()), ("gpu,debug", ("gpu", "debug")), (" gpu , debug ,", ("gpu", "debug")),
    ("(null)", ()), (["gpu", " debug ", "", "N/A"], ("gpu", "debug")), ([], ()),
])
def test_split_list(value: object, expected: tuple[str, ...]) -> None:
    assert split_list(value) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(("value", "expected"), [
    ("2026-11-29T17:12:33", local("2026-11-29T17:12:33")), (" 2026-01-02T03:04:05 ", local("2026-01-02T03:04:05")),
    (None, None), ("Unknown", None), ("N/A", None), ("None", None), ("tomorrow", None),
])
def test_parse_cli_time(value: str | None, expected: float | None) -> None:
    assert parse_cli_time(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    ("30", 30), ("10:30", 10), ("12:00:00", 720), ("01:30:59", 90), ("1-00:00:00", 1440), ("2-12", 3600),
    ("1-02:30", 1590), ("0-00:05:00", 5), ("3-", None),
    ("0", None), ("00:00:00", None), ("0-00:00:00", None),
    ("UNLIMITED", None), ("unlimited", None), ("INFINITE", None), ("Partition_Limit", None), ("NOT_SET", None),
    ("N/A", None), (None, None), ("", None),
    ("x-01:00:00", None), ("1-aa:00", None), ("1-01:02:03:04", None), ("1:2:3:4", None), ("ab", None),
    ("-1", None),
])
def test_parse_duration_min(value: str | None, expected: int | None) -> None:
    assert parse_duration_min(value) == expected


# -- sinfo / squeue text rows ------------------------------------------------------------------------------
SEP = "|"


def sinfo(*rows: str) -> dict[str, SlurmNodeInfo]:
    return parse_sinfo_text("\n".join(rows), sep=SEP)


def test_sinfo_rows_merge_partitions_and_fill_every_field() -> None:
    nodes = sinfo(
        "gpu01|gpu*|mix|draining|64|8/56/0/64|512000|400000|gpu:h100:8(S:0-1)|h100,ib|ECC errors on GPU3|root|"
        "2026-11-29T17:12:33",
        "gpu01|debug|mix|draining|64|8/56/0/64|512000|400000|gpu:h100:8(S:0-1)|h100,ib|ECC errors on GPU3|root|"
        "2026-11-29T17:12:33",
        "",
        "cpu01|cpu|idle|idle~|32|0/32/0/32|128000|100000|(null)|epyc|none|Unknown|Unknown",
        "cpu02|cpu*|down|down*|32|bad|N/A|0|(null)||Not responding|slurm|garbage",
        "cpu02|MAX|down|down*|32|bad|N/A|0|(null)||Not responding|slurm|garbage",
        "cpu03|cpu|idle|idle|32|5|N/A|0|(null)||none|root|2026-11-29T17:12:33",
    )
    assert nodes == {
        "gpu01": SlurmNodeInfo(base_state="ALLOCATED", flags=F({"DRAIN"}), reason="ECC errors on GPU3",
                               reason_user="root", reason_time=local("2026-11-29T17:12:33"),
                               partitions=("gpu", "debug"), features=("h100", "ib"), cpus_total=64, cpus_alloc=8,
                               memory_total_mb=512000, gpus_total=8, gpu_type="h100", gres="gpu:h100:8(S:0-1)"),
        "cpu01": SlurmNodeInfo(base_state="IDLE", flags=F({"POWERED_DOWN"}), partitions=("cpu",), features=("epyc",),
                               cpus_total=32, cpus_alloc=0, memory_total_mb=128000, gpus_total=0),
        "cpu02": SlurmNodeInfo(base_state="DOWN", flags=F({"NOT_RESPONDING"}), reason="Not responding",
                               reason_user="slurm", partitions=("cpu", "MAX"), cpus_total=32, gpus_total=0),
        # no reason: no reason user/time either; a CPU column that is not A/I/O/T: allocation unknown
        "cpu03": SlurmNodeInfo(base_state="IDLE", partitions=("cpu",), cpus_total=32, gpus_total=0),
    }
    assert list(nodes) == ["gpu01", "cpu01", "cpu02", "cpu03"]


@pytest.mark.parametrize(("rows", "words"), [
    ("gpu01|gpu", "sinfo text: line 1 has 2 fields, expected 13"),
    ("ok|p|i|idle|1|0/1/0/1|1|1|||||\nbad name|p|i|idle|1|0/1/0/1|1|1|||||", "invalid node name 'bad name'"),
])
def test_bad_sinfo_rows(rows: str, words: str) -> None:
    with pytest.raises(SlurmParseError) as info:
        parse_sinfo_text(rows, sep=SEP)
    assert words in str(info.value)


def squeue(*rows: str, include_finished: bool = False) -> tuple[SlurmJob, ...]:
    return parse_squeue_text("\n".join(rows), sep=SEP, include_finished=include_finished)


def test_squeue_rows_fill_every_field() -> None:
    jobs = squeue(
        "1|1|1|N/A|gpu|train llm|alice|ml|high|RUNNING|None|0:04|12:00:00|2|16|gpu[01-02]|gres:gpu:h100:2|"
        "2026-11-29T17:12:33|2026-11-29T17:12:31|11000",
        "9_[2-5%2]|9|9|2-5%2|gpu|sweep|bob|physics|normal|PENDING|JobArrayTaskLimit|0:00|UNLIMITED|1|1||N/A|N/A|"
        "2026-11-29T17:12:31|2000",
        "9_0|16|9|0|gpu|sweep|bob|physics|normal|COMPLETING|None|0:10|10:00|1|1|gpu03|gres:gpu:1|N/A|N/A|N/A",
        "12|12|12|N/A|cpu|x|root|root|normal|CANCELLED|None|0:00|1:00|1|1||N/A|N/A|N/A|1",
        "13|13|13|N/A|cpu|y|root|root|normal|PENDING|Priority|0:00|1:00|N/A|1||gres:gpu:2|N/A|N/A|N/A",
    )
    assert jobs == (
        SlurmJob(job_id=1, name="train llm", user="alice", account="ml", partition="gpu", qos="high", state="RUNNING",
                 nodes="gpu[01-02]", num_nodes=2, gpus_requested=4, start_time=local("2026-11-29T17:12:33"),
                 submit_time=local("2026-11-29T17:12:31"), time_limit_min=720, priority=11000),
        SlurmJob(job_id=9, array_job_id=9, array_task_str="2-5%2", name="sweep", user="bob", account="physics",
                 partition="gpu", qos="normal", state="PENDING", reason="JobArrayTaskLimit", num_nodes=1,
                 submit_time=local("2026-11-29T17:12:31"), priority=2000),
        SlurmJob(job_id=16, array_job_id=9, array_task_id=0, name="sweep", user="bob", account="physics",
                 partition="gpu", qos="normal", state="COMPLETING", nodes="gpu03", num_nodes=1, gpus_requested=1,
                 time_limit_min=10),
        SlurmJob(job_id=13, name="y", user="root", account="root", partition="cpu", qos="normal", state="PENDING",
                 reason="Priority", gpus_requested=2, time_limit_min=1),
    )
    assert [j.job_id for j in squeue("12|12|12|N/A|cpu|x|root|root|normal|CANCELLED|None|0:00|1:00|1|1||N/A|N/A|N/A|1",
                                     include_finished=True)] == [12]


def test_squeue_plain_job_with_its_own_array_id_is_not_an_array() -> None:
    (job,) = squeue("3|3|3|N/A|cpu|x|a|b|normal|RUNNING|None|0:00|1:00|1|1|cpu01|N/A|N/A|N/A|1")
    assert (job.array_job_id, job.array_task_id, job.array_task_str) == (None, None, None)
    (job,) = squeue("5_7|21|5|7|cpu|x|a|b|normal|RUNNING|None|0:00|1:00|1|1|cpu01|N/A|N/A|N/A|1")
    assert (job.job_id, job.array_job_id, job.array_task_id, job.display_id) == (21, 5, 7, "5_7")
    (job,) = squeue("22|22|5|N/A|cpu|x|a|b|normal|RUNNING|None|0:00|1:00|1|1|cpu01|N/A|N/A|N/A|1")
    assert (job.array_job_id, job.array_task_id, job.array_task_str) == (5, None, None)


@pytest.mark.parametrize(("rows", "words"), [
    ("1|2|3", "squeue text: line 1 has 3 fields, expected 20"),
    ("x|x|x|N/A|cpu|x|a|b|normal|RUNNING|None|0:00|1:00|1|1||N/A|N/A|N/A|1", "squeue text: bad job id 'x'"),
    ("4|4|4|N/A|cpu|x|a|b|normal|RUNNING|None|0:00|1:00|1|1|gpu[01-|N/A|N/A|N/A|1", "squeue text: job 4:"),
])
def test_bad_squeue_rows(rows: str, words: str) -> None:
    with pytest.raises(SlurmParseError) as info:
        parse_squeue_text(rows, sep=SEP)
    assert words in str(info.value)


# -- sdiag text ---------------------------------------------------------------------------------------
SDIAG = """*******************************************************
sdiag output at Sun Nov 29 17:12:38 2026 (1795972358)
*******************************************************
Server thread count:  3
Agent queue size:     2
DBD Agent queue size: 7

Jobs pending:   5
Jobs running:   4

Main schedule statistics (microseconds):
\tLast cycle:   155
\tMean cycle:   819

Backfilling stats
\tLast cycle: 133000
\tMean cycle: 99

Remote Procedure Call statistics by message type
\tLast cycle: 1
Latency for 1000 calls to gettimeofday(): 20 microseconds
"""


def test_sdiag_text_whole_record() -> None:
    got = parse_sdiag_text(SDIAG)
    # the summary fields; the full statistics (the :scheduler view's, tests/test_slurm_scheduler.py) ride along
    assert msgspec.structs.replace(got, stats=None) == ControllerHealth(
        reachable=True, server_thread_count=3, agent_queue_size=2, jobs_pending=5, jobs_running=4,
        last_backfill_cycle_s=0.133, mean_schedule_cycle_us=819.0, detail="7 messages queued for slurmdbd")
    assert got.stats is not None and got.stats.server_thread_count == 3 and got.stats.agent_queue_size == 2


def test_sdiag_text_minimal_and_broken() -> None:
    minimal = parse_sdiag_text("Server thread count: 1\n")
    assert msgspec.structs.replace(minimal, stats=None) == ControllerHealth(reachable=True, server_thread_count=1)
    assert minimal.stats is not None and minimal.stats.server_thread_count == 1
    with pytest.raises(SlurmParseError, match="no 'Server thread count' line"):
        parse_sdiag_text("sdiag: error: Unable to contact slurm controller\n")
    with pytest.raises(SlurmParseError):
        parse_sdiag_text("Backfilling stats\n\tServer thread count: 3\n")


# -- sshare / sacctmgr ------------------------------------------------------------------------------------
SSHARE_RULER = """\
Account                    User  RawShares  NormShares    RawUsage  EffectvUsage  FairShare
-------------------- ---------- ---------- ----------- ----------- ------------- ----------
root                                          0.000000         120      1.000000
 ml                                      1    0.333333         100      0.833333
  ml                      alice          2    0.500000          60      0.500000   0.250000
"""


def test_sshare_ruler_form() -> None:
    assert parse_sshare_text(SSHARE_RULER) == [
        FairShare(account="root", norm_shares=0.0, raw_usage=120, effective_usage=1.0, depth=0),
        FairShare(account="ml", raw_shares=1, norm_shares=0.333333, raw_usage=100, effective_usage=0.833333, depth=1),
        FairShare(account="ml", user="alice", raw_shares=2, norm_shares=0.5, raw_usage=60, effective_usage=0.5,
                  fairshare=0.25, depth=2),
    ]


def test_sshare_ruler_without_rows_and_without_account_column() -> None:
    assert parse_sshare_text(SSHARE_RULER.split("\n", 2)[0] + "\n" + SSHARE_RULER.split("\n", 2)[1] + "\n") == []
    with pytest.raises(SlurmParseError, match="sshare: row without Account"):
        parse_sshare_text("User|RawShares\nalice|1\n")


def test_sshare_parsable_long_form() -> None:
    text_in = ("Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS|TRESRunMins\n"
               "root|||0.000000|7||1.000000||||cpu=60\n"
               " ml||60|0.594059|5|0.100000|0.200000||inf|cpu=0\n"
               "  ml|alice|30|0.750000|0|0.000000|0.000000|1.000000|2.5|cpu=0\n")
    assert parse_sshare_text(text_in) == [
        FairShare(account="root", norm_shares=0.0, raw_usage=7, effective_usage=1.0),
        FairShare(account="ml", raw_shares=60, norm_shares=0.594059, raw_usage=5, norm_usage=0.1,
                  effective_usage=0.2, level_fs=float("inf"), depth=1),
        FairShare(account="ml", user="alice", raw_shares=30, norm_shares=0.75, raw_usage=0, norm_usage=0.0,
                  effective_usage=0.0, fairshare=1.0, level_fs=2.5, depth=2),
    ]


@pytest.mark.parametrize(("text_in", "words"), [
    ("Account|User\nml", "sshare: row has 1 fields, header 2"),
    ("Account  User\nml  alice\n", "sshare: expected a header and a '----' ruler line"),
    ("Account  User\n", "sshare: expected a header"),
    ("Account|User\n|alice\n", "sshare: row without Account"),
])
def test_bad_sshare(text_in: str, words: str) -> None:
    with pytest.raises(SlurmParseError) as info:
        parse_sshare_text(text_in)
    assert words in str(info.value)


def test_empty_tables() -> None:
    assert parse_sshare_text("") == [] and parse_sshare_text("\n \n") == []
    assert parse_sacctmgr_qos_text("") == [] and parse_sacctmgr_assoc_text("") == []


def test_sacctmgr_qos() -> None:
    text_in = ("Name|Priority|MaxWall|MaxJobsPU|MaxSubmitPU|MaxTRESPU|MaxTRES|GrpTRES|MaxJobsPA\n"
               "normal|100|||||||\n"
               "gpu-limited|50|12:00:00|2|10|cpu=64,gres/gpu=4|gres/gpu=8|gres/gpu=32|5\n")
    assert parse_sacctmgr_qos_text(text_in) == [
        QosLimits(name="normal", priority=100),
        QosLimits(name="gpu-limited", priority=50, max_wall_min=720, max_jobs_per_user=2, max_submit_per_user=10,
                  max_tres_per_user="cpu=64,gres/gpu=4", max_gpus_per_user=4, max_tres_per_job="gres/gpu=8",
                  grp_tres="gres/gpu=32", max_jobs_per_account=5),
    ]
    with pytest.raises(SlurmParseError, match="sacctmgr qos: row without Name"):
        parse_sacctmgr_qos_text("Name|Priority\n|5\n")


def test_sacctmgr_assoc() -> None:
    text_in = ("Cluster|Account|User|Partition|Share|QOS|Def QOS|MaxJobs|MaxSubmit|MaxTRES|GrpTRES|GrpJobs|MaxWall\n"
               "lab|ml||||normal||||||| \n"
               "lab|ml|alice|gpu|parent|high,low,normal|normal|8|20|gres/gpu=8|gres/gpu=16|4|1-00:00:00\n")
    assert parse_sacctmgr_assoc_text(text_in) == [
        Association(account="ml", cluster="lab", qos=("normal",)),
        Association(account="ml", user="alice", cluster="lab", partition="gpu", share="parent",
                    qos=("high", "low", "normal"), default_qos="normal", max_jobs=8, max_submit=20,
                    max_tres="gres/gpu=8", grp_tres="gres/gpu=16", grp_jobs=4, max_wall_min=1440),
    ]
    with pytest.raises(SlurmParseError, match="sacctmgr assoc: row without Account"):
        parse_sacctmgr_assoc_text("Account|User\n|alice\n")


def test_sdiag_sections_keep_their_own_last_cycle() -> None:
    """The RPC and latency sections' Last cycle is not the backfill cycle (sdiag prints them after it)."""
    text_in = ("Server thread count: 2\nBackfilling stats\n\tTotal cycles: 0\n"
               "Remote Procedure Call statistics by message type\n\tLast cycle: 5\n"
               "Latency for 1000 calls to gettimeofday(): 20 microseconds\n\tMean cycle: 7\n")
    h = parse_sdiag_text(text_in)
    assert (h.last_backfill_cycle_s, h.mean_schedule_cycle_us) == (None, None)
    h = parse_sdiag_text("Server thread count: 2\nLatency for 1000 calls\nMain schedule statistics\n\tMean cycle: 9\n")
    assert h.mean_schedule_cycle_us == 9.0
