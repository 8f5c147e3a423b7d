"""SlurmSource: one Source + ActionBackend over three ways to reach Slurm (CLI, REST, pyslurm).

Auto-detection order: pyslurm if importable and its version matches ``scontrol --version``;
else slurmrestd if ``rest_url`` is set and answers; else the CLI. Actions a backend has no
endpoint for go to the CLI, and the plan's notes say so.
"""

from __future__ import annotations

import asyncio
import time

from hpctui.model import ClusterSnapshot, SourceResult
from hpctui.model.action import ActionKind, ActionPlan, TargetResult
from hpctui.sources.base import SourceError
from hpctui.sources.slurm.accounting import AccountingInfo, query_accounting
from hpctui.sources.slurm.actions import SLURM_ADMIN_KINDS, SLURM_KINDS, admin_params, check
from hpctui.sources.slurm.backend import SlurmBackend
from hpctui.sources.slurm.cli import CliBackend
from hpctui.sources.slurm.jwt import JwtProvider
from hpctui.sources.slurm.pyslurm_backend import PyslurmBackend, import_pyslurm, pyslurm_matches
from hpctui.sources.slurm.rest import RestBackend
from hpctui.sources.slurm.runner import CommandError, Runner
from hpctui.sources.slurm.settings import SlurmSettings

# One refresh may chain several calls, each bounded by settings.timeout_s: a token, the
# /openapi discovery, the gather of nodes/jobs/health, a --json -> text fallback.
REFRESH_CALLS_BUDGET = 3


class SlurmSource:
    kind = "slurm"

    def __init__(self, settings: SlurmSettings) -> None:
        self.settings = settings
        self.name = settings.name
        self.interval_s = settings.interval_s
        # the budget of one whole refresh; the poller reads it for its outer guard
        self.timeout_s = REFRESH_CALLS_BUDGET * settings.timeout_s
        self.runner = Runner(timeout_s=settings.timeout_s, slurm_conf=settings.slurm_conf, bin_dir=settings.bin_dir)
        self.cli = CliBackend(self.runner)
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
            module = import_pyslurm()
            if module is None:
                raise SourceError("backend = 'pyslurm' but pyslurm cannot be imported")
            self.pyslurm = PyslurmBackend(module)
            return self.pyslurm
        return await self._auto()

    async def _auto(self) -> SlurmBackend:
        module = import_pyslurm()
        if module is not None:
            version = await self._scontrol_version()
            if version and pyslurm_matches(module, version):
                self.pyslurm = PyslurmBackend(module)
                self.detect_notes.append(f"pyslurm {getattr(module, '__version__', '?')} matches {version}")
                return self.pyslurm
            self.detect_notes.append(f"pyslurm {getattr(module, '__version__', '?')} does not match {version or 'unknown Slurm'}")
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
                got = await backend.collect()
        except TimeoutError:
            # our own limit, just inside the poller's: say what we were waiting for
            calls = [c for b in self._backends() for c in b.calls]
            last = f" (last call: {calls[-1]})" if calls else ""
            raise SourceError(f"slurmctld unreachable: no complete answer within {self.timeout_s:g}s{last}") from None
        finally:
            self.calls = [c for b in self._backends() for c in b.calls]
        self.warnings = got.warnings
        return SourceResult(source=self.name, time=started, slurm_nodes=got.nodes, slurm_jobs=got.jobs,
                            controller=got.controller, warnings=tuple(dict.fromkeys(got.warnings)),
                            partitions=got.partitions)

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
