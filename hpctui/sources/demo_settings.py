"""The TOML section of the built-in demo source (``kind = "demo"``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from hpctui.sources.demo import DemoSource


class DemoSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The built-in simulated cluster as a configured source."""

    name: str = "demo"
    size: int = 64
    seed: int = 0
    interval_s: float = 2.0


def build_demo_source(settings: DemoSettings) -> DemoSource:
    from hpctui.sources.demo import DemoSource

    return DemoSource(size=settings.size, seed=settings.seed, interval_s=settings.interval_s, name=settings.name)
