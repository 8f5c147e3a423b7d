"""Tables for Slurm's vocabularies: node states and flags, job states, exit codes, pending reasons.

Expected values are written from FACTS §3 (base states, flags, sinfo suffixes and compact forms,
DRAINING/DRAINED/FAILING display), sinfo(1)/scontrol(1), POSIX wait-status semantics and Slurm's
NO_VAL/INFINITE sentinels — never computed by the code under test.
"""

from __future__ import annotations

import pytest

from hpctui.model import SlurmJob
from hpctui.model.node import slurm_display_state
from hpctui.sources.slurm.parse import (
    SEP,
    decode_exit_code,
    decode_exit_pair,
    explain_pending_reason,
    job_display_state,
    normalize_node_state,
    parse_scontrol_nodes,
    parse_sinfo_text,
)
from hpctui.sources.slurm.parse.exitcode import ExitCodeObj, SignalObj, decode_exit_obj
from hpctui.sources.slurm.parse.text import SINFO_FIELDS
from hpctui.sources.slurm.parse.values import Num

F = frozenset

# -- node states: every spelling → (base, flags) ----------------------------------------------------
NODE_STATES: list[tuple[object, object, tuple[str, frozenset[str]]]] = [
    # REST v0.0.39+ arrays and scontrol "+" joins
    (["IDLE"], None, ("IDLE", F())),
    (["MIXED", "DRAIN"], None, ("MIXED", F({"DRAIN"}))),
    (["ALLOCATED", "DRAIN", "COMPLETING"], None, ("ALLOCATED", F({"DRAIN", "COMPLETING"}))),
    (["MIXED", "FAIL"], None, ("MIXED", F({"FAIL"}))),
    (["ALLOCATED", "FAIL"], None, ("ALLOCATED", F({"FAIL"}))),
    (["IDLE", "FAIL"], None, ("IDLE", F({"FAIL"}))),
    (["DOWN", "NOT_RESPONDING"], None, ("DOWN", F({"NOT_RESPONDING"}))),
    (["IDLE", "COMPLETING"], None, ("IDLE", F({"COMPLETING"}))),
    (["COMPLETING"], None, ("COMPLETING", F())),
    (["IDLE", "PLANNED"], None, ("IDLE", F({"PLANNED"}))),
    (["IDLE", "RESERVED"], None, ("IDLE", F({"RESERVED"}))),
    (["IDLE", "MAINTENANCE", "RESERVED"], None, ("IDLE", F({"MAINTENANCE", "RESERVED"}))),
    (["IDLE", "POWERED_DOWN"], None, ("IDLE", F({"POWERED_DOWN"}))),
    (["IDLE", "REBOOT_REQUESTED", "DRAIN"], None, ("IDLE", F({"REBOOT_REQUESTED", "DRAIN"}))),
    (["FUTURE"], None, ("FUTURE", F())),
    (["INVAL"], None, ("INVAL", F())),
    (["ERROR"], None, ("ERROR", F())),
    ([], None, ("UNKNOWN", F())),
    (None, None, ("UNKNOWN", F())),
    ("", None, ("UNKNOWN", F())),
    ("IDLE+DRAIN", None, ("IDLE", F({"DRAIN"}))),
    ("MIXED+DRAIN", None, ("MIXED", F({"DRAIN"}))),
    ("MIXED+FAIL", None, ("MIXED", F({"FAIL"}))),
    ("ALLOCATED+COMPLETING+DRAIN", None, ("ALLOCATED", F({"COMPLETING", "DRAIN"}))),
    ("IDLE+COMPLETING", None, ("IDLE", F({"COMPLETING"}))),
    ("DOWN+DRAIN+NOT_RESPONDING", None, ("DOWN", F({"DRAIN", "NOT_RESPONDING"}))),
    ("COMPLETING+DRAIN", None, ("COMPLETING", F({"DRAIN"}))),
    ("RESERVED+PLANNED", None, ("RESERVED", F({"PLANNED"}))),  # two weak bases: first wins
    # v0.0.36-38: lower-case string + state_flags (v0.0.36: no flags)
    ("mixed", ["DRAIN"], ("MIXED", F({"DRAIN"}))),
    ("idle", ["DRAIN", "REBOOT_REQUESTED"], ("IDLE", F({"DRAIN", "REBOOT_REQUESTED"}))),
    ("allocated", ["FAIL"], ("ALLOCATED", F({"FAIL"}))),
    ("down", [], ("DOWN", F())),
    ("idle", None, ("IDLE", F())),
    # sinfo %T long forms
    ("drained", None, ("IDLE", F({"DRAIN"}))),
    ("draining", None, ("ALLOCATED", F({"DRAIN"}))),
    ("failing", None, ("ALLOCATED", F({"FAIL"}))),
    ("fail", None, ("IDLE", F({"FAIL"}))),  # bare fail: an idle node with FAIL
    ("drain", None, ("IDLE", F({"DRAIN"}))),  # bare drain: an idle node with DRAIN
    ("completing", None, ("COMPLETING", F())),
    ("planned", None, ("PLANNED", F())),
    ("reserved", None, ("RESERVED", F())),
    ("maint", None, ("UNKNOWN", F({"MAINTENANCE"}))),
    ("not_responding", None, ("UNKNOWN", F({"NOT_RESPONDING"}))),
    ("unknown", None, ("UNKNOWN", F())),
    # sinfo %t compact forms
    ("alloc", None, ("ALLOCATED", F())),
    ("mix", None, ("MIXED", F())),
    ("idle", None, ("IDLE", F())),
    ("drng", None, ("ALLOCATED", F({"DRAIN"}))),
    ("failg", None, ("ALLOCATED", F({"FAIL"}))),
    ("comp", None, ("COMPLETING", F())),
    ("futr", None, ("FUTURE", F())),
    ("unk", None, ("UNKNOWN", F())),
    ("plnd", None, ("PLANNED", F())),
    ("resv", None, ("RESERVED", F())),
    ("npc", None, ("UNKNOWN", F({"PERFCTRS"}))),
    ("boot", None, ("UNKNOWN", F({"REBOOT_ISSUED"}))),
    ("pow_dn", None, ("UNKNOWN", F({"POWERED_DOWN"}))),
    ("pow_up", None, ("UNKNOWN", F({"POWERING_UP"}))),
    ("no_respond", None, ("UNKNOWN", F({"NOT_RESPONDING"}))),
    ("idle+power_down", None, ("IDLE", F({"POWER_DOWN"}))),
    ("mix+maint", None, ("MIXED", F({"MAINTENANCE"}))),
    # an unknown future flag is kept, not lost
    ("IDLE+CLOUD", None, ("IDLE", F({"CLOUD"}))),
]


@pytest.mark.parametrize(("state", "flags", "expected"), NODE_STATES)
def test_node_state_spellings(state: object, flags: object, expected: tuple[str, frozenset[str]]) -> None:
    assert normalize_node_state(state, flags) == expected  # type: ignore[arg-type]


# sinfo(1) / FACTS §3 suffixes, one by one, on a compact and a long state
SUFFIXES = [("*", "NOT_RESPONDING"), ("~", "POWERED_DOWN"), ("#", "POWERING_UP"), ("!", "POWER_DOWN"),
            ("%", "POWERING_DOWN"), ("$", "MAINTENANCE"), ("@", "REBOOT_REQUESTED"), ("^", "REBOOT_ISSUED"),
            ("-", "PLANNED")]


@pytest.mark.parametrize(("suffix", "flag"), SUFFIXES)
@pytest.mark.parametrize(("state", "base", "flags"), [
    ("idle", "IDLE", F()), ("mix", "MIXED", F()), ("drained", "IDLE", F({"DRAIN"})), ("drng", "ALLOCATED", F({"DRAIN"})),
    ("fail", "IDLE", F({"FAIL"})), ("down", "DOWN", F()), ("DOWN", "DOWN", F()),
])
def test_node_state_suffix(suffix: str, flag: str, state: str, base: str, flags: frozenset[str]) -> None:
    assert normalize_node_state(state + suffix) == (base, flags | {flag})


def test_stacked_suffixes_all_count() -> None:
    assert normalize_node_state("idle~*") == ("IDLE", F({"POWERED_DOWN", "NOT_RESPONDING"}))
    assert normalize_node_state("drain@*") == ("IDLE", F({"DRAIN", "REBOOT_REQUESTED", "NOT_RESPONDING"}))
    assert normalize_node_state("*") == ("UNKNOWN", F({"NOT_RESPONDING"}))


def test_weak_base_only_when_nothing_else_is() -> None:
    """COMPLETING/PLANNED/RESERVED are a base only for a node with no true base (FACTS §3)."""
    assert normalize_node_state("comp+idle") == ("IDLE", F({"COMPLETING"}))
    assert normalize_node_state("idle+comp") == ("IDLE", F({"COMPLETING"}))
    assert normalize_node_state(["DRAINED", "MIXED"]) == ("IDLE", F({"DRAIN"}))  # the first true base wins
    assert normalize_node_state(["*", "IDLE"]) == ("IDLE", F({"NOT_RESPONDING"}))  # a bare suffix, then more
    assert normalize_node_state(["", "MIXED"]) == ("MIXED", F())


def test_node_state_tokens_are_trimmed_and_case_insensitive() -> None:
    assert normalize_node_state([" mixed ", "drain"]) == ("MIXED", F({"DRAIN"}))
    assert normalize_node_state("Idle + Drain") == ("IDLE", F({"DRAIN"}))


# -- display: DRAINING while busy, DRAINED when idle, FAILING while busy (FACTS §3) ---------------------
@pytest.mark.parametrize(("base", "flags", "shown"), [
    ("IDLE", F(), "IDLE"),
    ("MIXED", F(), "MIXED"),
    ("IDLE", F({"DRAIN"}), "DRAINED"),
    ("DOWN", F({"DRAIN"}), "DRAINED"),
    ("MIXED", F({"DRAIN"}), "DRAINING"),
    ("ALLOCATED", F({"DRAIN"}), "DRAINING"),
    ("COMPLETING", F({"DRAIN"}), "DRAINING"),
    ("IDLE", F({"DRAIN", "COMPLETING"}), "DRAINING+COMPLETING"),
    ("ALLOCATED", F({"FAIL"}), "FAILING"),
    ("MIXED", F({"FAIL"}), "FAILING"),
    ("IDLE", F({"FAIL"}), "FAIL"),
    ("DOWN", F({"FAIL"}), "FAIL"),
    ("IDLE", F({"DRAIN", "FAIL"}), "DRAINED"),
    ("DOWN", F({"NOT_RESPONDING"}), "DOWN+NOT_RESPONDING"),
    ("IDLE", F({"REBOOT_REQUESTED", "DRAIN", "MAINTENANCE"}), "DRAINED+MAINTENANCE+REBOOT_REQUESTED"),
    ("idle", F(), "IDLE"),
])
def test_display_state(base: str, flags: frozenset[str], shown: str) -> None:
    assert slurm_display_state(base, flags) == shown


# -- the parsers use these spellings ------------------------------------------------------------------
def _sinfo_row(name: str, compact: str, long_state: str) -> str:
    cols = [name, "gpu*", compact, long_state, "64", "0/64/0/64", "512000", "500000", "gpu:h100:8", "h100",
            "none", "root", "Unknown"]
    assert len(cols) == len(SINFO_FIELDS)
    return SEP.join(cols)


@pytest.mark.parametrize(("compact", "long_state", "base", "flags"), [
    ("mix-", "mixed-", "MIXED", F({"PLANNED"})),
    ("drain", "drained", "IDLE", F({"DRAIN"})),
    ("drng", "draining", "ALLOCATED", F({"DRAIN"})),
    ("fail", "fail", "IDLE", F({"FAIL"})),
    ("failg", "failing", "ALLOCATED", F({"FAIL"})),
    ("idle~", "idle~", "IDLE", F({"POWERED_DOWN"})),
    ("down*", "down*", "DOWN", F({"NOT_RESPONDING"})),
    ("comp", "completing", "COMPLETING", F()),
])
def test_sinfo_text_states(compact: str, long_state: str, base: str, flags: frozenset[str]) -> None:
    info = parse_sinfo_text(_sinfo_row("gpu01", compact, long_state))["gpu01"]
    assert (info.base_state, info.flags) == (base, flags)


@pytest.mark.parametrize(("state", "base", "flags"), [
    ("MIXED+FAIL", "MIXED", F({"FAIL"})),
    ("IDLE+DRAIN", "IDLE", F({"DRAIN"})),
    ("ALLOCATED+COMPLETING+DRAIN", "ALLOCATED", F({"COMPLETING", "DRAIN"})),
    ("DOWN*+DRAIN", "DOWN", F({"DRAIN", "NOT_RESPONDING"})),
    ("IDLE+DRAIN+REBOOT_REQUESTED", "IDLE", F({"DRAIN", "REBOOT_REQUESTED"})),
])
def test_scontrol_node_states(state: str, base: str, flags: frozenset[str]) -> None:
    info = parse_scontrol_nodes(f"NodeName=gpu01 Arch=x86_64 CPUTot=64 State={state} Partitions=gpu\n")["gpu01"]
    assert (info.base_state, info.flags) == (base, flags)


# -- job states: squeue shows a transient flag instead of the base ------------------------------------
@pytest.mark.parametrize(("state", "shown"), [
    (None, "UNKNOWN"), ("", "UNKNOWN"), ("running", "RUNNING"), (" PENDING ", "PENDING"),
    ([], "UNKNOWN"), (["  "], "UNKNOWN"), (["RUNNING"], "RUNNING"),
    (["COMPLETED", "COMPLETING"], "COMPLETING"),
    (["PENDING", "REQUEUED"], "REQUEUED"),
    (["PENDING", "REQUEUE_HOLD"], "REQUEUE_HOLD"),
    (["RUNNING", "CONFIGURING"], "CONFIGURING"),
    (["RUNNING", "STAGE_OUT"], "STAGE_OUT"),
    (["RUNNING", "SIGNALING"], "SIGNALING"),
    (["RUNNING", "RESIZING"], "RESIZING"),
    (["PENDING", "SPECIAL_EXIT"], "SPECIAL_EXIT"),
    (["COMPLETED", "STAGE_OUT", "COMPLETING"], "COMPLETING"),  # COMPLETING ranks first
    (["RUNNING", "SIGNALING", "CONFIGURING"], "CONFIGURING"),
    (["COMPLETING", "RUNNING"], "COMPLETING"),  # the base itself
    (["running", "completing"], "COMPLETING"),
])
def test_job_display_state(state: object, shown: str) -> None:
    assert job_display_state(state) == shown  # type: ignore[arg-type]


# -- exit codes: POSIX wait status (WIFEXITED / WIFSIGNALED / WIFSTOPPED) and sentinels -----------------
@pytest.mark.parametrize(("raw", "expected"), [
    (0, (0, None)),  # exited 0
    (256, (1, None)),  # exit 1
    (768, (3, None)),  # exit 3 (SLURM.md §7)
    (0xFF00, (255, None)),  # exit 255
    (0x7F00, (127, None)),  # exit 127 (command not found)
    (1, (None, 1)),  # SIGHUP
    (9, (None, 9)),  # SIGKILL
    (15, (None, 15)),  # SIGTERM
    (0x80 | 11, (None, 11)),  # SIGSEGV with core dump
    (0x80 | 6, (None, 6)),  # SIGABRT with core dump
    (0x7E, (None, 126)),  # highest signal number below the "stopped" marker
    (0x7F, (None, None)),  # stopped: not a termination
    (0x137F, (None, None)),  # stopped by SIGSTOP (19)
    (0x147F, (None, None)),  # stopped by SIGTSTP (20)
    (None, (None, None)),
    (-1, (None, None)),
    (0xFFFFFFFE, (None, None)),  # NO_VAL
    (0xFFFFFFFF, (None, None)),  # INFINITE
    (0xFFFFFFFD, (None, 0x7D)),  # just below NO_VAL: a (strange) real status, signal 125
])
def test_decode_exit_code(raw: int | None, expected: tuple[int | None, int | None]) -> None:
    assert decode_exit_code(raw) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("0:0", (0, None)), ("3:0", (3, None)), ("255:0", (255, None)), ("0:9", (None, 9)), ("0:15", (None, 15)),
    ("1:15", (None, 15)),  # a signal wins: a killed job has no exit code
    ("", (None, None)), (None, (None, None)), ("3", (None, None)), ("x:y", (None, None)),
])
def test_decode_exit_pair(text: str | None, expected: tuple[int | None, int | None]) -> None:
    assert decode_exit_pair(text) == expected


@pytest.mark.parametrize(("obj", "expected"), [
    (None, (None, None)),
    (256, (1, None)),
    (9, (None, 9)),
    (Num(number=768), (3, None)),
    (Num(set=False, number=0), (None, None)),  # an unset number is "not available"
    (Num(infinite=True), (None, None)),
    (ExitCodeObj(status=["EXITED"], return_code=3), (3, None)),
    (ExitCodeObj(status="EXITED", return_code=0, signal=SignalObj(id=0)), (0, None)),
    (ExitCodeObj(status=["EXITED"], return_code=Num(number=2)), (2, None)),
    (ExitCodeObj(status=["SIGNALED"], return_code=0, signal=SignalObj(id=9, name="KILL")), (None, 9)),
    (ExitCodeObj(status=["SIGNALED", "CORE_DUMPED"], signal=SignalObj(id=Num(number=11))), (None, 11)),
    (ExitCodeObj(status=None, signal=SignalObj(id=15)), (None, 15)),  # no status, a signal: signalled
    (ExitCodeObj(status=["EXITED"], return_code=1, signal=SignalObj(id=9)), (1, None)),
    (ExitCodeObj(status=["PENDING"], return_code=0), (None, None)),  # not finished yet
    (ExitCodeObj(status=["INVALID"], return_code=0), (None, None)),
    (ExitCodeObj(status=["pending"]), (None, None)),
    (ExitCodeObj(status=["SIGNALED"], return_code=0), (None, None)),  # killed, signal not reported
    (ExitCodeObj(status="SIGNALED", return_code=0), (None, None)),
    (ExitCodeObj(status=["EXITED"], return_code=Num(set=False)), (None, None)),
])
def test_decode_exit_obj(obj: object, expected: tuple[int | None, int | None]) -> None:
    assert decode_exit_obj(obj) == expected  # type: ignore[arg-type]


# -- pending reasons: every branch of explain_pending_reason ---------------------------------------
JOB = SlurmJob(job_id=7, user="bob", account="physics", qos="high", restart_count=2)


@pytest.mark.parametrize(("reason", "words"), [
    ("Resources", "waiting for resources"),
    ("Priority", "higher-priority jobs"),
    ("Dependency", "depends on"),
    ("DependencyNeverSatisfied", "can never be satisfied"),
    ("JobHeldUser", "held by the user"),
    ("JobHeldAdmin", "held by an administrator"),
    ("BeginTime", "begin time not reached"),
    ("ReqNodeNotAvail", "not available"),
    ("PartitionTimeLimit", "partition's maximum"),
    ("PartitionNodeLimit", "node count"),
    ("PartitionDown", "partition is down"),
    ("PartitionInactive", "partition is inactive"),
    ("PartitionConfig", "partition cannot offer"),
    ("JobArrayTaskLimit", "%N"),
    ("launch failed requeued held", "launch failed"),
    ("launch_failed_requeued_held", "launch failed"),  # REST spells it with underscores
    ("job requeued in held state", "requeuehold"),
    ("Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions",
     "down, drained or reserved"),
    ("BadConstraints", "constraints"),
    ("InvalidAccount", "account is invalid"),
    ("InvalidQOS", "QOS is invalid"),
    ("Reservation", "reservation"),
    ("NodeDown", "node it needs is down"),
    ("FrontEndDown", "front-end"),
    ("Licenses", "licenses"),
    ("BurstBufferResources", "burst-buffer"),
    ("Cleaning", "cleaned up"),
    ("Prolog", "prolog"),
    ("SystemFailure", "failure"),
    ("TimeLimit", "time limit"),
    ("NonZeroExitCode", "non-zero exit code"),
    ("OutOfMemory", "out of memory"),
    ("None", "no reason given"),
])
def test_known_reasons(reason: str, words: str) -> None:
    text = explain_pending_reason(reason)
    assert words in text and not text.startswith("Slurm reason:")


@pytest.mark.parametrize("reason", [None, "", "   "])
def test_no_reason(reason: str | None) -> None:
    assert explain_pending_reason(reason) == "no reason given"


@pytest.mark.parametrize(("reason", "tail"), [
    ("ReqNodeNotAvail, UnavailableNodes:gpu[01,04]", ": gpu[01,04]"),
    ("ReqNodeNotAvail,UnavailableNodes:gpu07", ": gpu07"),
    ("ReqNodeNotAvail,_UnavailableNodes:gpu07", ": gpu07"),
    ("ReqNodeNotAvail, UnavailableNodes:", "(down, drained or reserved)"),
    ("ReqNodeNotAvail", "(down, drained or reserved)"),
])
def test_req_node_not_avail_names_the_nodes(reason: str, tail: str) -> None:
    text = explain_pending_reason(reason)
    assert text.startswith("a node it needs is not available") and text.endswith(tail)


def test_underscores_are_spaces_only_in_a_reason_without_spaces() -> None:
    assert explain_pending_reason("ReqNodeNotAvail, UnavailableNodes:gpu_01").endswith(": gpu_01")
    assert explain_pending_reason("Some_new_reason") == "Slurm reason: Some new reason"


def test_reason_with_a_detail_after_a_comma_uses_the_head() -> None:
    assert "higher-priority" in explain_pending_reason("Priority, something else")
    assert "depends on" in explain_pending_reason(" Dependency ")


@pytest.mark.parametrize(("job", "suffix"), [
    (JOB, " (requeued 2×)"),
    (SlurmJob(job_id=1, restart_count=1), " (requeued 1×)"),
    (SlurmJob(job_id=1, restart_count=0), ""),
    (SlurmJob(job_id=1), ""),
    (None, ""),
])
def test_begin_time_tells_the_requeue_count(job: SlurmJob | None, suffix: str) -> None:
    text = explain_pending_reason("BeginTime", job)
    assert text.startswith("eligible later") and text.endswith("Slurm holds the job back" + suffix)


def test_requeue_count_only_for_begin_time() -> None:
    assert "requeued 2" not in explain_pending_reason("Priority", JOB)


@pytest.mark.parametrize(("reason", "job", "expected"), [
    ("QOSMaxJobsPerUserLimit", JOB,
     "QOS 'high' limit reached: max jobs per user — waits until usage drops or the limit is raised"),
    ("QOSMaxJobsPerUserLimit", None,
     "the QOS limit reached: max jobs per user — waits until usage drops or the limit is raised"),
    ("QOSGrpGRES", SlurmJob(job_id=1), "the QOS limit reached: group GRES (e.g. GPUs) — "
     "waits until usage drops or the limit is raised"),
    ("AssocGrpGRES", JOB, "the association (account 'physics', user 'bob') limit reached: group GRES (e.g. GPUs) — "
     "waits until usage drops or the limit is raised"),
    ("AssocGrpCpuLimit", SlurmJob(job_id=1, user="bob"),
     "the association (user 'bob') limit reached: group CPUs — waits until usage drops or the limit is raised"),
    ("AssocMaxJobsLimit", SlurmJob(job_id=1, account="physics"),
     "the association (account 'physics') limit reached: max jobs — waits until usage drops or the limit is raised"),
    ("AssocGrpSubmitJobsLimit", None,
     "the association (account/user) limit reached: group submitted jobs jobs — "
     "waits until usage drops or the limit is raised"),
])
def test_limit_reasons_are_decoded(reason: str, job: SlurmJob | None, expected: str) -> None:
    assert explain_pending_reason(reason, job) == expected


@pytest.mark.parametrize(("reason", "words"), [
    ("QOSGrpGRESRunMinutes", "group GRES (e.g. GPUs) running minutes"),
    ("QOSMaxWallDurationPerJobLimit", "max wall time duration per job"),
    ("QOSMinGRES", "min GRES (e.g. GPUs)"),
    ("AssocGrpMemLimit", "group memory"),
    ("AssocGrpNodeLimit", "group nodes"),
    ("QOSGrpBillingMinutes", "group billing minutes"),
    ("AssocGrpBBLimit", "group burst buffer"),
    ("QOSMaxTRESPerAccount", "max TRES per account"),
    ("QOSGrpEnergy", "group energy"),
    ("AssocGrpUnknown", "group resources"),
])
def test_limit_words(reason: str, words: str) -> None:
    assert f"limit reached: {words} —" in explain_pending_reason(reason)


@pytest.mark.parametrize("reason", ["QOSNotAllowed", "SomethingNew", "QOS", "Assoc"])
def test_unknown_reasons_are_passed_through(reason: str) -> None:
    assert explain_pending_reason(reason) == f"Slurm reason: {reason}"
