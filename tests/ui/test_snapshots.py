"""SVG snapshots of the dashboard in every built-in theme (frozen clock, seeded demo).

Regenerate with ``pytest tests/ui --snapshot-update`` and look at the SVGs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from uikit import load

from hpctui.core.runtime import Runtime
from hpctui.ui.app import HpcApp

SIZES = [(80, 24), (120, 40), (200, 60), (300, 80)]  # laptop over SSH … a wall screen


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("theme", ["dark", "light", "wall"])
def test_dashboard_snapshot(snap_compare: Any, make_runtime: Callable[..., Runtime], theme: str,
                            size: tuple[int, int]) -> None:
    app = HpcApp(make_runtime(), theme=theme, wall=theme == "wall", autostart=False)

    async def run_before(pilot: Any) -> None:
        await load(app, pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("keys", [("p", "4"), ("n", "e"), ("J", "slash", *"gpu0003", "enter"), ("g", *"gpu[0010-0012]")],
                         ids=["problems", "events", "hostlist-filter", "goto"])
def test_triage_snapshot(snap_compare: Any, make_runtime: Callable[..., Runtime], keys: tuple[str, ...]) -> None:
    """Issue #11: the problem list (a node selected by its number), the event timeline, the queue
    filtered by a node inside job hostlists, the go-to prompt."""
    app = HpcApp(make_runtime(seed=1), autostart=False)

    async def run_before(pilot: Any) -> None:
        await load(app, pilot)
        await load(app, pilot)

    assert snap_compare(app, terminal_size=(200, 60), run_before=run_before, press=keys)


# -- states beyond the plain dashboard -------------------------------------------------------------
@pytest.mark.parametrize("tabs", [1, 3, 4], ids=["node", "queue", "pods"])
def test_narrow_tab_snapshot(snap_compare: Any, make_runtime: Callable[..., Runtime], tabs: int) -> None:
    """80×24: one pane full size under the tab bar — the node's panel with every GPU, the
    queue, the pods."""
    app = HpcApp(make_runtime(), autostart=False)

    async def run_before(pilot: Any) -> None:
        await load(app, pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before, press=("right_square_bracket",) * tabs)


def test_read_only_snapshot(snap_compare: Any, make_runtime: Callable[..., Runtime]) -> None:
    """READ-ONLY in the status line, no action keys in the footer."""
    app = HpcApp(make_runtime(read_only=True), autostart=False)

    async def run_before(pilot: Any) -> None:
        await load(app, pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_stale_error_status_snapshot(snap_compare: Any, make_runtime: Callable[..., Runtime], clock: Any) -> None:
    """The source failed 42 s after its last good read: stale, with the error, in the status line."""
    from uikit import FIXED

    app = HpcApp(make_runtime(), autostart=False)

    async def run_before(pilot: Any) -> None:
        await load(app, pilot)
        clock.t = FIXED + 42
        app.runtime.store.record_error("demo", "slurmctld unreachable")
        app.refresh_from_store()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_action_dialog_snapshot(snap_compare: Any, make_runtime: Callable[..., Runtime]) -> None:
    """Drain of two marked nodes: the plan, the commands and the typed confirmation word."""
    app = HpcApp(make_runtime(), autostart=False)

    async def run_before(pilot: Any) -> None:
        await load(app, pilot)
        await pilot.press("space", "right", "space", "d")
        await pilot.pause()
        await pilot.press(*"xid 79")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_job_detail_snapshot(snap_compare: Any, make_runtime: Callable[..., Runtime]) -> None:
    """Job detail of the first queued job, with fair-share and QoS from (demo) accounting."""
    app = HpcApp(make_runtime(), autostart=False)

    async def run_before(pilot: Any) -> None:
        await load(app, pilot)
        app.screen.query_one("#queue").focus()
        await pilot.press("enter")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)
