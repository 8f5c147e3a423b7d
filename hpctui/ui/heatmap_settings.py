"""The ``[heatmap]`` config table: grouping, rack hostlists, palette, problems first.

```toml
[heatmap]
group_by = "rack"            # "none" | "partition" | "rack" | "model"
racks = { r01 = "gpu[0001-0032]", r02 = "gpu[0033-0064]" }
palette = "colorblind"       # "default" | "colorblind"
problems_first = true
```
"""

from __future__ import annotations

from typing import Literal

import msgspec

from hpctui.model.hostlist import HostlistError, expand

GroupBy = Literal["none", "partition", "rack", "model"]
GROUP_ORDER: tuple[str, ...] = ("none", "partition", "rack", "model")
PaletteName = Literal["default", "colorblind"]


class HeatmapSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    group_by: GroupBy = "none"
    racks: dict[str, str] = msgspec.field(default_factory=dict)  # rack name -> hostlist
    palette: PaletteName = "default"
    problems_first: bool = False

    def rack_of(self) -> dict[str, str]:
        """node -> rack, from the hostlists (the first rack naming a node wins)."""
        out: dict[str, str] = {}
        for rack, hosts in self.racks.items():
            for node in expand(hosts):
                out.setdefault(node, rack)
        return out


def validate_heatmap(settings: HeatmapSettings, origin: str) -> str | None:
    """One line naming the bad key, or None."""
    for rack, hosts in settings.racks.items():
        if not rack.strip():
            return f"{origin}: heatmap.racks: empty rack name"
        try:
            nodes = expand(hosts)
        except HostlistError as exc:
            return f"{origin}: heatmap.racks.{rack}: not a hostlist: {exc}"
        if not nodes:
            return f"{origin}: heatmap.racks.{rack}: empty hostlist"
    return None


__all__ = ["GROUP_ORDER", "HeatmapSettings", "validate_heatmap"]
