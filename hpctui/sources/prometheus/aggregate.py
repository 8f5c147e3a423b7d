"""``detail = "aggregate"``: the engine sums every node up and names the nodes that need reading in full.

One refresh is two rounds of queries:

1. For the whole cluster, answers of one series per *node*, never per GPU or port:
   the heatmap's numbers (:data:`SUMMARY_FIELDS`: mean utilisation, hottest GPU, mean memory
   use, power against the limit, GPUs reporting), each node's newest sample time (the same
   ``gpu_time`` / ``node_time`` families as ``series``, which also say which nodes exist and are
   live) and one "needs detail" query (:func:`needs_detail_expr`): the nodes where a health rule of
   :mod:`hpctui.findings.health` that Prometheus data can trigger fires, with the same
   :class:`~hpctui.findings.health.Thresholds`, or where the summary would not be exact (MIG).
2. The ``series`` families (:func:`hpctui.sources.prometheus.queries.families`) restricted by a label
   matcher to those nodes plus the ones looked at (:func:`restricted_families`): the same queries, so
   the same model objects and findings as ``series`` for every node that has any.

A node where no rule fires therefore has no findings in either mode, and one where a rule fires is
read exactly as ``series`` reads it. The "needs detail" conditions are a superset of the rules
(``ecc >= warn - 0.5`` where the model rounds; NaN counts as firing): a false alarm costs one node's
detail, a miss would be a missing finding.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import msgspec

from hpctui.findings.health import Thresholds
from hpctui.findings.idle import HOLDING_STATES, IdleSettings, parse_indices
from hpctui.model import ClusterSnapshot, GpuSummary
from hpctui.model.ib import LINK_ERROR_COUNTERS
from hpctui.model.validate import EPOCH_S, MEMORY_MIB, PERCENT, POWER_W, TEMP_C, Bounds
from hpctui.sources.prometheus.client import Sample
from hpctui.sources.prometheus.parse import NodeNamer
from hpctui.sources.prometheus.queries import (
    IB_COUNTERS,
    INFO_METRICS,
    THROTTLE_NAMES,
    Family,
    _any_name,
    _name_re,
    _sel,
    families,
    names_of,
    promql_string,
)
from hpctui.sources.prometheus.settings import PrometheusSettings

# GpuSummary field -> what the handler does with its answer
SUMMARY_FIELDS = ("util_pct", "temp_c", "memory_pct", "power_pct", "gpus")
# the IB counters whose rise is a finding (ib_flap, ib_errors); port_xmit_wait rises with any traffic
LINK_ERROR_FAMILIES = tuple(m for m, name in IB_COUNTERS.items() if name in LINK_ERROR_COUNTERS)
_THERMAL_LOW_BIT = 32  # SW_THERMAL_SLOWDOWN 0x20, HW_THERMAL_SLOWDOWN 0x40: floor(mask / 32) % 4 > 0


def _bounded(expr: str, b: Bounds) -> str:
    """``expr`` keeping only plausible values, as the per-series path does (NaN compares false)."""
    return f"({expr} >= {b.lo:g} <= {b.hi:g})"


def _per_gpu(s: PrometheusSettings, metric: str) -> str:
    g = f"{', '.join(s.node_labels)}, gpu, GPU_I_ID"
    return f"max by ({g}) ({_any_name(metric, s.dcgm_selector)})"


def summary_families(s: PrometheusSettings) -> list[Family]:
    """One series per node each: the heatmap's GPU numbers, computed as :func:`hpctui.ui.heatmap_levels.gpu_value`
    computes them from the GPUs (mean utilisation and memory, hottest GPU, total power ÷ total limit)."""
    if not s.gpus:
        return []
    n = ", ".join(s.node_labels)
    used = _bounded(_per_gpu(s, "DCGM_FI_DEV_FB_USED"), MEMORY_MIB)
    free = _bounded(_per_gpu(s, "DCGM_FI_DEV_FB_FREE"), MEMORY_MIB)
    reserved = _bounded(_per_gpu(s, "DCGM_FI_DEV_FB_RESERVED"), MEMORY_MIB)
    power = _bounded(_per_gpu(s, "DCGM_FI_DEV_POWER_USAGE"), POWER_W)
    limit = f"({_bounded(_per_gpu(s, 'DCGM_FI_DEV_POWER_MGMT_LIMIT'), POWER_W)} > 0)"
    present = _sel(s.dcgm_selector, _name_re("|".join(names_of(m) for m in INFO_METRICS)))
    g = f"{n}, gpu, GPU_I_ID"
    return [
        Family("gsum", "util_pct", f"avg by ({n}) ({_bounded(_per_gpu(s, 'DCGM_FI_DEV_GPU_UTIL'), PERCENT)})"),
        Family("gsum", "temp_c", f"max by ({n}) ({_bounded(_per_gpu(s, 'DCGM_FI_DEV_GPU_TEMP'), TEMP_C)})"),
        Family("gsum", "memory_pct",
               f"avg by ({n}) (100 * {used} / (({used} + {free} + ({reserved} or {used} * 0)) > 0))"),
        Family("gsum", "power_pct",
               f"100 * sum by ({n}) ({power} and {limit}) / sum by ({n}) ({limit} and {power})"),
        Family("gsum", "gpus", f"count by ({n}) (group by ({g}) ({present}))"),
    ]


def idle_families(s: PrometheusSettings, idle: IdleSettings) -> list[Family]:
    """Per node, for the idle rules of :mod:`hpctui.findings.idle` (with a scheduler source): the least
    busy GPU's utilisation, and how many GPUs are busy (utilisation or memory in use) by ``[idle]``."""
    if not s.gpus or not idle.enabled:
        return []
    n = ", ".join(s.node_labels)
    util = _bounded(_per_gpu(s, "DCGM_FI_DEV_GPU_UTIL"), PERCENT)
    used = _bounded(_per_gpu(s, "DCGM_FI_DEV_FB_USED"), MEMORY_MIB)
    return [
        Family("gsum", "util_min", f"min by ({n}) ({util})"),
        Family("gsum", "busy", f"count by ({n}) (({util} >= {idle.busy_util_pct:g}) or ({used} >= {idle.busy_mem_mib:g}))"),
    ]


def idle_candidates(values: Mapping[str, Mapping[str, float]], snapshot: ClusterSnapshot | None,
                    idle: IdleSettings) -> set[str]:
    """The nodes where an idle rule may fire, from the other sources' scheduler data: a node where a
    running job or GPU pod holds GPUs and some GPU is under ``util_pct`` (``gpu_idle``), or a node a
    scheduler knows with a busy GPU and fewer GPUs held by jobs than it has (``gpu_busy_unowned``;
    pods are not counted as holders here, so this is a superset)."""
    if snapshot is None or not idle.enabled or not (snapshot.jobs or snapshot.pods):
        return set()
    held: dict[str, set[int]] = {}
    for job in snapshot.jobs:
        if job.gpus_alloc and (job.state == "RUNNING" or job.state in HOLDING_STATES):
            for node, text in job.gpus_alloc.items():
                held.setdefault(node, set()).update(parse_indices(text))
    pods = {p.node for p in snapshot.pods if p.node and p.gpus_requested > 0 and p.phase == "Running"}
    out = set()
    for node, v in values.items():
        if (node in held or node in pods) and v.get("util_min", 101.0) < idle.util_pct:
            out.add(node)
            continue
        known = snapshot.nodes.get(node)
        if (known is not None and (known.slurm is not None or known.k8s is not None) and v.get("busy", 0.0) > 0
                and len(held.get(node, ())) < v.get("gpus", 0.0)):
            out.add(node)
    return out


def needs_detail_expr(s: PrometheusSettings, t: Thresholds) -> str:
    """One query naming (``group by`` the node labels) every node where a health rule on Prometheus
    data may fire: GPU Xid, ECC, row remaps, temperatures, thermal throttling; MIG (its per-GPU
    values are not summed the same way); IB ports not ACTIVE or with error counters rising; watched
    mounts read-only, failing or missing. Empty when every node is healthy."""
    n = ", ".join(s.node_labels)
    x = s.node_selector
    parts: list[str] = []
    if s.gpus:
        gpu = [
            f"{_per_gpu(s, 'DCGM_FI_DEV_XID_ERRORS')} != 0",
            f"{_per_gpu(s, 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL')} != 0",
            f"{_per_gpu(s, 'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL')} >= {t.ecc_corrected_warn - 0.5:g}",
            f"{_per_gpu(s, 'DCGM_FI_DEV_ROW_REMAP_FAILURE')} != 0",
            f"{_per_gpu(s, 'DCGM_FI_DEV_ROW_REMAP_PENDING')} != 0",
            f"{_per_gpu(s, 'DCGM_FI_DEV_GPU_TEMP')} >= {t.gpu_temp_warn_c:g}",
            f"{_per_gpu(s, 'DCGM_FI_DEV_MEMORY_TEMP')} >= {t.hbm_temp_warn_c:g}",
            f"floor(round(max by ({n}, gpu, GPU_I_ID) ({_sel(s.dcgm_selector, _name_re(THROTTLE_NAMES))}))"
            f" / {_THERMAL_LOW_BIT}) % 4 > 0",
            f"{_per_gpu(s, 'DCGM_FI_DEV_MIG_MODE')} > 0",
            _sel(s.dcgm_selector, _name_re("|".join(names_of(m) for m in INFO_METRICS)), 'GPU_I_ID!=""'),
        ]
        parts.extend(gpu)
    if s.ib:
        parts.append(f"node_infiniband_state_id{_sel(x)} != 4")
        dw = f"[{int(s.delta_window_s)}s]"
        # one increase() per family: over a __name__ regex Prometheus refuses two families with one label set
        parts.extend(f"increase({m}{_sel(x)}{dw}) > 0" for m in LINK_ERROR_FAMILIES)
    if s.mounts:
        mp = promql_string("^(" + "|".join(re.escape(m) for m in s.mounts) + ")$")
        where = f'mountpoint=~"{mp}"'
        flags = _name_re("node_filesystem_readonly|node_filesystem_device_error")
        fs = _name_re("node_filesystem_size_bytes|node_filesystem_avail_bytes|node_filesystem_readonly"
                      "|node_filesystem_device_error")
        parts.append(f"{_sel(x, flags, where)} != 0")
        parts.append(f"count by ({n}) (group by ({n}, mountpoint) ({_sel(x, fs, where)})) < {len(s.mounts)}")
    return " or ".join(f"group by ({n}) ({p})" for p in parts)


def node_count_expr(s: PrometheusSettings) -> str:
    """How many nodes the engine has GPU or node_exporter samples of (``detail = "auto"`` decides on it)."""
    n = ", ".join(s.node_labels)
    names = [*names_of("DCGM_FI_DEV_GPU_TEMP").split("|"), *names_of("DCGM_FI_DEV_FB_USED").split("|")]
    counts = []  # per exporter (a GPU node has both; their node labels may differ): the larger count
    if s.gpus:
        gpu = " or ".join(f"group by ({n}) ({name}{_sel(s.dcgm_selector)})" for name in names)
        counts.append(f'label_replace(count({gpu}), "exporter", "dcgm", "", "")')
    if s.ib or s.resources or s.mounts:
        counts.append(f'label_replace(count(group by ({n}) (node_load1{_sel(s.node_selector)})), "exporter", "node", "", "")')
    return f"max({' or '.join(counts) or 'vector(0)'})"


def restriction(labels: Sequence[str], tuples: Iterable[tuple[str | None, ...]]) -> list[str]:
    """Label matchers (PromQL, without braces), each selecting the series of some of ``tuples``
    (raw node label values, in ``labels`` order) as :class:`NodeNamer` reads them: the first
    non-empty label names the node, so the labels before it must be empty."""
    by_first: dict[int, set[str]] = {}
    for raw in tuples:
        k = next((i for i, v in enumerate(raw) if v), None)
        if k is not None:
            by_first.setdefault(k, set()).add(raw[k] or "")
    out = []
    for k, values in sorted(by_first.items()):
        empty = [f'{labels[i]}=""' for i in range(k)]
        alternatives = promql_string("|".join(re.escape(v) for v in sorted(values)))
        out.append(",".join([*empty, f'{labels[k]}=~"{alternatives}"']))
    return out


def _and(selector: str, matcher: str) -> str:
    return ",".join(p for p in (selector.strip().strip(","), matcher) if p)


def restricted_families(s: PrometheusSettings, gpu_tuples: Iterable[tuple[str | None, ...]],
                        node_tuples: Iterable[tuple[str | None, ...]]) -> list[Family]:
    """The ``series`` families of the nodes named by their raw label tuples (GPU families by the
    dcgm-exporter tuples, node_exporter families by its own). The cluster-wide families (which
    sparse metrics exist; each node's newest sample) are not among them: the refresh asks those once."""
    out: list[Family] = []
    for m in restriction(s.node_labels, gpu_tuples):
        part = msgspec.structs.replace(s, dcgm_selector=_and(s.dcgm_selector, m), ib=False, resources=False,
                                       mounts=[])
        out.extend(f for f in families(part) if f.target not in CLUSTER_WIDE)
    for m in restriction(s.node_labels, node_tuples):
        part = msgspec.structs.replace(s, node_selector=_and(s.node_selector, m), gpus=False)
        out.extend(f for f in families(part) if f.target not in CLUSTER_WIDE)
    return out


CLUSTER_WIDE = frozenset({"present", "gpu_time", "node_time"})


def cluster_families(s: PrometheusSettings) -> list[Family]:
    """The families every refresh asks for the whole cluster: which sparse metrics exist, and each
    node's newest sample (they also say which nodes there are)."""
    return [f for f in families(s) if f.target in CLUSTER_WIDE]


@dataclass
class SummaryFold:
    """Answers of round 1 → per-node summaries, and the raw label tuples each node was seen under."""

    namer: NodeNamer
    values: dict[str, dict[str, float]] = field(default_factory=dict)
    gpu_tuples: dict[str, set[tuple[str | None, ...]]] = field(default_factory=dict)
    node_tuples: dict[str, set[tuple[str | None, ...]]] = field(default_factory=dict)
    sick: set[str] = field(default_factory=set)
    dropped: int = 0

    def _node(self, metric: Mapping[str, str], into: dict[str, set[tuple[str | None, ...]]] | None) -> str | None:
        node = self.namer(metric)
        if node is None:
            self.dropped += 1
        elif into is not None:
            into.setdefault(node, set()).add(tuple(map(metric.get, self.namer.labels)))
        return node

    def summary(self, fld: str, samples: list[Sample]) -> None:
        for s in samples:
            node = self._node(s.metric, self.gpu_tuples)
            v = _finite(s)
            if node is not None and v is not None:
                self.values.setdefault(node, {})[fld] = v

    def times(self, gpu: bool, samples: list[Sample]) -> None:
        """The tuples of the ``gpu_time`` / ``node_time`` answers (the Collector reads their values)."""
        for s in samples:
            self._node(s.metric, self.gpu_tuples if gpu else self.node_tuples)

    def needs_detail(self, samples: list[Sample]) -> None:
        for s in samples:
            node = self._node(s.metric, None)
            if node is not None:
                self.sick.add(node)

    def build(self, live: Iterable[str], gpu_live: set[str]) -> dict[str, GpuSummary]:
        """A summary for every node in ``live`` (those with a current sample); GPU numbers only
        for the nodes in ``gpu_live`` (a current dcgm-exporter sample)."""
        out: dict[str, GpuSummary] = {}
        for node in sorted(set(live)):
            v = self.values.get(node, {}) if node in gpu_live else {}
            gpus = v.get("gpus")
            out[node] = GpuSummary(node=node, gpus=None if gpus is None else round(gpus), util_pct=v.get("util_pct"),
                                   temp_c=v.get("temp_c"), memory_pct=v.get("memory_pct"),
                                   power_pct=v.get("power_pct"))
        return out


def _finite(s: Sample) -> float | None:
    try:
        v = float(s.value[1])  # type: ignore[index]
    except (TypeError, ValueError, OverflowError):
        return None
    return v if v - v == 0.0 and EPOCH_S.hi * 10 > abs(v) else None
