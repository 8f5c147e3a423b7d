"""pyslurm backend, written against the pyslurm 25.11 API (FACTS §7).

Honest status: pyslurm cannot be built against Debian's Slurm 22.05 (its sdist refuses:
"Slurm version mismatch"), so this code has only run against a fake ``pyslurm`` module
with the same API in the tests, never against a real libslurm. It is chosen only when
``import pyslurm`` works *and* its X.Y equals ``scontrol --version``'s. Every blocking call
runs in this backend's own single worker thread, so the event loop never waits on libslurm
and a hung libslurm holds one thread, not one more per poll: while a call is still running
(the poller gave up on it), the next refresh or action is refused instead of queued.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import re
from types import ModuleType
from typing import Any

from hpctui.model import ControllerHealth, SlurmJob, SlurmNodeInfo
from hpctui.model.action import ActionKind, TargetResult
from hpctui.sources.base import SourceError
from hpctui.sources.slurm import parse
from hpctui.sources.slurm.backend import Collected, Dropped, looks_unreachable

PYSLURM_KINDS = frozenset({
    ActionKind.DRAIN_NODES, ActionKind.RESUME_NODES, ActionKind.REQUEUE_JOBS, ActionKind.REQUEUE_HOLD_JOBS,
    ActionKind.HOLD_JOBS, ActionKind.RELEASE_JOBS, ActionKind.CANCEL_JOBS,
})


def major_minor(version: str) -> tuple[int, int] | None:
    """"25.11.2" / "slurm-wlm 22.05.8" / "22.5" -> (25, 11) / (22, 5) / (22, 5)."""
    m = re.search(r"(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else None


def import_pyslurm() -> ModuleType | None:
    try:
        return importlib.import_module("pyslurm")
    except Exception:  # ImportError, or a build against a missing libslurm
        return None


def pyslurm_matches(module: ModuleType, scontrol_version: str) -> bool:
    mine = major_minor(str(getattr(module, "__version__", "")))
    return mine is not None and mine == major_minor(scontrol_version)


class PyslurmBackend:
    name = "pyslurm"

    def __init__(self, module: ModuleType) -> None:
        self.ps = module
        self.calls: list[str] = []
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="pyslurm")
        self._in_flight: set[concurrent.futures.Future[Any]] = set()

    def reset_calls(self) -> None:
        self.calls = []

    def capabilities(self) -> frozenset[ActionKind]:
        return PYSLURM_KINDS

    def _error(self, what: str, exc: Exception) -> SourceError:
        text = f"{type(exc).__name__}: {exc}" if not str(exc) else str(exc)
        if looks_unreachable(text):
            return SourceError(f"slurmctld unreachable: {what}: {text}")
        return SourceError(f"pyslurm {what} failed: {text}")

    def _check_idle(self) -> None:
        if self._in_flight:
            raise SourceError("previous pyslurm call still running (libslurm not answering?): skipped")

    async def _call(self, label: str, fn: Any, *args: Any) -> Any:
        self.calls.append(label)
        fut = self._pool.submit(fn, *args)
        self._in_flight.add(fut)
        fut.add_done_callback(self._in_flight.discard)
        return await asyncio.wrap_future(fut)

    async def collect(self) -> Collected:
        self._check_idle()
        try:
            nodes_obj, jobs_obj = await asyncio.gather(
                self._call("pyslurm.Nodes.load()", self.ps.Nodes.load),
                self._call("pyslurm.Jobs.load()", self.ps.Jobs.load),
            )
        except SourceError:
            raise
        except Exception as exc:
            raise self._error("load", exc) from exc
        # one unreadable object costs that record (with a warning), never the whole refresh
        warnings: list[str] = []
        bad_nodes, bad_jobs = Dropped("node"), Dropped("job")
        nodes: dict[str, SlurmNodeInfo] = {}
        for node in _values(nodes_obj):
            try:
                info = parse.node_from_pyslurm(node)
            except (parse.SlurmParseError, UnicodeError) as exc:
                bad_nodes(str(exc))
                continue
            nodes[str(node.name)] = info
        jobs_l: list[SlurmJob] = []
        for obj in _values(jobs_obj):
            try:
                job = parse.job_from_pyslurm(obj)
            except (parse.SlurmParseError, UnicodeError) as exc:
                bad_jobs(str(exc))
                continue
            if job.state in parse.LIVE_JOB_STATES:  # same as parse_jobs_json: finished jobs dropped
                jobs_l.append(job)
        bad_nodes.report(warnings)
        bad_jobs.report(warnings)
        return Collected(nodes=nodes, jobs=tuple(jobs_l), controller=ControllerHealth(reachable=True, detail="pyslurm"),
                         warnings=warnings)

    def describe(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str]) -> list[str]:
        reason = params.get("reason", "")
        out = []
        for t in targets:
            if kind is ActionKind.DRAIN_NODES:
                out.append(f"pyslurm.Node({t!r}).modify(pyslurm.Node(state='DRAIN', reason={reason!r}))")
            elif kind is ActionKind.RESUME_NODES:
                out.append(f"pyslurm.Node({t!r}).modify(pyslurm.Node(state='RESUME'))")
            elif kind is ActionKind.REQUEUE_JOBS:
                out.append(f"pyslurm.Job({t}).requeue(hold=False)")
            elif kind is ActionKind.REQUEUE_HOLD_JOBS:
                out.append(f"pyslurm.Job({t}).requeue(hold=True)")
            elif kind in (ActionKind.HOLD_JOBS, ActionKind.RELEASE_JOBS, ActionKind.CANCEL_JOBS):
                verb = {ActionKind.HOLD_JOBS: "hold", ActionKind.RELEASE_JOBS: "release"}.get(kind, "cancel")
                out.append(f"pyslurm.Job({t}).{verb}()")
            else:
                raise ValueError(f"pyslurm backend cannot {kind.value}")
        return out

    def _do(self, kind: ActionKind, target: str, params: dict[str, str]) -> None:
        """Blocking: runs in a worker thread."""
        ps = self.ps
        if kind is ActionKind.DRAIN_NODES:
            ps.Node(target).modify(ps.Node(state="DRAIN", reason=params.get("reason", "")))
        elif kind is ActionKind.RESUME_NODES:
            ps.Node(target).modify(ps.Node(state="RESUME"))
        else:
            job = ps.Job(int(target) if target.isdigit() else target)
            if kind is ActionKind.REQUEUE_JOBS:
                job.requeue(hold=False)
            elif kind is ActionKind.REQUEUE_HOLD_JOBS:
                job.requeue(hold=True)
            elif kind is ActionKind.HOLD_JOBS:
                job.hold()
            elif kind is ActionKind.RELEASE_JOBS:
                job.release()
            elif kind is ActionKind.CANCEL_JOBS:
                job.cancel()
            else:
                raise ValueError(f"pyslurm backend cannot {kind.value}")

    async def act(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str]) -> list[TargetResult]:
        results = []
        for target, label in zip(targets, self.describe(kind, targets, params), strict=True):
            try:
                self._check_idle()
                await self._call(label, self._do, kind, target, params)
            except Exception as exc:  # pyslurm.RPCError carries Slurm's own text
                results.append(TargetResult(target=target, ok=False, message=str(exc) or type(exc).__name__))
            else:
                results.append(TargetResult(target=target, ok=True, message="done"))
        if kind is ActionKind.CANCEL_JOBS:
            results = await self._verify_cancel(results)
        return results

    async def _verify_cancel(self, results: list[TargetResult]) -> list[TargetResult]:
        try:
            jobs = (await self.collect()).jobs
        except SourceError as exc:
            return [r if not r.ok else TargetResult(target=r.target, ok=False, message=f"cannot verify: {exc}")
                    for r in results]
        states = {k: j.state for j in jobs or () for k in (str(j.job_id), j.display_id)}
        return [
            r if not r.ok or states.get(r.target, "CANCELLED") in ("CANCELLED", "COMPLETING")
            else TargetResult(target=r.target, ok=False, message=f"still {states[r.target]} after cancel")
            for r in results
        ]

    async def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _values(collection: Any) -> list[Any]:
    """pyslurm collections are dict-like (name/id -> object) in 23.x+; accept lists too."""
    if hasattr(collection, "values"):
        return list(collection.values())
    return list(collection)
