"""SlurmSource: one Source + ActionBackend over three ways to reach Slurm (CLI, REST, pyslurm).

Auto-detection order: pyslurm if importable and its version matches ``scontrol --version``
(else the notes say why not, in one line: not installed, libslurm missing, another release);
else slurmrestd if ``rest_url`` is set and answers; else the CLI. Actions a backend has no
endpoint for go to the CLI, and the plan's notes say so.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

from hpctui.model import ClusterSnapshot, SourceResult
from hpctui.model.action import ActionKind, ActionPlan, TargetResult
from hpctui.model.logs import JobOutputPaths
from hpctui.model.nodehistory import AcctQuery, AcctResult
from hpctui.model.scheduler import JobOutlook
from hpctui.sources.base import SourceError
from hpctui.sources.slurm.accounting import AccountingInfo, query_accounting
from hpctui.sources.slurm.actions import SLURM_ADMIN_KINDS, SLURM_JOB_KINDS, SLURM_KINDS, admin_params, check
from hpctui.sources.slurm.backend import SlurmBackend
from hpctui.sources.slurm.cli import CliBackend
from hpctui.sources.slurm.jwt import JwtProvider
from hpctui.sources.slurm.outlook import query_outlook
from hpctui.sources.slurm.pyslurm_backend import (
    PyslurmBackend,
    import_pyslurm,
    probe_pyslurm,
    pyslurm_problem,
    use_conf,
)
from hpctui.sources.slurm.rest import RestBackend
from hpctui.sources.slurm.runner import CommandError, Runner
from hpctui.sources.slurm.settings import SlurmSettings

# One refresh may chain several calls, each bounded by settings.timeout_s: a token, the
# /openapi discovery, the gather of nodes/jobs/health, a --json -> text fallback.
REFRESH_CALLS_BUDGET = 3

_JOB_ID = re.compile(r"\d+(?:_\d+)?")  # 1234 or an array task 1234_7


class SlurmSource:
    kind = "slurm"

    def __init__(self, settings: SlurmSettings) -> None:
        self.settings = settings
        self.name = settings.name
        self.interval_s = settings.interval_s
        # the budget of one whole refresh; the poller reads it for its outer guard
        self.timeout_s = REFRESH_CALLS_BUDGET * settings.timeout_s
        self.runner = Runner(timeout_s=settings.timeout_s, slurm_conf=settings.slurm_conf, bin_dir=settings.bin_dir)
        self.cli = CliBackend(self.runner, settings.queue_read, settings.hybrid_min_jobs)
        self.rest: RestBackend | None = None
        if settings.rest_url:
            jwt = JwtProvider(token=settings.jwt, from_scontrol=settings.jwt_from_scontrol,
                              lifespan_s=settings.jwt_lifespan_s, runner=self.runner)
            self.rest = RestBackend(settings, jwt)
        self.pyslurm: PyslurmBackend | None = None
        self.backend: SlurmBackend | None = None  # resolved on the first collect
        self.calls: list[str] = []  # every CLI call / HTTP request / library call of the last refresh
        self.warnings: list[str] = []  # non-fatal problems of the last refresh (fallbacks used)
        self.detect_notes: list[str] = []  # why this backend was chosen
        # on-demand accounting queries get their own runner: their calls never count as a refresh's
        self.acct_runner = Runner(timeout_s=settings.timeout_s, slurm_conf=settings.slurm_conf,
                                  bin_dir=settings.bin_dir)
        self._reservations_at: float | None = None  # when reservations were last read (None: read next refresh)

    def job_shell_argv(self, job_id: str, shell: str) -> tuple[str, ...]:
        """JobShell: ``srun --jobid=N --overlap --pty SHELL`` here, with this source's
        ``slurm_conf``/``bin_dir`` (hpctui.sources.slurm.shell); ValueError for a bad job id."""
        from hpctui.sources.slurm.shell import srun_argv

        return srun_argv(self.settings, job_id, shell)

    # -- backend selection ------------------------------------------------------
    async def resolve(self) -> SlurmBackend:
        if self.backend is not None:
            return self.backend
        self.backend = await self._choose()
        return self.backend

    async def _choose(self) -> SlurmBackend:
        want = self.settings.backend
        if want == "cli":
            return self._cli()
        if want == "rest":
            assert self.rest is not None
            await self.rest.discover()
            return self.rest
        if want == "pyslurm":
            problem = await probe_pyslurm(self.settings.slurm_conf)
            module = import_pyslurm(self.settings.slurm_conf) if problem is None else None
            if module is None:
                raise SourceError(f"backend = 'pyslurm': {pyslurm_problem(None, None)}")
            use_conf(module, self.settings.slurm_conf)
            self.pyslurm = PyslurmBackend(module)
            return self.pyslurm
        return await self._auto()

    async def _auto(self) -> SlurmBackend:
        safe = await probe_pyslurm(self.settings.slurm_conf) is None
        module = import_pyslurm(self.settings.slurm_conf) if safe else None
        version = await self._scontrol_version() if module is not None else None
        problem = pyslurm_problem(module, version)
        if module is not None and problem is None:
            use_conf(module, self.settings.slurm_conf)
            self.pyslurm = PyslurmBackend(module)
            self.detect_notes.append(f"pyslurm {getattr(module, '__version__', '?')} matches {version}")
            return self.pyslurm
        if module is not None or "not installed" not in (problem or ""):
            self.detect_notes.append(problem or "pyslurm not used")
        if self.rest is not None:
            try:
                version = await self.rest.discover()
            except SourceError as exc:
                self.detect_notes.append(f"slurmrestd not usable ({exc}): using the CLI")
            else:
                self.detect_notes.append(f"slurmrestd {version} at {self.rest.where}")
                return self.rest
        self.detect_notes.append("using the Slurm CLI")
        return self._cli()

    async def _scontrol_version(self) -> str | None:
        try:
            res = await self.runner.run(["scontrol", "--version"])
        except CommandError:
            return None
        return res.stdout.decode(errors="replace").strip() if res.ok else None

    # -- Source -----------------------------------------------------------------
    async def collect(self) -> SourceResult:
        """One refresh: one nodes call, one jobs call, one health call (plus partitions if needed)."""
        for b in self._backends():
            b.reset_calls()
        started = time.time()
        try:
            async with asyncio.timeout(self.timeout_s):
                backend = await self.resolve()
                resv_warnings: list[str] = []
                reader = self._reservation_reader(backend) if self._reservations_due(started) else None
                if reader is not None:
                    got, reservations = await _both(backend.collect(), reader.read_reservations(resv_warnings))
                    if reservations is not None:
                        self._reservations_at = started
                else:
                    got, reservations = await backend.collect(), None
        except TimeoutError:
            # our own limit, just inside the poller's: say what we were waiting for
            calls = [c for b in self._backends() for c in b.calls]
            last = f" (last call: {calls[-1]})" if calls else ""
            raise SourceError(f"slurmctld unreachable: no complete answer within {self.timeout_s:g}s{last}") from None
        finally:
            self.calls = [c for b in self._backends() for c in b.calls]
        self.warnings = got.warnings + resv_warnings
        return SourceResult(source=self.name, time=started, slurm_nodes=got.nodes, slurm_jobs=got.jobs,
                            controller=got.controller, warnings=tuple(dict.fromkeys(self.warnings)),
                            partitions=got.partitions, reservations=reservations, fabric=got.fabric)

    def _reservations_due(self, now: float) -> bool:
        """Reservations change rarely: read them every ``reservations_interval_s`` (and right after an
        action on them), not every refresh."""
        last = self._reservations_at
        return last is None or now - last >= self.settings.reservations_interval_s

    def _reservation_reader(self, backend: SlurmBackend) -> CliBackend | RestBackend | None:
        """slurmrestd reads them itself; pyslurm's reservations are not mapped: scontrol reads them.
        None: no backend here reads reservations (a stand-in backend)."""
        if isinstance(backend, RestBackend):
            return backend
        cli: object = self.cli
        return cli if isinstance(cli, CliBackend) else None

    # -- one job on demand: priority factors and expected start ---------------------
    async def job_outlook(self, job_id: str) -> JobOutlook:
        """sprio and squeue --start for one job, with the CLI (as accounting); ValueError for a bad id. After a
        hybrid queue read also the job itself, whose pending record lacked the JSON-only fields."""
        return await query_outlook(self.acct_runner, job_id, with_job=self.cli.last_read_hybrid)

    def _backends(self) -> list[SlurmBackend]:
        out: list[SlurmBackend] = [self._cli()]
        if self.rest is not None:
            out.append(self.rest)
        if self.pyslurm is not None:
            out.append(self.pyslurm)
        return out

    async def close(self) -> None:
        for b in self._backends():
            await b.close()

    # -- accounting (on demand) -----------------------------------------------------
    async def accounting(self, user: str | None = None, account: str | None = None) -> AccountingInfo:
        """Fair-share rows, QoS limits and associations for ``user`` and/or ``account``.

        Read with sshare/sacctmgr whatever the refresh backend is (the notes say so when it is
        not the CLI). Never raises for Slurm problems: ``available=False`` + ``detail`` instead.
        Raises ``ValueError`` for a user/account name that is not a plausible Slurm name.
        """
        notes: list[str] = []
        if self.backend is not None and self.backend is not self.cli:
            notes.append(f"read with sshare/sacctmgr (CLI); the {self.backend.name} backend is not used for accounting")
        return await query_accounting(self.acct_runner, user, account, notes=notes)

    # -- what slurmdbd remembers (on demand; hpctui.sources.slurm.history) --------------
    async def node_events(self, nodes: str | None, start: float, end: float, limit: int = 5000) -> AcctResult:
        """Drain/down events from ``sacctmgr show event`` (CLI, whatever the refresh backend)."""
        from hpctui.sources.slurm.history import query_node_events

        return await query_node_events(self.acct_runner, nodes, start, end, limit)

    async def acct_jobs(self, query: AcctQuery) -> AcctResult:
        """Jobs from ``sacct -P -X`` for the query's window and filters."""
        from hpctui.sources.slurm.history import query_jobs

        return await query_jobs(self.acct_runner, query)

    async def gpu_usage(self, start: float, end: float, account: str | None = None,
                        user: str | None = None) -> AcctResult:
        """GPU-hours per account/user from ``sreport -T gres/gpu``."""
        from hpctui.sources.slurm.history import query_gpu_usage

        return await query_gpu_usage(self.acct_runner, start, end, account, user)

    # -- a job's output files (on demand) ---------------------------------------------
    async def job_output_paths(self, job_id: str) -> JobOutputPaths | None:
        """JobOutputResolver: ``scontrol -o show job ID`` → the job's StdOut/StdErr with the filename
        patterns filled in and its batch host; None when Slurm does not know the job. Raises
        SourceError when scontrol fails for another reason (its own words)."""
        from hpctui.sources.slurm.outpath import paths_from_scontrol

        if not _JOB_ID.fullmatch(job_id):
            raise ValueError(f"not a Slurm job id: {job_id!r}")
        if self.rest is not None and self.backend is self.rest:
            return await self._job_output_paths_rest(job_id)
        try:
            res = await self.acct_runner.run(["scontrol", "-o", "show", "job", job_id])
        except CommandError as exc:
            raise SourceError(f"scontrol show job {job_id}: {exc}") from None
        if not res.ok:
            if "Invalid job id" in res.message:
                return None
            raise SourceError(f"scontrol show job {job_id}: {res.message}")
        return paths_from_scontrol(res.stdout.decode(errors="replace"))

    async def _job_output_paths_rest(self, job_id: str) -> JobOutputPaths | None:
        """The REST route: ``GET job/{id}`` (raw patterns, filled in here); "Invalid job id" is None."""
        import msgspec

        from hpctui.sources.slurm.outpath import paths_from_job_json
        from hpctui.sources.slurm.parse import parse_rest_errors

        assert self.rest is not None
        version = await self.rest.discover()
        path = f"/slurm/{version}/job/{job_id}"
        status, body = await self.rest.request("GET", path)
        if status != 200:
            if any("invalid job id" in m.lower() for m in parse_rest_errors(body[:4096])):
                return None
            raise SourceError(f"slurmrestd HTTP {status} on {path}")
        try:
            return paths_from_job_json(msgspec.json.decode(body))
        except msgspec.DecodeError as exc:
            raise SourceError(f"cannot read {path}: {exc}") from None

    # -- ActionBackend ----------------------------------------------------------
    @property
    def action_kinds(self) -> frozenset[ActionKind]:
        return SLURM_KINDS

    def backend_for(self, kind: ActionKind) -> tuple[SlurmBackend, str | None]:
        """The backend that runs ``kind``, and a note when that is a CLI fallback."""
        primary = self.backend
        if primary is None or primary is self.cli:
            return self._cli(), None
        if kind in primary.capabilities():
            return primary, None
        label = f"slurmrestd {self.rest.version}" if primary is self.rest and self.rest else primary.name
        return self._cli(), f"{label} cannot {kind.value}: using scontrol/scancel (CLI) instead"

    def plan(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str],
             snapshot: ClusterSnapshot) -> ActionPlan:
        if kind in SLURM_ADMIN_KINDS:
            params = admin_params(kind, targets, params)
        checked = check(kind, targets, params, snapshot)
        notes: list[str] = []
        commands: list[str] = []
        clean = tuple(checked.targets)
        if kind in SLURM_KINDS:
            backend, note = self.backend_for(kind)
            if (backend is self.rest and kind in (ActionKind.HOLD_JOBS, ActionKind.RELEASE_JOBS)
                    and any("[" in t for t in clean)):
                # 22.05's slurmrestd applies a hold to ID_[a-b] but answers with an error
                # ("job array update ... failed"): scontrol says what really happened
                backend = self._cli()
                note = f"slurmrestd misreports {kind.value} of array ranges: using scontrol (CLI) instead"
            if (backend is self.pyslurm and kind in SLURM_JOB_KINDS
                    and not all(t.isascii() and t.isdigit() for t in clean)):
                # pyslurm.Job(id) takes a plain job id: array tasks and ranges go to scontrol
                backend = self._cli()
                note = f"pyslurm acts on plain job ids only: {kind.value} of array tasks runs with scontrol (CLI)"
            if note:
                notes.append(note)
            if self.backend is None:
                notes.append("backend not detected yet (no refresh so far): planned for the CLI")
            if clean:
                commands = backend.describe(kind, clean, params)
        return ActionPlan(
            kind=kind, source=self.name, targets=clean, params=dict(params), commands=tuple(commands),
            affected=tuple(checked.affected), warnings=tuple(checked.warnings), errors=tuple(checked.errors),
            rejected_targets=tuple(checked.rejected), notes=tuple(notes),
        )

    async def execute(self, plan: ActionPlan) -> tuple[TargetResult, ...]:
        if not plan.runnable:
            return tuple(TargetResult(target=t, ok=False, message="plan not runnable") for t in plan.targets)
        backend = self._backend_of_plan(plan)
        results = await backend.act(plan.kind, plan.targets, plan.params)
        if plan.kind in (ActionKind.RESERVE_MAINT, ActionKind.DELETE_RESERVATION):
            self._reservations_at = None  # the next refresh shows the change
        return tuple(results)

    def _backend_of_plan(self, plan: ActionPlan) -> SlurmBackend:
        """Run exactly what the preview showed: the commands say which backend planned them."""
        first = plan.commands[0] if plan.commands else ""
        if first.startswith("pyslurm.") and self.pyslurm is not None:
            return self.pyslurm
        if first.split(" ", 1)[0] in ("GET", "POST", "DELETE") and self.rest is not None:
            return self.rest
        return self._cli()

    def _cli(self) -> SlurmBackend:
        return self.cli


A = TypeVar("A")
B = TypeVar("B")


async def _both(first: Coroutine[Any, Any, A], second: Coroutine[Any, Any, B]) -> tuple[A, B]:
    """Both answers, concurrently; when one fails (or the refresh is cancelled) the other is cancelled and
    awaited here, never left running after the refresh (``asyncio.gather`` leaves it: an orphan scontrol)."""
    other = asyncio.ensure_future(second)
    try:
        a = await first
    except BaseException:
        other.cancel()
        await asyncio.wait({other}, timeout=5.0)
        raise
    return a, await other
