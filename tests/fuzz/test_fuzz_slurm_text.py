"""Slurm text (sinfo/squeue fixed formats, scontrol -o, sdiag, sshare/sacctmgr tables) under mutation.

Declared error: :class:`SlurmParseError` (parse/__init__.py); with ``on_invalid`` a bad line is
dropped and reported instead, and the report must be clean too (it becomes a source warning).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fuzzkit import assert_clean, check, clean_message, mutated_text, seed_bytes
from hypothesis import example, given
from hypothesis import strategies as st

from hpctui.base.sanitize import decode_output
from hpctui.sources.slurm import parse
from hpctui.sources.slurm.parse.partitions import parse_scontrol_partitions


def _seed(rel: str, bar_to_sep: bool = False) -> str:
    text = decode_output(seed_bytes(rel))
    return text.replace("|", parse.SEP) if bar_to_sep else text


SINFO = [_seed("slurm/cli_sinfo_parsable.txt", True)]
SQUEUE = [_seed("slurm/cli_squeue_parsable.txt", True)]
SCONTROL_NODES = [_seed("slurm/cli_scontrol_show_node_oneliner.txt")]
SCONTROL_JOBS = [_seed("slurm/cli_scontrol_show_job_detail_oneliner.txt")]
SCONTROL_PARTS = [_seed("slurm/cli_scontrol_show_partition_oneliner.txt")]
SDIAG = [_seed("slurm/cli_sdiag.txt")]
SSHARE = [_seed("slurm/cli_sshare.txt"), _seed("slurm/cli_sshare_Pl.txt"), _seed("slurm/cli_sshare_Pl_user_alice.txt")]
QOS = [_seed("slurm/cli_sacctmgr_qos.txt"), _seed("slurm/cli_sacctmgr_qos_limits.txt"),
       _seed("slurm/cli_sacctmgr_no_accounting.txt")]
ASSOC = [_seed("slurm/cli_sacctmgr_assoc.txt"), _seed("slurm/cli_sacctmgr_assoc_alice.txt")]


def _strict_and_lenient(fn: Callable[..., Any], text: str, lenient: bool = True) -> None:
    try:
        check(lambda: fn(text), raises=())
    except parse.SlurmParseError as exc:
        clean_message(exc)
    if lenient:
        dropped: list[str] = []
        try:
            check(lambda: fn(text, on_invalid=dropped.append), raises=())
        except parse.SlurmParseError as exc:
            clean_message(exc)
        assert_clean(dropped)


# Found by bench/fuzz_parsers.py: sinfo's partition column reached SlurmNodeInfo.partitions raw.
@example(SINFO[0].replace("cpu*", "\x1b]0;owned\x07cpu*", 1))
@given(mutated_text(SINFO))
def test_sinfo_text(text: str) -> None:
    _strict_and_lenient(parse.parse_sinfo_text, text)


@example(SQUEUE[0].replace("\x1f2-5%2\x1f", "\x1f\u00b2\x1f", 1), True)  # array task "²": int() raised
@given(mutated_text(SQUEUE), st.booleans())
def test_squeue_text(text: str, include_finished: bool) -> None:
    _strict_and_lenient(lambda t, **kw: parse.parse_squeue_text(t, include_finished=include_finished, **kw), text)


@given(mutated_text(SCONTROL_NODES))
def test_scontrol_nodes(text: str) -> None:
    _strict_and_lenient(parse.parse_scontrol_nodes, text)


@example(SCONTROL_JOBS[0].replace("ArrayTaskId=0", "ArrayTaskId=\u00b2", 1), True)
@given(mutated_text(SCONTROL_JOBS), st.booleans())
def test_scontrol_jobs(text: str, include_finished: bool) -> None:
    _strict_and_lenient(lambda t, **kw: parse.parse_scontrol_jobs(t, include_finished=include_finished, **kw), text)


@given(mutated_text(SCONTROL_PARTS))
def test_scontrol_partitions(text: str) -> None:
    _strict_and_lenient(parse_scontrol_partitions, text)


@given(mutated_text(SDIAG))
def test_sdiag(text: str) -> None:
    _strict_and_lenient(parse.parse_sdiag_text, text, lenient=False)


@given(st.one_of(mutated_text(SSHARE), mutated_text(QOS), mutated_text(ASSOC)))
def test_sshare_and_sacctmgr_tables(text: str) -> None:
    for fn in (parse.parse_sshare_text, parse.parse_sacctmgr_qos_text, parse.parse_sacctmgr_assoc_text):
        _strict_and_lenient(fn, text, lenient=False)
