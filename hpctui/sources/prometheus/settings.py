"""The TOML section of one Prometheus source (``kind = "prometheus"``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from hpctui.sources.prometheus.source import PrometheusSource
    from hpctui.sources.registry import SourceContext


class PrometheusSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str = "prometheus"
    url: str = "http://127.0.0.1:9090"  # base URL; /api/v1/query is appended
    interval_s: float = 5.0
    timeout_s: float = 10.0  # one HTTP request (connect + answer)
    scrape_interval_s: float = 15.0  # of the exporters' jobs: data older than 3× this is stale
    # Auth. The token is read from a file or an environment variable, never from the config text,
    # and never printed (errors name the file or variable, not the value).
    bearer_token_file: str | None = None
    bearer_token_env: str | None = None
    basic_user: str | None = None
    basic_password_file: str | None = None
    basic_password_env: str | None = None
    ca_file: str | None = None  # PEM bundle for https:// with a private CA
    verify_tls: bool = True
    # Node names: the first non-empty of these labels, then the rewrite rule, then the cluster's node_map.
    node_labels: list[str] = msgspec.field(default_factory=lambda: ["Hostname", "hostname", "instance"])
    node_pattern: str = r"^([^:]+)"  # regex matched against the label value (default: strip ":port")
    node_replace: str = r"\1"  # expansion of the match (re.Match.expand)
    # Extra label matchers per exporter, e.g. 'job="dcgm-exporter"' (PromQL, without braces)
    dcgm_selector: str = ""
    node_selector: str = ""
    gpus: bool = True
    ib: bool = True
    resources: bool = True
    mounts: list[str] = msgspec.field(default_factory=list)  # mount points read from node_filesystem_*
    rate_window_s: float = 60.0  # rate() window for CPU, disk, network, NVLink bandwidth
    delta_window_s: float = 300.0  # increase() window for IB / NVLink error counters ("rising" = rose in it)
    keep_stale_s: float = 600.0  # a node gone from Prometheus keeps its last values (marked stale) this long
    history_window_s: float = 3600.0  # range query window when a node is opened
    exporter_pod_pattern: str = "dcgm-exporter"  # `pod` labels naming the exporter itself are not workload
    max_parallel_queries: int = 8
    # Bounds on one answer (issue #19 §5). 64 MiB holds ~370k aggregated series (~180 B each in
    # JSON): the largest query (DCGM profiling metrics by GPU) of a 4,096-node, 8-GPU cluster with
    # 10 profiling metrics is ~330k series / ~58 MB. Decoded, a series costs ~700 B, so the series
    # cap keeps one decoded answer near 350 MB even when the series are tiny.
    max_answer_mib: int = 64
    max_series: int = 500_000

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
        if not 1 <= self.max_answer_mib <= 4096 or self.max_series < 1:
            raise ValueError("max_answer_mib must be 1..4096 and max_series >= 1")

    @property
    def stale_after_s(self) -> float:
        return 3.0 * self.scrape_interval_s


def build_prometheus_source(settings: PrometheusSettings, context: SourceContext) -> PrometheusSource:
    from hpctui.sources.prometheus.source import PrometheusSource

    return PrometheusSource(settings, name_map=context.name_map)
