"""The Events view: the store's events (Xid, state changes, K8s warnings, link and mount
changes) and the actions taken (live, plus earlier ones from the audit trail) as one
timeline, newest first. ``a`` toggles the selected node / all nodes; ``/`` filters (a
job id, a node, a word); ``enter`` selects the event's node."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
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


EVENT_COLUMNS: list[Column[Event]] = [
    Column("time", "TIME (UTC)", 14, lambda e: clock_time(e.time), lambda e: e.time),
    Column("severity", "SEV", 5, lambda e: SEVERITY_WORD.get(e.severity, "?"), lambda e: -e.severity,
           style=lambda e: SEVERITY_VAR[e.severity]),
    Column("source", "SOURCE", 6, lambda e: e.source, lambda e: e.source),
    Column("object", "OBJECT", 24, lambda e: e.object, lambda e: e.object),
    Column("message", "MESSAGE", 80, lambda e: e.message, lambda e: e.message),
]


def _search(event: Event) -> str:
    return f"{event.source} {event.object} {event.message} {SEVERITY_WORD.get(event.severity, '')}"


class EventsTable(VirtualTable[Event]):
    BINDINGS = [Binding("enter", "select_node", "Select node")]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(EVENT_COLUMNS, row_key=lambda e: f"{e.time}|{e.object}|{e.message}", search_text=_search,
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
        return events
