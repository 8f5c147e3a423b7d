"""Small helpers shared by the live Slurm tests (sources per backend, read-back polling)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from slurmlab import SlurmLab

from hpctui.core.store import Store
from hpctui.model import ClusterSnapshot, SourceResult
from hpctui.model.action import ActionKind, ActionPlan, TargetResult
from hpctui.sources.slurm import SlurmSettings
from hpctui.sources.slurm.source import SlurmSource

T = TypeVar("T")
BACKENDS = ("cli", "rest-unix", "rest-jwt", "pyslurm")  # pyslurm: on the 25.11 bed only (conftest.runs_here)
PYSLURM_LAB = "25.11"


def backends_of(lab: SlurmLab) -> tuple[str, ...]:
    """The backends that can read ``lab`` (pyslurm only where a real one is built for it)."""
    return tuple(b for b in BACKENDS if b != "pyslurm" or lab.version == PYSLURM_LAB)


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def settings(lab: SlurmLab, backend: str, **kw: Any) -> SlurmSettings:
    base: dict[str, Any] = {"slurm_conf": lab.slurm_conf, "timeout_s": 8.0}
    bin_dir = getattr(lab, "bin_dir", None)  # the 24.11 bed's tools are wrappers into its chroot
    if bin_dir is not None:
        base["bin_dir"] = str(bin_dir)
    if backend == "cli":
        base["backend"] = "cli"
    elif backend == "rest-unix":
        base.update(backend="rest", rest_url=lab.rest_url_unix)
    elif backend == "rest-jwt":
        base.update(backend="rest", rest_url=lab.rest_url_tcp, jwt_from_scontrol=True, jwt_user="root")
    elif backend == "pyslurm":
        base["backend"] = "pyslurm"
    else:
        raise ValueError(backend)
    base.update(kw)
    return SlurmSettings(**base)


def source(lab: SlurmLab, backend: str, **kw: Any) -> SlurmSource:
    return SlurmSource(settings(lab, backend, **kw))


async def snapshot(src: SlurmSource) -> tuple[SourceResult, ClusterSnapshot]:
    result = await src.collect()
    store = Store("lab")
    store.apply(result)
    return result, store.snapshot()


async def act(src: SlurmSource, kind: ActionKind, targets: tuple[str, ...],
              params: dict[str, str] | None = None) -> tuple[ActionPlan, tuple[TargetResult, ...]]:
    _, snap = await snapshot(src)
    plan = src.plan(kind, targets, params or {}, snap)
    assert plan.runnable, (plan.errors, plan.rejected_targets)
    return plan, await src.execute(plan)


async def poll(src: SlurmSource, pred: Callable[[SourceResult], bool], timeout: float = 20) -> SourceResult:
    """Re-read through the source until ``pred`` holds (Slurm acts asynchronously)."""
    deadline = time.monotonic() + timeout
    last = await src.collect()

    def holds(result: SourceResult) -> bool:
        try:
            return pred(result)
        except AttributeError:  # the job is missing from this read (e.g. mid-requeue): not yet
            return False

    while not holds(last):
        if time.monotonic() > deadline:
            raise AssertionError("condition never held; last read: "
                                 + repr({n: i.display_state for n, i in (last.slurm_nodes or {}).items()})
                                 + repr([(j.job_id, j.state, j.reason) for j in last.slurm_jobs or ()]))
        await asyncio.sleep(0.25)
        last = await src.collect()
    return last


def job(result: SourceResult, job_id: str) -> Any:
    for j in result.slurm_jobs or ():
        if str(j.job_id) == job_id or j.display_id == job_id:
            return j
    return None


def nodes(result: SourceResult) -> dict[str, Any]:
    return dict(result.slurm_nodes or {})


def hpctui_act(lab: SlurmLab, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``hpctui act ARGS`` as the installed command runs it, against the bed, with a home of its own."""
    env = {**lab.env, "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_STATE_HOME": str(tmp_path / "state")}
    return subprocess.run([sys.executable, "-m", "hpctui", "act", *args], capture_output=True, text=True,
                          timeout=180, env=env)
