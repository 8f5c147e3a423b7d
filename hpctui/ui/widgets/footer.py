"""The dashboard footer: htop's rule, the essential keys (``?`` help, ``q`` quit) come first,
so they are on screen at every width and with any pane focused."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

PINNED = ("help", "quit")  # actions shown first, in this order


class PinnedFooter(Footer):
    """Textual's Footer with the pinned actions moved to the front (a narrow footer cuts the end)."""

    def compose(self) -> ComposeResult:
        keys = list(super().compose())

        def rank(widget: object) -> int:
            action = getattr(widget, "action", None)
            if isinstance(widget, FooterKey) and action in PINNED:
                return PINNED.index(action)
            return len(PINNED)

        keys.sort(key=rank)  # stable: everything else keeps Textual's order
        yield from keys
