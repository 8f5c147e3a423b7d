"""The TOML section of the built-in demo source (``kind = "demo"``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import msgspec
from msgspec import Meta

if TYPE_CHECKING:
    from hpctui.sources.demo.source import DemoSource


class DemoSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The built-in simulated cluster as a configured source."""

    name: Annotated[str, Meta(min_length=1, max_length=64)] = "demo"
    size: Annotated[int, Meta(ge=1, le=65_536)] = 64  # GPU nodes
    seed: Annotated[int, Meta(ge=0, le=2**63 - 1)] = 0
    interval_s: Annotated[float, Meta(ge=0.5, le=3600)] = 2.0  # finite: NaN/inf fail the bounds


def build_demo_source(settings: DemoSettings) -> DemoSource:
    from hpctui.sources.demo.source import DemoSource

    return DemoSource(size=settings.size, seed=settings.seed, interval_s=settings.interval_s, name=settings.name)
