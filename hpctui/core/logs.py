"""The runtime's log reads (issue 26): a job's output files, a node's journal window, a pod's log, a Loki
query — each through the first source that can (its capability Protocol), never on the UI thread (they are
``async``; the blocking parts run in the sources' threads or over asyncssh).

Journal lines read here are also merged into the store's event timeline (``source = "journal"``, object
``node/NAME``), so the events pane and the incident report carry them; each line once.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from hpctui.actions.fold import render
from hpctui.base.sanitize import clean_text
from hpctui.model import Event
from hpctui.model.common import Severity
from hpctui.model.logs import LogChunk, LogLine
from hpctui.model.output import NodeOutput
from hpctui.sources.capabilities import JobOutputResolver, LogQuerier, NodeLogReader, PodInspector, PodLogFollower

if TYPE_CHECKING:
    from hpctui.core.store import Store
    from hpctui.model.logs import JobOutputPaths

MAX_EVENTS_PER_READ = 500  # journal lines one read may add to the timeline (the newest)
_SEEN_LIMIT = 20_000
_BAD = re.compile(r"(?i)\b(xid|sxid|error|fail(?:ed|ure)?|fatal|panic|oops|call trace|hung task|oom)\b")


class JournalRead(msgspec.Struct, frozen=True, kw_only=True):
    """One journal window read on some nodes: the folded text (identical output shared, failures apart),
    the parsed lines and how many of them went into the timeline."""

    where: str
    command: str
    folded: str
    lines: tuple[LogLine, ...]
    outputs: tuple[NodeOutput, ...]
    added_events: int


def journal_severity(message: str) -> Severity:
    """WARNING for a line that names a fault (Xid, error, failed, panic, OOM...), INFO otherwise."""
    return Severity.WARNING if _BAD.search(message) else Severity.INFO


class LogService:
    """What :class:`~hpctui.core.ports.LogPort` promises, over a runtime's sources and store."""

    def __init__(self, sources: Callable[[], Sequence[Any]], store: Callable[[], Store]) -> None:
        self._sources = sources  # read at call time: a test may swap the runtime's sources or store
        self._store = store
        self._seen: OrderedDict[tuple[float, str, str], None] = OrderedDict()

    def _first(self, ability: type) -> Any:
        return next((s for s in self._sources() if isinstance(s, ability)), None)

    @property
    def can_read_nodes(self) -> bool:
        """A source reads files and journals on nodes (SSH)."""
        return self._first(NodeLogReader) is not None

    @property
    def can_resolve_job_output(self) -> bool:
        """A source reads a Slurm job's record for its output paths and working directory."""
        return self._first(JobOutputResolver) is not None

    @property
    def can_query(self) -> bool:
        """A Loki (LogQuerier) source is configured."""
        return self._first(LogQuerier) is not None

    # -- Slurm job output ----------------------------------------------------------------------
    async def job_output_paths(self, job_id: str) -> JobOutputPaths | None:
        """The job's output paths from the first JobOutputResolver; None if none can or the job is unknown."""
        source = self._first(JobOutputResolver)
        return None if source is None else await source.job_output_paths(job_id)

    def log_host(self, batch_host: str | None) -> str | None:
        """Where a job's files are read: the SSH source's ``log_host`` (a login node), else the batch host."""
        source = self._first(NodeLogReader)
        configured: str | None = source.log_host if source is not None else None
        return configured or batch_host

    async def read_file(self, host: str, path: str, offset: int | None = None) -> LogChunk:
        """``path``'s tail on ``host``; a chunk with the error when no source reads nodes."""
        source = self._first(NodeLogReader)
        if source is None:
            return LogChunk(where=f"{host}:{path}", error="no SSH source configured: cannot read files on nodes")
        chunk: LogChunk = await source.read_file(host, path, offset)
        return chunk

    # -- node journal --------------------------------------------------------------------------
    async def journal(self, hosts: Sequence[str], since: float, until: float, *, kernel: bool = True,
                      units: Sequence[str] = (), grep: str | None = None) -> JournalRead | None:
        """The window's journal on ``hosts`` (folded like custom actions), filtered by ``grep`` (literal,
        case-insensitive), its lines added to the event timeline; None when no source reads nodes."""
        from hpctui.model.hostlist import collect
        from hpctui.sources.ssh import logs

        source = self._first(NodeLogReader)
        if not hosts:
            return None
        if source is None:
            return await self._journal_from_loki(hosts, since, until, grep)
        outputs = await source.journal(hosts, since, until, kernel=kernel, units=units)
        filtered = tuple(msgspec.structs.replace(o, output="\n".join(logs.grep_lines(o.output.splitlines(), grep)))
                         if o.error is None else o for o in outputs)
        lines = tuple(sorted((ln for o in filtered if o.error is None for ln in logs.parse_journal(o.output, o.label)),
                             key=lambda ln: ln.time))
        added = self._add_events(lines)
        try:
            where = collect(list(hosts))
        except Exception:
            where = ",".join(hosts)
        argv = logs.journal_argv(since, until, kernel=kernel, units=units)
        return JournalRead(where=where, command=logs.describe_argv(argv) + (f"  (filter: {grep})" if grep else ""),
                           folded=render(filtered), lines=lines, outputs=filtered, added_events=added)

    async def _journal_from_loki(self, hosts: Sequence[str], since: float, until: float,
                                 grep: str | None) -> JournalRead | None:
        """No SSH source, but a Loki: each node's lines from its ``node_query`` selector (``|= grep``)."""
        loki = self._first(LogQuerier)
        if loki is None:
            return None
        outputs: list[NodeOutput] = []
        lines: list[LogLine] = []
        for host in hosts:
            query = loki.node_selector(host) + (f" |= {_logql_string(grep)}" if grep else "")
            try:
                got: list[LogLine] = await loki.query_logs(query, since, until)
            except Exception as exc:  # one node's failure is that node's
                outputs.append(NodeOutput(label=host, error=str(exc)))
                continue
            lines.extend(got)
            outputs.append(NodeOutput(label=host, output="\n".join(f"{ln.time:.6f} {ln.ident}: {ln.message}"
                                                                   for ln in got), rc=0))
        lines.sort(key=lambda ln: ln.time)
        added = self._add_events(lines)
        return JournalRead(where=",".join(hosts), command=f"Loki {loki.name}: " + loki.node_selector(hosts[0]),
                           folded=render(outputs), lines=tuple(lines), outputs=tuple(outputs), added_events=added)

    def _add_events(self, lines: Sequence[LogLine]) -> int:
        new = []
        for ln in lines[-MAX_EVENTS_PER_READ:]:
            key = (ln.time, ln.host, ln.message)
            if key in self._seen:
                continue
            self._seen[key] = None
            if len(self._seen) > _SEEN_LIMIT:
                self._seen.popitem(last=False)
            new.append(Event(time=ln.time, source="journal", object=f"node/{ln.host}",
                             severity=journal_severity(ln.message), message=f"{ln.ident}: {ln.message}"))
        if new:
            self._store().add_events(new)
        return len(new)

    # -- pods ----------------------------------------------------------------------------------
    async def pod_containers(self, namespace: str, name: str) -> tuple[str, ...]:
        """The pod's containers (empty when no source can say)."""
        source = self._first(PodLogFollower)
        return () if source is None else tuple(await source.pod_containers(namespace, name))

    async def pod_log_lines(self, namespace: str, name: str, container: str | None = None, previous: bool = False,
                            since: str | None = None) -> tuple[list[str], str | None] | None:
        """The pod's log lines (after ``since``, for follow); None when no source reads pod logs."""
        source = self._first(PodLogFollower)
        if source is None:
            inspector = self._first(PodInspector)
            if inspector is None:
                return None
            if since is not None:  # no follow without a PodLogFollower: nothing new
                return [], since
            text: str = await (inspector.pod_logs(namespace, name) if container is None and not previous
                               else inspector.pod_logs(namespace, name, container, previous=previous))
            return [clean_text(line) for line in text.splitlines()], None
        lines, last = await source.pod_log_lines(namespace, name, container, previous=previous, since=since)
        return list(lines), last

    # -- Loki ----------------------------------------------------------------------------------
    async def query(self, logql: str, since: float, until: float, limit: int = 1000) -> list[LogLine] | None:
        """A LogQL query over the window from the first LogQuerier (Loki); None if none is configured."""
        source = self._first(LogQuerier)
        if source is None:
            return None
        lines: list[LogLine] = await source.query_logs(logql, since, until, limit)
        return lines


def _logql_string(text: str) -> str:
    """``text`` as a LogQL string literal (backquotes need no escapes; else a quoted Go string)."""
    if "`" not in text:
        return f"`{text}`"
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
