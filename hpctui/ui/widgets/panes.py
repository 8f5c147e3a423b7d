"""Bordered panes around the tables: title with counts, the ``/`` filter input,
and the node/cluster scope toggle of the IB and mount panes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from itertools import chain
from operator import itemgetter
from typing import Any, Generic, TypeVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Input
from textual.worker import Worker

from hpctui.core.frame import Frame
from hpctui.findings.health import Finding, Thresholds
from hpctui.findings.index import FindingsIndex
from hpctui.model import ClusterSnapshot, Severity
from hpctui.ui.keys import LINKS_KEYS, bindings
from hpctui.ui.literal import literal
from hpctui.ui.widgets.borders import set_border_text
from hpctui.ui.widgets.tables import LinkRow, MountRow, link_row_maker, mount_row, severity_first
from hpctui.ui.widgets.vtable import VirtualTable
from hpctui.ui.workers import LatestOnly

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

    def __init__(self, title: str, table: VirtualTable[Any], rows_for: Callable[[Frame, str | None], list[R]],
                 *, scope_all: bool = True, id: str | None = None) -> None:
        super().__init__(title, table, id=id)
        self.rows_for = rows_for
        self.scope_all = scope_all
        self.node: str | None = None
        self._frame: Frame | None = None
        self._rows_job: LatestOnly[list[R]] = LatestOnly(self, f"{id}-rows", self.set_rows)

    def show(self, frame: Frame | None = None, node: str | None = None) -> None:
        """Rows of ``frame`` (None: the last one) for ``node`` or, scoped to all, every node."""
        if frame is not None:
            self._frame = frame
        self.node = node
        current = self._frame
        if current is None:
            return
        scope = None if self.scope_all else node
        if scope is not None or len(current.snapshot.nodes) < THREAD_ABOVE:
            self._rows_job.cancel()  # an older cluster-wide answer must not land over these rows
            self.set_rows(self.rows_for(current, scope))
            return
        # Every port of a big cluster takes ~0.5 s: built off the event loop on the frozen frame.
        self._rows_job.run(partial(self.rows_for, current, scope), f"{self.title} rows")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if self._rows_job.take(event):
            event.stop()

    def update_title(self, extra: str = "") -> None:
        scope = "all nodes" if self.scope_all else (self.node or "no node")
        super().update_title(extra or scope)

    def action_toggle_scope(self) -> None:
        self.scope_all = not self.scope_all
        self.show(None, self.node)


class NodeRows(Generic[R]):
    """Rows of one per-node part (IB ports, mounts), problems first, kept across snapshots.

    A node's rows are rebuilt only when its tuple of ports/mounts or its findings (from the
    frame's findings) are other objects than last time; every
    other node's row objects are reused, so the table re-formats only rows that changed.
    """

    def __init__(self, part: str, obj_key: Callable[[Any], str],
                 make_row: Callable[[Any, Sequence[Finding], Any], R], thresholds: Thresholds | None = None,
                 context: Callable[[ClusterSnapshot], object] | None = None) -> None:
        """``make_row(item, findings, ctx)``: ``ctx`` is ``context(snapshot)`` (the fabric for IB ports:
        every row is rebuilt when it is another object), None without one."""
        self.part = part
        self.obj_key = obj_key
        self.make_row = make_row
        self.thresholds = thresholds or Thresholds()  # (kept for callers; the findings come with the frame)
        self.context = context
        self._ctx: object = None
        self._cache: dict[str, _Hit[R]] = {}

    def _build(self, index: FindingsIndex, items: Sequence[Any], findings: tuple[Finding, ...]) -> _Hit[R]:
        # Tuples, not lists: rows are gc=False structs, so the cyclic GC stops tracking these tuples
        # (and the hit holding them) after one look; lists it walks on every full collection, ~40k of
        # them at 16k nodes (about a fifth of that collection's work).
        ctx = self._ctx
        if findings:
            rows = tuple([self.make_row(item, index.by_object(self.obj_key(item)), ctx) for item in items])
        else:
            rows = tuple([self.make_row(item, (), ctx) for item in items])
        if any(getattr(r, "severity", Severity.OK) > Severity.OK for r in rows):
            bad = tuple(r for r in rows if getattr(r, "severity", Severity.OK) > Severity.OK)
            ok = tuple(r for r in rows if getattr(r, "severity", Severity.OK) <= Severity.OK)
            return items, findings, rows, bad, ok
        return items, findings, rows, (), rows

    def __call__(self, frame: Frame, node: str | None) -> list[R]:
        """The rows of ``node`` (None: every node, problems first) in ``frame``."""
        snapshot, index = frame.snapshot, frame.findings
        per_node: dict[str, Sequence[Any]] = getattr(snapshot, self.part)
        if self.context is not None:
            ctx = self.context(snapshot)
            if ctx is not self._ctx:  # another fabric: no row of the old one is kept
                self._ctx, self._cache = ctx, {}
        cache = self._cache
        if node is not None:
            items = per_node.get(node, ())
            findings = index.by_node.get(node, ())
            hit = cache.get(node)
            if hit is None or hit[0] is not items or hit[1] is not findings:
                hit = self._build(index, items, findings)
                self._cache = {**cache, node: hit}
            return severity_first(list(hit[2]))
        # Every node: at 16k nodes (131k IB ports) this runs on every poll, so the loop over the nodes
        # only tests identities (a comprehension); the rows are joined by C code (chain), and only the
        # problem nodes' rows are looked at one by one. Same order as severity_first over every row in
        # node order: the problem rows, worst first (stable), then every OK row in node order.
        get_findings, get_hit, build, empty = index.by_node.get, cache.get, self._build, ()
        new = {name: hit if (hit := get_hit(name)) is not None and hit[0] is items
               and hit[1] is get_findings(name, empty) else build(index, items, get_findings(name, empty))
               for name, items in per_node.items()}
        self._cache = new  # swapped whole: a concurrent worker sees the old or the new map
        problems: list[R] = list(chain.from_iterable(h[3] for h in new.values() if h[3]))
        problems.sort(key=lambda r: -getattr(r, "severity", Severity.OK))
        problems.extend(chain.from_iterable(map(itemgetter(4), new.values())))
        return problems


# A node's rows as last built: (its items, its findings, every row, the problem rows, the OK rows)
_Hit = tuple[object, object, tuple[R, ...], tuple[R, ...], tuple[R, ...]]


def ib_node_rows(thresholds: Thresholds | None = None) -> NodeRows[LinkRow]:
    return NodeRows("ib", lambda p: f"ib/{p.node}/{p.device}:{p.port}", link_row_maker(), thresholds,
                    context=lambda snap: snap.fabric)


def mount_node_rows(thresholds: Thresholds | None = None) -> NodeRows[MountRow]:
    return NodeRows("mounts", lambda m: f"mount/{m.node}:{m.target}", lambda m, f, _ctx: mount_row(m, f), thresholds)


def ib_rows(frame: Frame, node: str | None) -> list[Any]:
    return ib_node_rows()(frame, node)


def mount_rows(frame: Frame, node: str | None) -> list[Any]:
    return mount_node_rows()(frame, node)
