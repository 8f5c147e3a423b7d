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
import time
from collections.abc import Callable
from typing import TypeVar

from hpctui.base.sanitize import clean_text, decode_output
from hpctui.model import ControllerHealth, SlurmJob, SlurmNodeInfo, SlurmPartition
from hpctui.model.action import ActionKind, TargetResult
from hpctui.model.fabric import Fabric
from hpctui.model.hostlist import collect as collect_hostlist
from hpctui.model.scheduler import Reservation
from hpctui.sources.base import SourceError
from hpctui.sources.slurm import parse
from hpctui.sources.slurm.actions import (
    SLURM_ADMIN_KINDS,
    SLURM_JOB_KINDS,
    SLURM_KINDS,
    SLURM_NODE_KINDS,
    admin_argvs,
    reservation_results,
)
from hpctui.sources.slurm.backend import Collected, Dropped, looks_unreachable, nodes_or_jobs, parse_off_loop
from hpctui.sources.slurm.parse.hybrid import (
    HYBRID_JSON_ARGV,
    HYBRID_JSON_EVERY,
    HYBRID_TEXT_ARGV,
    RECHECK_MAX,
    filters_ignored,
    holding_nodes,
    merge_queue,
    unmatched,
)
from hpctui.sources.slurm.parse.jobs_stream import JobReuse, JobsStream
from hpctui.sources.slurm.parse.nodes import NodeSetsDocument
from hpctui.sources.slurm.parse.partitions import parse_scontrol_partitions
from hpctui.sources.slurm.parse.reservations import parse_reservations_json, parse_scontrol_reservations
from hpctui.sources.slurm.parse.rest_versions import newer_version_warning, newer_versions_seen
from hpctui.sources.slurm.parse.text import TextReuse
from hpctui.sources.slurm.parse.topology import parse_scontrol_topology
from hpctui.sources.slurm.runner import CommandError, CommandTimeout, Runner, RunResult
from hpctui.sources.slurm.settings import HYBRID_MIN_JOBS, QueueRead
from hpctui.sources.slurm.verify import JobRow, query_ids, verify_cancel

T = TypeVar("T")

_JOB_VERB = {
    ActionKind.REQUEUE_JOBS: "requeue", ActionKind.REQUEUE_HOLD_JOBS: "requeuehold",
    ActionKind.HOLD_JOBS: "hold", ActionKind.RELEASE_JOBS: "release",
}
# Read back only the cancelled jobs: real id | display id | state (filters work in text mode).
VERIFY_FORMAT = "%A|%i|%T"
# The per-node JSON documents, by tool: sinfo's until it proves to list node sets (23.02+).
TOPOLOGY_EVERY_S = 600.0  # how often the Slurm topology is read again after the first refresh
NODES_JSON = {"sinfo": ["sinfo", "--json"], "scontrol": ["scontrol", "--json", "show", "nodes"]}
RESERVATIONS_JSON = ["scontrol", "--json", "show", "reservation"]
RESERVATIONS_TEXT = ["scontrol", "-o", "show", "reservation"]
RESV_JSON_KEY = "scontrol show reservation"  # json_ok key (the nodes' scontrol --json is probed apart)


def _version_refused(exc: parse.SlurmParseError) -> bool:
    """The document is in a data_parser version this code does not read: so will the next be."""
    return "unsupported Slurm REST version" in str(exc)


def _squeue_text(reuse: TextReuse) -> Callable[[str, Dropped], tuple[SlurmJob, ...]]:
    return lambda data, dropped: parse.parse_squeue_text(data, on_invalid=dropped, drops=dropped.values, reuse=reuse)


def unreachable_error(what: str, exc_or_text: object) -> SourceError:
    return SourceError(f"slurmctld unreachable: {what}: {exc_or_text}")


class CliBackend:
    """Talks to Slurm through its command-line tools (needs them and a slurm.conf)."""

    name = "cli"

    def __init__(self, runner: Runner, queue_read: QueueRead = "auto", hybrid_min_jobs: int = HYBRID_MIN_JOBS) -> None:
        self.runner = runner
        self.queue_read = queue_read  # "auto" | "json" | "hybrid": see use_hybrid
        self.hybrid_min_jobs = hybrid_min_jobs
        self.last_queue_jobs: int | None = None  # jobs in the last queue read
        self.json_filters: bool | None = None  # squeue --json honours -t (None: not seen yet)
        self.subset_reuse = JobReuse()  # the hybrid's JSON jobs (running ones), apart from the whole queue's
        self.last_read_hybrid = False  # the last queue came from the hybrid merge (pending jobs lack fields)
        # the hybrid's last JSON jobs and the (id, state) of the node-holding jobs the text showed then: while the
        # text shows exactly those, the JSON is not asked again (up to HYBRID_JSON_EVERY reads): see _steady_hybrid
        self.subset_jobs: tuple[SlurmJob, ...] | None = None
        self.subset_key: frozenset[tuple[int, str]] = frozenset()
        self.subset_skips = 0
        self.text_reuse = TextReuse()  # the last squeue text's records, by line (parse.text.TextReuse)
        self.json_ok: dict[str, bool] = {}  # "sinfo"/"squeue" -> --json works (probed once)
        self.job_reuse = JobReuse()  # the last squeue document's jobs, reused while unchanged
        self.nodes_json_tool = "sinfo"  # "scontrol" once sinfo --json proved to list node sets
        self.announced_versions: set[str] = set()  # too-new data_parser versions already said
        self.fabric_read_at: float | None = None  # monotonic time of the last scontrol show topology

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
        """The live queue: ``squeue --json`` streamed, or — for a big queue, see :meth:`use_hybrid` —
        the hybrid read (hpctui.sources.slurm.parse.hybrid), or the text form where there is no --json."""
        self.last_read_hybrid = False
        if self.json_ok.get("squeue", True):
            if self.use_hybrid():
                jobs = await self._hybrid_jobs(warnings)
            else:
                jobs = await self._stream_jobs(warnings)
            if jobs is not None:
                self.last_queue_jobs = len(jobs)
                return jobs
        res = await self._run(["squeue", "-h", "-o", parse.SQUEUE_FORMAT])
        self._check(res)
        jobs = await self._parse_text(res, warnings, _squeue_text(self.text_reuse), "jobs")
        self.last_queue_jobs = len(jobs)
        return jobs

    def use_hybrid(self) -> bool:
        """Whether the next queue read is the hybrid one (text for the queue, JSON for the jobs
        holding nodes). ``queue_read = "json"``: never. ``"hybrid"``: always, and ``"auto"`` when the
        last queue had more than ``hybrid_min_jobs`` jobs, or on the first read (a 100k-job queue
        is read in ~0.9 s of CPU instead of ~2 s; on a first read whose text shows no more than
        ``hybrid_min_jobs`` lines the JSON read is made instead: a small queue costs one more cheap
        call, once, and keeps every field and every hostile-named job). The result
        is the JSON read's but for the JSON-only fields of pending jobs (parse.hybrid lists them),
        so a small queue — where the JSON read is cheap — keeps the JSON read. Never where
        ``squeue --json`` ignores ``-t`` (22.05: seen in its answer, said once): the hybrid's JSON is
        then the whole document, and the text only costs more."""
        if self.queue_read == "json" or self.json_filters is False:
            return False
        if self.queue_read == "hybrid":
            return True
        return self.last_queue_jobs is None or self.last_queue_jobs > self.hybrid_min_jobs

    async def _hybrid_jobs(self, warnings: list[str]) -> tuple[SlurmJob, ...] | None:
        """The text form of the whole queue, then ``squeue --json -t JSON_STATES`` (streamed, with
        its own JobReuse: the running jobs change little between refreshes), merged by job id
        (parse.hybrid.merge_queue). The JSON is asked once the text has arrived and is read while
        the text is parsed (both in worker threads). A job running in the text and gone from the
        JSON is asked again by id (a third call, only then): running with a state flag ``-t``
        misses, or ended in between. Without a readable JSON the text alone is the answer (said in
        ``warnings``). Either call failing for another reason than an unreachable slurmctld (a
        state name this squeue refuses, an unreadable text) ends the hybrid for good, said once:
        the queue is then read as JSON, now and later. None: use the text form (no --json here)."""
        seen: list[JobsStream] = []
        text_warnings: list[str] = []
        json_warnings: list[str] = []
        try:
            res = await self._run([*HYBRID_TEXT_ARGV, parse.SQUEUE_FORMAT])
            self._check(res)
            if self.queue_read == "auto" and res.stdout.count(b"\n") <= self.hybrid_min_jobs:
                # auto and a small queue (the first read, or a queue that shrank): the JSON read after all (every
                # field of every job, a pending job with a hostile name kept), the small text read spent once
                return await self._stream_jobs(warnings)
            steady_warnings: list[str] = []  # kept only if the steady read is the answer (else parsed again below)
            steady = await self._steady_hybrid(res, steady_warnings)
            if steady is not None:
                warnings.extend(steady_warnings)
                return steady
            got = await asyncio.gather(
                self._parse_text(res, text_warnings, _squeue_text(self.text_reuse), "jobs"),
                self._stream_jobs(json_warnings, list(HYBRID_JSON_ARGV), self.subset_reuse, seen),
                return_exceptions=True)
            for failed in got:
                if isinstance(failed, BaseException) and (
                        not isinstance(failed, SourceError) or str(failed).startswith("slurmctld unreachable")):
                    raise failed
            text_got, json_got = got
            if isinstance(json_got, BaseException):
                raise json_got
        except SourceError as exc:
            if str(exc).startswith("slurmctld unreachable"):
                raise
            return await self._end_hybrid(warnings, exc)
        warnings.extend(json_warnings)
        if json_got is None:  # no --json here, or unreadable: the text read is the text fallback's
            if isinstance(text_got, BaseException):
                raise text_got
            warnings.extend(text_warnings)
            return text_got
        json_jobs = json_got
        if filters_ignored(json_jobs, seen[0].finished_seen):  # the JSON is the whole queue: the answer
            self.json_filters = False
            self.job_reuse, self.subset_reuse = self.subset_reuse, JobReuse()  # it read the whole queue
            warnings.append("squeue --json ignores -t here (Slurm before 24.05.1): the queue is read as "
                            "JSON only (the hybrid read brings nothing)")
            return json_jobs
        if isinstance(text_got, BaseException):
            return await self._end_hybrid(warnings, text_got)
        text_jobs = text_got
        self.json_filters = True
        warnings.extend(text_warnings)
        missing = await asyncio.to_thread(unmatched, text_jobs, json_jobs)
        if 0 < len(missing) <= RECHECK_MAX:  # running with a flag -t misses, or ended in between
            again = await self._stream_jobs(warnings, ["squeue", "--json", "-j", ",".join(map(str, missing))],
                                            JobReuse())
            json_jobs = json_jobs + (again or ())
        dropped = Dropped("job")
        jobs, _ = await asyncio.to_thread(merge_queue, text_jobs, json_jobs, dropped, unfiltered=False)
        dropped.report(warnings)
        self.last_read_hybrid = True
        # the key is what the text showed: a job only the JSON has (started since, or its text line dropped for a
        # hostile name) is kept from the reused JSON, not asked for again every read
        self.subset_jobs, self.subset_key, self.subset_skips = json_jobs, holding_nodes(text_jobs), 0
        return jobs

    async def _steady_hybrid(self, res: RunResult, warnings: list[str]) -> tuple[SlurmJob, ...] | None:
        """The hybrid read without its JSON call, when nothing asks for one: the text (``res``) shows the very
        jobs holding nodes, in the same states, as when the JSON was last asked, and fewer than HYBRID_JSON_EVERY
        reads went by since the JSON was last asked. Their JSON records are then the last ones (the fields
        only JSON has — GPU indices, exit code, restart count — do not change while a job keeps its state),
        so a steady queue costs slurmctld one job-table read per refresh, as the JSON read does, not two. A
        field that may still move under an unchanged state (a running job's time limit, hence its end time,
        by ``scontrol update``) is HYBRID_JSON_EVERY reads old at most. None: ask the JSON."""
        if self.subset_jobs is None or self.subset_skips + 1 >= HYBRID_JSON_EVERY:
            return None
        text_jobs = await self._parse_text(res, warnings, _squeue_text(self.text_reuse), "jobs")
        if holding_nodes(text_jobs) != self.subset_key:
            return None  # a job started, ended or changed state: the JSON is asked (text parsed again, cached)
        self.subset_skips += 1
        dropped = Dropped("job")
        jobs, _ = await asyncio.to_thread(merge_queue, text_jobs, self.subset_jobs, dropped, unfiltered=False)
        dropped.report(warnings)
        self.last_read_hybrid = True
        return jobs

    async def _end_hybrid(self, warnings: list[str], exc: BaseException) -> tuple[SlurmJob, ...] | None:
        """The hybrid read failed (not for an unreachable slurmctld): said once, JSON from now on."""
        self.json_filters = False
        self.subset_jobs = None
        warnings.append(f"the hybrid queue read failed ({exc}): the queue is read with squeue --json")
        return await self._stream_jobs(warnings)

    async def _stream_jobs(self, warnings: list[str], argv: list[str] | None = None,
                           reuse: JobReuse | None = None,
                           streams: list[JobsStream] | None = None) -> tuple[SlurmJob, ...] | None:
        """``squeue --json`` (or ``argv``) read as it arrives (see parse.jobs_stream): bounded memory,
        no long parse on the event loop, unchanged jobs reused (``reuse``, the whole queue's by
        default). None: use the text form instead (no --json here, or an unreadable document; the
        reason is in ``warnings``). ``streams`` gets the reader (what it saw: ``finished_seen``)."""
        dropped = Dropped("job")
        stream = JobsStream(self.job_reuse if reuse is None else reuse, on_invalid=dropped, drops=dropped.values)
        if streams is not None:
            streams.append(stream)
        try:
            res = await self.runner.stream(argv or ["squeue", "--json"], stream.feed)
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

    async def read_reservations(self, warnings: list[str]) -> tuple[Reservation, ...] | None:
        """Reservations (optional, like sdiag: a failure is a warning and None). ``scontrol --json show
        reservation`` where it exists (23.02+), else — said once — ``scontrol -o show reservation``."""
        try:
            if self.json_ok.get(RESV_JSON_KEY, True):
                res = await self._run(RESERVATIONS_JSON)
                if res.ok:
                    self.json_ok[RESV_JSON_KEY] = True
                    dropped = Dropped("reservation")
                    try:
                        out = await parse_off_loop(lambda d: parse_reservations_json(d, on_invalid=dropped), res.stdout)
                    except parse.SlurmParseError as exc:
                        warnings.append(f"scontrol --json show reservation unreadable ({exc}); used the text form")
                    else:
                        dropped.report(warnings)
                        return out
                elif "unrecognized option" in res.message or "invalid option" in res.message:
                    self.json_ok[RESV_JSON_KEY] = False
                    warnings.append("scontrol has no --json here: reservations read as scontrol -o text")
                else:
                    self._check(res)
            res = await self._run(RESERVATIONS_TEXT)
            self._check(res)
        except SourceError as exc:
            warnings.append(f"reservations unavailable: {exc}")
            return None
        dropped = Dropped("reservation")
        out = parse_scontrol_reservations(decode_output(res.stdout), on_invalid=dropped)
        dropped.report(warnings)
        return out

    async def read_reservation(self, name: str) -> Reservation | None:
        """One reservation read back by name (``scontrol -o show reservation NAME``); None: Slurm has none."""
        res = await self._run([*RESERVATIONS_TEXT, name])
        if not res.ok:
            if "not found" in res.message.lower() or "invalid" in res.message.lower():
                return None
            self._check(res)
        found = parse_scontrol_reservations(decode_output(res.stdout), on_invalid=lambda _msg: None)
        return next((r for r in found if r.name == name), None)

    async def read_fabric(self, warnings: list[str]) -> Fabric | None:
        """The topology/tree switches (``scontrol show topology``), read on the first refresh and then
        every :data:`TOPOLOGY_EVERY_S`: it changes when topology.conf does. ``None``: not read this
        time, or no topology plugin (nothing listed) — the store keeps what it had."""
        now = time.monotonic()
        if self.fabric_read_at is not None and now - self.fabric_read_at < TOPOLOGY_EVERY_S:
            return None
        self.fabric_read_at = now
        try:
            res = await self._run(["scontrol", "show", "topology"])
        except SourceError as exc:
            warnings.append(f"topology unavailable: {exc}")
            return None
        if not res.ok:
            return None
        fabric = parse_scontrol_topology(decode_output(res.stdout))
        return fabric if fabric.switches else None

    async def collect(self) -> Collected:
        warnings: list[str] = []
        got = await asyncio.gather(
            self.read_nodes(warnings), self.read_jobs(warnings), self.read_controller(warnings),
            self.read_partitions(warnings), self.read_fabric(warnings), return_exceptions=True,
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
        fabric = got[4]
        if isinstance(fabric, BaseException):
            raise fabric
        return Collected(nodes=nodes, jobs=jobs, controller=ctl, warnings=warnings, partitions=parts, fabric=fabric)

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
            if not res.ok:
                return [TargetResult(target=t, ok=False, message=message) for t in targets]
            return await self._read_back_reservation(params.get("name", ""), targets, message)
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

    async def _read_back_reservation(self, name: str, targets: tuple[str, ...], created: str) -> list[TargetResult]:
        """After ``scontrol create reservation``: read it back; every target must be in its node set."""
        try:
            resv = await self.read_reservation(name)
        except SourceError as exc:
            return [TargetResult(target=t, ok=False, message=f"{created}; not read back: {exc}") for t in targets]
        if resv is None:
            return [TargetResult(target=t, ok=False, message=f"{created}; but Slurm shows no reservation {name}")
                    for t in targets]
        return reservation_results(resv, targets, created)

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
