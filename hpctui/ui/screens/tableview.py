"""A full-screen table view pushed over the dashboard: title, table, a ``/`` filter line, footer.

The partitions, drained-nodes and audit views share it. ``escape`` closes the filter when it is
open and goes back otherwise; ``j``/``k`` move the cursor like the arrow keys.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, Label, Static

from hpctui.ui.widgets.footer import KeyBar
from hpctui.ui.widgets.vtable import VirtualTable

if TYPE_CHECKING:
    from hpctui.core.runtime import Runtime
    from hpctui.model import ClusterSnapshot

THREAD_ABOVE = 2048  # nodes: above this, views that can build their rows off the UI thread do (as :gpus)


class TableViewScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("j", "cursor(1)", "Down", show=False),
        Binding("k", "cursor(-1)", "Up", show=False),
    ]
    DEFAULT_CSS = """
    TableViewScreen > #view-title { width: 100%; height: 1; text-style: bold; background: $panel; padding: 0 1; }
    TableViewScreen > #view-info { width: 100%; height: auto; padding: 0 1; color: $text-muted; }
    TableViewScreen > #view-filter { display: none; height: 3; }
    TableViewScreen > #view-filter.-open { display: block; }
    TableViewScreen > VirtualTable { height: 1fr; }
    """
    title_text = ""
    rows_in_thread = False  # True: build_rows is pure (thread-safe) and show_rows draws them
    filter_placeholder = "filter (substring, re:regex, a hostlist; ! inverts)"

    def __init__(self, runtime: Runtime, table: VirtualTable[Any]) -> None:
        super().__init__()
        self.runtime = runtime
        self.table = table
        self.table.filter_opener = self._open_filter
        self.snapshot: ClusterSnapshot | None = None
        self.info_text = ""
        self._request = 0

    def compose(self) -> ComposeResult:
        yield Label(self.title_text, id="view-title", markup=False)
        yield Static("", id="view-info", markup=False)
        yield Input(placeholder=self.filter_placeholder, id="view-filter")
        yield self.table
        yield KeyBar()

    def on_mount(self) -> None:
        self.table.focus()
        self.update_snapshot(self.runtime.store.snapshot())

    def update_snapshot(self, snapshot: ClusterSnapshot) -> None:
        """New data from the store (HpcApp.refresh_from_store calls this on every stacked screen)."""
        self.snapshot = snapshot
        self._request += 1
        if not self.rows_in_thread or len(snapshot.nodes) < THREAD_ABOVE:
            self.refresh_rows()
            return
        # a big cluster: fold hostlists and count in a worker thread, draw the newest answer only
        job = partial(self._rows_thread, snapshot, self._request)
        self.run_worker(job, name="view-rows", group="view-rows", description="view rows", thread=True,
                        exclusive=True)

    def _rows_thread(self, snapshot: ClusterSnapshot, request: int) -> None:
        rows = self.build_rows(snapshot)
        self.app.call_from_thread(self._apply_rows, rows, request)

    def _apply_rows(self, rows: list[Any], request: int) -> None:
        if request == self._request and self.is_attached:
            self.show_rows(rows)

    def refresh_rows(self) -> None:
        """Rebuild the rows from ``self.snapshot`` on this thread (views may override)."""
        if self.snapshot is not None:
            self.show_rows(self.build_rows(self.snapshot))

    def build_rows(self, snapshot: ClusterSnapshot) -> list[Any]:  # pragma: no cover - views override it
        raise NotImplementedError

    def show_rows(self, rows: list[Any]) -> None:  # pragma: no cover - views override it
        raise NotImplementedError

    def set_info(self, text: str) -> None:
        self.info_text = text
        for box in self.query("#view-info").results(Static):  # none before compose
            box.update(text)

    # -- keys -------------------------------------------------------------------------
    def action_cursor(self, delta: int) -> None:
        self.table.action_move(delta)

    def action_back(self) -> None:
        box = self.query_one("#view-filter", Input)
        if box.has_class("-open") and (box.has_focus or box.value):
            box.value = ""
            box.remove_class("-open")
            self.apply_filter("")
            self.table.focus()
            return
        self.app.pop_screen()

    def _open_filter(self) -> Widget | None:
        box = self.query_one("#view-filter", Input)
        box.add_class("-open")
        box.focus()
        return box

    @on(Input.Changed, "#view-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.apply_filter(event.value)

    @on(Input.Submitted, "#view-filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        self.table.focus()

    def apply_filter(self, text: str) -> None:
        self.table.set_filter(text)
