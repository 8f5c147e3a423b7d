"""Per-node heatmap values: one byte of colour level and one glyph per node.

Pure functions over a snapshot (no Textual) so they are cheap to test and to
benchmark. The widget keeps the result as ``bytes`` and never touches the model
while drawing. Health colours come from :mod:`hpctui.findings.health`, never re-derived.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from itertools import pairwise, repeat
from operator import itemgetter

from hpctui.findings.health import Thresholds
from hpctui.findings.index import FindingsIndex, findings_for
from hpctui.model import ClusterSnapshot, Gpu, GpuSummary, Node, Severity

NA_LEVEL = 5  # "no data": drawn in heat-na, never as 0


class Metric(enum.StrEnum):
    HEALTH = "health"
    UTIL = "util"
    TEMP = "temp"
    POWER = "power"
    MEMORY = "memory"


METRIC_ORDER = tuple(Metric)
METRIC_TITLES = {
    Metric.HEALTH: "health", Metric.UTIL: "GPU util", Metric.TEMP: "GPU temp (max)",
    Metric.POWER: "power / limit", Metric.MEMORY: "GPU memory",
}

# Node state glyphs, drawn over the colour so a drained or dead node is visible
# in every metric, not only in "health".
GLYPHS = (" ", "×", "D", "d", "!", "c")
GLYPH_NONE, GLYPH_DOWN, GLYPH_DRAINED, GLYPH_DRAINING, GLYPH_NOT_READY, GLYPH_CORDONED = range(len(GLYPHS))
GLYPH_LEGEND = (("×", "down"), ("D", "drained"), ("d", "draining"), ("!", "K8s not ready"), ("c", "cordoned"))


def node_names(snapshot: ClusterSnapshot) -> list[str]:
    """Every node the snapshot knows, in a stable order (Slurm order, then GPU-only hosts)."""
    names = list(snapshot.nodes)
    seen = set(names)
    names.extend(n for n in snapshot.gpus if n not in seen)
    if snapshot.gpu_summaries:
        seen.update(snapshot.gpus)
        names.extend(n for n in snapshot.gpu_summaries if n not in seen)
    return names


def node_glyph(node: Node | None) -> int:
    """Index into GLYPHS: the node's scheduling state, worst first."""
    if node is None:
        return GLYPH_NONE
    s = node.slurm
    if s is not None:
        if s.base_state in ("DOWN", "ERROR", "INVAL") or "NOT_RESPONDING" in s.flags or "FAIL" in s.flags:
            return GLYPH_DOWN
        if "DRAIN" in s.flags:
            return GLYPH_DRAINING if s.display_state.startswith("DRAINING") else GLYPH_DRAINED
    k = node.k8s
    if k is not None:
        if k.ready != "True":
            return GLYPH_NOT_READY
        if k.unschedulable:
            return GLYPH_CORDONED
    return GLYPH_NONE


def _ramp(value: float | None, steps: Sequence[float]) -> int:
    """Level 0..4 from four ascending boundaries; NA_LEVEL for missing data."""
    if value is None:
        return NA_LEVEL
    for level, bound in enumerate(steps):
        if value < bound:
            return level
    return len(steps)


def temp_steps(t: Thresholds) -> tuple[float, float, float, float]:
    return (50.0, 70.0, t.gpu_temp_warn_c, t.gpu_temp_crit_c)


PCT_STEPS = (20.0, 40.0, 60.0, 80.0)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def gpu_value(gpus: Sequence[Gpu], metric: Metric) -> float | None:
    """The one number per node for a GPU metric (mean util/memory, max temp, total power/limit)."""
    if metric is Metric.UTIL:
        return _mean([g.util_pct for g in gpus if g.util_pct is not None])
    if metric is Metric.TEMP:
        return max((g.temp_c for g in gpus if g.temp_c is not None), default=None)
    if metric is Metric.MEMORY:
        return _mean([p for g in gpus if (p := g.memory_pct) is not None])
    if metric is Metric.POWER:
        pairs = [(g.power_w, g.power_limit_w) for g in gpus if g.power_w is not None and g.power_limit_w]
        if not pairs:
            return None
        return 100.0 * sum(p for p, _ in pairs) / sum(lim for _, lim in pairs if lim)
    raise ValueError(metric)


def summary_value(summary: GpuSummary | None, metric: Metric) -> float | None:
    """:func:`gpu_value` of a node whose GPUs the engine summed up (:class:`~hpctui.model.GpuSummary`)."""
    if summary is None:
        return None
    if metric is Metric.UTIL:
        return summary.util_pct
    if metric is Metric.TEMP:
        return summary.temp_c
    if metric is Metric.MEMORY:
        return summary.memory_pct
    if metric is Metric.POWER:
        return summary.power_pct
    raise ValueError(metric)


def node_gpu_value(snapshot: ClusterSnapshot, name: str, metric: Metric) -> float | None:
    """The heatmap's number for one node: from its GPUs, else from the engine's summary of them."""
    gpus = snapshot.gpus.get(name)
    if gpus or name not in snapshot.gpu_summaries:
        return gpu_value(gpus or (), metric)
    return summary_value(snapshot.gpu_summaries[name], metric)


class LevelCache:
    """Per-node memo of the last levels and glyphs, keyed by the identity of the node's data.

    The store reuses unchanged ``Node`` and GPU tuples, so a redraw of 16k nodes where a
    few hundred changed recomputes a few hundred values. Owned by one heatmap.
    """

    def __init__(self) -> None:
        self.metric: Metric | None = None
        self.thresholds: Thresholds | None = None
        self.values: dict[str, tuple[object, int]] = {}
        self.glyphs: dict[str, tuple[Node | None, int]] = {}

    def reset_if(self, metric: Metric, thresholds: Thresholds) -> None:
        if metric is not self.metric or thresholds != self.thresholds:
            self.metric, self.thresholds = metric, thresholds
            self.values = {}


def compute_levels(snapshot: ClusterSnapshot, names: Sequence[str], metric: Metric,
                   thresholds: Thresholds, cache: LevelCache | None = None,
                   findings: FindingsIndex | None = None) -> tuple[bytes, bytes]:
    """(levels, glyph indexes) for ``names``; level is 0..4 or NA_LEVEL.

    Glyphs are returned as one byte per node indexing :data:`GLYPHS`. Health levels come
    from the snapshot's shared :func:`~hpctui.findings.index.findings_for`; ``cache`` makes the
    GPU metrics and glyphs incremental.
    """
    levels = bytearray(len(names))
    glyphs = bytearray(len(names))
    nodes = snapshot.nodes
    gpus_by_node = snapshot.gpus
    # With a cache, the per-node loops only test identities (comprehensions) and the byte strings
    # are made in C: at 16k nodes every poll, ~20 ms → a few.
    if metric is Metric.HEALTH:
        index = findings if findings is not None else findings_for(snapshot, thresholds)
        levels = bytearray(map(index.severities().get, names, repeat(Severity.OK)))
    else:
        steps = temp_steps(thresholds) if metric is Metric.TEMP else PCT_STEPS
        summaries = snapshot.gpu_summaries  # nodes whose GPUs only the engine saw (Prometheus aggregate)
        if cache is None:
            for i, name in enumerate(names):
                levels[i] = _ramp(node_gpu_value(snapshot, name, metric), steps)
        else:
            cache.reset_if(metric, thresholds)
            old = cache.values
            new: dict[str, tuple[object, int]]
            empty: tuple[Gpu, ...] = ()
            if not summaries:  # per-GPU readings only (every source but an engine's aggregate)
                old_get, gpus_get = old.get, gpus_by_node.get
                new = {name: hit if (hit := old_get(name)) is not None and hit[0] is gpus_get(name, empty)
                       else _gpu_level(gpus_get(name, empty), metric, steps) for name in names}
                levels = bytearray(map(_SECOND, map(new.__getitem__, names)))
            else:
                new = {}
                for i, name in enumerate(names):
                    gpus = gpus_by_node.get(name, empty)
                    data: object = gpus if gpus else summaries.get(name, empty)
                    hit = old.get(name)
                    if hit is not None and hit[0] is data:
                        level = hit[1]
                    elif isinstance(data, GpuSummary):
                        level = _ramp(summary_value(data, metric), steps)
                    else:
                        level = _ramp(gpu_value(gpus, metric), steps)
                    new[name] = (data, level)
                    levels[i] = level
            cache.values = new
    if cache is None:
        for i, name in enumerate(names):
            glyphs[i] = node_glyph(nodes.get(name))
    else:
        old_g, nodes_get = cache.glyphs.get, nodes.get
        new_g = {name: ghit if (ghit := old_g(name)) is not None and ghit[0] is nodes_get(name)
                 else _node_glyph_entry(nodes_get(name)) for name in names}
        glyphs = bytearray(map(_SECOND, map(new_g.__getitem__, names)))
        cache.glyphs = new_g
    return bytes(levels), bytes(glyphs)


_SECOND = itemgetter(1)


def _gpu_level(gpus: tuple[Gpu, ...], metric: Metric, steps: Sequence[float]) -> tuple[object, int]:
    return gpus, _ramp(gpu_value(gpus, metric), steps)


def _node_glyph_entry(node: Node | None) -> tuple[Node | None, int]:
    return node, node_glyph(node)


def legend_entries(metric: Metric, thresholds: Thresholds) -> list[tuple[str, str]]:
    """(theme variable, label) pairs for the legend line."""
    if metric is Metric.HEALTH:
        return [("sev-ok", "ok"), ("sev-info", "info"), ("sev-warning", "warn"),
                ("sev-error", "error"), ("sev-critical", "crit")]
    steps = temp_steps(thresholds) if metric is Metric.TEMP else PCT_STEPS
    unit = "°C" if metric is Metric.TEMP else "%"
    labels = [f"<{steps[0]:.0f}"] + [f"{a:.0f}–{b:.0f}" for a, b in pairwise(steps)]
    labels.append(f"≥{steps[-1]:.0f}{unit}")
    names = level_vars(metric)
    out = [(names[i], label) for i, label in enumerate(labels)]
    out.append(("heat-na", "N/A"))
    return out


# -- palettes and ramps ---------------------------------------------------------
# GPU utilisation is load, not health: a busy GPU (≥ 80 %) is good news, so util has a ramp of
# its own (cool → bright green) and never borrows heat-4, the "hot/error" red of temp/power.
UTIL_VARS = ("util-0", "util-1", "util-2", "util-3", "util-4", "heat-na")
HEALTH_VARS = ("sev-ok", "sev-info", "sev-warning", "sev-error", "sev-critical", "heat-na")
HEAT_VARS = ("heat-0", "heat-1", "heat-2", "heat-3", "heat-4", "heat-na")

# palette = "colorblind": fixed ramps that stay ordered for every colour vision. The heat and
# util ramps are cividis (dark blue → grey → yellow: lightness rises monotonically); health uses
# Okabe–Ito colours, and each severity also gets a glyph, so nothing relies on hue alone.
CIVIDIS = ("#00224E", "#35456C", "#666970", "#948E77", "#C8B866", "#5A5A5A")
COLORBLIND_HEALTH = ("#0072B2", "#56B4E9", "#E69F00", "#D55E00", "#CC79A7", "#5A5A5A")
SEVERITY_GLYPHS = (" ", "·", "▵", "▲", "◆", " ")  # ok, info, warning, error, critical, N/A


def level_vars(metric: Metric) -> tuple[str, ...]:
    """Theme variables of levels 0..4 and N/A for ``metric``."""
    if metric is Metric.HEALTH:
        return HEALTH_VARS
    return UTIL_VARS if metric is Metric.UTIL else HEAT_VARS


def level_colours(metric: Metric, palette: str) -> tuple[str, ...] | None:
    """Fixed colours for a non-theme palette (``colorblind``), or None: use the theme."""
    if palette != "colorblind":
        return None
    return COLORBLIND_HEALTH if metric is Metric.HEALTH else CIVIDIS


# -- grouping -----------------------------------------------------------------------
NO_GROUP = "(none)"


def _natural(label: str) -> tuple[bool, list[object]]:
    import re

    parts: list[object] = [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", label)]
    return (label.startswith("("), parts)


def group_key(snapshot: ClusterSnapshot, name: str, group_by: str, rack_of: dict[str, str]) -> str:
    if group_by == "partition":
        node = snapshot.nodes.get(name)
        parts = node.slurm.partitions if node is not None and node.slurm is not None else ()
        return parts[0] if parts else "(no partition)"
    if group_by == "rack":
        return rack_of.get(name, "(no rack)")
    if group_by == "model":
        gpus = snapshot.gpus.get(name, ())
        model = next((g.model for g in gpus if g.model), None)
        return model.removeprefix("NVIDIA ") if model else "(no GPU)"
    if group_by == "switch":
        leaf = snapshot.fabric.leaf_of.get(name) if snapshot.fabric is not None else None
        return leaf or "(no switch)"
    return NO_GROUP


def group_nodes(snapshot: ClusterSnapshot, names: Sequence[str], group_by: str,
                rack_of: dict[str, str] | None = None,
                severity: dict[str, int] | None = None) -> list[tuple[str, list[str]]]:
    """Nodes in groups ``[(label, names)]``, labels in natural order; ``severity`` (node → level)
    puts the worst nodes first inside each group (stable: equal nodes keep their order)."""
    racks = rack_of or {}
    if group_by == "none":
        groups: dict[str, list[str]] = {NO_GROUP: list(names)}
    else:
        groups = {}
        for name in names:
            groups.setdefault(group_key(snapshot, name, group_by, racks), []).append(name)
    out = [(label, groups[label]) for label in sorted(groups, key=_natural)]
    if severity is not None:
        out = [(label, _worst_first(members, severity)) for label, members in out]
    return out


def _worst_first(members: list[str], severity: dict[str, int]) -> list[str]:
    """``members`` sorted by severity, worst first, stable; only the few bad nodes are sorted."""
    bad = [n for n in members if severity.get(n, 0)]
    if not bad:
        return members
    bad.sort(key=lambda n: -severity[n])
    seen = set(bad)
    return bad + [n for n in members if n not in seen]
