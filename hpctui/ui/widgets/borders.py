"""Border titles that repaint one line, not the whole pane.

Textual's ``border_title``/``border_subtitle`` setters mark the whole widget dirty, and
for a container that means every line of every child is sent to the terminal again.
A pane whose title counts rows or whose subtitle shows a live figure would then resend
the whole table on every poll. :func:`set_border_text` stores the same value the setter
would and marks only the top (title) or bottom (subtitle) border line dirty.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial

from textual.content import Content
from textual.css.styles import Styles
from textual.geometry import Region
from textual.widget import Widget

from hpctui.ui.literal import literal


def _as_content(text: str | Content) -> Content:
    # What Textual's _BorderTitle descriptor stores: one line, tabs expanded (but never parsed as markup).
    return literal(text).expand_tabs(4).split()[0]


def set_border_text(widget: Widget, text: str | Content, *, subtitle: bool = False) -> None:
    """Set the border title (or subtitle) of ``widget``, repainting only that border line.
    A ``str`` is shown as it is (titles hold partition names, filters and source errors): never
    parsed as markup, unlike Textual's own setters."""
    attr = "_border_subtitle" if subtitle else "_border_title"
    size = widget.outer_size
    if not widget.is_mounted or not size or not hasattr(widget, attr):
        if subtitle:
            widget.border_subtitle = literal(text)
        else:
            widget.border_title = literal(text)
        return
    setattr(widget, attr, _as_content(text))
    offset = widget.content_offset
    y = size.height - 1 if subtitle else 0
    widget.refresh(Region(-offset.x, y - offset.y, size.width, 1))


FOCUS_FRAME = "-focus-within"  # the class app.tcss styles (instead of Textual's :focus-within)
FRAMED_IDS = frozenset({"heatmap-pane", "gpu-panel"})


def framed_pane(widget: Widget | None) -> Widget | None:
    """The pane whose border shows that ``widget`` (or one of its children) has focus."""
    from hpctui.ui.widgets.panes import TablePane  # panes imports this module

    node = widget
    while node is not None and isinstance(node, Widget):
        if node.id in FRAMED_IDS or isinstance(node, TablePane):
            return node
        node = node.parent  # type: ignore[assignment]
    return None


def move_focus_frame(old: Widget | None, new: Widget | None) -> None:
    """Move the focused-pane border from ``old`` to ``new``, restyling only those two nodes.

    Why not ``:focus-within``: Textual restyles the whole subtree of such a pane on every focus
    change (a table's rows, the node panel's every line), which made ``tab`` cost ~50 ms; the
    border is the pane's own style, so the pane alone needs restyling."""
    if old is new:
        return
    changed = []
    for pane, on in ((old, False), (new, True)):
        if pane is not None and pane.is_attached:
            pane.set_class(on, FOCUS_FRAME, update=False)
            changed.append(pane)
    if changed:
        with _children_kept(changed):
            changed[0].app.stylesheet.update_nodes(changed, animate=False)


@contextmanager
def _children_kept(panes: list[Widget]) -> Iterator[None]:
    """While restyling ``panes``, a changed style repaints the pane alone, never its children.

    Textual repaints every descendant when any colour property of a node changes (``color`` is
    inherited), ``border-title-color`` included, which no child reads: the focus frame's title
    colour made ``tab`` re-render every line of both panes' children (the node panel's ~20 lines,
    a table's rows), ~10 ms a press at 4k nodes. The focus rule (app.tcss) sets only the border
    and its title's colour, both drawn by the pane itself, so its own repaint is the whole change."""
    patched = []
    for pane in panes:
        styles = pane._css_styles
        if "refresh" not in vars(styles):  # (never nested)
            styles.refresh = partial(_refresh_alone, styles)  # type: ignore[method-assign]
            patched.append(styles)
    try:
        yield
    finally:
        for styles in patched:
            del styles.refresh


def _refresh_alone(styles: Styles, *, layout: bool = False, children: bool = False, parent: bool = False,
                   repaint: bool = True) -> None:
    Styles.refresh(styles, layout=layout, children=False, parent=parent, repaint=repaint)
