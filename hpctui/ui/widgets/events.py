"""The Events view: the store's events (Xid, state changes, K8s warnings, link and mount
changes) and the actions taken (live, plus earlier ones from the audit trail) as one
timeline, newest first. ``a`` toggles the selected node / all nodes; ``/`` filters (a
job id, a node, a word); ``enter`` selects the event's node.

Repeats are coalesced (:func:`coalesce`): an ECC count that climbs every poll or a port that
goes down and up again is one row per object and kind of message, with how many times and
from when to when, instead of one row each."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from textual.binding import Binding

from hpctui.model import ClusterSnapshot, Event, Severity
from hpctui.model.hostlist import expand
from hpctui.ui.messages import NodeRequested
from hpctui.ui.widgets.panes import ScopedPane
from hpctui.ui.widgets.problems import object_node
from hpctui.ui.widgets.tables import SEVERITY_VAR
from hpctui.ui.widgets.vtable import Column, VirtualTable

SEVERITY_WORD = {Severity.OK: "ok", Severity.INFO: "info", Severity.WARNING: "warn", Severity.ERROR: "error",
                 Severity.CRITICAL: "CRIT"}


def event_nodes(event: Event) -> list[str]:
    """Nodes an event is about: ``gpu/gpu01/3`` → gpu01; an action on ``node/gpu[01-02]`` → both."""
    kind = event.object.split("/", 1)[0]
    if kind in ("job", "action", "pod") or "/" not in event.object:
        return []
    node = object_node(event.object)
    if kind == "node" and "[" in node:
        try:
            return expand(event.object.split("/", 1)[1])
        except ValueError:
            return [node]
    return [node]


def clock_time(t: float) -> str:
    return time.strftime("%m-%d %H:%M:%S", time.gmtime(t))


COALESCE_GAP_S = 3600.0  # a repeat this long after the previous one starts a new row
NO_COALESCE = frozenset({"action", "audit"})  # every admin action keeps its own row


class EventRun(Event, frozen=True, kw_only=True, gc=False):
    """Repeats of one event coalesced into a row: ``time`` and ``message`` are the newest one's,
    ``severity`` the worst, ``first`` the oldest one's time, ``count`` how many there were."""

    first: float
    count: int
    kind: str  # the message with its numbers blanked: what the repeats have in common


@lru_cache(maxsize=8192)
def message_kind(message: str) -> str:
    """``uncorrectable ECC errors: 7 (volatile)`` → ``uncorrectable ECC errors: # (volatile)``."""
    return re.sub(r"\d+(?:\.\d+)?", "#", message)


def coalesce(events: Sequence[Event], gap_s: float = COALESCE_GAP_S) -> list[Event]:
    """``events`` (newest first) with repeats folded: events of one source and object whose
    messages differ only in their numbers, each within ``gap_s`` of the next, become one
    :class:`EventRun`. Admin actions are never folded. Newest first, like the input."""
    out: list[Event] = []
    runs: dict[tuple[str, str, str], int] = {}  # key -> index in out of its open (oldest so far) run
    for e in events:
        if e.source in NO_COALESCE:
            out.append(e)
            continue
        key = (e.source, e.object, message_kind(e.message))
        i = runs.get(key)
        if i is not None:
            run = out[i]
            oldest = run.first if isinstance(run, EventRun) else run.time
            if oldest - e.time <= gap_s:
                count = run.count + 1 if isinstance(run, EventRun) else 2
                out[i] = EventRun(time=run.time, source=run.source, object=run.object,
                                  severity=max(run.severity, e.severity), message=run.message,
                                  first=e.time, count=count, kind=key[2])
                continue
        runs[key] = len(out)
        out.append(e)
    return out


def event_message(event: Event) -> str:
    """The message, after ``×N HH:MM:SS–HH:MM:SS ·`` for a coalesced run."""
    if isinstance(event, EventRun):
        span = f"{clock_time(event.first)[6:]}–{clock_time(event.time)[6:]}"
        return f"×{event.count} {span} · {event.message}"
    return event.message


def event_key(event: Event) -> str:
    """A row's identity: a run keeps its key while it grows (the cursor stays on it)."""
    if isinstance(event, EventRun):
        return f"{event.first}|{event.source}|{event.object}|{event.kind}"
    return f"{event.time}|{event.object}|{event.message}"


EVENT_COLUMNS: list[Column[Event]] = [
    Column("time", "TIME (UTC)", 14, lambda e: clock_time(e.time), lambda e: e.time),
    Column("severity", "SEV", 5, lambda e: SEVERITY_WORD.get(e.severity, "?"), lambda e: -e.severity,
           style=lambda e: SEVERITY_VAR[e.severity]),
    Column("source", "SOURCE", 6, lambda e: e.source, lambda e: e.source),
    Column("object", "OBJECT", 24, lambda e: e.object, lambda e: e.object),
    Column("message", "MESSAGE", 80, event_message, lambda e: e.message),
]


def _search(event: Event) -> str:
    return f"{event.source} {event.object} {event_message(event)} {SEVERITY_WORD.get(event.severity, '')}"


class EventsTable(VirtualTable[Event]):
    BINDINGS = [Binding("enter", "select_node", "Select node")]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(EVENT_COLUMNS, row_key=event_key, search_text=_search,
                         row_style=lambda e: SEVERITY_VAR[e.severity] if e.severity >= Severity.WARNING else None,
                         row_nodes=event_nodes, id=id)

    def action_select_node(self) -> None:
        event = self.cursor_row
        if event is not None:
            nodes = event_nodes(event)
            if nodes:
                self.post_message(NodeRequested(nodes[0]))


class EventsPane(ScopedPane[Event]):
    """Newest first; the node scope follows the heatmap's selection. ``load_history``: earlier
    events (the audit trail's), read once in a worker thread after mount, never on the UI thread."""

    def __init__(self, history: Sequence[Event] = (), *, load_history: Callable[[], Sequence[Event]] | None = None,
                 id: str | None = None) -> None:
        self.history = tuple(history)
        self.load_history = load_history
        super().__init__("Events", EventsTable(id="events"), self._rows, id=id)

    def on_mount(self) -> None:
        if self.load_history is not None:
            self.run_worker(self._read_history, name="events-history", group="events-history", thread=True,
                            exit_on_error=False, description="audit history")

    def _read_history(self) -> None:
        assert self.load_history is not None
        history = tuple(self.load_history())
        self.app.call_from_thread(self._apply_history, history)

    def _apply_history(self, history: tuple[Event, ...]) -> None:
        self.history = (*history, *self.history)
        self.show(None, self.node)

    def _rows(self, snapshot: ClusterSnapshot, node: str | None) -> list[Any]:
        events = [*self.history, *snapshot.events]
        if node is not None:
            events = [e for e in events if node in event_nodes(e)]
        events.sort(key=lambda e: e.time, reverse=True)
        return coalesce(events)
