"""Cancel verification: read back only the target jobs (never the whole queue) and judge.

scancel / ``DELETE job/{id}`` answer "ok" for jobs they did not touch, so a cancel only
counts once the controller shows the job gone, CANCELLED, COMPLETING or otherwise finished.
Targets are ``1234``, ``1234_5`` or an array range ``1234_[4-9]``; the read-back rows carry
the real job id, the display id (``1234_7`` / ``1234_[8-9%2]``) and the state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from hpctui.model.action import TargetResult
from hpctui.sources.base import SourceError
from hpctui.sources.slurm.actions import parse_array_target
from hpctui.sources.slurm.parse import LIVE_JOB_STATES

DONE_STATES = frozenset({"CANCELLED", "COMPLETING"})


@dataclass(frozen=True)
class JobRow:
    job_id: str  # the real job id (squeue %A)
    display_id: str  # squeue %i
    state: str


def base_id(target: str) -> str:
    """The job id to ask about: ``1234_[4-9]`` / ``1234_5`` -> ``1234``."""
    return target.split("_", 1)[0]


def query_ids(targets: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(base_id(t) for t in targets))


def _tasks_of(display_id: str) -> tuple[str, list[tuple[int, int]]] | None:
    """``1234_7`` -> ("1234", [(7, 7)]); ``1234_[8-9%2]`` -> ("1234", [(8, 9)]); else None."""
    parsed = parse_array_target(display_id)
    if parsed is not None:
        return str(parsed[0]), parsed[1]
    head, sep, tail = display_id.partition("_")
    if sep and head.isdigit() and tail.isdigit():
        return head, [(int(tail), int(tail))]
    return None


def rows_for(target: str, rows: Iterable[JobRow]) -> list[JobRow]:
    """The read-back rows that belong to ``target``."""
    out: list[JobRow] = []
    want = parse_array_target(target)
    if want is None and "_" in target:
        head, _, tail = target.partition("_")
        want = (int(head), [(int(tail), int(tail))])
    for row in rows:
        if want is None:
            # a plain id: the job itself, or every task of the array with that id
            tasks = _tasks_of(row.display_id)
            if row.job_id == target or row.display_id == target or (tasks is not None and tasks[0] == target):
                out.append(row)
            continue
        tasks = _tasks_of(row.display_id)
        if tasks is None or tasks[0] != str(want[0]):
            continue
        if any(a <= y and x <= b for a, b in want[1] for x, y in tasks[1]):
            out.append(row)
    return out


def is_done(state: str) -> bool:
    return state in DONE_STATES or state not in LIVE_JOB_STATES


def still_alive(target: str, rows: Iterable[JobRow]) -> str | None:
    """The state that shows ``target`` is not cancelled yet, or None if it is."""
    for row in rows_for(target, rows):
        if not is_done(row.state):
            return row.state
    return None


VERIFY_TRIES = 10
VERIFY_PAUSE_S = 0.2


async def verify_cancel(results: list[TargetResult], job_rows: Callable[[tuple[str, ...]], Awaitable[list[JobRow]]],
                        how: str) -> list[TargetResult]:
    """Cancelling reports success even for unknown jobs (scancel exits 0): re-read only the
    targets until each is gone or finished, and turn the answer into per-target results."""
    pending = tuple(r.target for r in results if r.ok)
    rows: list[JobRow] = []
    for attempt in range(VERIFY_TRIES if pending else 0):
        try:
            rows = await job_rows(pending)
        except SourceError as exc:
            return [r if not r.ok else TargetResult(target=r.target, ok=False, message=f"cannot verify: {exc}")
                    for r in results]
        if all(still_alive(t, rows) is None for t in pending):
            break
        if attempt < VERIFY_TRIES - 1:
            await asyncio.sleep(VERIFY_PAUSE_S)
    out = []
    for r in results:
        alive = still_alive(r.target, rows) if r.ok else None
        if alive is not None:
            out.append(TargetResult(target=r.target, ok=False, message=f"{how} but job is still {alive}"))
        elif r.ok:
            seen = sorted({row.state.lower() for row in rows if row.display_id == r.target or row.job_id == r.target})
            out.append(TargetResult(target=r.target, ok=True, message=f"cancelled (verified: {', '.join(seen) or 'gone'})"))
        else:
            out.append(r)
    return out
