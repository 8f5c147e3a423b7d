"""What the HTTP sources (Prometheus, Alertmanager) share: credentials and TLS, bounded answers, and
transport failures as one line.

A token or password is read from a file or an environment variable, never from the config text; errors name
the file or the variable, never the value, and a URL's userinfo is redacted.
"""

from __future__ import annotations

import base64
import os
import ssl
from pathlib import Path
from typing import Protocol

import aiohttp

from hpctui.base.sanitize import redact_url
from hpctui.sources.bounded import AnswerTooLarge, NotJson, check_announced, read_json_capped


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


async def read_answer(resp: aiohttp.ClientResponse, limit: int, *, limit_mib: int, where: str, path: str,
                      api: str, error: type[Exception]) -> bytes:
    """The body, read in chunks up to ``limit`` bytes; an answer too large or (with a success status) not JSON
    at its first chunk drops the connection and raises ``error``. An error page (HTTP >= 400) is read whatever
    it is (bounded), to quote its first line."""
    chunks = resp.content.iter_chunked(64 * 1024)
    try:
        check_announced(resp.content_length, limit)
        return await read_json_capped(chunks, limit, json_only=resp.status < 400)
    except AnswerTooLarge as exc:
        resp.close()
        raise error(f"{exc} from {where}{path} (max_answer_mib = {limit_mib}); reading stopped") from None
    except NotJson as exc:
        resp.close()
        raise error(f"HTTP {resp.status} from {where}{path}: {exc}: not {api} API answer") from None


def transport_error(exc: TimeoutError | aiohttp.ClientError, where: str, timeout_s: float,
                    error: type[Exception]) -> Exception:
    """A request that did not complete, as one line naming the (redacted) server."""
    if isinstance(exc, TimeoutError):
        return error(f"no complete answer from {where} within {timeout_s:g} s")
    if isinstance(exc, aiohttp.ClientConnectorError):
        return error(redact_url(f"cannot reach {where}: {exc.os_error.strerror or exc}"))
    return error(redact_url(f"{where}: {type(exc).__name__}: {exc}"))
