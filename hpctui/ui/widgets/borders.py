"""Border titles that repaint one line, not the whole pane.

Textual's ``border_title``/``border_subtitle`` setters mark the whole widget dirty, and
for a container that means every line of every child is sent to the terminal again.
A pane whose title counts rows or whose subtitle shows a live figure would then resend
the whole table on every poll. :func:`set_border_text` stores the same value the setter
would and marks only the top (title) or bottom (subtitle) border line dirty.
"""

from __future__ import annotations

from textual.content import Content
from textual.geometry import Region
from textual.widget import Widget


def _as_content(widget: Widget, text: str | Content) -> Content:
    # What Textual's _BorderTitle descriptor stores: one line, tabs expanded.
    return widget.render_str(text).expand_tabs(4).split()[0]


def set_border_text(widget: Widget, text: str | Content, *, subtitle: bool = False) -> None:
    """Set the border title (or subtitle) of ``widget``, repainting only that border line."""
    attr = "_border_subtitle" if subtitle else "_border_title"
    size = widget.outer_size
    if not widget.is_mounted or not size or not hasattr(widget, attr):
        if subtitle:
            widget.border_subtitle = text
        else:
            widget.border_title = text
        return
    setattr(widget, attr, _as_content(widget, text))
    offset = widget.content_offset
    y = size.height - 1 if subtitle else 0
    widget.refresh(Region(-offset.x, y - offset.y, size.width, 1))
