"""CLI backend: ``sinfo --json`` + ``squeue --json`` + ``sdiag`` + ``scontrol -o show partition`` per refresh, ``scontrol`` to act.

One call per document for the whole cluster, never per node. ``--json`` support is probed
once (22.05 has it for sinfo/squeue; older builds answer "unrecognized option"); when it is
missing, or a document does not parse, the text forms (``scontrol -o show nodes``,
``squeue -h -o SQUEUE_FORMAT``) are used instead. A JSON form this Slurm version cannot give
(a data_parser version refused) is not asked for again, and that is said once. From 23.02 on,
``sinfo --json`` lists node sets, not nodes: the nodes are then read with
``scontrol --json show nodes`` (the per-node REST schema), said once.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Callable
from typing import TypeVar

from hpctui.base.sanitize import clean_text, decode_output
from hpctui.model import ControllerHealth, SlurmJob, SlurmNodeInfo, SlurmPartition
from hpctui.model.action import ActionKind, TargetResult
from hpctui.model.hostlist import collect as collect_hostlist
from hpctui.sources.base import SourceError
from hpctui.sources.slurm import parse
from hpctui.sources.slurm.actions import SLURM_ADMIN_KINDS, SLURM_JOB_KINDS, SLURM_KINDS, SLURM_NODE_KINDS, admin_argvs
from hpctui.sources.slurm.backend import Collected, Dropped, looks_unreachable, nodes_or_jobs, parse_off_loop
from hpctui.sources.slurm.parse.jobs_stream import JobReuse, JobsStream
from hpctui.sources.slurm.parse.nodes import NodeSetsDocument
from hpctui.sources.slurm.parse.partitions import parse_scontrol_partitions
from hpctui.sources.slurm.parse.rest_versions import newer_version_warning, newer_versions_seen
from hpctui.sources.slurm.runner import CommandError, CommandTimeout, Runner, RunResult
from hpctui.sources.slurm.verify import JobRow, query_ids, verify_cancel

T = TypeVar("T")

_JOB_VERB = {
    ActionKind.REQUEUE_JOBS: "requeue", ActionKind.REQUEUE_HOLD_JOBS: "requeuehold",
    ActionKind.HOLD_JOBS: "hold", ActionKind.RELEASE_JOBS: "release",
}
# Read back only the cancelled jobs: real id | display id | state (filters work in text mode).
VERIFY_FORMAT = "%A|%i|%T"
# The per-node JSON documents, by tool: sinfo's until it proves to list node sets (23.02+).
NODES_JSON = {"sinfo": ["sinfo", "--json"], "scontrol": ["scontrol", "--json", "show", "nodes"]}


def _version_refused(exc: parse.SlurmParseError) -> bool:
    """The document is in a data_parser version this code does not read: so will the next be."""
    return "unsupported Slurm REST version" in str(exc)


def unreachable_error(what: str, exc_or_text: object) -> SourceError:
    return SourceError(f"slurmctld unreachable: {what}: {exc_or_text}")


class CliBackend:
    """Talks to Slurm through its command-line tools (needs them and a slurm.conf)."""

    name = "cli"

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.json_ok: dict[str, bool] = {}  # "sinfo"/"squeue" -> --json works (probed once)
        self.job_reuse = JobReuse()  # the last squeue document's jobs, reused while unchanged
        self.nodes_json_tool = "sinfo"  # "scontrol" once sinfo --json proved to list node sets
        self.announced_versions: set[str] = set()  # too-new data_parser versions already said

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
                                 from_json: Callable[[bytes, Dropped], T], from_text: Callable[[str, Dropped], T],
                                 what: str, json_argv: list[str] | None = None) -> T:
        """``<tool> --json`` (or ``json_argv``) parsed typed; on a missing flag or an unreadable
        document, the text form. A document in a version this code refuses is not asked for again.
        :class:`NodeSetsDocument` is raised to the caller (it knows the better document).

        Big documents are parsed in a worker thread (the UI keeps drawing); records with an
        unreadable node list / invalid node name are dropped with one warning.
        """
        json_argv = json_argv or [tool, "--json"]
        form, res = await self._json_or_text(tool, json_argv, text_argv, warnings)
        if form == "json":
            dropped = Dropped(what.removesuffix("s"))
            try:
                out = await parse_off_loop(from_json, res.stdout, dropped)
            except NodeSetsDocument:
                raise
            except parse.SlurmParseError as exc:
                if _version_refused(exc):
                    self.json_ok[tool] = False
                    warnings.append(f"{shlex.join(json_argv)} unreadable ({exc}): not asked for again, "
                                    f"{text_argv[0]} text is used")
                else:
                    warnings.append(f"{tool} --json unreadable ({exc}); used {text_argv[0]} text")
                res = await self._run(text_argv)
                self._check(res)
            else:
                dropped.report(warnings)
                return out
        return await self._parse_text(res, warnings, from_text, what)

    async def _parse_text(self, res: RunResult, warnings: list[str], from_text: Callable[[str, Dropped], T],
                          what: str) -> T:
        dropped = Dropped(what.removesuffix("s"))
        try:
            out = await parse_off_loop(from_text, decode_output(res.stdout), dropped)
        except parse.SlurmParseError as exc:
            raise SourceError(f"cannot read Slurm {what}: {exc}") from exc
        if dropped.count and not out:  # nothing readable at all: that is not "no jobs"
            raise SourceError(f"cannot read Slurm {what}: {dropped.messages[0]}")
        dropped.report(warnings)
        return out

    async def read_nodes(self, warnings: list[str]) -> dict[str, SlurmNodeInfo]:
        tool = self.nodes_json_tool
        try:
            return await self._read_json_or_text(
                tool, ["scontrol", "-o", "show", "nodes"], warnings,
                lambda data, dropped: parse.parse_nodes_json(data, on_invalid=dropped, drops=dropped.values),
                lambda data, dropped: parse.parse_scontrol_nodes(data, on_invalid=dropped, drops=dropped.values), "nodes",
                json_argv=NODES_JSON[tool])
        except NodeSetsDocument:
            if tool != "sinfo":
                raise
            self.nodes_json_tool = "scontrol"
            warnings.append("sinfo --json lists node sets here (Slurm 23.02+), not nodes: nodes are read "
                            "with scontrol --json show nodes from now on")
            return await self.read_nodes(warnings)

    async def read_jobs(self, warnings: list[str]) -> tuple[SlurmJob, ...]:
        if self.json_ok.get("squeue", True):
            jobs = await self._stream_jobs(warnings)
            if jobs is not None:
                return jobs
        res = await self._run(["squeue", "-h", "-o", parse.SQUEUE_FORMAT])
        self._check(res)
        return await self._parse_text(
            res, warnings, lambda data, dropped: parse.parse_squeue_text(data, on_invalid=dropped, drops=dropped.values), "jobs")

    async def _stream_jobs(self, warnings: list[str]) -> tuple[SlurmJob, ...] | None:
        """``squeue --json`` read as it arrives (see parse.jobs_stream): bounded memory, no long
        parse on the event loop, unchanged jobs reused. None: use the text form instead (no
        --json here, or an unreadable document; the reason is in ``warnings``)."""
        dropped = Dropped("job")
        stream = JobsStream(self.job_reuse, on_invalid=dropped, drops=dropped.values)
        try:
            res = await self.runner.stream(["squeue", "--json"], stream.feed)
        except parse.SlurmParseError as exc:
            warnings.append(f"squeue --json unreadable ({exc}); used squeue text")
            return None
        except CommandTimeout as exc:
            raise SourceError(f"slurmctld unreachable: {exc}") from exc
        except CommandError as exc:
            raise SourceError(str(exc)) from exc
        if not res.ok:
            if "unrecognized option" in res.message or "invalid option" in res.message:
                self.json_ok["squeue"] = False
                warnings.append("squeue has no --json here: using squeue text output")
                return None
            self._check(res)
        self.json_ok["squeue"] = True
        try:
            jobs = await asyncio.to_thread(stream.finish)
        except parse.SlurmParseError as exc:
            if _version_refused(exc):
                self.json_ok["squeue"] = False
                warnings.append(f"squeue --json unreadable ({exc}): not asked for again, squeue text is used")
            else:
                warnings.append(f"squeue --json unreadable ({exc}); used squeue text")
            return None
        dropped.report(warnings)
        return jobs

    async def read_controller(self, warnings: list[str]) -> ControllerHealth:
        """Controller health is optional: a failing sdiag (e.g. PrivateData=usage for a
        non-operator) is a warning, never the end of the refresh. A dead slurmctld is caught
        by the nodes/jobs calls, which still raise."""
        try:
            res = await self._run(["sdiag"])
            if not res.ok:
                self._check(res)
        except SourceError as exc:
            warnings.append(f"controller health unavailable: {exc}")
            return ControllerHealth(reachable="unreachable" not in str(exc), detail=f"sdiag failed: {exc}")
        try:
            return parse.parse_sdiag_text(decode_output(res.stdout))
        except parse.SlurmParseError as exc:
            warnings.append(f"sdiag unreadable: {exc}")
            return ControllerHealth(reachable=True, detail="sdiag output unreadable")

    async def read_partitions(self, warnings: list[str]) -> tuple[SlurmPartition, ...] | None:
        """Partition states and limits (optional, like sdiag: a failure is a warning)."""
        try:
            res = await self._run(["scontrol", "-o", "show", "partition"])
            if not res.ok:
                self._check(res)
        except SourceError as exc:
            warnings.append(f"partitions unavailable: {exc}")
            return None
        dropped = Dropped("partition")
        out = parse_scontrol_partitions(decode_output(res.stdout), on_invalid=dropped)
        dropped.report(warnings)
        return out

    async def collect(self) -> Collected:
        warnings: list[str] = []
        got = await asyncio.gather(
            self.read_nodes(warnings), self.read_jobs(warnings), self.read_controller(warnings),
            self.read_partitions(warnings), return_exceptions=True,
        )
        nodes, jobs = nodes_or_jobs(got[0], got[1], warnings)
        for version in sorted(newer_versions_seen() - self.announced_versions):
            self.announced_versions.add(version)
            warnings.append(newer_version_warning(version))
        ctl = got[2]
        if isinstance(ctl, BaseException):
            raise ctl
        parts = got[3]
        if isinstance(parts, BaseException):
            raise parts
        return Collected(nodes=nodes, jobs=jobs, controller=ctl, warnings=warnings, partitions=parts)

    async def job_rows(self, targets: tuple[str, ...]) -> list[JobRow]:
        """The targets' own records (array tasks included), read with one small squeue call.

        An id Slurm no longer knows ("Invalid job id specified") reads as no row: gone.
        """
        argv = ["squeue", "-h", "-t", "all", "-j", ",".join(query_ids(targets)), "-o", VERIFY_FORMAT]
        res = await self._run(argv)
        if not res.ok:
            if "invalid job id" in res.message.lower():
                return []
            self._check(res)
        rows = []
        for line in res.stdout.decode(errors="replace").splitlines():
            parts = line.strip().split("|")
            if len(parts) == 3:
                rows.append(JobRow(job_id=parts[0], display_id=parts[1], state=parts[2].strip()))
        return rows

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
        if kind in SLURM_ADMIN_KINDS:
            return admin_argvs(kind, targets, params)
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
        if kind is ActionKind.RESERVE_MAINT:  # one call for the node set: its answer is every node's
            try:
                res = await self.runner.run(admin_argvs(kind, targets, params)[0])
            except CommandError as exc:
                return [TargetResult(target=t, ok=False, message=str(exc)) for t in targets]
            message = clean_text(res.stdout.decode(errors="replace").strip() or "done") if res.ok else res.message
            return [TargetResult(target=t, ok=res.ok, message=message) for t in targets]
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
        return await verify_cancel(results, self.job_rows, "scancel returned 0")

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
