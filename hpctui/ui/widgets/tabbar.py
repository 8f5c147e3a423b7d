"""The narrow layout's tab bar: one line naming every pane, the shown one highlighted.

Below ~100 columns the dashboard shows ONE pane at a time, full size; this bar says
which, and which others exist (``[``/``]`` or a click switch). It never takes focus.
"""

from __future__ import annotations

from textual import events
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

# (view name, label): the order ``]`` walks.
TABS: tuple[tuple[str, str], ...] = (
    ("heatmap", "Nodes"), ("node", "Node"), ("problems", "Problems"), ("queue", "Queue"),
    ("pods", "Pods"), ("ib", "IB"), ("mounts", "Mounts"), ("events", "Events"),
)
TAB_NAMES = tuple(name for name, _ in TABS)


class TabBar(Static, can_focus=False):
    """Renders the tabs; a click posts :class:`TabBar.Chosen`."""

    class Chosen(Message):
        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.current = "heatmap"
        self.badges: dict[str, str] = {}
        self._spans: list[tuple[int, int, str]] = []  # (start, end, name) for clicks
        self._drawn: Content | None = None

    def on_mount(self) -> None:
        self._draw()

    def show(self, current: str, badges: dict[str, str] | None = None) -> None:
        if badges is not None:
            self.badges = badges
        self.current = current
        self._draw()

    def labels(self, compact: bool = False) -> list[tuple[str, str]]:
        out = []
        for name, label in TABS:
            badge = self.badges.get(name, "")
            if compact:
                label = label[:4] if name != "problems" else "Prob"
            out.append((name, f"{label} {badge}" if badge else label))
        return out

    def _draw(self) -> None:
        width = self.size.width or 80
        labels = self.labels()
        if sum(len(t) + 3 for _, t in labels) + 6 > width:
            labels = self.labels(compact=True)
        pieces: list[tuple[str, str] | str] = []
        self._spans = []
        x = 0
        for name, text in labels:
            cell = f" {text} "
            style = "bold reverse $accent" if name == self.current else "$text-muted"
            pieces += [(cell, style), "│"]
            self._spans.append((x, x + len(cell), name))
            x += len(cell) + 1
        pieces.append((" [ ]", "bold $primary"))
        content = Content.assemble(*pieces)
        drawn = self._drawn  # (Content's == compares the text only)
        if drawn is None or content.plain != drawn.plain or content.spans != drawn.spans:  # else no repaint
            self._drawn = content
            self.update(content, layout=False)  # one line, as wide as the screen: no relayout

    def on_resize(self) -> None:
        self._draw()

    def on_click(self, event: events.Click) -> None:
        for start, end, name in self._spans:
            if start <= event.x < end:
                self.post_message(self.Chosen(name))
                return
