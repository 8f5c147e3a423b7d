"""Health checks as actions: the plan (exact argv per node) and the backend that runs them over SSH.

A check is an :class:`~hpctui.model.action.ActionPlan` of kind ``check`` (param ``check=ID``) run by the
one executor like every action (preview, confirmation, read-only refusal, audit); :class:`CheckBackend`
runs each node's command over the SSH source's connections (at most ``max_parallel`` at once, each with
its timeout), reads the output (:mod:`hpctui.actions.checks.parse`), keeps one
:class:`~hpctui.model.checks.CheckResult` per node in the :class:`~hpctui.actions.checks.ledger.CheckLedger`
and answers one result per node whose message is the summary ("diag r2 passed", "NCCL 362 GB/s
(expected ≥ 350)"). ``nccl-pair`` pairs the marked nodes in order (an odd last one pairs with the first)
and runs once per pair on its first node; both nodes get the pair's result.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from hpctui.actions.checks.ledger import CheckLedger
from hpctui.actions.checks.parse import Verdict, parse_custom, parse_dcgm, parse_nccl, parse_nhc
from hpctui.actions.checks.settings import LOADING, HealthCheckSettings
from hpctui.actions.custom import show_arg
from hpctui.actions.fold import label_set, natural_key
from hpctui.base.identity import os_user
from hpctui.base.sanitize import clean_text
from hpctui.findings.correlate import workload_index
from hpctui.model.action import ActionKind, ActionPlan, CommandRun, CommandSpec, Progress, TargetResult
from hpctui.model.checks import CheckResult, CheckStatus
from hpctui.model.hostlist import HostlistError, expand, expand_each
from hpctui.model.output import NodeOutput

if TYPE_CHECKING:
    from hpctui.model import ClusterSnapshot
    from hpctui.sources.capabilities import CommandRunner

OUTPUT_LIMIT = 4 << 20  # a DCGM r3 JSON on 8 GPUs is ~100 KB; an mpirun log with NCCL_DEBUG=INFO more
_PAIR = "+"


def _ignore(_item: object) -> None:
    """No one listens."""


def _fill(argv: Sequence[str], values: Mapping[str, str]) -> tuple[str, ...]:
    out = []
    for element in argv:
        for key, value in values.items():
            element = element.replace("{" + key + "}", value)
        out.append(element)
    return tuple(out)


def pairs_of(nodes: Sequence[str]) -> list[tuple[str, str]]:
    """Consecutive pairs; an odd last node pairs with the first (every node is tested once at least)."""
    out = [(nodes[i], nodes[i + 1]) for i in range(0, len(nodes) - 1, 2)]
    if len(nodes) % 2 and len(nodes) > 1:
        out.append((nodes[-1], nodes[0]))
    return out


def _model(snapshot: ClusterSnapshot, node: str) -> str | None:
    gpus = snapshot.gpus.get(node, ())
    return gpus[0].model if gpus else None


def _encode_expected(expected: Mapping[str, float | None]) -> str:
    """``350:gpu[01-04];180:gpu05``: each node's expectation, compact in the plan's params (and audit)."""
    groups: dict[float, list[str]] = {}
    for node, value in expected.items():
        if value is not None:
            groups.setdefault(value, []).append(node)
    return ";".join(f"{v:g}:{label_set(ns)}" for v, ns in sorted(groups.items()))


def _decode_expected(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in filter(None, text.split(";")):
        value, _, nodes = part.partition(":")
        try:
            for n in expand(nodes):
                out[n] = float(value)
        except (HostlistError, ValueError):
            continue
    return out


class CheckBackend:
    """The backend of ``check`` plans: builds each node's argv, runs them over SSH, records the results."""

    name = "checks"

    def __init__(self, settings: Callable[[], HealthCheckSettings], ledger: Callable[[], CheckLedger],
                 runners: Sequence[CommandRunner] = (), clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.ledger = ledger
        self.runners = tuple(runners)
        self.clock = clock

    @property
    def action_kinds(self) -> frozenset[ActionKind]:
        return frozenset({ActionKind.HEALTH_CHECK})

    def runner_for(self, ssh_source: str | None) -> CommandRunner | None:
        return next((r for r in self.runners if ssh_source is None or r.name == ssh_source), None)

    # -- planning ---------------------------------------------------------------------------------
    def plan(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str],
             snapshot: ClusterSnapshot) -> ActionPlan:
        settings = self.settings()
        check = params.get("check", "").strip()
        warnings: list[str] = []
        notes: list[str] = []
        nodes, errors = expand_each(targets)
        nodes = sorted(dict.fromkeys(nodes), key=natural_key)
        if check not in settings.check_ids():
            errors.append(f"unknown check {clean_text(check)!r} (known: {', '.join(settings.check_ids())})")
        if self.runner_for(settings.ssh_source) is None:
            errors.append("health checks run over SSH: this cluster has no ssh source"
                          + (f" named {settings.ssh_source!r}" if settings.ssh_source else ""))
        unknown = [n for n in nodes if snapshot.nodes and n not in snapshot.nodes]
        if unknown:
            warnings.append(f"not known to any source: {label_set(unknown)}")
        runs: list[CommandRun] = []
        expected: dict[str, float | None] = {}
        timeout = settings.nhc_timeout_s
        if not errors:
            runs, timeout = self._runs(check, nodes, snapshot, settings, errors, expected)
        if check in LOADING:
            index = workload_index(snapshot)
            busy = [n for n in nodes if index.jobs_on(n) or index.pods_on(n)]
            if busy:
                warnings.append(f"jobs or pods are running on {label_set(busy)}: {check} loads every GPU and "
                                "competes with them (drain first for a fair result)")
        missing = [n for n in nodes if check.startswith("nccl") and expected.get(n) is None]
        if check.startswith("nccl") and missing and not errors:
            notes.append(f"no bandwidth expectation for the GPU model of {label_set(missing)}: "
                         "only wrong values and the exit status are judged")
        out_params = {"check": check}
        if any(v is not None for v in expected.values()):
            out_params["expected_gbs"] = _encode_expected(expected)
        spec = CommandSpec(runs=tuple(runs), remote=True, timeout_s=timeout, max_parallel=settings.max_parallel,
                           ssh_source=settings.ssh_source, output_limit=OUTPUT_LIMIT)
        return ActionPlan(kind=kind, source=self.name, targets=tuple(nodes), params=out_params,
                          commands=tuple(self._commands(runs)), warnings=tuple(warnings), errors=tuple(errors),
                          notes=tuple(notes), command=spec)

    def _runs(self, check: str, nodes: list[str], snapshot: ClusterSnapshot, settings: HealthCheckSettings,
              errors: list[str], expected: dict[str, float | None]) -> tuple[list[CommandRun], float]:
        """Each run's argv and the per-run timeout; ``expected`` gets each node's NCCL expectation."""
        def gpus(node: str) -> int | None:
            n = len(snapshot.gpus.get(node, ()))
            if n == 0:
                errors.append(f"{node}: no GPUs known (no probe reading yet): {check} needs the GPU count")
                return None
            return n

        runs: list[CommandRun] = []
        if check.startswith("dcgm-r"):
            level = check.removeprefix("dcgm-r")
            argv = (*settings.dcgmi, "diag", "-r", level, "-j")
            runs = [CommandRun(label=n, host=n, argv=argv) for n in nodes]
            return runs, settings.dcgm_timeout_s.get(check, 900.0)
        if check == "nhc":
            runs = [CommandRun(label=n, host=n, argv=tuple(settings.nhc)) for n in nodes]
            return runs, settings.nhc_timeout_s
        if check == "nccl":
            for n in nodes:
                count = gpus(n)
                expected[n] = settings.expected_gbs(check, _model(snapshot, n))
                if count is not None:
                    runs.append(CommandRun(label=n, host=n, argv=_fill(settings.nccl_command,
                                                                       {"gpus": str(count), "node": n})))
            return runs, settings.nccl_timeout_s
        if check == "nccl-pair":
            if len(nodes) < 2:
                errors.append("nccl-pair needs at least two nodes (mark them with space)")
                return [], settings.nccl_timeout_s
            for a, b in pairs_of(nodes):
                ga, gb = gpus(a), gpus(b)
                for n in (a, b):
                    expected[n] = settings.expected_gbs(check, _model(snapshot, n))
                if ga is None or gb is None:
                    continue
                if ga != gb:
                    errors.append(f"{a} has {ga} GPUs and {b} {gb}: a pair needs the same count")
                    continue
                values = {"node": a, "peer": b, "gpus": str(ga), "ranks": str(ga + gb)}
                runs.append(CommandRun(label=f"{a}{_PAIR}{b}", host=a, argv=_fill(settings.nccl_pair_command, values)))
            return runs, settings.nccl_timeout_s
        custom = settings.custom_check(check)
        assert custom is not None  # check_ids() was checked by the caller
        runs = [CommandRun(label=n, host=n, argv=_fill(custom.argv, {"node": n})) for n in nodes]
        return runs, custom.timeout_s

    @staticmethod
    def _commands(runs: Sequence[CommandRun]) -> list[str]:
        """The exact argv, grouped by node set: ``ssh gpu[01-04] (4): dcgmi diag -r 2 -j``."""
        groups: dict[str, list[str]] = {}
        for r in runs:
            display = " ".join(show_arg(a) for a in r.argv)
            groups.setdefault(display, []).append(r.host or r.label)
        return [f"ssh {label_set(hosts)} ({len(hosts)}): {display}" for display, hosts in groups.items()]

    # -- running ----------------------------------------------------------------------------------
    async def execute(self, plan: ActionPlan) -> tuple[TargetResult, ...]:
        return await self.execute_reporting(plan, _ignore)

    async def execute_reporting(self, plan: ActionPlan, progress: Progress) -> tuple[TargetResult, ...]:
        """Run every node's check (bounded, each with its timeout); ``progress`` hears each node's raw
        output and a line per verdict; results are recorded before this returns."""
        spec = plan.command
        settings = self.settings()
        runner = self.runner_for(spec.ssh_source if spec is not None else None)
        if spec is None or not spec.runs or runner is None:
            why = "no command to run" if runner is not None else "health checks run over SSH: no ssh source"
            return tuple(TargetResult(target=t, ok=False, message=why) for t in plan.targets)
        check = plan.params.get("check", "")
        expected = _decode_expected(plan.params.get("expected_gbs", ""))
        remote = runner.command_runner()
        gate = asyncio.Semaphore(spec.max_parallel)
        user = os_user()
        found: dict[str, CheckResult] = {}

        async def one(run: CommandRun) -> None:
            async with gate:
                out = await remote.run(run, spec.timeout_s, spec.output_limit)
            progress(out)
            for result in self._results(check, run, out, expected, settings, user):
                found[result.node] = result
                progress(f"{result.node}: {result.summary}")

        try:
            await remote.resolve([r.host for r in spec.runs if r.host])
            await asyncio.gather(*(one(run) for run in spec.runs))
        finally:
            await remote.close()
        problem = self.ledger().add(list(found.values())) if found else None
        suffix = f" ({problem})" if problem else ""
        out: list[TargetResult] = []
        for node in plan.targets:
            r = found.get(node)
            if r is None:
                out.append(TargetResult(target=node, ok=False, message="not run"))
            else:
                out.append(TargetResult(target=node, ok=r.passed, message=f"{r.status.value}: {r.summary}{suffix}"))
        return tuple(out)

    def _results(self, check: str, run: CommandRun, out: NodeOutput, expected: Mapping[str, float],
                 settings: HealthCheckSettings, user: str) -> list[CheckResult]:
        """The run's verdict as one result per node it covers (a pair: both)."""
        nodes = run.label.split(_PAIR) if check == "nccl-pair" else [run.label]
        want = min((expected[n] for n in nodes if n in expected), default=None)
        if out.error is not None:
            verdict = Verdict(status=CheckStatus.ERROR, summary=f"{check} did not run: {out.error}")
        else:
            verdict = self._read(check, out, want, settings)
        now = self.clock()
        return [CheckResult(node=n, check=check, status=verdict.status, summary=verdict.summary, time=now,
                            duration_s=out.duration_s, details=verdict.details, clears=settings.clears(check),
                            busbw_gbs=verdict.busbw_gbs, expected_gbs=want,
                            peer=next((p for p in nodes if p != n), None), rc=out.rc, user=user)
                for n in nodes]

    @staticmethod
    def _read(check: str, out: NodeOutput, expected: float | None, settings: HealthCheckSettings) -> Verdict:
        text = out.output or ""
        if check.startswith("dcgm-r"):
            return parse_dcgm(text, out.rc, int(check.removeprefix("dcgm-r")))
        if check.startswith("nccl"):
            return parse_nccl(text, out.rc, expected)
        if check == "nhc":
            return parse_nhc(text, out.rc)
        custom = settings.custom_check(check)
        if custom is None:
            return Verdict(status=CheckStatus.ERROR, summary=f"unknown check {check!r}")
        return parse_custom(custom.name, text, out.rc, pass_pattern=custom.pass_pattern,
                            fail_pattern=custom.fail_pattern)
