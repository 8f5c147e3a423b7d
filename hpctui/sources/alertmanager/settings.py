"""The TOML section of one Alertmanager source (``kind = "alertmanager"``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from hpctui.sources.alertmanager.source import AlertmanagerSource
    from hpctui.sources.registry import SourceContext

_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MATCHER = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)(=~|=)"([^"]*\{node\}[^"]*)"')


def parse_matcher(text: str) -> tuple[str, bool, str]:
    """``'instance=~"{node}(:[0-9]+)?"'`` → (label, is_regex, value template); ValueError when malformed or
    without ``{node}``."""
    m = _MATCHER.fullmatch(text.strip())
    if m is None:
        raise ValueError(f'silence_matchers: {text!r} is not label="…{{node}}…" or label=~"…{{node}}…"')
    return m.group(1), m.group(2) == "=~", m.group(3)


class AlertmanagerSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str = "alertmanager"
    """This source's name (unique in the cluster; actions and the status line use it)."""
    url: str = "http://127.0.0.1:9093"
    """Base URL; ``/api/v2/alerts`` and ``/api/v2/silences`` are appended."""
    interval_s: float = 15.0
    """Seconds between two reads of alerts and silences."""
    timeout_s: float = 10.0
    """One HTTP request (connect + answer)."""
    bearer_token_file: str | None = None
    """Auth, read from a file or an environment variable; never from the config text, never printed."""
    bearer_token_env: str | None = None
    """Environment variable holding the bearer token (instead of bearer_token_file)."""
    basic_user: str | None = None
    """Basic-auth user (its password from basic_password_file or basic_password_env)."""
    basic_password_file: str | None = None
    """File holding the basic-auth password."""
    basic_password_env: str | None = None
    """Environment variable holding the basic-auth password."""
    ca_file: str | None = None
    """PEM bundle for https:// with a private CA."""
    verify_tls: bool = True
    """Check the server's certificate (https://); false only for a test server."""
    node_labels: list[str] = msgspec.field(default_factory=lambda: ["Hostname", "hostname", "node", "nodename",
                                                                     "instance"])
    """An alert's node: the first of these labels it has, then ``node_pattern``, then the cluster's node_map."""
    node_pattern: str = r"^([^:]+)"
    """Regex matched against the label value (default: strip ``:port`` from ``instance``)."""
    node_replace: str = r"\1"
    """Expansion of the ``node_pattern`` match (``re.Match.expand``)."""
    silence_matchers: list[str] = msgspec.field(default_factory=lambda: ['Hostname="{node}"',
                                                                         'instance=~"{node}(:[0-9]+)?"'])
    """One silence per entry for each silenced node (Alertmanager ANDs the matchers of one silence, so alerts
    that name the node by different labels need one silence each): dcgm-exporter's ``Hostname``, node_exporter's
    ``instance`` with its port. ``{node}`` is the node name (regex-escaped in ``=~`` matchers)."""
    silence_hours: float = 4.0
    """Default length of a node silence."""
    same_as: dict[str, list[str]] = msgspec.field(default_factory=dict)
    """Alert name → hpctui finding codes it means (``xid*`` prefixes allowed): such an alert on a node that
    already has one of those findings is not shown twice. Alerts on DCGM and node_exporter metrics are matched
    by their rule's metric without this table."""
    max_answer_mib: int = 16
    """Largest answer read (MiB); a bigger one is refused and the connection dropped."""
    max_alerts: int = 100_000
    """Most alerts one answer may hold."""

    def __post_init__(self) -> None:
        if self.interval_s <= 0 or self.timeout_s <= 0:
            raise ValueError("interval_s and timeout_s must be > 0")
        if not self.url.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        if self.bearer_token_file and self.bearer_token_env:
            raise ValueError("set bearer_token_file or bearer_token_env, not both")
        if (self.bearer_token_file or self.bearer_token_env) and self.basic_user:
            raise ValueError("bearer token and basic auth are exclusive")
        if not self.node_labels:
            raise ValueError("node_labels must name at least one label")
        for label in self.node_labels:
            if not _LABEL.fullmatch(label):
                raise ValueError(f"{label!r} is not a label name")
        if not self.silence_matchers:
            raise ValueError("silence_matchers must name at least one matcher")
        for text in self.silence_matchers:
            parse_matcher(text)
        try:
            re.compile(self.node_pattern)
        except re.error as exc:
            raise ValueError(f"node_pattern: bad regular expression: {exc}") from None
        if not 0 < self.silence_hours <= 24 * 30:
            raise ValueError("silence_hours must be > 0 and at most 720 (30 days)")
        if not 1 <= self.max_answer_mib <= 1024 or self.max_alerts < 1:
            raise ValueError("max_answer_mib must be 1..1024 and max_alerts >= 1")


def build_alertmanager_source(settings: AlertmanagerSettings, context: SourceContext) -> AlertmanagerSource:
    from hpctui.sources.alertmanager.source import AlertmanagerSource

    return AlertmanagerSource(settings, name_map=context.name_map)
