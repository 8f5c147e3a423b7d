"""The app's incident-report key: the same report as ``hpctui report``, from the session's store."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hpctui.base.private_files import private_dir, write_private
from hpctui.core.config import default_state_dir
from hpctui.core.runtime import Runtime
from hpctui.model.nodehistory import NodeRecord
from hpctui.report.incident import build_report, write_report

REPORT_WINDOW_S = 3600.0
HISTORY_WINDOW_S = 30 * 86400.0  # the node history a report carries (its own window: the past, not the incident's)
HISTORY_NODES = 32  # a report reads the history of at most this many nodes (one sacctmgr + one sacct each)


async def read_node_records(runtime: Runtime, nodes: Sequence[str]) -> tuple[list[NodeRecord], list[str]]:
    """The history of (at most :data:`HISTORY_NODES` of) ``nodes``, and what could not be read; never raises."""
    import asyncio

    async def one(node: str) -> NodeRecord | str:
        try:
            return await runtime.node_record(node, HISTORY_WINDOW_S)
        except Exception as exc:  # a node name slurmdbd refuses costs that node's history, not the report
            return f"{node}: node history not read: {exc}"

    got = await asyncio.gather(*(one(n) for n in list(nodes)[:HISTORY_NODES]))
    notes = [g for g in got if isinstance(g, str)]
    if len(nodes) > HISTORY_NODES:
        notes.append(f"node history read for the first {HISTORY_NODES} of {len(nodes)} nodes")
    return [g for g in got if not isinstance(g, str)], notes


def export_report(runtime: Runtime, nodes: Sequence[str], screenshot: Callable[[], str] | None = None,
                  directory: Path | None = None, since_s: float = REPORT_WINDOW_S,
                  audit: Sequence[Mapping[str, Any]] | None = None) -> Path:
    """Write the report for ``nodes`` (and ``screen.svg``, the SVG text ``screenshot()`` returns) into
    ``directory`` or a new directory under the state dir's ``reports/``; every file 0600, every
    directory made 0700. Returns the directory. (:func:`prepare_report` + :func:`write_export`.)

    ``audit``: the audit records (intents too: one row per action id), read beforehand off the UI
    thread (``AuditLog.tail``); None reads the log's bounded tail here (blocking file I/O)."""
    doc, out = prepare_report(runtime, nodes, directory=directory, since_s=since_s, audit=audit)
    return write_export(doc, out, screenshot() if screenshot is not None else None)


def prepare_report(runtime: Runtime, nodes: Sequence[str], *, directory: Path | None = None,
                   since_s: float = REPORT_WINDOW_S,
                   audit: Sequence[Mapping[str, Any]] | None = None,
                   node_records: Sequence[NodeRecord] = ()) -> tuple[dict[str, Any], Path]:
    """The report document and its directory: reads the store (its history rings too), so it runs on
    the thread that feeds the store; quick (no rendering)."""
    snapshot = runtime.store.snapshot()
    now = runtime.clock()
    out = directory or default_state_dir() / "reports" / time.strftime(
        f"{runtime.cluster}-%Y%m%d-%H%M%S", time.gmtime(now))
    if audit is None:
        audit = runtime.executor.audit.read(intents=True) if runtime.executor.audit is not None else []
    doc = build_report(snapshot, nodes=list(nodes), jobs=[], since_s=since_s, thresholds=runtime.thresholds,
                       history=runtime.store.history.get, series=runtime.store.series, audit=audit,
                       secrets=runtime.secrets, now=now, origin="hpctui app", node_records=node_records,
                       checks=runtime.check_history, held=runtime.check_marks, extra=runtime.frame().idle.findings)
    return doc, out


def write_export(doc: dict[str, Any], out: Path, screen_svg: str | None = None) -> Path:
    """Render and write ``doc`` (and ``screen.svg``) into ``out``: the slow part (charts), safe in a
    worker thread (it reads only ``doc``). Returns ``out``."""
    private_dir(out)
    if screen_svg is not None:
        write_private(out / "screen.svg", screen_svg.encode())
        doc["screenshot"] = "screen.svg"
    write_report(doc, out)
    return out
