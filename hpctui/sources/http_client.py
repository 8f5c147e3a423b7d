"""Credentials and TLS for the HTTP sources (Prometheus, Alertmanager): read once, carried only in a header.

A token or password is read from a file or an environment variable, never from the config text; errors name
the file or the variable, never the value.
"""

from __future__ import annotations

import base64
import os
import ssl
from pathlib import Path
from typing import Protocol


class HttpAuthSettings(Protocol):
    """The auth fields the HTTP sources' settings share."""

    bearer_token_file: str | None
    bearer_token_env: str | None
    basic_user: str | None
    basic_password_file: str | None
    basic_password_env: str | None
    ca_file: str | None
    verify_tls: bool


def read_secret(path: str | None, env: str | None, what: str, error: type[Exception]) -> str | None:
    """The secret in ``path`` (stripped) or in the environment variable ``env``; None when neither is set."""
    if path:
        try:
            return Path(path).expanduser().read_text().strip()
        except OSError as exc:
            raise error(f"cannot read {what} file {path}: {exc.strerror}") from None
    if env:
        value = os.environ.get(env)
        if value is None:
            raise error(f"{what}: environment variable {env} is not set")
        return value.strip()
    return None


def auth_headers(s: HttpAuthSettings, error: type[Exception]) -> dict[str, str]:
    """``Authorization`` for a bearer token or basic auth (exclusive, checked by the settings); {} for none."""
    token = read_secret(s.bearer_token_file, s.bearer_token_env, "bearer token", error)
    if token:
        return {"Authorization": f"Bearer {token}"}
    if s.basic_user:
        password = read_secret(s.basic_password_file, s.basic_password_env, "basic-auth password", error) or ""
        pair = base64.b64encode(f"{s.basic_user}:{password}".encode()).decode("ascii")
        return {"Authorization": f"Basic {pair}"}
    return {}


def tls_for(base_url: str, s: HttpAuthSettings, error: type[Exception]) -> ssl.SSLContext | bool:
    """aiohttp's ``ssl=``: True (system CAs), False (``verify_tls = false``) or a context with ``ca_file``."""
    if not base_url.startswith("https://"):
        return True
    if not s.verify_tls:
        return False
    if s.ca_file:
        try:
            return ssl.create_default_context(cafile=str(Path(s.ca_file).expanduser()))
        except (OSError, ssl.SSLError) as exc:
            raise error(f"cannot load CA file {s.ca_file}: {exc}") from None
    return True
