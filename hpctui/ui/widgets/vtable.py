"""A small virtual table: a ``ScrollView`` over a plain list that formats only the visible rows.

``DataTable`` measures every cell up front (15.8 s for 100k jobs, DESIGN.md); this
widget keeps the model rows as they are, sorts and filters the list in Python,
and turns a row into text only when it scrolls into view. Formatted rows are
cached per position until the data, sort, filter, size or theme changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.theme import Theme

from hpctui.ui.keys import TABLE_KEYS, bindings
from hpctui.ui.palette import Palette

T = TypeVar("T")


def na_last(value: Any) -> tuple[bool, Any]:
    """Sort key wrapper: missing values sort after real ones instead of raising."""
    return (value is None, value if value is not None else 0)


def _find_key(view: Sequence[T], row_key: Callable[[T], str], key: str, near: int) -> int:
    """Index of the row with ``key``: rows near ``near`` first (a few problem rows came or went
    above it), then the whole view; ``near`` (clamped) when the key is gone."""
    n = len(view)
    lo, hi = max(0, near - 64), min(n, near + 65)
    for i in range(lo, hi):
        if row_key(view[i]) == key:
            return i
    for i in range(n):
        if (i < lo or i >= hi) and row_key(view[i]) == key:
            return i
    return min(near, n - 1)


@dataclass(frozen=True, slots=True)
class Column(Generic[T]):
    """How one column reads a row. ``style`` returns a theme variable name for the cell."""

    key: str
    title: str
    width: int
    text: Callable[[T], str]
    sort_key: Callable[[T], Any] | None = None
    align: Literal["left", "right"] = "left"
    style: Callable[[T], str | None] | None = None


_NAV: list[BindingType] = [
    Binding("up", "move(-1)", show=False), Binding("down", "move(1)", show=False),
    Binding("pageup", "page(-1)", show=False), Binding("pagedown", "page(1)", show=False),
    Binding("home", "jump(0)", show=False), Binding("end", "jump(-1)", show=False),
    Binding("left", "scroll_left", show=False), Binding("right", "scroll_right", show=False),
]


class VirtualTable(ScrollView, Generic[T], can_focus=True):
    """Rows of any type, a header line, a cursor, optional marks, sort and filter."""

    BINDINGS = _NAV + bindings(TABLE_KEYS)

    class Highlighted(Message):
        def __init__(self, table: VirtualTable[Any], key: str | None) -> None:
            super().__init__()
            self.table = table
            self.key = key

        @property
        def control(self) -> VirtualTable[Any]:
            return self.table

    class FilterRequested(Message):
        """The user pressed ``/``: the pane around the table shows its filter input."""

        def __init__(self, table: VirtualTable[Any]) -> None:
            super().__init__()
            self.table = table

        @property
        def control(self) -> VirtualTable[Any]:
            return self.table

    def __init__(self, columns: Sequence[Column[T]], *, row_key: Callable[[T], str],
                 search_text: Callable[[T], str] | None = None, row_style: Callable[[T], str | None] | None = None,
                 markable: bool = False, sort: str | None = None, reverse: bool = False,
                 id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.columns = list(columns)
        self.row_key = row_key
        self.search_text = search_text
        self.row_style = row_style
        self.markable = markable
        self.sort_column: str | None = sort
        self.sort_reverse = reverse
        self.filter_text = ""
        self.rows: list[T] = []  # as given
        self._sorted: list[T] = []
        self._haystack: list[str] | None = None  # lower-cased search text of _sorted, built on first filter
        self.view: list[T] = []  # sorted + filtered: what is drawn
        self.cursor = 0
        self.marked: set[str] = set()
        self._source_rows: Sequence[T] | None = None
        self._lines: dict[int, Strip] = {}
        self._palette: Palette | None = None
        self._styles: dict[str | None, Style] = {}
        self._base_style = Style()
        gutter = 2 if markable else 0
        self._gutter = gutter
        self._width = gutter + sum(c.width + 1 for c in self.columns)

    # -- data down ------------------------------------------------------------
    def set_rows(self, rows: Sequence[T]) -> None:
        """Replace the rows; keeps sort, filter, cursor (by key) and the marks that still exist.
        The same sequence object again (a snapshot where only other parts changed) is a no-op."""
        if rows is self._source_rows:
            return
        self._source_rows = rows
        key = self.cursor_key
        self.rows = rows if isinstance(rows, list) else list(rows)
        if self.marked:
            row_key = self.row_key
            self.marked &= {row_key(r) for r in self.rows}
        self._resort()
        self._refilter(keep=key, redraw_changed_only=True)

    def sort_by(self, column: str | None, reverse: bool | None = None) -> None:
        if reverse is None:
            reverse = (not self.sort_reverse) if column == self.sort_column else False
        self.sort_column, self.sort_reverse = column, reverse
        key = self.cursor_key
        self._resort()
        self._refilter(keep=key)

    def set_filter(self, text: str) -> None:
        text = text.strip().lower()
        if text == self.filter_text:
            return
        key = self.cursor_key
        self.filter_text = text
        self._refilter(keep=key)

    def _resort(self) -> None:
        column = next((c for c in self.columns if c.key == self.sort_column), None)
        if column is None:
            self._sorted = list(self.rows)
        else:
            sort_key = column.sort_key or column.text
            self._sorted = sorted(self.rows, key=sort_key, reverse=self.sort_reverse)
        self._haystack = None

    def _refilter(self, keep: str | None = None, redraw_changed_only: bool = False) -> None:
        needle = self.filter_text
        if not needle:
            self.view = self._sorted
        else:
            if self._haystack is None:
                text = self.search_text or (lambda r: " ".join(c.text(r) for c in self.columns))
                self._haystack = [text(r).lower() for r in self._sorted]
            self.view = [r for r, h in zip(self._sorted, self._haystack, strict=True) if needle in h]
        old_cursor = self.cursor
        if keep is not None:
            row_key = self.row_key
            current = self.view[self.cursor] if 0 <= self.cursor < len(self.view) else None
            if current is None or row_key(current) != keep:  # the usual case (same place) is O(1)
                self.cursor = _find_key(self.view, row_key, keep, self.cursor)
        self.cursor = max(0, min(self.cursor, len(self.view) - 1))
        self.virtual_size = Size(self._width, len(self.view) + 1)
        if redraw_changed_only and self._lines and self.is_mounted:
            self._redraw_changed(old_cursor)
            return
        self._lines.clear()
        self.refresh()

    def _redraw_changed(self, old_cursor: int) -> None:
        """New rows, same sort and filter: re-format the visible rows and redraw only the lines
        whose text or style changed, so a table where two values moved writes two lines."""
        old = self._lines
        self._lines = lines = {}
        top = int(self.scroll_offset.y)
        height = max(1, self.scrollable_content_region.height - 1)  # the header takes one line
        view = self.view
        for index in range(top, min(len(view), top + height)):
            strip = lines[index] = self._format_row(view[index])
            if old.get(index) != strip:
                self.refresh_line(index + 1)
        if old and max(old) >= len(view) and len(view) < top + height:  # rows past the new end: blank them
            self.refresh_lines(len(view) + 1, top + height - len(view))
        for index in {old_cursor, self.cursor} if old_cursor != self.cursor else ():
            if top <= index < top + height:  # off-screen lines would repaint the scrollbar
                self.refresh_line(index + 1)

    @property
    def cursor_row(self) -> T | None:
        return self.view[self.cursor] if 0 <= self.cursor < len(self.view) else None

    @property
    def cursor_key(self) -> str | None:
        row = self.cursor_row
        return None if row is None else self.row_key(row)

    def targets(self) -> tuple[str, ...]:
        """Marked rows' keys (in view order), or the cursor row's key."""
        if self.marked:  # only what the user can see: marks hidden by a filter do not act
            keys = [self.row_key(r) for r in self.view]
            return tuple(k for k in keys if k in self.marked)
        key = self.cursor_key
        return (key,) if key is not None else ()

    # -- drawing --------------------------------------------------------------
    def on_mount(self) -> None:
        self._build_styles()
        self.app.theme_changed_signal.subscribe(self, self._on_theme_changed)

    def _on_theme_changed(self, theme: Theme) -> None:
        self._build_styles()
        self._lines.clear()
        self.refresh()

    def _build_styles(self) -> None:
        self._palette = Palette.from_app(self.app)
        self._styles = {None: Style()}
        self._base_style = self.rich_style  # segments carry no background of their own

    def on_resize(self) -> None:
        self._base_style = self.rich_style

    def _style(self, name: str | None) -> Style:
        style = self._styles.get(name)
        if style is None:
            palette = self._palette or Palette.from_app(self.app)
            style = self._styles[name] = palette.fg(name) if name else Style()
        return style

    def _format_row(self, row: T) -> Strip:
        segments: list[Segment] = []
        if self._gutter:
            segments.append(Segment("• " if self.row_key(row) in self.marked else "  ", self._style("accent")))
        row_style = self._style(self.row_style(row) if self.row_style else None)
        for column in self.columns:
            text = column.text(row)
            width = column.width
            if len(text) > width:
                text = text[: width - 1] + "…" if width > 1 else text[:width]
            text = text.rjust(width) if column.align == "right" else text.ljust(width)
            cell_style = row_style
            if column.style is not None:
                name = column.style(row)
                if name:
                    cell_style = self._style(name)
            segments.append(Segment(text + " ", cell_style))
        return Strip(segments, self._width).apply_style(self._base_style)

    def _header(self) -> Strip:
        segments: list[Segment] = []
        if self._gutter:
            segments.append(Segment("  "))
        palette = self._palette or Palette.from_app(self.app)
        base = palette.fg("primary", bold=True)
        for column in self.columns:
            title = column.title
            if column.key == self.sort_column:
                title = f"{title}{'▼' if self.sort_reverse else '▲'}"
            title = title[: column.width]
            title = title.rjust(column.width) if column.align == "right" else title.ljust(column.width)
            segments.append(Segment(title + " ", base))
        return Strip(segments, self._width).apply_style(self._base_style)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        if y == 0:
            strip = self._header()
        else:
            index = scroll_y + y - 1
            if index >= len(self.view):
                return Strip.blank(0)
            cached = self._lines.get(index)
            if cached is None:
                cached = self._lines[index] = self._format_row(self.view[index])
            strip = cached
            if index == self.cursor:
                palette = self._palette or Palette.from_app(self.app)
                cursor = palette.on("block-cursor-background" if self.has_focus else "panel", bold=self.has_focus)
                strip = strip.extend_cell_length(max(width + scroll_x, self._width)).apply_style(cursor)
        return strip.crop(scroll_x, scroll_x + width)

    def on_focus(self) -> None:
        self._refresh_cursor()

    def on_blur(self) -> None:
        self._refresh_cursor()

    def _refresh_cursor(self) -> None:
        self.refresh_line(self.cursor + 1)

    # -- cursor, marks, sort, filter -----------------------------------------
    def _move_cursor(self, index: int) -> None:
        if not self.view:
            return
        index = max(0, min(len(self.view) - 1, index))
        if index == self.cursor:
            return
        self.refresh_line(self.cursor + 1)
        self.cursor = index
        self.refresh_line(index + 1)
        top = int(self.scroll_offset.y)
        rows = max(1, self.scrollable_content_region.height - 1)
        if index < top:
            self.scroll_to(y=index, animate=False)
        elif index >= top + rows:
            self.scroll_to(y=index - rows + 1, animate=False)
        self.post_message(self.Highlighted(self, self.cursor_key))

    def action_move(self, delta: int) -> None:
        self._move_cursor(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self._move_cursor(self.cursor + direction * max(1, self.scrollable_content_region.height - 2))

    def action_jump(self, where: int) -> None:
        self._move_cursor(0 if where == 0 else len(self.view) - 1)

    def action_cycle_sort(self) -> None:
        keys = [c.key for c in self.columns]
        i = keys.index(self.sort_column) + 1 if self.sort_column in keys else 0
        self.sort_by(keys[i % len(keys)], reverse=False)

    def action_reverse_sort(self) -> None:
        self.sort_by(self.sort_column, reverse=not self.sort_reverse)

    def action_start_filter(self) -> None:
        self.post_message(self.FilterRequested(self))

    def action_toggle_mark(self) -> None:
        key = self.cursor_key
        if key is None or not self.markable:
            return
        self.marked.symmetric_difference_update({key})
        self._lines.pop(self.cursor, None)
        self._move_cursor(self.cursor + 1)
        self.refresh()

    def action_clear_marks(self) -> None:
        if self.marked:
            self.marked.clear()
            self._lines.clear()
            self.refresh()

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:  # header: sort by the clicked column
            x = offset.x + int(self.scroll_offset.x) - self._gutter
            for column in self.columns:
                if x < column.width + 1:
                    self.sort_by(column.key)
                    return
                x -= column.width + 1
            return
        self._move_cursor(int(self.scroll_offset.y) + offset.y - 1)
