"""Bordered panes around the tables: title with counts, the ``/`` filter input,
and the node/cluster scope toggle of the IB and mount panes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Generic, TypeVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Input

from hpctui.model import ClusterSnapshot
from hpctui.ui.keys import LINKS_KEYS, bindings
from hpctui.ui.widgets.tables import link_row, mount_row, severity_first
from hpctui.ui.widgets.vtable import VirtualTable

R = TypeVar("R")
THREAD_ABOVE = 2048  # nodes: cluster-wide rows of bigger clusters are built in a worker thread


class FilterInput(Input):
    """The pane's filter line; escape clears it and gives focus back to the table."""

    BINDINGS = [Binding("escape", "close", "Close filter", show=False)]

    def __init__(self, *, placeholder: str = "", classes: str | None = None) -> None:
        # No select-all on focus: keys fed in before the focus event lands must not be replaced.
        super().__init__(placeholder=placeholder, classes=classes, select_on_focus=False)

    def action_close(self) -> None:
        self.value = ""
        self.add_class("-hidden")
        pane = self.parent
        if isinstance(pane, TablePane):
            self.screen.set_focus(pane.table)


class TablePane(Vertical):
    """A titled pane holding one VirtualTable and its (hidden until ``/``) filter."""

    def __init__(self, title: str, table: VirtualTable[Any], *, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.title = title
        self.table = table
        self.border_title = title
        self.data_status = ""  # e.g. "✗ stale 42s: slurmctld unreachable", shown in the title
        table.filter_opener = self.open_filter

    def compose(self) -> ComposeResult:
        yield self.table
        yield FilterInput(placeholder="filter… (enter: keep, esc: clear)", classes="filter -hidden")

    def set_rows(self, rows: Sequence[Any]) -> None:
        self.table.set_rows(rows)
        self.update_title()

    def update_title(self, extra: str = "") -> None:
        table = self.table
        shown, total = len(table.view), len(table.rows)
        count = f"{total}" if shown == total else f"{shown}/{total}"
        parts = [f"{self.title} ({count})"]
        if self.data_status:
            parts.append(self.data_status)
        if extra:
            parts.append(extra)
        if table.filter_text:
            parts.append(f"/{table.filter_text}" + (f" ({table.filter_error})" if table.filter_error else ""))
        if table.marked:
            parts.append(f"{len(table.marked)} marked")
        self.border_title = Content(" · ".join(parts))  # plain text: filters and errors may hold "["

    def open_filter(self) -> FilterInput:
        """Show the filter and focus it *now* (not after a refresh, as ``focus()`` would), so
        every later key goes to it; the table feeds it the keys already queued behind ``/``
        ("/xyz" must filter for "xyz", never cancel a job)."""
        box = self.query_one(FilterInput)
        box.remove_class("-hidden")
        self.screen.set_focus(box)
        return box

    @on(VirtualTable.FilterRequested)
    def _show_filter(self, event: VirtualTable.FilterRequested) -> None:
        event.stop()
        self.open_filter()

    @on(Input.Changed)
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.table.set_filter(event.value)
        self.update_title()

    @on(Input.Submitted)
    def _filter_done(self, event: Input.Submitted) -> None:
        event.stop()
        if not event.value:
            event.input.add_class("-hidden")
        self.table.focus()

    @on(VirtualTable.Highlighted)
    def _highlighted(self, event: VirtualTable.Highlighted) -> None:
        if self.table.marked:
            self.update_title()


class ScopedPane(TablePane, Generic[R]):
    """IB links or mounts: problems first, for the selected node or the whole cluster (``a``)."""

    BINDINGS = bindings(LINKS_KEYS)

    def __init__(self, title: str, table: VirtualTable[Any], rows_for: Callable[[ClusterSnapshot, str | None], list[R]],
                 *, scope_all: bool = True, id: str | None = None) -> None:
        super().__init__(title, table, id=id)
        self.rows_for = rows_for
        self.scope_all = scope_all
        self.node: str | None = None
        self._snapshot: ClusterSnapshot | None = None
        self._request = 0

    def show(self, snapshot: ClusterSnapshot | None = None, node: str | None = None) -> None:
        if snapshot is not None:
            self._snapshot = snapshot
        self.node = node
        snap = self._snapshot
        if snap is None:
            return
        self._request += 1
        scope = None if self.scope_all else node
        if scope is not None or len(snap.nodes) < THREAD_ABOVE:
            self.set_rows(self.rows_for(snap, scope))
            return
        # Health of every port of a big cluster takes ~0.5 s: compute it off the event
        # loop on the frozen snapshot; only the newest request is applied.
        job = partial(self._rows_thread, snap, scope, self._request)
        self.run_worker(job, name=f"{self.id}-rows", group=f"{self.id}-rows", description=f"{self.title} rows",
                        thread=True, exclusive=True)  # explicit description: repr(job) would format the snapshot

    def _rows_thread(self, snapshot: ClusterSnapshot, scope: str | None, request: int) -> None:
        rows = self.rows_for(snapshot, scope)
        self.app.call_from_thread(self._apply_rows, rows, request)

    def _apply_rows(self, rows: list[R], request: int) -> None:
        if request == self._request:
            self.set_rows(rows)

    def update_title(self, extra: str = "") -> None:
        scope = "all nodes" if self.scope_all else (self.node or "no node")
        super().update_title(extra or scope)

    def action_toggle_scope(self) -> None:
        self.scope_all = not self.scope_all
        self.show(None, self.node)


def ib_rows(snapshot: ClusterSnapshot, node: str | None) -> list[Any]:
    ports = snapshot.ib.get(node, ()) if node is not None else [p for ps in snapshot.ib.values() for p in ps]
    return severity_first([link_row(p) for p in ports])


def mount_rows(snapshot: ClusterSnapshot, node: str | None) -> list[Any]:
    mounts = snapshot.mounts.get(node, ()) if node is not None else [m for ms in snapshot.mounts.values() for m in ms]
    return severity_first([mount_row(m) for m in mounts])
