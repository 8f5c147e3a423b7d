"""Cluster strings are shown as they are: never parsed as Textual (or Rich) markup.

Textual parses a plain ``str`` as content markup almost everywhere it takes text: ``Static`` and
``Label`` (unless built with ``markup=False``), ``Button`` labels, ``border_title``/``border_subtitle``,
notifications, the command palette's prompts and help. A job whose array task string holds
``[/x]`` then raises ``MarkupError`` and ends the app; ``[@click=app.quit]`` becomes a live action;
``[link=…]`` a link. ``rich.markup.escape`` and ``textual.markup.escape`` are not enough either:
they leave ``[$accent]``, ``[B]`` and a ``\\[`` that was already there to the parser.

Two helpers, used everywhere a string that may hold a cluster value reaches such a widget:

- :func:`literal` turns text into a :class:`~textual.content.Content` that is exactly that text
  (what every widget, border title and ``update`` accepts unparsed);
- :func:`escape_markup` for the few Textual APIs that take only a ``str`` and always parse it
  (the command palette's ``SystemCommand``): every ``[`` escaped, so the parser keeps it all.
"""

from __future__ import annotations

from rich.text import Text
from textual.content import Content


def literal(text: str | Content | Text) -> Content:
    """``text`` as Content, character for character: a ``str`` is never parsed as markup;
    Content is returned as is; a Rich ``Text`` keeps its (programmatic) styles."""
    if isinstance(text, Content):
        return text
    if isinstance(text, Text):
        return Content.from_rich_text(text)
    return Content(text)


def escape_markup(text: str) -> str:
    """``text`` escaped for Textual's markup parser: ``Content.from_markup(escape_markup(s)).plain == s``
    for every ``s`` (a tag opens only at an unescaped ``[``, and the parser turns ``\\[`` back into ``[``)."""
    return text.replace("[", "\\[")
