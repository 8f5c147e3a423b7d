"""Slurm source: reads and acts on a cluster through the CLI, slurmrestd or pyslurm.

Kept light on purpose: importing the package (e.g. for its ``parse`` subpackage) must not
pull in aiohttp; ``SlurmSource`` is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hpctui.sources.slurm.settings import SlurmSettings, build_slurm_source

if TYPE_CHECKING:
    from hpctui.sources.slurm.source import SlurmSource

__all__ = ["SlurmSettings", "SlurmSource", "build_slurm_source"]


def __getattr__(name: str) -> Any:
    if name == "SlurmSource":
        from hpctui.sources.slurm.source import SlurmSource

        return SlurmSource
    raise AttributeError(name)
