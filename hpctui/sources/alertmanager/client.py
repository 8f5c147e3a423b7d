"""A small async client for Alertmanager's API v2: read alerts and silences, create and expire silences.

aiohttp, one session per source; answers read streamed and bounded (``max_answer_mib``); credentials only in a
header (:mod:`hpctui.sources.http_client`); every failure one :class:`AlertmanagerError` line a person can act on,
with any userinfo of the URL redacted.
"""

from __future__ import annotations

import ssl
from typing import Any

import aiohttp
import msgspec

from hpctui.base.sanitize import clean_text, redact_url
from hpctui.sources.alertmanager.settings import AlertmanagerSettings
from hpctui.sources.base import SourceError
from hpctui.sources.bounded import MIB
from hpctui.sources.http_client import auth_headers, read_answer, tls_for, transport_error


class AlertmanagerError(SourceError):
    """A request failed: unreachable, timed out, refused (HTTP 4xx/5xx) or not an Alertmanager answer."""


class _Created(msgspec.Struct):
    silenceID: str  # the API's spelling


def _first_line(body: bytes) -> str:
    lines = body[:4096].decode("utf-8", "replace").strip().strip('"').splitlines()
    return clean_text(lines[0][:160]) if lines else "empty answer"


def _api_message(body: bytes) -> str:
    """Alertmanager's error text: ``{"code":400,"message":"..."}`` or a bare JSON string."""
    try:
        obj = msgspec.json.decode(body[:8192])
    except msgspec.DecodeError:
        return _first_line(body)
    if isinstance(obj, dict) and isinstance(obj.get("message"), str):
        return clean_text(obj["message"][:200])
    if isinstance(obj, str):
        return clean_text(obj[:200])
    return _first_line(body)


class AlertmanagerClient:
    """Requests against one Alertmanager; the session is opened on first use and closed by :meth:`close`."""

    def __init__(self, settings: AlertmanagerSettings) -> None:
        self.settings = settings
        self.base = settings.url.rstrip("/")
        self.where = redact_url(self.base)
        self.max_answer = settings.max_answer_mib * MIB
        self._session: aiohttp.ClientSession | None = None
        self._headers: dict[str, str] = {}
        self._ssl: ssl.SSLContext | bool = True
        self._prepared = False

    def __repr__(self) -> str:  # never show headers (a token) in a traceback
        return f"AlertmanagerClient({self.where!r})"

    def _get_session(self) -> aiohttp.ClientSession:
        if not self._prepared:
            self._headers = auth_headers(self.settings, AlertmanagerError)
            self._ssl = tls_for(self.base, self.settings, AlertmanagerError)
            self._prepared = True
        if self._session is None or self._session.closed:
            timeout = aiohttp.ClientTimeout(total=self.settings.timeout_s)
            self._session = aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=4, ssl=self._ssl))
        return self._session

    async def _request(self, method: str, path: str, body: Any = None) -> bytes:
        session = self._get_session()
        data = None if body is None else msgspec.json.encode(body)
        headers = {**self._headers, **({"Content-Type": "application/json"} if data is not None else {})}
        try:
            async with session.request(method, f"{self.base}{path}", data=data, headers=headers) as resp:
                raw = await self._read(resp, path)
                if resp.status in (401, 403):
                    self._prepared = False  # read the token again next time (it may have rotated)
                    raise AlertmanagerError(f"HTTP {resp.status} {resp.reason}: check the bearer token / basic auth")
                if resp.status >= 400:
                    raise AlertmanagerError(f"HTTP {resp.status} from {self.where}{path}: {_api_message(raw)}")
                return raw
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise transport_error(exc, self.where, self.settings.timeout_s, AlertmanagerError) from None

    async def _read(self, resp: aiohttp.ClientResponse, path: str) -> bytes:
        return await read_answer(resp, self.max_answer, limit_mib=self.settings.max_answer_mib, where=self.where,
                                 path=path, api="an Alertmanager", error=AlertmanagerError)

    async def alerts_raw(self) -> bytes:
        """``GET /api/v2/alerts`` (active, silenced, inhibited and unprocessed alike)."""
        return await self._request("GET", "/api/v2/alerts")

    async def silences_raw(self) -> bytes:
        return await self._request("GET", "/api/v2/silences")

    async def create_silence(self, matchers: list[dict[str, Any]], starts_at: str, ends_at: str, created_by: str,
                             comment: str) -> str:
        """``POST /api/v2/silences``; returns the new silence's id."""
        raw = await self._request("POST", "/api/v2/silences", {
            "matchers": matchers, "startsAt": starts_at, "endsAt": ends_at, "createdBy": created_by,
            "comment": comment})
        try:
            return clean_text(msgspec.json.decode(raw, type=_Created).silenceID)
        except msgspec.DecodeError:
            raise AlertmanagerError(f"silence created, but the answer names no id: {_first_line(raw)}") from None

    async def expire_silence(self, silence_id: str) -> None:
        """``DELETE /api/v2/silence/{id}`` (expires it; Alertmanager keeps it listed as expired)."""
        await self._request("DELETE", f"/api/v2/silence/{silence_id}")

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
