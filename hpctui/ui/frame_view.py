"""How frames reach screens: a screen that draws live data is a :class:`FrameView`.

The app pushes each new :class:`~hpctui.core.frame.Frame` down to the dashboard and to every
stacked screen that is one (``isinstance``, never a method looked up by name); the screen hands
the parts of it to its widgets. Widgets never compute findings of their own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from hpctui.core.frame import Frame


@runtime_checkable
class FrameView(Protocol):
    """A screen that follows the live data."""

    def show_frame(self, frame: Frame) -> None:
        """Draw ``frame`` (the store's newest version); called on the UI thread."""
        ...
