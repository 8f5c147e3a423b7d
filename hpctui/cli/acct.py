"""Headless questions to what the cluster remembers: ``hpctui history``, ``hpctui sacct``, ``hpctui gpu-hours``.

* ``hpctui history NODE [--days 30]`` — the node's merged history (slurmdbd events, the audit
  log, the timeline) and the jobs that died there; ``hpctui history --rank [--kind drain]`` — the
  repeat offenders of the window;
* ``hpctui sacct [--nodes H] [--user U] [--account A] [--state S,...] [--since 1d] [--limit N]`` —
  finished jobs, exit codes decoded;
* ``hpctui gpu-hours [--since 7d] [--account A] [--user U]`` — GPU-hours per account and user (sreport).

All bounded (a window of at most a year, a row cap) and read-only. ``--json`` prints the structs.
Exit codes: 0 answered, 1 answered with problems (or no accounting), 2 usage error.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import TYPE_CHECKING, Any

import msgspec

from hpctui.base.sanitize import clean_text
from hpctui.findings.nodehistory import job_line, offender_lines, record_lines
from hpctui.model.nodehistory import AcctQuery, AcctResult
from hpctui.report.incident import ReportError, parse_since

if TYPE_CHECKING:
    from hpctui.core.runtime import Runtime

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2
KINDS = ("drain", "down", "cordon", "health")


def add_history_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("node", nargs="?", help="the node whose history to show")
    p.add_argument("--rank", action="store_true", help="rank the repeat-offender nodes instead")
    p.add_argument("--kind", choices=KINDS, help="with --rank: count only this kind of event")
    p.add_argument("--days", type=float, default=30.0, help="window in days (default 30)")
    p.add_argument("--json", action="store_true", help="print JSON")


def add_sacct_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nodes", metavar="HOSTLIST", help="jobs that ran on these nodes")
    p.add_argument("--user", help="jobs of this user")
    p.add_argument("--account", help="jobs of this account")
    p.add_argument("--state", metavar="S,...", help="job states, e.g. FAILED,NODE_FAIL,OUT_OF_MEMORY,TIMEOUT")
    p.add_argument("--since", default="1d", metavar="DURATION", help="window: 30m, 6h, 2d (default 1d)")
    p.add_argument("--limit", type=int, default=200, help="at most this many rows (default 200)")
    p.add_argument("--json", action="store_true", help="print JSON")


def add_gpu_hours_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--account", help="only this account")
    p.add_argument("--user", help="only this user")
    p.add_argument("--since", default="7d", metavar="DURATION", help="window: 1d, 7d, 30d (default 7d)")
    p.add_argument("--json", action="store_true", help="print JSON")


def _print(text: str) -> None:
    sys.stdout.write(text + "\n")


def _json(obj: Any) -> None:
    _print(msgspec.json.encode(obj).decode())


def _problems(res: AcctResult | None, what: str) -> int:
    if res is None:
        sys.stderr.write(f"hpctui {what}: no configured source has accounting (a slurm source with slurmdbd)\n")
        return EXIT_PROBLEMS
    if res.detail:
        sys.stderr.write(f"hpctui {what}: {clean_text(res.detail)}\n")
    return EXIT_OK if res.available and not res.truncated else EXIT_PROBLEMS


async def run_history(runtime: Runtime, args: argparse.Namespace) -> int:
    """``hpctui history``: one node's record, or the ranking with ``--rank``."""
    window = args.days * 86400.0
    if args.rank:
        offenders, problems, commands = await runtime.offenders(window, args.kind)
        if args.json:
            _json({"offenders": [dataclasses.asdict(o) for o in offenders], "problems": problems,
                   "commands": commands})
        else:
            for line in offender_lines(offenders):
                _print(clean_text(line))
    else:
        record = await runtime.node_record(args.node, window)
        problems = record.problems
        if args.json:
            _json(record)
        else:
            for line in record_lines(record):
                _print(clean_text(line))
    for p in problems:
        sys.stderr.write(f"hpctui history: {clean_text(p)}\n")
    return EXIT_PROBLEMS if problems else EXIT_OK


async def run_sacct(runtime: Runtime, args: argparse.Namespace, since_s: float) -> int:
    """``hpctui sacct``: one bounded query, one line per job (or JSON)."""
    end = runtime.clock()
    states = tuple(s for s in (args.state or "").split(",") if s.strip())
    query = AcctQuery(start=end - since_s, end=end, nodes=args.nodes, user=args.user, account=args.account,
                      states=states, limit=args.limit)
    res = await runtime.acct_jobs(query)
    if res is not None:
        if args.json:
            _json(res)
        else:
            for job in res.jobs:
                _print(clean_text(job_line(job)))
            if not res.jobs:
                _print("no jobs in the window")
    return _problems(res, "sacct")


async def run_gpu_hours(runtime: Runtime, args: argparse.Namespace, since_s: float) -> int:
    """``hpctui gpu-hours``: GPU-hours per account, then its users."""
    end = runtime.clock()
    res = await runtime.gpu_usage(end - since_s, end, args.account, args.user)
    if res is not None:
        if args.json:
            _json(res)
        else:
            _print(f"{'ACCOUNT':<16} {'USER':<12} {'GPU-HOURS':>10}")
            for u in res.usage:
                _print(clean_text(f"{u.account:<16} {(u.user or '(total)'):<12} {u.gpu_hours:>10.2f}"))
            if not res.usage:
                _print("no GPU usage recorded in the window")
    return _problems(res, "gpu-hours")


def window_of(args: argparse.Namespace) -> float:
    """``--since`` in seconds; ``ValueError`` with the report's wording when it is not a duration."""
    try:
        return parse_since(args.since)
    except ReportError as exc:
        raise ValueError(str(exc)) from None
