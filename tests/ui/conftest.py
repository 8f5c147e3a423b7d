"""Fixtures for UI tests: a deterministic demo runtime (seeded, frozen clock)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from hpctui.runtime import Runtime, demo_runtime
from hpctui.ui.app import HpcApp

FIXED = 1_750_000_000.0  # 2025-06-15 15:06:40Z


class Clock:
    """A settable clock so a test can age the data and see "stale"."""

    def __init__(self, t: float = FIXED) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def make_runtime(tmp_path: Path, clock: Clock) -> Callable[..., Runtime]:
    def make(size: int = 64, seed: int = 7, read_only: bool = False, theme: str = "dark") -> Runtime:
        return demo_runtime(size=size, seed=seed, clock=clock, start_time=FIXED, read_only=read_only,
                            audit_path=tmp_path / "audit.jsonl", theme=theme)
    return make


async def load(app: HpcApp, pilot: object) -> None:
    """Collect once and draw, as the poller would, but deterministically."""
    await app.runtime.collect_once()
    app.refresh_from_store()
    await pilot.pause()  # type: ignore[attr-defined]
