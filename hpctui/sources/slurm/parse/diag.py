"""Controller health from ``sdiag`` text or REST ``GET diag`` (no ``sdiag --json`` in 22.05)."""

from __future__ import annotations

import re

import msgspec

from hpctui.model.snapshot import ControllerHealth
from hpctui.sources.slurm.parse.errors import SlurmParseError
from hpctui.sources.slurm.parse.nodes import decode_document
from hpctui.sources.slurm.parse.rest_versions import Meta, RestError
from hpctui.sources.slurm.parse.values import IntLike, num


class _Stats(msgspec.Struct, kw_only=True):
    server_thread_count: IntLike = None
    agent_queue_size: IntLike = None
    agent_count: IntLike = None
    dbd_agent_queue_size: IntLike = None
    jobs_pending: IntLike = None
    jobs_running: IntLike = None
    jobs_submitted: IntLike = None
    jobs_failed: IntLike = None
    schedule_cycle_mean: IntLike = None
    schedule_cycle_last: IntLike = None
    bf_cycle_last: IntLike = None
    bf_when_last_cycle: IntLike = None
    bf_active: bool | None = None


class _DiagDoc(msgspec.Struct, kw_only=True):
    meta: Meta | None = None
    errors: list[RestError] | None = None
    statistics: _Stats


_diag_decoder = msgspec.json.Decoder(_DiagDoc)


def _health(
    threads: int | None, agent_q: int | None, dbd_q: int | None, pending: int | None, running: int | None,
    bf_last_us: int | None, sched_mean_us: int | None,
) -> ControllerHealth:
    detail = None
    if dbd_q:
        detail = f"{dbd_q} messages queued for slurmdbd"
    return ControllerHealth(
        reachable=True,
        server_thread_count=threads,
        agent_queue_size=agent_q,
        jobs_pending=pending,
        jobs_running=running,
        last_backfill_cycle_s=None if bf_last_us is None else bf_last_us / 1e6,
        mean_schedule_cycle_us=None if sched_mean_us is None else float(sched_mean_us),
        detail=detail,
    )


def parse_diag_json(data: bytes | str, version: str | None = None) -> ControllerHealth:
    """REST ``GET /slurm/vX/diag`` → ControllerHealth (backfill cycle in seconds)."""
    doc = decode_document(_diag_decoder, data, version, "slurm diag JSON")
    s = doc.statistics
    return _health(
        num(s.server_thread_count), num(s.agent_queue_size), num(s.dbd_agent_queue_size), num(s.jobs_pending),
        num(s.jobs_running), num(s.bf_cycle_last), num(s.schedule_cycle_mean),
    )


_LINE = re.compile(r"^\s*([^:]+?):\s+(-?\d+)\b")


def parse_sdiag_text(text_in: str) -> ControllerHealth:
    """``sdiag`` text → ControllerHealth. "Last cycle" appears under both the main and
    the backfill section, so values are keyed by (section, label)."""
    section = "top"
    vals: dict[tuple[str, str], int] = {}
    for line in text_in.splitlines():
        stripped = line.strip()
        if stripped.startswith("Main schedule statistics"):
            section = "main"
            continue
        if stripped.startswith("Backfilling stats"):
            section = "bf"
            continue
        if stripped.startswith(("Remote Procedure Call", "Latency for")):
            section = "other"
            continue
        m = _LINE.match(line)
        if m:
            vals.setdefault((section, m.group(1).strip()), int(m.group(2)))
    if ("top", "Server thread count") not in vals:
        raise SlurmParseError("sdiag text: no 'Server thread count' line (truncated or not sdiag output)")
    return _health(
        vals.get(("top", "Server thread count")),
        vals.get(("top", "Agent queue size")),
        vals.get(("top", "DBD Agent queue size")),
        vals.get(("top", "Jobs pending")),
        vals.get(("top", "Jobs running")),
        vals.get(("bf", "Last cycle")),
        vals.get(("main", "Mean cycle")),
    )
