"""``hpctui logs``: a job's output, a node's kernel/journal window or a pod's log on the terminal, through
the same log service the viewer uses (``runtime.logs``): bounded, sanitised, the errors in plain words.

``hpctui logs job 1234 [--stderr] [--follow]`` · ``hpctui logs node 'gpu[01-04]' --since 30m [--unit U]
[--no-kernel] [--grep TEXT]`` · ``hpctui logs pod NS/NAME [--container C] [--previous]``. Exit 0: read;
1: nothing could be read (the reason on stderr); 2: usage.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import TYPE_CHECKING

from hpctui.model.hostlist import HostlistError, expand
from hpctui.report.incident import ReportError, parse_since

if TYPE_CHECKING:
    from hpctui.core.runtime import Runtime

FOLLOW_S = 2.0


def add_logs_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", choices=("job", "node", "pod"), help="whose log")
    p.add_argument("target", help="job id (1234, 1234_7), node hostlist, or NAMESPACE/POD")
    p.add_argument("--stderr", action="store_true", help="job: the stderr file (default stdout)")
    p.add_argument("-f", "--follow", action="store_true", help="job: keep reading what is appended (ctrl+c ends)")
    p.add_argument("--since", default="1h", metavar="DURATION", help="node: the window up to now (default 1h)")
    p.add_argument("--unit", action="append", default=[], metavar="UNIT", help="node: also this unit's journal")
    p.add_argument("--no-kernel", action="store_true", help="node: units only, not the kernel log")
    p.add_argument("--grep", metavar="TEXT", help="node: only lines holding TEXT (case-insensitive)")
    p.add_argument("--container", metavar="NAME", help="pod: this container (default the first)")
    p.add_argument("--previous", action="store_true", help="pod: the previous container (CrashLoopBackOff)")


def _out(lines: list[str] | tuple[str, ...]) -> None:
    for line in lines:
        sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _err(message: str) -> int:
    sys.stderr.write(f"hpctui logs: {message}\n")
    return 1


async def run_logs(runtime: Runtime, args: argparse.Namespace) -> int:
    """One log read (or a follow loop) per the arguments."""
    if args.what == "job":
        return await _job(runtime, args)
    if args.what == "node":
        return await _node(runtime, args)
    return await _pod(runtime, args)


async def _job(runtime: Runtime, args: argparse.Namespace) -> int:
    paths = await runtime.logs.job_output_paths(args.target)
    if paths is None:
        return _err(f"Slurm does not know job {args.target} (or no Slurm source is configured)")
    path = (paths.stderr or paths.stdout) if args.stderr else paths.stdout
    host = runtime.logs.log_host(paths.host)
    if path is None or host is None:
        return _err(f"job {paths.job} has no output file yet (no batch host)")
    offset: int | None = None
    while True:
        chunk = await runtime.logs.read_file(host, path, offset)
        if chunk.error is not None:
            return _err(f"{chunk.where}: {chunk.error}")
        if offset is None:
            sys.stderr.write(f"==> {chunk.where}{' (older lines left out)' if chunk.cut else ''} <==\n")
        _out(chunk.lines)
        offset = chunk.offset
        if not args.follow:
            return 0
        await asyncio.sleep(FOLLOW_S)


async def _node(runtime: Runtime, args: argparse.Namespace) -> int:
    try:
        hosts = expand(args.target)
        since_s = parse_since(args.since)
    except (HostlistError, ReportError) as exc:
        return _err(str(exc))
    now = time.time()
    read = await runtime.logs.journal(hosts, now - since_s, now, kernel=not args.no_kernel,
                                      units=tuple(args.unit), grep=args.grep)
    if read is None:
        return _err("no SSH (or Loki) source configured: cannot read node journals")
    sys.stderr.write(f"==> {read.command} on {read.where} <==\n")
    sys.stdout.write(read.folded)
    return 0 if any(o.error is None for o in read.outputs) else 1


async def _pod(runtime: Runtime, args: argparse.Namespace) -> int:
    namespace, sep, name = args.target.partition("/")
    if not sep or not namespace or not name:
        return _err(f"not NAMESPACE/POD: {args.target!r}")
    got = await runtime.logs.pod_log_lines(namespace, name, args.container, previous=args.previous)
    if got is None:
        return _err("no Kubernetes source configured: cannot read pod logs")
    _out(got[0])
    return 0
