"""A small virtual table: a ``ScrollView`` over a plain list that formats only the visible rows.

``DataTable`` measures every cell up front (15.8 s for 100k jobs, DESIGN.md); this
widget keeps the model rows as they are, sorts and filters the list in Python,
and turns a row into text only when it scrolls into view. Formatted rows are
cached per position until the data, sort, filter, size or theme changes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Generic, Literal, TypeVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.actions import SkipAction
from textual.binding import Binding, BindingType
from textual.color import Color
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.theme import Theme
from textual.widget import Widget
from textual.widgets import Input

from hpctui.model.hostlist import HostlistError, expand, is_valid_hostname
from hpctui.ui.contrast import readable
from hpctui.ui.fmt import elide
from hpctui.ui.keys import TABLE_KEYS, bindings, move_bindings
from hpctui.ui.palette import Palette

T = TypeVar("T")
MEASURE_ROWS = 256  # rows of a new set measured for the column widths (the top of the table as sorted)


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
    """How one column reads a row. ``style`` returns a theme variable name for the cell;
    ``width`` is the width before any row is seen (then the table sizes it by its content);
    ``elide`` how a cell too long for the column is shortened (see :func:`hpctui.ui.fmt.elide`)."""

    key: str
    title: str
    width: int
    text: Callable[[T], str]
    sort_key: Callable[[T], Any] | None = None
    align: Literal["left", "right"] = "left"
    style: Callable[[T], str | None] | None = None
    elide: Literal["end", "middle", "list"] = "end"


@dataclass(frozen=True, slots=True)
class Fit:
    """How a column behaves when the table is narrower or wider than the columns' widths.

    ``priority``: higher survives longer (columns are shrunk, then dropped, lowest first);
    ``min_width``: how far the column may shrink before it is dropped (None: not at all, the
    column is shown whole or not at all: identifiers, times, hostlists, units);
    ``grow``: its share of spare width (0: never wider than its content)."""

    priority: int = 50
    min_width: int | None = None
    grow: int = 0


DEFAULT_FIT = Fit()


LOW_VALUE = 50  # priority below which a column gives its place to a cut column that matters more


def fit_columns(columns: Sequence[Column[T]], fit: Mapping[str, Fit], avail: int,
                gutter: int = 0, natural: Mapping[str, int] | None = None) -> list[tuple[Column[T], int]]:
    """(column, width) pairs for ``avail`` cells. Each column wants its ``natural`` width (its
    content's, see ``VirtualTable``; ``Column.width`` when not known). Too narrow, the
    lowest-priority columns shrink to their ``min_width`` and then drop out (rightmost first
    among equals); a column without a ``min_width`` is never shrunk, only dropped. While a
    column that matters (priority LOW_VALUE and up) is still cut, low-value columns (below
    LOW_VALUE) drop out for it, lowest first. Wider, the ``grow`` columns share the spare cells. Never drops the last column."""
    def prio(c: Column[T]) -> int:
        return fit.get(c.key, DEFAULT_FIT).priority

    def rank(c: Column[T]) -> tuple[int, int]:
        return (prio(c), -columns.index(c))

    def want(c: Column[T]) -> int:
        return c.width if natural is None else natural.get(c.key, c.width)

    def least(c: Column[T]) -> int:
        m = fit.get(c.key, DEFAULT_FIT).min_width
        return want(c) if m is None else min(m, want(c))

    kept = list(columns)
    while len(kept) > 1 and gutter + sum(least(c) + 1 for c in kept) > avail:
        kept.remove(min(kept, key=rank))
    while True:
        widths = _shrunk(kept, avail - gutter, want, least, rank)
        cut = [c for c in kept if widths[c.key] < want(c)]
        if not cut:
            break
        top = max(prio(c) for c in cut)
        if top < LOW_VALUE:  # only a column that matters pushes others out
            break
        spare = [c for c in kept if prio(c) < LOW_VALUE]
        if not spare:
            break
        kept.remove(min(spare, key=rank))
    room = avail - gutter - sum(w + 1 for w in widths.values())
    growers = [c for c in kept if fit.get(c.key, DEFAULT_FIT).grow > 0]
    if room > 0 and growers:
        weight = sum(fit.get(c.key, DEFAULT_FIT).grow for c in growers)
        given = 0
        for c in growers:
            share = room * fit.get(c.key, DEFAULT_FIT).grow // weight
            widths[c.key] += share
            given += share
        widths[growers[-1].key] += room - given
    return [(c, widths[c.key]) for c in kept]


def _shrunk(kept: Sequence[Column[T]], avail: int, want: Callable[[Column[T]], int],
            least: Callable[[Column[T]], int], rank: Callable[[Column[T]], tuple[int, int]]) -> dict[str, int]:
    """Each kept column at its wanted width, the lowest-ranked shrunk (to ``least``) until they fit."""
    widths = {c.key: want(c) for c in kept}
    over = sum(w + 1 for w in widths.values()) - avail
    for c in sorted(kept, key=rank):
        if over <= 0:
            break
        cut = min(over, widths[c.key] - least(c))
        widths[c.key] -= cut
        over -= cut
    return widths


@lru_cache(maxsize=65536)
def hostlist_set(expr: str) -> frozenset[str]:
    """A row's node list (``gpu[0002-0005]``) as a set; empty when it is not a hostlist."""
    if not expr:
        return frozenset()
    if "[" not in expr:
        return frozenset(n.strip() for n in expr.split(","))
    try:
        return frozenset(expand(expr))
    except HostlistError:
        return frozenset()


@dataclass(frozen=True, slots=True)
class RowFilter:
    """``/`` text: a substring, ``re:<regex>``, or a node/hostlist (``gpu[0002-0005]`` matches
    a row on any of those nodes, e.g. a job on ``gpu[0003,0010]``); a leading ``!`` inverts."""

    text: str
    invert: bool = False
    regex: re.Pattern[str] | None = None
    nodes: frozenset[str] | None = None
    error: str | None = None

    @classmethod
    def parse(cls, raw: str) -> RowFilter:
        text = raw.strip().lower()
        invert = text.startswith("!")
        if invert:
            text = text[1:].strip()
        if text.startswith("re:"):
            try:
                return cls(text, invert, regex=re.compile(text[3:], re.IGNORECASE))
            except re.error as exc:
                return cls(text, invert, error=f"bad regex: {exc}")
        nodes = None
        if any(c.isdigit() for c in text) and any(c.isalpha() for c in text) and " " not in text:
            try:
                names = expand(text) if "[" in text else [n for n in text.split(",") if n]
            except HostlistError:
                names = []
            if names and all(is_valid_hostname(n) for n in names):
                nodes = frozenset(names)
        return cls(text, invert, nodes=nodes)

    def match(self, haystack: str, row_nodes: frozenset[str] | None) -> bool:
        if self.error is not None:
            hit = False
        elif self.regex is not None:
            hit = self.regex.search(haystack) is not None
        else:
            hit = self.text in haystack or (self.nodes is not None and row_nodes is not None
                                            and not self.nodes.isdisjoint(row_nodes))
        return hit != self.invert


_NAV: list[BindingType] = [
    Binding("up", "move(-1)", show=False), Binding("down", "move(1)", show=False),
    Binding("pageup", "page(-1)", show=False), Binding("pagedown", "page(1)", show=False),
    Binding("home", "jump(0)", show=False), Binding("end", "jump(-1)", show=False),
    Binding("left", "scroll_left", show=False), Binding("right", "scroll_right", show=False),
    *move_bindings("move(1)", "move(-1)", "scroll_left", "scroll_right"),
]


async def feed_key(target: Widget, event: events.Key) -> None:
    """Give ``target`` a key that was queued for another widget: a printable character is
    typed into an Input, any other key runs ``target``'s own binding for it (enter, escape,
    backspace); keys it has no binding for are dropped — never passed on as an action."""
    if event.is_printable and event.character is not None and isinstance(target, Input):
        target.insert_text_at_cursor(event.character)
        return
    for binding in target._bindings.key_to_bindings.get(event.key, ()):
        if await target.app.run_action(binding.action, target):
            return


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
                 row_nodes: Callable[[T], Iterable[str]] | None = None, fit: Mapping[str, Fit] | None = None,
                 id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.row_nodes = row_nodes  # the nodes a row is about: lets a hostlist filter match it
        self._nodesets: list[frozenset[str]] | None = None
        self.filter_error: str | None = None
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
        self._cursor_fg: dict[str, Style] = {}  # unfocused cursor: the style over each cell colour
        self._bg: Color | None = None
        self._base_style = Style()
        gutter = 2 if markable else 0
        self._gutter = gutter
        self._width = gutter + sum(c.width + 1 for c in self.columns)
        # Columns as drawn: with a ``fit`` (column key -> Fit) they follow the table's width
        # (responsive layout); without one, every column at its own width (scroll sideways).
        self.column_fit = fit
        self.col_layout: list[tuple[Column[T], int]] = [(c, c.width) for c in self.columns]
        # Each column's content width (title included), as far as rows have shown it: measured on
        # the top rows of every new set (measure) and raised when a drawn cell did not fit. It
        # only grows, so the columns hold still while the rows change under them.
        self.natural: dict[str, int] = {}
        self._refit_pending = False
        # Set by the pane around the table: opens its filter input and returns it. Keys that
        # were already queued for this table behind ``/`` are fed to that input (see on_key).
        self._scrolled_for: Size | None = None  # our virtual size at the last scrollbar update
        self.filter_opener: Callable[[], Widget | None] | None = None
        self._key_sink: Widget | None = None

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
        if self.measure(self._sorted[:MEASURE_ROWS]):
            self._fit_layout()
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

    def measure(self, rows: Sequence[T]) -> bool:
        """Raise the columns' natural widths to fit ``rows``' cells; True when one grew."""
        natural = self.natural
        grew = False
        for column in self.columns:
            text = column.text
            width = max(len(column.title), max((len(text(r)) for r in rows), default=0))
            if width > natural.get(column.key, 0):
                natural[column.key] = width
                grew = True
        return grew

    def _note_wider(self, key: str, width: int) -> None:
        """A drawn cell was wider than its column: remember it and re-fit once, after this frame."""
        self.natural[key] = width
        if not self._refit_pending:
            self._refit_pending = True
            self.call_later(self._refit)

    def _refit(self) -> None:
        self._refit_pending = False
        self._fit_layout()

    def _resort(self) -> None:
        column = next((c for c in self.columns if c.key == self.sort_column), None)
        if column is None:
            self._sorted = list(self.rows)
        else:
            sort_key = column.sort_key or column.text
            self._sorted = sorted(self.rows, key=sort_key, reverse=self.sort_reverse)
        self._haystack = None
        self._nodesets = None

    def _refilter(self, keep: str | None = None, redraw_changed_only: bool = False) -> None:
        needle = self.filter_text
        if not needle:
            self.view = self._sorted
        else:
            if self._haystack is None:
                text = self.search_text or (lambda r: " ".join(c.text(r) for c in self.columns))
                self._haystack = [text(r).lower() for r in self._sorted]
            rule = RowFilter.parse(needle)
            self.filter_error = rule.error
            if rule.nodes is None and rule.regex is None and not rule.invert and rule.error is None:
                self.view = [r for r, h in zip(self._sorted, self._haystack, strict=True) if needle in h]
            else:
                nodesets: Sequence[frozenset[str] | None]
                if rule.nodes is not None and self.row_nodes is not None:
                    if self._nodesets is None:
                        row_nodes = self.row_nodes
                        self._nodesets = [frozenset(row_nodes(r)) for r in self._sorted]
                    nodesets = self._nodesets
                else:
                    nodesets = [None] * len(self._sorted)
                self.view = [r for r, h, n in zip(self._sorted, self._haystack, nodesets, strict=True)
                             if rule.match(h, n)]
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
        self._cursor_fg = {}
        self._bg = None  # read again on first use: the new theme's CSS may not be applied yet
        self._base_style = self.rich_style  # segments carry no background of their own

    def _background(self) -> Color:
        """The colour the rows are drawn on (cell text is made to read on it)."""
        if self._bg is None:
            rich_bg = self.rich_style.bgcolor
            palette = self._palette or Palette.from_app(self.app)
            fallback = palette.solid("surface") or Color(0, 0, 0)
            self._bg = Color.from_rich_color(rich_bg) if rich_bg is not None else fallback
        return self._bg

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        """Skip Textual's scrollbar refresh when nothing of ours changed.

        ScrollView compares the compositor's virtual size (the content region) with the one we
        set (columns × rows), which always differ: every layout pass anywhere on the screen (a
        hidden event list growing by one row) repainted every table's scrollbars, ~1.5 KB a
        tick each on an idle dashboard. Only a new size, container or row count matters here.
        """
        ours = self.virtual_size
        if size == self._size and container_size == self.container_size and ours == self._scrolled_for:
            return False
        self._scrolled_for = ours
        return super()._size_updated(size, virtual_size, container_size, layout)

    def on_resize(self) -> None:
        self._base_style = self.rich_style
        self._fit_layout()

    def _fit_layout(self) -> None:
        """Re-fit the columns: with a ``column_fit``, to the width (one column stays free for the
        vertical scrollbar); without, every column as wide as its content (scroll sideways)."""
        if self.column_fit is None:
            natural = self.natural
            layout = [(c, natural.get(c.key, c.width)) for c in self.columns]
        else:
            if not self.size.width:
                return
            avail = self.size.width - int(self.styles.scrollbar_size_vertical or 0)
            layout = fit_columns(self.columns, self.column_fit, avail, self._gutter, self.natural)
        if [(c.key, w) for c, w in layout] != [(c.key, w) for c, w in self.col_layout]:
            self.col_layout = layout
            self._width = self._gutter + sum(w + 1 for _, w in layout)
            self.virtual_size = Size(self._width, len(self.view) + 1)
            self._lines.clear()
            self.refresh()

    @property
    def shown_columns(self) -> list[str]:
        """Keys of the columns drawn at the current width."""
        return [c.key for c, _ in self.col_layout]

    def _style(self, name: str | None) -> Style:
        """The text style of theme colour ``name``, at 4.5:1 on the table's background whatever
        the theme (contrast.readable; the shipped themes need no change)."""
        style = self._styles.get(name)
        if style is None:
            palette = self._palette or Palette.from_app(self.app)
            colour = palette.solid(name) if name else None
            style = Style() if colour is None else Style(color=readable(colour, self._background()).rich_color)
            self._styles[name] = style
        return style

    def _format_row(self, row: T) -> Strip:
        segments: list[Segment] = []
        if self._gutter:
            segments.append(Segment("• " if self.row_key(row) in self.marked else "  ", self._style("accent")))
        row_style = self._style(self.row_style(row) if self.row_style else None)
        for column, width in self.col_layout:
            text = column.text(row)
            if len(text) > width:
                if len(text) > self.natural.get(column.key, 0):
                    self._note_wider(column.key, len(text))
                text = elide(text, width, column.elide)
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
        for column, width in self.col_layout:
            title = column.title
            if column.key == self.sort_column:
                title = f"{title}{'▼' if self.sort_reverse else '▲'}"
            title = title[:width]
            title = title.rjust(width) if column.align == "right" else title.ljust(width)
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
            if index == self.cursor and self.can_focus:  # (a table that never takes focus, as on
                strip = self._cursor_line(strip, max(width + scroll_x, self._width))  # the wall: no cursor)
        return strip.crop(scroll_x, scroll_x + width)

    def _cursor_line(self, strip: Strip, width: int) -> Strip:
        """The cursor row. Focused: the theme's cursor colour with contrasting bold text.
        Unfocused: a dimmer tint that keeps the cells' own colours, each made to read on it
        (4.5:1: an error row's red is lightened on a dark tint, not left red on teal), so the
        row an action would hit stays visible and legible."""
        strip = strip.extend_cell_length(width, self._base_style)
        palette = self._palette or Palette.from_app(self.app)
        if self.has_focus:
            # A post-style: the row's cells carry the table background, which a plain
            # apply_style (a base style) would leave on top, hiding the cursor row.
            style = palette.on("block-cursor-background", bold=True)
            return Strip(Segment.apply_style(strip, post_style=style), strip.cell_length)
        tint = palette.solid("block-cursor-blurred-background") or palette.solid("panel")
        if tint is None:
            return Strip(Segment.apply_style(strip, post_style=Style(underline=True)), strip.cell_length)
        text = palette.solid("foreground") or Color(255, 255, 255)
        segments = [Segment(seg.text, (seg.style or Style()) + self._cursor_cell(seg.style, tint, text))
                    for seg in strip]
        return Strip(segments, strip.cell_length)

    def _cursor_cell(self, style: Style | None, tint: Color, text: Color) -> Style:
        """The unfocused cursor's style over a cell of ``style``: the tint, and the cell's colour
        (or the theme's text colour) made readable on it. Cached per colour."""
        rich = style.color if style is not None else None
        key = rich.name if rich is not None else ""
        cell = self._cursor_fg.get(key)
        if cell is None:
            fg = Color.from_rich_color(rich) if rich is not None and rich.triplet is not None else text
            cell = self._cursor_fg[key] = Style(bgcolor=tint.rich_color, color=readable(fg, tint).rich_color)
        return cell

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
        if self.filter_opener is not None:
            self._key_sink = self.filter_opener()
        else:
            self.post_message(self.FilterRequested(self))

    def _is_filter_key(self, key: str) -> bool:
        return any(b.action == "start_filter" for b in self._bindings.key_to_bindings.get(key, ()))

    async def on_key(self, event: events.Key) -> None:
        """Keys typed right after ``/`` belong to the filter, never to this table's actions.

        A terminal delivers a fast typist's keys together: the app forwards each to the widget
        focused *when it arrives*, so "/xyz" queues all four here before ``/`` has been handled.
        ``/`` is therefore handled here, in queue order (opening the filter and moving focus at
        once), and every key still queued behind it is fed to the filter input."""
        sink = self._key_sink
        if sink is not None and sink.is_attached and self.screen.focused is sink:
            event.stop()
            event.prevent_default()
            await feed_key(sink, event)
            return
        self._key_sink = None
        if self.filter_opener is not None and self._is_filter_key(event.key):
            event.stop()
            event.prevent_default()
            self.action_start_filter()

    def action_toggle_mark(self) -> None:
        key = self.cursor_key
        if key is None or not self.markable:
            return
        self.marked.symmetric_difference_update({key})
        self._lines.pop(self.cursor, None)
        self._move_cursor(self.cursor + 1)
        self.refresh()

    def action_clear_marks(self) -> None:
        if not self.marked:  # nothing to unmark: esc goes on to the view stack (back)
            raise SkipAction()
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
            for column, width in self.col_layout:
                if x < width + 1:
                    self.sort_by(column.key)
                    return
                x -= width + 1
            return
        self._move_cursor(int(self.scroll_offset.y) + offset.y - 1)
