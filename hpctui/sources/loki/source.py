"""The Loki source: no polling of its own (``collect`` returns nothing); a LogQuerier for the log viewer's
node logs and the incident window. Requests through :mod:`hpctui.sources.http_client` (auth from a file or
the environment, TLS, a bounded read, one-line transport errors)."""

from __future__ import annotations

import ssl
import time

import aiohttp

from hpctui.base.sanitize import clean_text, redact_url
from hpctui.model import SourceResult
from hpctui.model.logs import LogLine
from hpctui.sources.base import SourceError
from hpctui.sources.bounded import MIB
from hpctui.sources.http_client import auth_headers, read_answer, tls_for, transport_error
from hpctui.sources.loki.parse import LokiAnswerError, parse_query_range
from hpctui.sources.loki.settings import LokiSettings

QUERY_RANGE = "/loki/api/v1/query_range"


class LokiError(SourceError):
    """A query failed: unreachable, timed out, refused (HTTP 4xx/5xx) or not a Loki answer."""


class LokiSource:
    """``kind = "loki"``: answers LogQL range queries (a :class:`~hpctui.sources.capabilities.LogQuerier`)."""

    kind = "loki"

    def __init__(self, settings: LokiSettings) -> None:
        self.settings = settings
        self.name = settings.name
        self.interval_s = 3600.0  # nothing to poll: collect() is a no-op
        self.base = settings.url.rstrip("/")
        self.where = redact_url(self.base)
        self._session: aiohttp.ClientSession | None = None
        self._ssl: ssl.SSLContext | bool = True
        self._headers: dict[str, str] | None = None

    def __repr__(self) -> str:  # never show headers (a token) in a traceback
        return f"LokiSource({self.where!r})"

    async def collect(self) -> SourceResult:
        return SourceResult(source=self.name, time=time.time())

    def node_selector(self, node: str) -> str:
        """The configured LogQL selector of one node's lines."""
        return self.settings.node_query.replace("{{", "\x00").replace("}}", "\x01").replace("{node}", node) \
            .replace("\x00", "{").replace("\x01", "}")

    def _get_session(self) -> aiohttp.ClientSession:
        if self._headers is None:
            self._headers = auth_headers(self.settings, LokiError)
            if self.settings.org_id:
                self._headers["X-Scope-OrgID"] = self.settings.org_id
            self._ssl = tls_for(self.base, self.settings, LokiError)
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.settings.timeout_s),
                                                  connector=aiohttp.TCPConnector(limit=4, ssl=self._ssl))
        return self._session

    async def query_logs(self, query: str, since: float, until: float, limit: int = 1000) -> list[LogLine]:
        """LogQuerier: ``query_range`` over [since, until] (nanosecond bounds), newest lines first as Loki
        picks them (``direction=backward``), returned oldest first, sanitised, at most ``limit``."""
        limit = max(1, min(limit, self.settings.max_lines))
        params = {"query": query, "start": str(int(since * 1e9)), "end": str(int(until * 1e9)),
                  "limit": str(limit), "direction": "backward"}
        session = self._get_session()
        try:
            async with session.get(f"{self.base}{QUERY_RANGE}", params=params, headers=self._headers) as resp:
                body = await read_answer(resp, self.settings.max_answer_mib * MIB,
                                         limit_mib=self.settings.max_answer_mib, where=self.where, path=QUERY_RANGE,
                                         api="a Loki", error=LokiError)
                if resp.status in (401, 403):
                    self._headers = None  # read the token again next time (it may have rotated)
                    raise LokiError(f"HTTP {resp.status} {resp.reason}: check the bearer token / basic auth")
                if resp.status >= 400:
                    first = body[:2000].decode("utf-8", "replace").strip().splitlines()
                    raise LokiError(f"HTTP {resp.status} from {self.where}{QUERY_RANGE}: "
                                    f"{clean_text(first[0][:200]) if first else 'empty answer'}")
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise transport_error(exc, self.where, self.settings.timeout_s, LokiError) from None
        try:
            return parse_query_range(body, limit)
        except LokiAnswerError as exc:
            raise LokiError(f"{self.where}{QUERY_RANGE}: {exc}") from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
