"""The ``[heatmap]`` config table: grouping, rack hostlists, palette, problems first.

```toml
[heatmap]
group_by = "rack"            # "none" | "partition" | "rack" | "model" | "switch"
racks = { r01 = "gpu[0001-0032]", r02 = "gpu[0033-0064]" }
palette = "colorblind"       # "default" | "colorblind"
problems_first = true        # always; false: never; unset: when not every node fits on screen
```
"""

from __future__ import annotations

import msgspec

from hpctui.model.hostlist import HostlistError, expand

GROUP_ORDER: tuple[str, ...] = ("none", "partition", "rack", "model", "switch")
PALETTES: tuple[str, ...] = ("default", "colorblind")


class HeatmapSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    group_by: str = "none"
    """How nodes are grouped: "none", "partition", "rack", "model" or "switch" (the IB leaf switch, from Slurm's
    topology or ibnetdiscover/iblinkinfo) (``o`` cycles at run time)."""
    racks: dict[str, str] = msgspec.field(default_factory=dict)
    """Rack name → hostlist, e.g. ``{r01 = "gpu[0001-0032]"}`` (the first rack naming a node wins)."""
    palette: str = "default"
    """"default" or "colorblind" (cividis ramps, Okabe-Ito severities and glyphs)."""
    problems_first: bool | None = None
    """Problem nodes first: true always, false never; unset: only while not every node fits on screen."""

    def rack_of(self) -> dict[str, str]:
        """node -> rack, from the hostlists (the first rack naming a node wins)."""
        out: dict[str, str] = {}
        for rack, hosts in self.racks.items():
            for node in expand(hosts):
                out.setdefault(node, rack)
        return out


def validate_heatmap(settings: HeatmapSettings, origin: str) -> str | None:
    """One line naming the bad key, or None."""
    for key, value, allowed in (("group_by", settings.group_by, GROUP_ORDER), ("palette", settings.palette, PALETTES)):
        if value not in allowed:
            return f"{origin}: heatmap.{key}: {value!r} is not one of {', '.join(allowed)}"
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


__all__ = ["GROUP_ORDER", "PALETTES", "HeatmapSettings", "validate_heatmap"]
