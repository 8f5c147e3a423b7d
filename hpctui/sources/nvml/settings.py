"""The TOML section of the local NVML source (``[[clusters.NAME.sources]] kind = "nvml"``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from hpctui.model.validate import is_node_name, show_value

if TYPE_CHECKING:
    from hpctui.sources.nvml.source import NvmlSource


class NvmlSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str = "nvml"
    interval_s: float = 2.0
    node: str | None = None  # the node name its GPUs belong to; default: this host's short name
    processes: bool = True  # who runs on each GPU (user, command, Slurm job / pod from /proc)
    nvlink: bool = True
    xid_events: bool = True  # NVML Xid critical-error events, polled without waiting

    def __post_init__(self) -> None:
        if self.interval_s <= 0:
            raise ValueError("interval_s must be > 0")
        if self.node is not None and not self.node.strip():
            raise ValueError("node must not be empty")
        if self.node is not None and not is_node_name(self.node):
            raise ValueError(f"node {show_value(self.node)} is no valid host name (letters, digits, '-' and '.')")


def build_nvml_source(settings: NvmlSettings) -> NvmlSource:
    from hpctui.sources.nvml.source import NvmlSource

    return NvmlSource(settings)
