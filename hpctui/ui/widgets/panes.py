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

from hpctui.findings.health import Finding, Thresholds
from hpctui.findings.index import FindingsIndex, findings_for
from hpctui.model import ClusterSnapshot, Severity
from hpctui.ui.keys import LINKS_KEYS, bindings
from hpctui.ui.literal import literal
from hpctui.ui.widgets.borders import set_border_text
from hpctui.ui.widgets.tables import LinkRow, MountRow, link_row, mount_row, severity_first
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
        self.border_title = literal(title)
        self._title = title
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
        title = " · ".join(parts)
        if title != self._title:  # setting a border title repaints the whole pane: only on change
            self._title = title
            set_border_text(self, Content(title))  # plain text: filters and errors may hold "["

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


class NodeRows(Generic[R]):
    """Rows of one per-node part (IB ports, mounts), problems first, kept across snapshots.

    A node's rows are rebuilt only when its tuple of ports/mounts or its findings (from the
    shared :func:`~hpctui.findings.index.findings_for`) are other objects than last time; every
    other node's row objects are reused, so the table re-formats only rows that changed.
    """

    def __init__(self, part: str, obj_key: Callable[[Any], str],
                 make_row: Callable[[Any, Sequence[Finding]], R], thresholds: Thresholds | None = None) -> None:
        self.part = part
        self.obj_key = obj_key
        self.make_row = make_row
        self.thresholds = thresholds or Thresholds()
        self._cache: dict[str, tuple[object, object, list[R], bool]] = {}

    def _build(self, index: FindingsIndex, items: Sequence[Any],
               findings: tuple[Finding, ...]) -> tuple[object, object, list[R], bool]:
        if findings:
            rows = [self.make_row(item, index.by_object(self.obj_key(item))) for item in items]
        else:
            rows = [self.make_row(item, ()) for item in items]
        problem = any(getattr(r, "severity", Severity.OK) > Severity.OK for r in rows)
        return items, findings, rows, problem

    def __call__(self, snapshot: ClusterSnapshot, node: str | None) -> list[R]:
        index = findings_for(snapshot, self.thresholds)
        per_node: dict[str, Sequence[Any]] = getattr(snapshot, self.part)
        cache = self._cache
        if node is not None:
            items = per_node.get(node, ())
            findings = index.by_node.get(node, ())
            hit = cache.get(node)
            if hit is None or hit[0] is not items or hit[1] is not findings:
                hit = self._build(index, items, findings)
                self._cache = {**cache, node: hit}
            return severity_first(list(hit[2]))
        by_node = index.by_node
        new: dict[str, tuple[object, object, list[R], bool]] = {}
        problems: list[R] = []
        healthy: list[R] = []
        extend = healthy.extend
        empty: tuple[Finding, ...] = ()
        # Written out: at 16k nodes (131k IB ports) this loop runs on every poll.
        for name, items in per_node.items():
            findings = by_node.get(name, empty)
            hit = cache.get(name)
            if hit is None or hit[0] is not items or hit[1] is not findings:
                hit = self._build(index, items, findings)
            new[name] = hit
            if not hit[3]:
                extend(hit[2])
            else:
                for r in hit[2]:
                    (problems if getattr(r, "severity", Severity.OK) > Severity.OK else healthy).append(r)
        self._cache = new  # swapped whole: a concurrent worker sees the old or the new map
        problems.sort(key=lambda r: -getattr(r, "severity", Severity.OK))
        problems.extend(healthy)
        return problems


def ib_node_rows(thresholds: Thresholds | None = None) -> NodeRows[LinkRow]:
    return NodeRows("ib", lambda p: f"ib/{p.node}/{p.device}:{p.port}", link_row, thresholds)


def mount_node_rows(thresholds: Thresholds | None = None) -> NodeRows[MountRow]:
    return NodeRows("mounts", lambda m: f"mount/{m.node}:{m.target}", mount_row, thresholds)


def ib_rows(snapshot: ClusterSnapshot, node: str | None, thresholds: Thresholds | None = None) -> list[Any]:
    return ib_node_rows(thresholds)(snapshot, node)


def mount_rows(snapshot: ClusterSnapshot, node: str | None, thresholds: Thresholds | None = None) -> list[Any]:
    return mount_node_rows(thresholds)(snapshot, node)
