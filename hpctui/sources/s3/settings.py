"""The TOML section of one S3 endpoint probe (``kind = "s3"``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import msgspec

if TYPE_CHECKING:
    from hpctui.sources.registry import SourceContext
    from hpctui.sources.s3.source import S3Source

_BUCKET = re.compile(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]")


class S3Settings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str = "s3"
    """This endpoint's name (unique in the cluster; the problem list's group is ``s3/<name>``)."""
    endpoint: str = "https://s3.amazonaws.com"
    """The S3 API's base URL (``https://minio.example:9000``, a Ceph RGW ``http://rgw1:7480``); no path."""
    bucket: str = "hpctui-canary"
    """The bucket the canary object goes to (it must exist: a missing bucket is a finding, never created)."""
    region: str = "us-east-1"
    """The region requests are signed for (RGW and MinIO accept ``us-east-1`` unless configured otherwise)."""
    access_key_id_file: str | None = None
    """File holding the access key id; when set it wins over ``access_key_id_env``. Credentials are never
    in the config text and never printed (messages from the endpoint are redacted)."""
    access_key_id_env: str | None = "AWS_ACCESS_KEY_ID"
    """Environment variable holding the access key id."""
    secret_access_key_file: str | None = None
    """File holding the secret access key (a private file: ``chmod 600``); wins over ``secret_access_key_env``."""
    secret_access_key_env: str | None = "AWS_SECRET_ACCESS_KEY"
    """Environment variable holding the secret access key."""
    ca_file: str | None = None
    """PEM bundle for https:// with a private CA."""
    verify_tls: bool = True
    """Check the server's certificate (https://); false only for a test server."""
    canary_prefix: str = "hpctui-canary/"
    """Key prefix of the canary objects (listed, then one object put, read back and deleted)."""
    canary_bytes: int = 4096
    """Size of the canary object."""
    write: bool = True
    """Put, get and delete the canary object; false: list only (read-only credentials)."""
    interval_s: float = 60.0
    """Seconds between two probes."""
    timeout_s: float = 10.0
    """Connect and read timeout of one call (an RGW whose data pool is full or whose OSDs are down does not
    answer a PUT at all: this is what ends it)."""
    latency_warn_ms: float = 2000.0
    """A round trip (list + put + get + delete) slower than this is a warning."""

    def __post_init__(self) -> None:
        parts = urlsplit(self.endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("endpoint must be http(s)://host[:port]")
        if parts.path not in ("", "/") or parts.query or parts.username or parts.password:
            raise ValueError("endpoint must be http(s)://host[:port], without path, query or credentials")
        if not _BUCKET.fullmatch(self.bucket):
            raise ValueError(f"bucket {self.bucket!r} is not an S3 bucket name")
        for what in ("access_key_id", "secret_access_key"):
            file, env = getattr(self, f"{what}_file"), getattr(self, f"{what}_env")
            if not file and not env:
                raise ValueError(f"set {what}_file or {what}_env")
        if self.interval_s <= 0 or self.timeout_s <= 0 or self.latency_warn_ms <= 0:
            raise ValueError("interval_s, timeout_s and latency_warn_ms must be > 0")
        if not 1 <= self.canary_bytes <= 16 << 20:
            raise ValueError("canary_bytes must be 1..16777216")


def build_s3_source(settings: S3Settings, context: SourceContext) -> S3Source:
    from hpctui.sources.s3.source import S3Source

    return S3Source(settings)
