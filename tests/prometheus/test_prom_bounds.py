"""Prometheus answers are bounded (issue #19 §5) and its URL's password is never shown (§6):
a fake Prometheus (tests/fakehttp.py) sends too much, too many series, or garbage."""

from __future__ import annotations

import json

import pytest
from aiohttp import web
from fakehttp import MIB, ThreadedServer, stream_garbage

from hpctui.core.store import Store
from hpctui.sources.prometheus.client import PromError
from hpctui.sources.prometheus.settings import PrometheusSettings
from hpctui.sources.prometheus.source import PrometheusSource


def _source(url: str, **kw: object) -> PrometheusSource:
    return PrometheusSource(PrometheusSettings(url=url, timeout_s=20.0, **kw))  # type: ignore[arg-type]


def _series_answer(n: int) -> bytes:
    result = [{"metric": {"Hostname": f"n{i}", "gpu": "0"}, "value": [1.0, "50"]} for i in range(n)]
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()


async def _collect_error(server: ThreadedServer, **kw: object) -> str:
    src = _source(server.url, **kw)
    try:
        with pytest.raises(PromError) as err:
            await src.collect()
    finally:
        await src.close()
        server.stop()
    return str(err.value)


async def test_an_answer_over_the_cap_stops_the_read_and_says_so() -> None:
    async def endless(request: web.Request) -> web.StreamResponse:
        await request.read()
        return await stream_garbage(request, 64 * MIB, prefix=b'{"status": "success", "data": {"result": [')
    text = await _collect_error(ThreadedServer([("POST", "/api/v1/query", endless)]).start(), max_answer_mib=1)
    assert "answer over 1 MiB" in text and "max_answer_mib" in text and "reach" not in text, text


async def test_an_announced_size_over_the_cap_is_refused_before_reading() -> None:
    async def big(request: web.Request) -> web.StreamResponse:
        await request.read()
        return web.Response(body=b" " * (3 * MIB), content_type="application/json")
    text = await _collect_error(ThreadedServer([("POST", "/api/v1/query", big)]).start(), max_answer_mib=2)
    assert "answer over 2 MiB (3 MiB announced)" in text, text


async def test_too_many_series_in_one_answer_is_refused_naming_the_cap() -> None:
    body = _series_answer(50)

    async def many(request: web.Request) -> web.StreamResponse:
        await request.read()
        return web.Response(body=body, content_type="application/json")
    text = await _collect_error(ThreadedServer([("POST", "/api/v1/query", many)]).start(), max_series=10)
    assert "answer of 50 series, over the cap of 10 (max_series)" in text, text


async def test_garbage_is_invalid_json_at_a_byte() -> None:
    async def garbage(request: web.Request) -> web.StreamResponse:
        await request.read()
        return await stream_garbage(request, 2 * MIB)
    text = await _collect_error(ThreadedServer([("POST", "/api/v1/query", garbage)]).start())
    assert "invalid JSON at byte 0 (not a JSON answer)" in text, text


async def test_the_password_in_the_url_is_never_shown() -> None:
    src = _source("http://admin:S3cretPW@127.0.0.1:1")
    store = Store("t")
    try:
        with pytest.raises(PromError) as err:
            await src.collect()
    finally:
        await src.close()
    store.record_error(src.name, f"PromError: {err.value}")
    health = store.snapshot().sources[src.name]
    assert "S3cretPW" not in str(err.value) and "http://***@127.0.0.1:1" in str(err.value), err.value
    assert health.last_error is not None and "S3cretPW" not in health.last_error
    assert "S3cretPW" not in repr(src.client)
