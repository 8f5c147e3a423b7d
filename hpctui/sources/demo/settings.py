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
    """The source's name, as the status line, ``precedence`` and ``ssh_source`` name it."""
    size: Annotated[int, Meta(ge=1, le=65_536)] = 64
    """GPU nodes simulated (also ``--demo-size``)."""
    seed: Annotated[int, Meta(ge=0, le=2**63 - 1)] = 0
    """Random seed: the same seed gives the same cluster and incidents (also ``--seed``)."""
    interval_s: Annotated[float, Meta(ge=0.5, le=3600)] = 2.0
    """Seconds between simulated refreshes (finite: NaN/inf fail the bounds)."""


def build_demo_source(settings: DemoSettings) -> DemoSource:
    from hpctui.sources.demo.source import DemoSource

    return DemoSource(size=settings.size, seed=settings.seed, interval_s=settings.interval_s, name=settings.name)
