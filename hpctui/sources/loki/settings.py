"""The TOML section of one Loki source (``kind = "loki"``): where a site's Loki answers LogQL."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from hpctui.sources.loki.source import LokiSource
    from hpctui.sources.registry import SourceContext


class LokiSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str = "loki"
    """This source's name (unique in the cluster)."""
    url: str = "http://127.0.0.1:3100"
    """Base URL; ``/loki/api/v1/query_range`` is appended."""
    timeout_s: float = 15.0
    """One HTTP request (connect + answer)."""
    org_id: str | None = None
    """Multi-tenant Loki: sent as the ``X-Scope-OrgID`` header."""
    node_query: str = '{{host="{node}"}}'
    """LogQL selector of one node's lines (``{node}``: the node name; ``{{``/``}}``: literal braces)."""
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
    max_answer_mib: int = 16
    """Largest answer read (MiB); a bigger one is refused and the connection dropped."""
    max_lines: int = 5000
    """Most lines one query asks for (Loki's ``limit``)."""

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ValueError("timeout_s must be > 0")
        if not self.url.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        if self.bearer_token_file and self.bearer_token_env:
            raise ValueError("set bearer_token_file or bearer_token_env, not both")
        if (self.bearer_token_file or self.bearer_token_env) and self.basic_user:
            raise ValueError("bearer token and basic auth are exclusive")
        if "{node}" not in self.node_query:
            raise ValueError("node_query must hold {node}")
        if not 1 <= self.max_answer_mib <= 1024 or not 1 <= self.max_lines <= 100_000:
            raise ValueError("max_answer_mib must be 1..1024 and max_lines 1..100000")


def build_loki_source(settings: LokiSettings, context: SourceContext) -> LokiSource:
    """The one constructor the registry calls; it never connects."""
    from hpctui.sources.loki.source import LokiSource

    return LokiSource(settings)
