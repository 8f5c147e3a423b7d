"""Shared helpers of the UI tests (a module of its own: several test folders have a conftest,
and ``from conftest import`` picks whichever was imported first)."""

from __future__ import annotations

from hpctui.ui.app import HpcApp

FIXED = 1_750_000_000.0  # 2025-06-15 15:06:40Z


class Clock:
    """A settable clock so a test can age the data and see "stale"."""

    def __init__(self, t: float = FIXED) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


async def load(app: HpcApp, pilot: object) -> None:
    """Collect once and draw, as the poller would, but deterministically."""
    await app.runtime.collect_once()
    app.refresh_from_store()
    await pilot.pause()  # type: ignore[attr-defined]
    # Pane sizes fitted to the data (fit_top) take one more layout pass to reach the widgets:
    # wait for it, so a test reads the settled screen, as a user sees it a frame later.
    await pilot.pause()  # type: ignore[attr-defined]
