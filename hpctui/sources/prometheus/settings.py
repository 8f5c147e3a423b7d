"""The TOML section of one Prometheus source (``kind = "prometheus"``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

import msgspec

if TYPE_CHECKING:
    from hpctui.sources.prometheus.source import PrometheusSource
    from hpctui.sources.registry import SourceContext


class PrometheusSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str = "prometheus"
    """The source's name, as the status line, ``precedence`` and ``ssh_source`` name it."""
    url: str = "http://127.0.0.1:9090"
    """Base URL; ``/api/v1/query`` is appended."""
    interval_s: float = 5.0
    """Seconds between refreshes."""
    timeout_s: float = 10.0
    """Limit of one HTTP request (connect + answer)."""
    scrape_interval_s: float = 15.0
    """The exporters' scrape interval: data older than 3× this is shown stale."""
    # Auth. The token is read from a file or an environment variable, never from the config text,
    # and never printed (errors name the file or variable, not the value).
    bearer_token_file: str | None = None
    """File holding the bearer token (read at start, never printed)."""
    bearer_token_env: str | None = None
    """Environment variable holding the bearer token (not with ``bearer_token_file``)."""
    basic_user: str | None = None
    """HTTP basic auth user (not with a bearer token)."""
    basic_password_file: str | None = None
    """File holding the basic auth password."""
    basic_password_env: str | None = None
    """Environment variable holding the basic auth password."""
    ca_file: str | None = None
    """PEM bundle for ``https://`` with a private CA."""
    verify_tls: bool = True
    """Verify the server's certificate (false is not advised)."""
    # Node names: the first non-empty of these labels, then the rewrite rule, then the cluster's node_map.
    node_labels: list[str] = msgspec.field(default_factory=lambda: ["Hostname", "hostname", "instance"])
    """The first non-empty of these labels names the node (then ``node_pattern``, then the cluster's
    ``node_map``)."""
    node_pattern: str = r"^([^:]+)"
    """Regex matched against the label value (default: strip ``:port``)."""
    node_replace: str = r"\1"
    """Expansion of the match (``re.Match.expand``)."""
    dcgm_selector: str = ""
    """Extra label matchers for dcgm-exporter series, e.g. ``job="dcgm-exporter"`` (PromQL, without braces)."""
    node_selector: str = ""
    """Extra label matchers for node_exporter series, e.g. ``job="node"``."""
    gpus: bool = True
    """GPUs from dcgm-exporter."""
    ib: bool = True
    """InfiniBand ports from node_exporter."""
    resources: bool = True
    """Load, CPU, memory, disks and NICs from node_exporter."""
    mounts: list[str] = msgspec.field(default_factory=list)
    """Mount points read from ``node_filesystem_*``."""
    rate_window_s: float = 60.0
    """``rate()`` window for CPU, disk, network, NVLink bandwidth."""
    delta_window_s: float = 300.0
    """``increase()`` window for IB / NVLink error counters ("rising" = rose in it)."""
    keep_stale_s: float = 600.0
    """A node gone from Prometheus keeps its last values (marked stale) this long."""
    history_window_s: float = 3600.0
    """Range query window when a node is opened."""
    exporter_pod_pattern: str = "dcgm-exporter"
    """``pod`` labels matching this name the exporter itself, not a workload."""
    max_parallel_queries: int = 8
    """Queries in flight at once."""
    # Bounds on one answer (issue #19 §5). 64 MiB holds ~370k aggregated series (~180 B each in
    # JSON): the largest query (DCGM profiling metrics by GPU) of a 4,096-node, 8-GPU cluster with
    # 10 profiling metrics is ~330k series / ~58 MB. Decoded, a series costs ~700 B, so the series
    # cap keeps one decoded answer near 350 MB even when the series are tiny.
    max_answer_mib: int = 64
    """Largest answer read, 1–4096 MiB; one past it is refused, saying so."""
    max_series: int = 500_000
    """Most series in one answer; one past it is refused, saying so."""
    detail: Literal["auto", "series", "aggregate"] = "auto"
    """``series``: every GPU, port and mount of every node is read each refresh (the engine answers one
    series per GPU and metric). ``aggregate``: the engine sums each node up (hottest GPU, mean
    utilisation, memory, power) and names the nodes where a health or idle rule may fire; only those
    and the ones looked at (selected, charted, opened) are read in full. Findings, the problem list
    and the heatmap are the same; a healthy node nobody opened has no per-GPU readings (GPUs list,
    partitions view, IB and mount panes, host resources, charts). ``auto``: ``series`` up to
    ``aggregate_above_nodes`` nodes, ``aggregate`` above (measured: docs/benchmarks.md)."""
    aggregate_above_nodes: int = 512
    """``auto``: the number of nodes above which the refresh is ``aggregate``."""
    detail_nodes: int = 16
    """``aggregate``: how many of the most recently looked-at nodes are read in full."""
    max_detail_nodes: int = 1024
    """``aggregate``: when more nodes than this need reading in full (half the cluster is hot), the
    refresh reads every node instead (as ``series``)."""

    def __post_init__(self) -> None:
        if self.interval_s <= 0 or self.timeout_s <= 0 or self.scrape_interval_s <= 0:
            raise ValueError("interval_s, timeout_s and scrape_interval_s must be > 0")
        if not self.url.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        if self.bearer_token_file and self.bearer_token_env:
            raise ValueError("set bearer_token_file or bearer_token_env, not both")
        if (self.bearer_token_file or self.bearer_token_env) and self.basic_user:
            raise ValueError("bearer token and basic auth are exclusive")
        if not self.node_labels:
            raise ValueError("node_labels must name at least one label")
        for label in (*self.node_labels,):
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", label):
                raise ValueError(f"node_labels: {label!r} is not a Prometheus label name")
        try:
            re.compile(self.node_pattern)
            re.compile(self.exporter_pod_pattern)
        except re.error as exc:
            raise ValueError(f"bad regular expression: {exc}") from None
        if self.rate_window_s < 1 or self.delta_window_s < 1:
            raise ValueError("rate_window_s and delta_window_s must be >= 1")
        if self.max_parallel_queries < 1:
            raise ValueError("max_parallel_queries must be >= 1")
        if self.detail_nodes < 0 or self.max_detail_nodes < 1 or self.aggregate_above_nodes < 0:
            raise ValueError("detail_nodes and aggregate_above_nodes must be >= 0, max_detail_nodes >= 1")
        if not 1 <= self.max_answer_mib <= 4096 or self.max_series < 1:
            raise ValueError("max_answer_mib must be 1..4096 and max_series >= 1")

    @property
    def stale_after_s(self) -> float:
        return 3.0 * self.scrape_interval_s


def build_prometheus_source(settings: PrometheusSettings, context: SourceContext) -> PrometheusSource:
    from hpctui.sources.prometheus.source import PrometheusSource

    return PrometheusSource(settings, name_map=context.name_map, thresholds=context.thresholds, idle=context.idle,
                            snapshot=lambda: context.snapshot())  # late-bound: the store exists after the sources
