"""SVG snapshots of the dashboard in every built-in theme (frozen clock, seeded demo).

Regenerate with ``pytest tests/ui --snapshot-update`` and look at the SVGs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from conftest import load

from hpctui.runtime import Runtime
from hpctui.ui.app import HpcApp


@pytest.mark.parametrize("size", [(120, 40), (200, 60)], ids=["120x40", "200x60"])
@pytest.mark.parametrize("theme", ["dark", "light", "wall"])
def test_dashboard_snapshot(snap_compare: Any, make_runtime: Callable[..., Runtime], theme: str,
                            size: tuple[int, int]) -> None:
    app = HpcApp(make_runtime(), theme=theme, wall=theme == "wall", autostart=False)

    async def run_before(pilot: Any) -> None:
        await load(app, pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("keys", [("p", "4"), ("n", "e"), ("j", "slash", *"gpu0003", "enter"), ("g", *"gpu[0010-0012]")],
                         ids=["problems", "events", "hostlist-filter", "goto"])
def test_triage_snapshot(snap_compare: Any, make_runtime: Callable[..., Runtime], keys: tuple[str, ...]) -> None:
    """Issue #11: the problem list (a node selected by its number), the event timeline, the queue
    filtered by a node inside job hostlists, the go-to prompt."""
    app = HpcApp(make_runtime(seed=1), autostart=False)

    async def run_before(pilot: Any) -> None:
        await load(app, pilot)
        await load(app, pilot)

    assert snap_compare(app, terminal_size=(200, 60), run_before=run_before, press=keys)
