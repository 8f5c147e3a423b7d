"""pyslurm backend, written against the pyslurm 25.11 API (FACTS §7).

Proven on a real pyslurm 25.11.2 built against a real Slurm 25.11.7 (tests/testbed/slurm2511:
the live reads and actions, and a field-by-field comparison with the CLI and REST backends on
the same cluster). PyPI's pyslurm X.Y builds only against Slurm X.Y (its sdist refuses any
other: "Slurm version mismatch"), so ``backend = "auto"`` chooses it only when ``import
pyslurm`` works *and* its X.Y equals ``scontrol --version``'s; otherwise it says why (one
line, :func:`pyslurm_problem`) and uses the CLI. One refresh is ``Nodes.load()``,
``Jobs.load()``, ``Partitions.load()`` and ``slurmctld.diag()`` plus the mapping, all in
this backend's own single worker thread, so the event loop never waits on libslurm and a
hung libslurm holds one thread, not one more per poll: while a call is still running (the
poller gave up on it), the next refresh or action is refused instead of queued.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import importlib.util
import os
import re
import sys
from collections import Counter
from types import ModuleType
from typing import Any

from hpctui.base.sanitize import clean_text
from hpctui.model import ControllerHealth, SlurmJob, SlurmNodeInfo, SlurmPartition
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


INSTALL_HINT = "pip install 'hpctui[pyslurm]' on a host with Slurm 25.11 and its headers (slurm/slurm.h)"
_import_error: str | None = None  # why the last import_pyslurm() failed, one line
_init_conf: str | None = None  # the slurm.conf the loaded libslurm was initialised with (None: its default)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:300]


def import_pyslurm(slurm_conf: str | None = None) -> ModuleType | None:
    """The pyslurm module (on the first import, its libslurm initialised with ``slurm_conf``;
    None: libslurm's own default / ``$SLURM_CONF``); None when it cannot be imported
    (:func:`pyslurm_problem` says why). Call :func:`probe_pyslurm` first: the import itself
    can end or hang the process.

    pyslurm initialises libslurm at import from ``$SLURM_CONF``: for the first import that is
    set to ``slurm_conf`` for the duration of the import only. A later import with another
    ``slurm_conf`` does not touch the library: :func:`use_conf`, once the module is known to
    fit that Slurm, re-initialises it."""
    global _import_error, _init_conf
    first = "pyslurm" not in sys.modules
    saved = os.environ.get("SLURM_CONF")
    try:
        if first and slurm_conf:
            os.environ["SLURM_CONF"] = slurm_conf
        module = importlib.import_module("pyslurm")
    except Exception as exc:  # ImportError, or a build against a missing/other libslurm
        _import_error = _describe_import_error(exc)
        return None
    finally:
        if first and slurm_conf:
            if saved is None:
                os.environ.pop("SLURM_CONF", None)
            else:
                os.environ["SLURM_CONF"] = saved
    if first:
        _init_conf = slurm_conf or saved
    _import_error = None
    return module


def use_conf(module: ModuleType, slurm_conf: str | None) -> None:
    """libslurm initialised with ``slurm_conf`` (``slurm_fini`` + ``slurm_init`` when the loaded
    one was initialised with another); call only for a module that fits that Slurm."""
    global _init_conf
    if slurm_conf and slurm_conf != _init_conf:
        module.slurm_fini()
        module.slurm_init(slurm_conf)
        _init_conf = slurm_conf


PROBE_TIMEOUT_S = 30.0
_probe_failed: dict[str | None, str] = {}  # slurm.conf -> why importing pyslurm with it is not safe


async def probe_pyslurm(slurm_conf: str | None) -> str | None:
    """Whether ``import pyslurm`` is safe in this process: None, or one line saying why not.

    libslurm ends the *process* (``fatal()`` → ``exit(1)``) when it finds no usable slurm.conf
    at pyslurm's import, which no ``except`` catches; so before the first import in this
    process, a child interpreter (same ``sys.path``) imports it with the same ``SLURM_CONF``.
    Not installed at all: said without starting a child."""
    global _import_error
    if "pyslurm" in sys.modules:
        return None
    if slurm_conf in _probe_failed:  # checked once per slurm.conf
        _import_error = _probe_failed[slurm_conf]
        return _import_error
    if importlib.util.find_spec("pyslurm") is None:
        _import_error = f"pyslurm is not installed ({INSTALL_HINT})"
        return _import_error
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    if slurm_conf:
        env["SLURM_CONF"] = slurm_conf
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "import pyslurm", env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    except OSError as exc:
        return f"pyslurm import check could not start: {_one_line(exc)}"
    try:
        async with asyncio.timeout(PROBE_TIMEOUT_S):
            _, err = await proc.communicate()
    except TimeoutError:
        proc.kill()
        await proc.wait()
        _import_error = f"importing pyslurm hung for {PROBE_TIMEOUT_S:g} s (libslurm not answering?): pyslurm not used"
        return _import_error
    if proc.returncode == 0:
        return None
    lines = [ln.strip() for ln in err.decode(errors="replace").splitlines() if ln.strip()]
    last = clean_text(lines[-1] if lines else f"exit status {proc.returncode}")[:300]
    if "libslurm" in last or "cannot open shared object" in last:
        _import_error = f"pyslurm cannot load libslurm ({last}): rebuild it against this host's Slurm ({INSTALL_HINT})"
    else:
        _import_error = f"pyslurm cannot initialise libslurm here ({last}): pyslurm not used"
    _probe_failed[slurm_conf] = _import_error
    return _import_error


def _describe_import_error(exc: BaseException) -> str:
    """An import failure → one line that says what is missing and what to do."""
    text = _one_line(exc)
    if isinstance(exc, ModuleNotFoundError) and exc.name == "pyslurm":
        return f"pyslurm is not installed ({INSTALL_HINT})"
    if "libslurm" in text:
        return f"pyslurm cannot load libslurm ({text}): rebuild it against this host's Slurm ({INSTALL_HINT})"
    return f"pyslurm cannot be imported ({text})"


def pyslurm_problem(module: ModuleType | None, scontrol_version: str | None) -> str | None:
    """None when ``module`` fits the running Slurm (same X.Y as ``scontrol --version``), else
    one line saying why not: not installed, libslurm missing, or built for another release."""
    if module is None:
        return _import_error or f"pyslurm is not installed ({INSTALL_HINT})"
    if not scontrol_version:
        return "the Slurm version is unknown (scontrol --version failed): pyslurm not used"
    if not pyslurm_matches(module, scontrol_version):
        mine = major_minor(str(getattr(module, "__version__", "")))
        built = f"Slurm {mine[0]}.{mine[1]:02d}" if mine else "another Slurm"
        return (f"pyslurm {getattr(module, '__version__', '?')} is built for {built}, "
                f"this host runs {scontrol_version}: pyslurm not used")
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

    async def _call(self, label: str | None, fn: Any, *args: Any) -> Any:
        if label is not None:
            self.calls.append(label)
        fut = self._pool.submit(fn, *args)
        self._in_flight.add(fut)
        fut.add_done_callback(self._in_flight.discard)
        return await asyncio.wrap_future(fut)

    async def collect(self) -> Collected:
        self._check_idle()
        try:
            return await self._call(None, self._read)
        except SourceError:
            raise
        except Exception as exc:
            raise self._error("load", exc) from exc

    def _load(self, label: str, fn: Any) -> Any:
        """Blocking: one library call, recorded under ``label``."""
        self.calls.append(label)
        return fn()

    def _read(self) -> Collected:
        """Blocking, in the worker thread: the loads and the mapping of one refresh.

        Nodes and jobs must both load (else the refresh fails); partitions and the controller
        statistics are optional, a failure of either is a warning. One unreadable object costs
        that record (with a warning), never the whole refresh."""
        ps = self.ps
        nodes_obj = self._load("pyslurm.Nodes.load()", ps.Nodes.load)
        jobs_obj = self._load("pyslurm.Jobs.load()", ps.Jobs.load)
        warnings: list[str] = []
        jobs, in_use = self._map_jobs(jobs_obj, warnings)
        nodes = self._map_nodes(nodes_obj, in_use, warnings)
        partitions = self._read_partitions(warnings)
        return Collected(nodes=nodes, jobs=jobs, controller=self._read_controller(warnings),
                         warnings=warnings, partitions=partitions)

    def _map_jobs(self, jobs_obj: Any, warnings: list[str]) -> tuple[tuple[SlurmJob, ...], Counter[str]]:
        """Live jobs (finished ones dropped, as parse_jobs_json does) and the GPUs they hold per node."""
        bad = Dropped("job")
        jobs: list[SlurmJob] = []
        in_use: Counter[str] = Counter()
        for obj in _values(jobs_obj):
            try:
                layout = parse.job_gpu_layout(obj) if getattr(obj, "allocated_nodes", None) else {}
                job = parse.job_from_pyslurm(obj, layout)
            except (parse.SlurmParseError, UnicodeError) as exc:
                bad(str(exc))
                continue
            if job.state in parse.LIVE_JOB_STATES:
                jobs.append(job)
                for node, (count, _) in layout.items():
                    in_use[node] += count
        bad.report(warnings)
        return tuple(jobs), in_use

    def _map_nodes(self, nodes_obj: Any, in_use: Counter[str], warnings: list[str]) -> dict[str, SlurmNodeInfo]:
        bad = Dropped("node")
        nodes: dict[str, SlurmNodeInfo] = {}
        for node in _values(nodes_obj):
            try:
                info = parse.node_from_pyslurm(node, in_use.__getitem__)
            except (parse.SlurmParseError, UnicodeError) as exc:
                bad(str(exc))
                continue
            nodes[str(node.name)] = info
        bad.report(warnings)
        return nodes

    def _read_partitions(self, warnings: list[str]) -> tuple[SlurmPartition, ...] | None:
        try:
            objs = self._load("pyslurm.Partitions.load()", self.ps.Partitions.load)
        except Exception as exc:
            warnings.append(f"partitions unavailable: {_one_line(exc)}")
            return None
        bad = Dropped("partition")
        out: list[SlurmPartition] = []
        for obj in _values(objs):
            try:
                out.append(parse.partition_from_pyslurm(obj))
            except (parse.SlurmParseError, UnicodeError) as exc:
                bad(str(exc))
        bad.report(warnings)
        return tuple(out)

    def _read_controller(self, warnings: list[str]) -> ControllerHealth:
        ctld = getattr(self.ps, "slurmctld", None)
        diag = getattr(ctld, "diag", None)
        if diag is None:
            return ControllerHealth(reachable=True, detail="pyslurm")
        try:
            return parse.health_from_pyslurm(self._load("pyslurm.slurmctld.diag()", diag))
        except Exception as exc:
            warnings.append(f"controller health unavailable: {_one_line(exc)}")
            return ControllerHealth(reachable=True, detail=f"pyslurm diag failed: {_one_line(exc)}")

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
        out = []
        for r in results:
            state = states.get(r.target)
            if not r.ok:
                out.append(r)
            elif state in (None, "CANCELLED", "COMPLETING"):  # as the CLI's verify_cancel says it
                out.append(TargetResult(target=r.target, ok=True, message=f"cancelled (verified: {state or 'gone'})"))
            else:
                out.append(TargetResult(target=r.target, ok=False, message=f"still {state} after cancel"))
        return out

    async def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _values(collection: Any) -> list[Any]:
    """pyslurm collections are dict-like (name/id -> object) in 23.x+; accept lists too."""
    if hasattr(collection, "values"):
        return list(collection.values())
    return list(collection)
