"""What slurmdbd remembers, on demand: node events, finished jobs, GPU-hours.

* ``sacctmgr -P show event event=node [nodes=H] start=S end=E format=...`` — drains and downs
  with reason, who set it, start and end (slurmdbd; the free-text Reason is the last field);
* ``sacct -P -X -a [-N H] [-u U] [-A A] [-s STATES] -S S -E E --format=...`` — jobs (the CLI
  text, not ``--json``: 22.05's ``sacct --json`` reports ``exit 3`` as ``return_code 0``,
  recorded in tests/fixtures/slurm/cli_sacct_dead.json; the text form is right on every version);
* ``sreport -P -T gres/gpu -t Minutes cluster AccountUtilizationByUser start=S end=E`` — GPU-hours.

Bounded: a window is at most :data:`MAX_WINDOW_S`, an answer at most ``limit`` rows and
:data:`MAX_OUTPUT` bytes (the command is stopped there, ``truncated`` says so). Every name goes
through a check before it reaches an argv; problems come back as ``available=False`` /
``detail`` (never an exception), except ``ValueError`` for a bad filter.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from hpctui.model.hostlist import HostlistError, expand
from hpctui.model.nodehistory import AcctJob, AcctQuery, AcctResult, GpuUsage, NodeEvent
from hpctui.sources.slurm.accounting import ABSENT, _explain, check_name
from hpctui.sources.slurm.parse.acct import (
    EVENT_FORMAT,
    SACCT_FORMAT,
    parse_events_text,
    parse_sacct_text,
    parse_sreport_gpu_text,
)
from hpctui.sources.slurm.parse.errors import SlurmParseError
from hpctui.sources.slurm.runner import CommandError, Runner

R = TypeVar("R")

MAX_WINDOW_S = 366 * 86400.0  # a query spans at most a year
MAX_ROWS = 5000  # the most rows one answer may ask for
MAX_OUTPUT = 8 << 20  # bytes of one command's output read at most
# sacct's job states (sacct -s): what a filter may name
JOB_STATES = frozenset({
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "PENDING",
    "PREEMPTED", "RUNNING", "REQUEUED", "RESIZING", "REVOKED", "SUSPENDED", "TIMEOUT"})
_NOT_SLURMDBD = "not running a supported accounting_storage plugin"
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class _Enough(Exception):
    """Raised by the output feed past the byte cap: stops the command."""


def slurm_time(t: float) -> str:
    """Epoch seconds as sacct/sacctmgr/sreport read a time (local, ``YYYY-MM-DDTHH:MM:SS``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


def check_window(start: float, end: float) -> None:
    """``ValueError`` unless 0 < end - start <= :data:`MAX_WINDOW_S`."""
    if not end > start:
        raise ValueError("the window's end must be after its start")
    if end - start > MAX_WINDOW_S:
        raise ValueError(f"a window of at most {MAX_WINDOW_S / 86400:g} days")


def check_nodes(expr: str | None) -> str | None:
    """A hostlist whose every name is a plausible host name (or None); else ``ValueError``."""
    if expr is None:
        return None
    try:
        names = expand(expr)
    except HostlistError as exc:
        raise ValueError(f"invalid node list {expr!r}: {exc}") from None
    if not names or not all(_HOST.fullmatch(n) for n in names):
        raise ValueError(f"invalid node list {expr!r}: host names only")
    return expr


def check_states(states: Sequence[str]) -> tuple[str, ...]:
    """Upper-cased sacct job states; ``ValueError`` for one sacct does not know."""
    out = tuple(s.strip().upper() for s in states if s.strip())
    bad = [s for s in out if s not in JOB_STATES]
    if bad:
        raise ValueError(f"unknown job state(s) {', '.join(bad)}: one of {', '.join(sorted(JOB_STATES))}")
    return out


def events_argv(nodes: str | None, start: float, end: float) -> list[str]:
    where = [f"nodes={nodes}"] if nodes else []
    return ["sacctmgr", "-P", "show", "event", "event=node", *where, f"start={slurm_time(start)}",
            f"end={slurm_time(end)}", f"format={EVENT_FORMAT}"]


def sacct_argv(q: AcctQuery) -> list[str]:
    argv = ["sacct", "-P", "-X", "-a"]
    if q.nodes:
        argv += ["-N", q.nodes]
    if q.user:
        argv += ["-u", q.user]
    if q.account:
        argv += ["-A", q.account]
    if q.states:
        argv += ["-s", ",".join(q.states)]
    return [*argv, "-S", slurm_time(q.start), "-E", slurm_time(q.end), f"--format={SACCT_FORMAT}"]


def sreport_argv(start: float, end: float, account: str | None = None, user: str | None = None) -> list[str]:
    where = [f"accounts={account}"] * bool(account) + [f"users={user}"] * bool(user)
    return ["sreport", "-P", "-T", "gres/gpu", "-t", "Minutes", "cluster", "AccountUtilizationByUser",
            f"start={slurm_time(start)}", f"end={slurm_time(end)}", *where]


async def _read(runner: Runner, argv: list[str]) -> tuple[str, bool, str | None]:
    """(stdout, cut at :data:`MAX_OUTPUT`, why it failed or None)."""
    chunks: list[bytes] = []
    size = 0

    def feed(b: bytes) -> None:
        nonlocal size
        chunks.append(b)
        size += len(b)
        if size > MAX_OUTPUT:
            raise _Enough

    try:
        res = await runner.stream(argv, feed)
    except _Enough:
        data = b"".join(chunks)[:MAX_OUTPUT]
        return data[:data.rfind(b"\n") + 1].decode(errors="replace"), True, None
    except CommandError as exc:
        return "", False, _explain(argv[0], str(exc))
    out = b"".join(chunks).decode(errors="replace")
    if not res.ok:
        why = res.message or f"{argv[0]} exit status {res.rc}"
        if _NOT_SLURMDBD in why.lower():
            return out, False, ABSENT
        return out, False, _explain(argv[0], why)
    return out, False, None


async def _query(runner: Runner, argv: list[str], parser: Callable[..., list[R]], limit: int,
                 start: float, end: float) -> tuple[list[R], AcctResult]:
    """Run one command, parse its rows (bad rows noted, not fatal), cap them at ``limit``."""
    out, cut, fail = await _read(runner, argv)
    cmd = [shlex.join(argv)]
    if fail is not None:
        return [], AcctResult(available=fail != ABSENT, detail=fail, commands=cmd, start=start, end=end)
    notes: list[str] = []
    try:
        rows = parser(out, on_invalid=notes.append)
    except SlurmParseError as exc:
        return [], AcctResult(available=True, detail=f"{argv[0]} output unreadable: {exc}", commands=cmd,
                              start=start, end=end)
    truncated = cut or len(rows) > limit
    detail = "; ".join(notes[:3]) or None
    if truncated:
        detail = (detail + "; " if detail else "") + f"more than {min(limit, len(rows))} rows: narrow the window or filters"
    return rows[:limit], AcctResult(available=True, truncated=truncated, detail=detail, commands=cmd,
                                    start=start, end=end)


async def query_node_events(runner: Runner, nodes: str | None, start: float, end: float,
                            limit: int = MAX_ROWS) -> AcctResult:
    """Drain/down events of ``nodes`` (all: None) that overlap [start, end], from slurmdbd."""
    check_window(start, end)
    nodes = check_nodes(nodes)
    events: list[NodeEvent]
    events, res = await _query(runner, events_argv(nodes, start, end), parse_events_text, min(limit, MAX_ROWS),
                               start, end)
    return _with(res, events=events)


async def query_jobs(runner: Runner, q: AcctQuery) -> AcctResult:
    """Finished (and running) jobs as ``sacct`` has them for the query's window and filters."""
    check_window(q.start, q.end)
    q = AcctQuery(start=q.start, end=q.end, nodes=check_nodes(q.nodes), user=check_name(q.user, "user"),
                  account=check_name(q.account, "account"), states=check_states(q.states),
                  limit=max(1, min(q.limit, MAX_ROWS)))
    jobs: list[AcctJob]
    jobs, res = await _query(runner, sacct_argv(q), parse_sacct_text, q.limit, q.start, q.end)
    return _with(res, jobs=jobs)


async def query_gpu_usage(runner: Runner, start: float, end: float, account: str | None = None,
                          user: str | None = None) -> AcctResult:
    """GPU-hours per account and per user in it over [start, end] (``sreport``, gres/gpu TRES)."""
    check_window(start, end)
    argv = sreport_argv(start, end, check_name(account, "account"), check_name(user, "user"))
    usage: list[GpuUsage]
    usage, res = await _query(runner, argv, parse_sreport_gpu_text, MAX_ROWS, start, end)
    return _with(res, usage=usage)


def _with(res: AcctResult, **rows: object) -> AcctResult:
    import msgspec

    return msgspec.structs.replace(res, **rows)
