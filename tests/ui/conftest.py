"""Fixtures for UI tests: a deterministic demo runtime (seeded, frozen clock)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from uikit import FIXED, Clock

from hpctui.core.runtime import Runtime, demo_runtime


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def make_runtime(tmp_path: Path, clock: Clock) -> Callable[..., Runtime]:
    def make(size: int = 64, seed: int = 7, read_only: bool = False, theme: str = "dark") -> Runtime:
        return demo_runtime(size=size, seed=seed, clock=clock, start_time=FIXED, read_only=read_only,
                            audit_path=tmp_path / "audit.jsonl", theme=theme)
    return make
