"""A small async client for Prometheus' HTTP API (``/api/v1/query``, ``/api/v1/query_range``).

aiohttp, one session per source. Credentials are read once from a file or the environment
and only ever travel in a request header: no error message, repr or log line carries them.
Every failure becomes :class:`PromError` with one line a person can act on.

Answers are asked for gzip-compressed and are bounded: the body is read streamed up to ``max_answer_mib`` and an answer with
more than ``max_series`` series is refused before its series are decoded (issue #19 §5).
A redirect is followed by aiohttp, which drops ``Authorization`` when it leads to another
host; userinfo in the configured URL is never shown (:func:`hpctui.base.sanitize.redact_url`).
"""

from __future__ import annotations

import asyncio
import math
import ssl

import aiohttp
import msgspec

from hpctui.base.sanitize import clean_text, redact_url
from hpctui.sources.base import SourceError
from hpctui.sources.bounded import (
    MIB,
    json_error,
)
from hpctui.sources.http_client import auth_headers, read_answer, tls_for, transport_error
from hpctui.sources.prometheus.settings import PrometheusSettings


class PromError(SourceError):
    """A query failed: unreachable, timed out, HTTP 4xx/5xx or an API error."""


class Sample(msgspec.Struct):
    metric: dict[str, str]
    value: tuple[float, str] | None = None  # vector
    values: list[tuple[float, str]] | None = None  # matrix


class _Data(msgspec.Struct):
    resultType: str  # the API's spelling
    result: list[Sample] = msgspec.field(default_factory=list)


class _Answer(msgspec.Struct):
    status: str
    data: _Data | None = None
    errorType: str | None = None
    error: str | None = None
    warnings: list[str] = msgspec.field(default_factory=list)


class _CountData(msgspec.Struct):
    result: list[msgspec.Raw] = msgspec.field(default_factory=list)


class _CountAnswer(msgspec.Struct):
    data: _CountData | None = None


# Both engines gzip an answer when asked (~15x smaller for series JSON); aiohttp decodes it
# while reading, so max_answer_mib bounds the decoded size (a small gzip cannot expand past it).
_COMPRESSED = {"Accept-Encoding": "gzip"}
_DECODER = msgspec.json.Decoder(_Answer)
_COUNTER = msgspec.json.Decoder(_CountAnswer)
# The shortest series in JSON ({"metric":{},"value":[1,"1"]},) is ~30 bytes: an answer shorter
# than 30 × max_series cannot hold too many and is decoded in one pass.
_MIN_SERIES_BYTES = 30
DEFAULT_MAX_SERIES = 500_000


class QueryResult(msgspec.Struct):
    samples: list[Sample]
    warnings: list[str]


def number(text: str) -> float | None:
    """A sample value: NaN and ±Inf are "not available", never a number."""
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def decode_answer(body: bytes, status: int = 200, max_series: int = DEFAULT_MAX_SERIES) -> QueryResult:
    """The API's JSON envelope → samples + warnings, or PromError naming the problem.

    More than ``max_series`` series is refused, counted on a cheap first pass (each series a
    view into ``body``) before any series is decoded, so memory stays bounded by the cap.
    """
    if len(body) > _MIN_SERIES_BYTES * max_series and status < 400:
        _check_series(body, max_series)
    try:
        answer = _DECODER.decode(body)
    except msgspec.DecodeError as exc:
        if status >= 400:
            raise PromError(f"HTTP {status}: {_first_line(body)}") from None
        raise PromError(f"HTTP {status}: not a Prometheus API answer: {json_error(exc)} "
                        f"({_first_line(body)})") from None
    if answer.status != "success" or status >= 400:
        kind = f"{answer.errorType}: " if answer.errorType else ""
        raise PromError(clean_text(f"HTTP {status}: {kind}{answer.error or answer.status}"[:300]))
    warnings = [clean_text(w[:200]) for w in answer.warnings]
    if answer.data is None:
        return QueryResult(samples=[], warnings=warnings)
    return QueryResult(samples=answer.data.result, warnings=warnings)


def _check_series(body: bytes, max_series: int) -> None:
    try:
        count = _COUNTER.decode(body)
    except msgspec.DecodeError as exc:
        raise PromError(f"not a Prometheus API answer: {json_error(exc)} ({_first_line(body)})") from None
    n = len(count.data.result) if count.data is not None else 0
    if n > max_series:
        raise PromError(f"answer of {n:,} series, over the cap of {max_series:,} (max_series); "
                        f"narrow the query with a selector or raise the cap")


def _first_line(body: bytes) -> str:
    text = body[:4096].decode("utf-8", "replace").strip().splitlines()
    return clean_text(text[0][:120] if text else "empty answer") or "empty answer"


class PromClient:
    def __init__(self, settings: PrometheusSettings) -> None:
        self.settings = settings
        self.base = settings.url.rstrip("/")
        self.where = redact_url(self.base)  # the base URL as shown: userinfo (a password) redacted
        self.max_answer = settings.max_answer_mib * MIB
        self._session: aiohttp.ClientSession | None = None
        self._headers: dict[str, str] = {}
        self._ssl: ssl.SSLContext | bool = True
        self._prepared = False

    def __repr__(self) -> str:  # never show headers (a token) in a traceback
        return f"PromClient({self.where!r})"

    def _prepare(self) -> None:
        self._headers = auth_headers(self.settings, PromError)
        self._ssl = tls_for(self.base, self.settings, PromError)
        self._prepared = True

    def _get_session(self) -> aiohttp.ClientSession:
        if not self._prepared:
            self._prepare()
        if self._session is None or self._session.closed:
            timeout = aiohttp.ClientTimeout(total=self.settings.timeout_s)
            connector = aiohttp.TCPConnector(limit=max(4, self.settings.max_parallel_queries), ssl=self._ssl)
            self._session = aiohttp.ClientSession(timeout=timeout, connector=connector)
        return self._session

    async def _post(self, path: str, form: dict[str, str]) -> bytes:
        """POST form-encoded (long PromQL fits; GET URLs have limits); returns the raw body."""
        session = self._get_session()
        url = f"{self.base}{path}"
        try:
            async with session.post(url, data=form, headers={**self._headers, **_COMPRESSED}) as resp:
                body = await self._read(resp, path)
                if resp.status in (401, 403):
                    self._prepared = False  # read the token file again next time (it may have rotated)
                    raise PromError(f"HTTP {resp.status} {resp.reason}: check the bearer token / basic auth")
                if resp.status >= 400 and not body.lstrip().startswith(b"{"):
                    raise PromError(f"HTTP {resp.status} {resp.reason}: {_first_line(body)}")
                if resp.status >= 400:
                    decode_answer(body, resp.status, self.settings.max_series)  # raises with the API's own text
                return body
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise transport_error(exc, self.where, self.settings.timeout_s, PromError) from None

    async def _read(self, resp: aiohttp.ClientResponse, path: str) -> bytes:
        """The body, read in chunks up to ``max_answer_mib`` (then PromError, connection dropped)."""
        return await read_answer(resp, self.max_answer, limit_mib=self.settings.max_answer_mib, where=self.where,
                                 path=path, api="a Prometheus", error=PromError)

    async def query_raw(self, expr: str, at: float | None = None) -> bytes:
        form = {"query": expr}
        if at is not None:
            form["time"] = f"{at:.3f}"
        return await self._post("/api/v1/query", form)

    def decode(self, body: bytes) -> QueryResult:
        """:func:`decode_answer` with this source's series cap (blocking: call it in a thread)."""
        return decode_answer(body, 200, self.settings.max_series)

    async def query(self, expr: str, at: float | None = None) -> QueryResult:
        return await asyncio.to_thread(self.decode, await self.query_raw(expr, at))

    async def query_range(self, expr: str, start: float, end: float, step: float) -> QueryResult:
        body = await self._post("/api/v1/query_range", {
            "query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"})
        return await asyncio.to_thread(self.decode, body)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
