"""CLI backend: ``sinfo --json`` + ``squeue --json`` + ``sdiag`` per refresh, ``scontrol`` to act.

One call per document for the whole cluster, never per node. ``--json`` support is probed
once (22.05 has it for sinfo/squeue; older builds answer "unrecognized option"); when it is
missing, or a document does not parse, the text forms (``scontrol -o show nodes``,
``squeue -h -o SQUEUE_FORMAT``) are used instead.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Callable
from typing import TypeVar

from hpctui.actions.base import ActionKind, TargetResult
from hpctui.model import ControllerHealth, SlurmJob, SlurmNodeInfo
from hpctui.model.hostlist import collect as collect_hostlist
from hpctui.sources.base import SourceError
from hpctui.sources.slurm import parse
from hpctui.sources.slurm.actions import SLURM_JOB_KINDS, SLURM_KINDS, SLURM_NODE_KINDS
from hpctui.sources.slurm.backend import Collected, looks_unreachable
from hpctui.sources.slurm.runner import CommandError, CommandTimeout, Runner, RunResult

T = TypeVar("T")

_JOB_VERB = {
    ActionKind.REQUEUE_JOBS: "requeue", ActionKind.REQUEUE_HOLD_JOBS: "requeuehold",
    ActionKind.HOLD_JOBS: "hold", ActionKind.RELEASE_JOBS: "release",
}
# What the job must look like after the action, read back with squeue (scancel's rc lies).
_GONE_OR = {ActionKind.CANCEL_JOBS: ("CANCELLED", "COMPLETING")}


def unreachable_error(what: str, exc_or_text: object) -> SourceError:
    return SourceError(f"slurmctld unreachable: {what}: {exc_or_text}")


class CliBackend:
    """Talks to Slurm through its command-line tools (needs them and a slurm.conf)."""

    name = "cli"

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.json_ok: dict[str, bool] = {}  # "sinfo"/"squeue" -> --json works (probed once)

    @property
    def calls(self) -> list[str]:
        return self.runner.calls

    def reset_calls(self) -> None:
        self.runner.reset_calls()

    def capabilities(self) -> frozenset[ActionKind]:
        return SLURM_KINDS

    # -- reading --------------------------------------------------------------
    async def _run(self, argv: list[str]) -> RunResult:
        try:
            return await self.runner.run(argv)
        except CommandTimeout as exc:
            raise SourceError(f"slurmctld unreachable: {exc}") from exc
        except CommandError as exc:
            raise SourceError(str(exc)) from exc

    def _check(self, res: RunResult) -> None:
        if res.ok:
            return
        msg = res.message or f"exit status {res.rc}"
        if looks_unreachable(msg):
            raise unreachable_error(res.argv[0], msg)
        raise SourceError(f"{shlex.join(res.argv)} failed: {msg}")

    async def _json_or_text(self, tool: str, json_argv: list[str], text_argv: list[str],
                            warnings: list[str]) -> tuple[str, RunResult]:
        """Run the --json form unless it is known not to work; ('json'|'text', result)."""
        if self.json_ok.get(tool, True):
            res = await self._run(json_argv)
            if res.ok:
                self.json_ok[tool] = True
                return "json", res
            if "unrecognized option" in res.message or "invalid option" in res.message:
                self.json_ok[tool] = False
                warnings.append(f"{tool} has no --json here: using {text_argv[0]} text output")
            else:
                self._check(res)
        res = await self._run(text_argv)
        self._check(res)
        return "text", res

    async def _read_json_or_text(self, tool: str, text_argv: list[str], warnings: list[str],
                                 from_json: Callable[[bytes], T], from_text: Callable[[str], T], what: str) -> T:
        """``<tool> --json`` parsed typed; on a missing flag or an unreadable document, the text form."""
        form, res = await self._json_or_text(tool, [tool, "--json"], text_argv, warnings)
        if form == "json":
            try:
                return from_json(res.stdout)
            except parse.SlurmParseError as exc:
                warnings.append(f"{tool} --json unreadable ({exc}); used {text_argv[0]} text")
                res = await self._run(text_argv)
                self._check(res)
        try:
            return from_text(res.stdout.decode(errors="replace"))
        except parse.SlurmParseError as exc:
            raise SourceError(f"cannot read Slurm {what}: {exc}") from exc

    async def read_nodes(self, warnings: list[str]) -> dict[str, SlurmNodeInfo]:
        return await self._read_json_or_text("sinfo", ["scontrol", "-o", "show", "nodes"], warnings,
                                             parse.parse_nodes_json, parse.parse_scontrol_nodes, "nodes")

    async def read_jobs(self, warnings: list[str]) -> tuple[SlurmJob, ...]:
        return await self._read_json_or_text("squeue", ["squeue", "-h", "-o", parse.SQUEUE_FORMAT], warnings,
                                             parse.parse_jobs_json, parse.parse_squeue_text, "jobs")

    async def read_controller(self, warnings: list[str]) -> ControllerHealth:
        res = await self._run(["sdiag"])
        if not res.ok:
            self._check(res)
        try:
            return parse.parse_sdiag_text(res.stdout.decode(errors="replace"))
        except parse.SlurmParseError as exc:
            warnings.append(f"sdiag unreadable: {exc}")
            return ControllerHealth(reachable=True, detail="sdiag output unreadable")

    async def collect(self) -> Collected:
        warnings: list[str] = []
        got = await asyncio.gather(
            self.read_nodes(warnings), self.read_jobs(warnings), self.read_controller(warnings),
            return_exceptions=True,
        )
        for item in got:
            if isinstance(item, BaseException):
                raise item
        nodes, jobs, ctl = got
        assert isinstance(nodes, dict) and isinstance(jobs, tuple) and isinstance(ctl, ControllerHealth)
        return Collected(nodes=nodes, jobs=jobs, controller=ctl, warnings=warnings)

    async def job_states(self) -> dict[str, str]:
        """Active jobs by id and display id -> state, read with one squeue call."""
        jobs = await self.read_jobs([])
        out: dict[str, str] = {}
        for j in jobs:
            out[str(j.job_id)] = j.state
            out[j.display_id] = j.state
        return out

    # -- acting ---------------------------------------------------------------
    def argvs(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str]) -> list[list[str]]:
        """Node actions: one scontrol call for the whole node set; job actions: one per job."""
        if kind in SLURM_NODE_KINDS:
            hl = collect_hostlist(targets)
            reason = params.get("reason", "").strip()
            if kind is ActionKind.DRAIN_NODES:
                return [["scontrol", "update", f"NodeName={hl}", "State=DRAIN", f"Reason={reason}"]]
            if kind is ActionKind.RESUME_NODES:
                return [["scontrol", "update", f"NodeName={hl}", "State=RESUME"]]
            if kind is ActionKind.REBOOT_NODES:
                return [["scontrol", "reboot", "ASAP", "nextstate=RESUME", f"reason={reason}", hl]]
            return [["scontrol", "cancel_reboot", hl]]
        if kind is ActionKind.CANCEL_JOBS:
            sig = params.get("signal")
            return [["scancel", *(["--signal", sig] if sig else []), t] for t in targets]
        if kind in SLURM_JOB_KINDS:
            return [["scontrol", _JOB_VERB[kind], t] for t in targets]
        raise ValueError(f"the Slurm CLI cannot {kind.value}")

    def describe(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str]) -> list[str]:
        return [shlex.join(a) for a in self.argvs(kind, targets, params)]

    async def act(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str]) -> list[TargetResult]:
        if kind in SLURM_NODE_KINDS:
            return await self._act_nodes(kind, targets, params)
        results: list[TargetResult] = []
        for target, argv in zip(targets, self.argvs(kind, targets, params), strict=True):
            try:
                res = await self.runner.run(argv)
            except CommandError as exc:
                results.append(TargetResult(target=target, ok=False, message=str(exc)))
                continue
            results.append(TargetResult(target=target, ok=res.ok, message=res.message if not res.ok else "done"))
        if kind is ActionKind.CANCEL_JOBS:
            results = await self._verify_cancel(results)
        return results

    async def _act_nodes(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str]) -> list[TargetResult]:
        argv = self.argvs(kind, targets, params)[0]
        try:
            res = await self.runner.run(argv)
        except CommandError as exc:
            return [TargetResult(target=t, ok=False, message=str(exc)) for t in targets]
        if res.ok:
            return [TargetResult(target=t, ok=True, message="done") for t in targets]
        if len(targets) == 1:
            return [TargetResult(target=targets[0], ok=False, message=res.message)]
        # The set call failed: find out per node by reading the nodes back.
        try:
            nodes = await self.read_nodes([])
        except SourceError:
            return [TargetResult(target=t, ok=False, message=res.message) for t in targets]
        return [TargetResult(target=t, ok=_node_done(kind, nodes.get(t)),
                             message="done" if _node_done(kind, nodes.get(t)) else res.message) for t in targets]

    async def _verify_cancel(self, results: list[TargetResult]) -> list[TargetResult]:
        """scancel exits 0 for unknown jobs: trust only what squeue shows afterwards."""
        pending = {r.target for r in results if r.ok}
        states: dict[str, str] = {}
        for _ in range(10):
            try:
                states = await self.job_states()
            except SourceError as exc:
                return [r if not r.ok else TargetResult(target=r.target, ok=False, message=f"cannot verify: {exc}")
                        for r in results]
            if all(states.get(t, "CANCELLED") in _GONE_OR[ActionKind.CANCEL_JOBS] for t in pending):
                break
            await asyncio.sleep(0.2)
        out = []
        for r in results:
            state = states.get(r.target, "CANCELLED")
            if r.ok and state not in _GONE_OR[ActionKind.CANCEL_JOBS]:
                out.append(TargetResult(target=r.target, ok=False, message=f"scancel returned 0 but job is still {state}"))
            elif r.ok:
                out.append(TargetResult(target=r.target, ok=True, message=f"cancelled (verified: {state.lower()})"))
            else:
                out.append(r)
        return out

    async def close(self) -> None:
        return None


def _node_done(kind: ActionKind, info: SlurmNodeInfo | None) -> bool:
    if info is None:
        return False
    if kind is ActionKind.DRAIN_NODES:
        return "DRAIN" in info.flags
    if kind is ActionKind.RESUME_NODES:
        return "DRAIN" not in info.flags and info.base_state.upper() != "DOWN"
    if kind is ActionKind.REBOOT_NODES:
        return "REBOOT_REQUESTED" in info.flags
    return "REBOOT_REQUESTED" not in info.flags
