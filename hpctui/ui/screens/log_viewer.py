"""The log viewer: a job's stdout/stderr tail, a pod's container log, the kernel/journal log of nodes.

Everything is read through the UI port (``port.logs``, :class:`hpctui.core.logs.LogService`) in async
workers, never on the UI thread; lines arrive sanitised and bounded and are drawn as plain text (the
``Log`` widget parses no markup). Keys come from the registry (``LOG_VIEW_KEYS``): ``f`` follow, ``/``
search (only the lines holding the text, like k9s's log filter), ``o`` stdout/stderr of a job, ``c`` the
pod's next container, ``p`` its previous instance (CrashLoopBackOff), ``w`` the journal's time window,
``u`` the units read besides the kernel log. What failed (no such file, permission denied, a node that did
not answer) is said in the status line in plain words.
"""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING

from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Input, Label, Log

from hpctui.base.sanitize import clean_text
from hpctui.model import Pod, SlurmJob
from hpctui.model.logs import MAX_LOG_LINES
from hpctui.ui.keys import LOG_VIEW_KEYS, bindings

if TYPE_CHECKING:
    from hpctui.core.ports import UiPort
    from hpctui.model.logs import JobOutputPaths

FOLLOW_S = 2.0  # a follow read every this many seconds
WINDOWS_S = (900.0, 3600.0, 6 * 3600.0, 86400.0)  # `w` cycles the journal window (ending now) through these
AROUND_S = 900.0  # a window "around a finding": this long either side of its time


def window_around(port: UiPort, nodes: tuple[str, ...], now: float) -> tuple[float, float, str]:
    """The journal window to open with: ±15 min around the newest warning-or-worse event of ``nodes`` of the
    last day (a finding's time), else the last hour; with a word on which it is."""
    from hpctui.model.common import Severity

    wanted = {f"node/{n}" for n in nodes}
    times = [e.time for e in port.current_snapshot().events
             if e.severity >= Severity.WARNING and now - 86400 <= e.time <= now
             and (e.object in wanted or "/".join(e.object.split("/")[:2]) in wanted
                  or (e.object.startswith("gpu/") and f"node/{e.object.split('/')[1]}" in wanted))]
    if times:
        t = max(times)
        return t - AROUND_S, min(now, t + AROUND_S), "around the latest finding"
    return now - 3600.0, now, "last hour"


class LogViewerScreen(ModalScreen[None]):
    """One log, read on demand and followed; ``what`` is "job", "pod" or "node"."""

    BINDINGS = bindings(LOG_VIEW_KEYS)
    DEFAULT_CSS = """
    LogViewerScreen { align: center middle; }
    LogViewerScreen > Vertical { width: 98%; height: 94%; border: thick $primary; background: $surface; }
    LogViewerScreen #log-title { text-style: bold; width: 100%; }
    LogViewerScreen #log-status { width: 100%; color: $text-muted; }
    LogViewerScreen #log-search { display: none; }
    LogViewerScreen #log-search.shown { display: block; }
    """

    def __init__(self, port: UiPort, what: str, *, job: SlurmJob | None = None, pod: Pod | None = None,
                 nodes: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.port = port
        self.what = what
        self.job = job
        self.pod = pod
        self.nodes = nodes
        self.lines: deque[str] = deque(maxlen=MAX_LOG_LINES)  # what was read (tests read it)
        self.search = ""
        self.following = False
        self.status = "loading…"
        self.error: str | None = None
        self.status_where = ""  # where the lines come from, and notes on the last read
        self.loads = 0  # reads finished (tests wait on it)
        # job
        self.paths: JobOutputPaths | None = None
        self.stream = "stdout"
        self.file_offset: int | None = None
        # pod
        self.containers: tuple[str, ...] = ()
        self.container: str | None = None
        self.previous = False
        self.since: str | None = None
        # node
        now = port.clock()
        if what == "node":
            self.window_since, self.window_until, self.window_note = window_around(port, nodes, now)
        else:
            self.window_since, self.window_until, self.window_note = now - 3600.0, now, "last hour"
        self.units: tuple[str, ...] = ()
        self.kernel = True
        self._timer: Timer | None = None

    # -- layout ----------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self._title(), id="log-title", markup=False)
            yield Label(self.status, id="log-status", markup=False)
            yield Input(placeholder="search (enter: apply, empty: all lines)", id="log-search")
            yield Log(id="log-body", max_lines=MAX_LOG_LINES, highlight=False, auto_scroll=True)

    def _title(self) -> str:
        if self.what == "job" and self.job is not None:
            return f"output of job {self.job.display_id} ({self.stream})  (esc to close)"
        if self.what == "pod" and self.pod is not None:
            c = f" [{self.container}]" if self.container else ""
            return f"log of pod {self.pod.namespace}/{self.pod.name}{c}{' (previous)' if self.previous else ''}"
        return f"kernel/journal log of {','.join(self.nodes[:4])}{'…' if len(self.nodes) > 4 else ''}"

    def on_mount(self) -> None:
        self.query_one("#log-body", Log).focus()  # not the hidden search box: its letters are the viewer's keys
        self._reload()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Each log kind shows only its own keys."""
        only = {"toggle_stream": "job", "next_container": "pod", "toggle_previous": "pod",
                "cycle_window": "node", "edit_units": "node"}
        return self.what == only[action] if action in only else True

    # -- reads -----------------------------------------------------------------------------------
    def _reload(self) -> None:
        """Read again from the start (a new stream, container, window)."""
        self.lines.clear()
        self.file_offset, self.since = None, None
        self._read(more=False)

    @work(exclusive=True, group="log-read", description="log read")
    async def _read(self, more: bool) -> None:
        try:
            if self.what == "job":
                new = await self._read_job(more)
            elif self.what == "pod":
                new = await self._read_pod(more)
            else:
                new = await self._read_node(more)
        except Exception as exc:  # said on the screen, never raised into the UI
            self.error = clean_text(f"{type(exc).__name__}: {exc}")
            new = []
        self.lines.extend(new)
        self.loads += 1
        self._draw(appended=new if more else None)

    async def _read_job(self, more: bool) -> list[str]:
        assert self.job is not None
        if self.paths is None:
            self.paths = await self.port.logs.job_output_paths(self.job.display_id)
            if self.paths is None:
                self.error = f"Slurm does not know job {self.job.display_id} (or no Slurm source is configured)"
                return []
        path = self.paths.stdout if self.stream == "stdout" else (self.paths.stderr or self.paths.stdout)
        host = self.port.logs.log_host(self.paths.host)
        if path is None or host is None:
            self.error = "the job has no output file yet (pending: no batch host)" if host is None else \
                f"the job has no {self.stream} file"
            return []
        chunk = await self.port.logs.read_file(host, path, self.file_offset if more else None)
        where = chunk.where + ("" if self.stream == "stdout" or self.paths.stderr else " (stderr goes to stdout)")
        if chunk.error is not None:
            self.error = f"{where}: {chunk.error}"
            return []
        self.error = None
        self.file_offset = chunk.offset
        notes = [where]
        if chunk.cut:
            notes.append("older lines left out (read bound)")
        if chunk.restarted:
            notes.append("file truncated or replaced: read again")
        self.status_where = "; ".join(notes)
        return list(chunk.lines)

    async def _read_pod(self, more: bool) -> list[str]:
        assert self.pod is not None
        if not self.containers:
            try:
                self.containers = await self.port.logs.pod_containers(self.pod.namespace, self.pod.name)
            except Exception:
                self.containers = ()
        got = await self.port.logs.pod_log_lines(self.pod.namespace, self.pod.name, self.container,
                                                 previous=self.previous, since=self.since if more else None)
        if got is None:
            self.error = "no configured source can show pod logs"
            return []
        lines, self.since = got
        self.error = None
        self.status_where = f"{self.pod.namespace}/{self.pod.name}" + (f" [{self.container}]" if self.container else "")
        if self.pod.reason == "CrashLoopBackOff" and not self.previous:
            self.status_where += "; CrashLoopBackOff: p shows the previous container's log"
        return lines

    async def _read_node(self, more: bool) -> list[str]:
        until = self.port.clock() if more else self.window_until
        since = self.window_until if more else self.window_since
        read = await self.port.logs.journal(self.nodes, since, until, kernel=self.kernel, units=self.units)
        if read is None:
            self.error = "no SSH source configured: cannot read node journals"
            return []
        self.error = None
        if more:
            self.window_until = until
            if not read.lines and not any(o.error for o in read.outputs):
                return []
        span = f"{time.strftime('%H:%M:%S', time.localtime(since))}–{time.strftime('%H:%M:%S', time.localtime(until))}"
        self.status_where = f"{read.where}  {span} ({self.window_note}); {read.added_events} line(s) added to events"
        return read.folded.splitlines()

    # -- drawing ---------------------------------------------------------------------------------
    def shown(self) -> list[str]:
        """The lines on screen: all, or those holding the search text (case-insensitive)."""
        if not self.search:
            return list(self.lines)
        s = self.search.lower()
        return [ln for ln in self.lines if s in ln.lower()]

    def _draw(self, appended: list[str] | None = None) -> None:
        log = self.query_one("#log-body", Log)
        if appended is None:
            log.clear()
            log.write_lines(self.shown())
        else:
            s = self.search.lower()
            log.write_lines([ln for ln in appended if not s or s in ln.lower()])
        parts = [self.error] if self.error else [self.status_where]
        parts.append(f"{len(self.lines)} line(s)")
        if self.search:
            parts.append(f"search {self.search!r}: {len(self.shown())} match(es)")
        parts.append("following" if self.following else "f: follow")
        self.status = "  |  ".join(p for p in parts if p)
        self.query_one("#log-status", Label).update(self.status)
        self.query_one("#log-title", Label).update(self._title())

    # -- keys ------------------------------------------------------------------------------------
    def action_toggle_follow(self) -> None:
        self.following = not self.following
        if self.following:
            self._timer = self.set_interval(FOLLOW_S, self._follow_tick)
        elif self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._draw(appended=[])

    def _follow_tick(self) -> None:
        self._read(more=True)

    def action_start_search(self) -> None:
        box = self.query_one("#log-search", Input)
        box.add_class("shown")
        box.value = self.search
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        box = self.query_one("#log-search", Input)
        value = clean_text(event.value.strip())
        if box.placeholder.startswith("units"):
            names = [u for u in value.replace(",", " ").split() if u]
            self.kernel = not names or "kernel" in names
            self.units = tuple(u for u in names if u != "kernel")
            box.placeholder = "search (enter: apply, empty: all lines)"
            box.remove_class("shown")
            self.query_one("#log-body", Log).focus()
            self._reload()
            return
        self.search = value
        box.remove_class("shown")
        self.query_one("#log-body", Log).focus()
        self._draw()

    def action_toggle_stream(self) -> None:
        self.stream = "stderr" if self.stream == "stdout" else "stdout"
        self._reload()

    def action_next_container(self) -> None:
        if not self.containers:
            self.notify("no other container known", timeout=2)
            return
        names = list(self.containers)
        i = names.index(self.container) + 1 if self.container in names else 1
        self.container = names[i % len(names)]
        self._reload()

    def action_toggle_previous(self) -> None:
        self.previous = not self.previous
        self._reload()

    def action_cycle_window(self) -> None:
        now = self.port.clock()
        width = self.window_until - self.window_since
        nxt = next((w for w in WINDOWS_S if w > width + 1), WINDOWS_S[0])
        self.window_since, self.window_until, self.window_note = now - nxt, now, f"last {_span(nxt)}"
        self._reload()

    def action_edit_units(self) -> None:
        box = self.query_one("#log-search", Input)
        box.placeholder = "units, e.g. kernel nvidia-fabricmanager slurmd (enter: read)"
        box.value = " ".join((("kernel",) if self.kernel else ()) + self.units)
        box.add_class("shown")
        box.focus()

    def action_close(self) -> None:
        box = self.query_one("#log-search", Input)
        if box.has_class("shown"):
            box.remove_class("shown")
            self.query_one("#log-body", Log).focus()
            return
        if self._timer is not None:
            self._timer.stop()
        self.dismiss(None)


def _span(seconds: float) -> str:
    return f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds / 60:g} min"
