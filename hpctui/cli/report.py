"""``hpctui report``: collect, then write report.md / report.json / report.html into a directory."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from hpctui.actions.audit import AuditRead
from hpctui.model.hostlist import HostlistError, expand
from hpctui.model.nodehistory import NodeRecord
from hpctui.report.incident import ReportError, build_report, parse_since, scope, write_report

if TYPE_CHECKING:
    from hpctui.core.runtime import Runtime
    from hpctui.model import ClusterSnapshot

# The demo has no past: it replays its last DEMO_REPLAY_S seconds (one sample per 2 s, like the app's
# refresh) so the charts have a history; its incidents happened before that, inside a 1h window.
DEMO_REPLAY_S = 120.0
DEMO_SAMPLES = 60


def add_report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nodes", metavar="EXPR", help="hostlist expression of the affected nodes")
    p.add_argument("--jobs", metavar="IDS", help="affected job ids (their nodes are included)")
    p.add_argument("--since", default="1h", metavar="DURATION", help="window: 30m, 1h, 2d (default 1h)")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="DIR", help="directory to write into")
    p.add_argument("--journal", action="store_true",
                   help="read the nodes' kernel log of the window over SSH (or Loki) into the timeline")


class _StepClock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


async def _collect(runtime: Runtime, nodes_expr: str | None) -> list[NodeRecord]:
    try:
        await runtime.collect_once()
        return await _records(runtime, nodes_expr)
    finally:
        await runtime.stop()


async def _records(runtime: Runtime, nodes_expr: str | None) -> list[NodeRecord]:
    """The named nodes' history (slurmdbd, the audit log, sacct's dead jobs); what is missing said on stderr."""
    from hpctui.ui.report_export import read_node_records

    try:
        names = expand(nodes_expr) if nodes_expr else []
    except HostlistError:
        return []  # scope() says what is wrong with the expression
    records, notes = await read_node_records(runtime, names)
    for note in notes:
        sys.stderr.write(f"hpctui report: warning: {note}\n")
    return records


async def _collect_demo_window(args: argparse.Namespace, since_s: float) -> tuple[Runtime, list[NodeRecord]]:
    from hpctui.core.runtime import demo_runtime

    now = time.time()
    replay = min(since_s, DEMO_REPLAY_S)
    clock = _StepClock(now - replay)
    runtime = demo_runtime(size=args.demo_size, seed=args.seed, clock=clock, start_time=now - replay,
                           read_only=True)
    _watch(runtime, args.nodes)
    try:
        for i in range(DEMO_SAMPLES + 1):
            clock.t = now - replay + replay * i / DEMO_SAMPLES
            await runtime.collect_once()
        records = await _records(runtime, args.nodes)
    finally:
        await runtime.stop()
    return runtime, records


def _watch(runtime: Runtime, nodes_expr: str | None) -> None:
    """Keep per-GPU history for the named nodes even in a demo past the rings' node bound."""
    try:
        names = expand(nodes_expr) if nodes_expr else []
    except HostlistError:
        return  # scope() says what is wrong with the expression
    for name in names:
        runtime.store.series.watch(name)


def _with_journal(runtime: Runtime, nodes: list[str], since_s: float) -> ClusterSnapshot | None:
    """The snapshot after the nodes' kernel log of the window joined the timeline; None if it could not."""
    now = time.time()
    try:
        read = asyncio.run(runtime.logs.journal(nodes, now - since_s, now))
    except Exception as exc:  # the report is written without it
        sys.stderr.write(f"hpctui report: warning: journal not read: {exc}\n")
        return None
    if read is None:
        sys.stderr.write("hpctui report: warning: --journal: no SSH or Loki source configured\n")
        return None
    for output in read.outputs:
        if output.error is not None:
            sys.stderr.write(f"hpctui report: warning: journal of {output.label}: {output.error}\n")
    return runtime.store.snapshot()


def make_report(args: argparse.Namespace, build_runtime: Callable[[], Runtime]) -> int:
    if not args.nodes and not args.jobs:
        sys.stderr.write("hpctui report: error: give --nodes and/or --jobs (see --help)\n")
        return 2
    try:
        since_s = parse_since(args.since)
    except ReportError as exc:
        sys.stderr.write(f"hpctui report: error: {exc}\n")
        return 2
    if args.demo:
        runtime, records = asyncio.run(_collect_demo_window(args, since_s))
    else:
        runtime = build_runtime()
        records = asyncio.run(_collect(runtime, args.nodes))
    snapshot = runtime.store.snapshot()
    try:
        nodes, jobs = scope(snapshot, args.nodes, args.jobs)
    except ReportError as exc:
        sys.stderr.write(f"hpctui report: error: {exc}\n")
        return 2
    if args.journal and nodes:
        snapshot = _with_journal(runtime, nodes, since_s) or snapshot
    # intents too: an action killed halfway left only its intent; _actions makes one row of each id
    got = runtime.executor.audit.tail() if runtime.executor.audit is not None else AuditRead()
    for warning in got.warnings:  # a torn line costs that line, never the report
        sys.stderr.write(f"hpctui report: warning: {warning}\n")
    audit = got.records
    doc = build_report(snapshot, nodes=nodes, jobs=jobs, since_s=since_s, thresholds=runtime.thresholds,
                       history=runtime.store.history.get, series=runtime.store.series, audit=audit,
                       secrets=runtime.secrets, origin="hpctui report", node_records=records,
                       checks=runtime.check_history, held=runtime.check_marks)
    try:
        paths = write_report(doc, args.output)
    except OSError as exc:
        sys.stderr.write(f"hpctui report: error: cannot write {args.output}: {exc.strerror or exc}\n")
        return 2
    for path in paths:
        sys.stdout.write(f"{path}\n")
    return 0 if all(h.ok for h in snapshot.sources.values()) else 1
