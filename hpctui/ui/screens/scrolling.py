"""j/k/h/l on detail screens that scroll (job, pod, help): the same ``move.*`` ids as the panes."""

from __future__ import annotations

from textual.binding import BindingType
from textual.containers import ScrollableContainer
from textual.dom import DOMNode

from hpctui.ui.keys import move_bindings

SCROLL_BINDINGS: list[BindingType] = move_bindings("scroll_body(0,1)", "scroll_body(0,-1)", "scroll_body(-1,0)",
                                                   "scroll_body(1,0)")


def scroll_body(screen: DOMNode, dx: int, dy: int) -> None:
    """Scroll the screen's first scrolling container by lines/columns."""
    for box in screen.query(ScrollableContainer):
        box.scroll_relative(x=dx or None, y=dy or None, animate=False)
        return
