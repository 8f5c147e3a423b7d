"""slurmrestd against a hostile endpoint (issue #19 §5 and §6), with a tiny fake slurmrestd
(tests/fakehttp.py) on 127.0.0.1: redirects are refused and the token never leaves the
configured host; huge or garbage answers are read bounded, off the event loop, and named
for what they are ("answer over 8 MiB", "invalid JSON"), never "unreachable"."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Iterator

import pytest
from aiohttp import web
from fakehttp import MIB, RssPeak, ThreadedServer, slurm_garbage, stream_garbage

from hpctui.model.action import ActionKind
from hpctui.sources.base import SourceError
from hpctui.sources.slurm.settings import SlurmSettings
from hpctui.sources.slurm.source import SlurmSource

V = "v0.0.38"


def _jwt() -> str:
    def part(doc: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")
    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part({'exp': 4_102_444_800, 'sun': 'op'})}.c2ln"


TOKEN = _jwt()


def _source(url: str, **kw: object) -> SlurmSource:
    settings = SlurmSettings(backend="rest", rest_url=url, rest_version=V, jwt=TOKEN, jwt_user="op",
                             timeout_s=20.0, **kw)  # type: ignore[arg-type]
    return SlurmSource(settings)


def _rest(src: SlurmSource):  # type: ignore[no-untyped-def]
    assert src.rest is not None
    return src.rest


class LoopLag:
    """The longest the event loop went without running a 5 ms ticker (a blocked loop shows here)."""

    def __init__(self) -> None:
        self.max_s = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.005)
            now = time.monotonic()
            self.max_s = max(self.max_s, now - last - 0.005)
            last = now

    async def __aenter__(self) -> LoopLag:
        self._task = asyncio.create_task(self._tick())
        return self

    async def __aexit__(self, *_exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


@pytest.fixture
def other_host() -> Iterator[ThreadedServer]:
    """Where a redirect points: another loopback address, recording what reaches it."""
    async def ok(_request: web.Request) -> web.StreamResponse:
        return web.json_response({"nodes": [], "jobs": [], "errors": []})
    server = ThreadedServer([("*", "/{tail:.*}", ok)], host="127.0.0.2").start()
    yield server
    server.stop()


async def test_a_redirect_is_refused_and_the_token_never_reaches_another_host(other_host: ThreadedServer) -> None:
    async def redirect(request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(f"{other_host.url}{request.path_qs}")
    server = ThreadedServer([("*", "/{tail:.*}", redirect)]).start()
    src = _source(server.url)
    try:
        with pytest.raises(SourceError) as err:
            await src.collect()
        assert "redirect" in str(err.value) and "refused" in str(err.value), err.value
        results = await _rest(src).act(ActionKind.CANCEL_JOBS, ("17",), {})
        assert [r.ok for r in results] == [False] and "redirects are refused" in results[0].message
    finally:
        await src.close()
        server.stop()
    assert server.requests and all(h.get("X-SLURM-USER-TOKEN") == TOKEN for _m, _p, h in server.requests)
    assert other_host.requests == [], "a request (with the token) followed the redirect to another host"


def test_userinfo_in_rest_url_is_never_shown() -> None:
    src = _source("http://admin:S3cretPW@127.0.0.1:1")
    with pytest.raises(SourceError) as err:
        asyncio.run(src.collect())
    assert "S3cretPW" not in str(err.value) and "http://***@127.0.0.1:1" in str(err.value), err.value


async def test_an_endless_answer_is_cut_at_the_cap_with_memory_bounded() -> None:
    server = ThreadedServer([("GET", "/slurm/{v}/{what}", slurm_garbage(200))]).start()
    src = _source(server.url, max_answer_mib=8)
    try:
        with RssPeak() as rss, pytest.raises(SourceError) as err:
            await src.collect()
    finally:
        await src.close()
        server.stop()
    text = str(err.value)
    assert "answer over 8 MiB" in text and "unreachable" not in text, text
    # nodes and jobs (JSON-looking) read to 8 MiB each (+ the join), the rest one chunk: far below 200 MiB
    assert rss.growth_mib < 120, f"RSS grew {rss.growth_mib:.0f} MiB"


async def test_garbage_that_is_not_json_is_refused_at_its_first_chunk() -> None:
    async def garbage(request: web.Request) -> web.StreamResponse:
        return await stream_garbage(request, 50 * MIB)
    server = ThreadedServer([("GET", "/slurm/{v}/{what}", garbage)]).start()
    src = _source(server.url)
    try:
        with pytest.raises(SourceError) as err:
            await _rest(src).get("nodes")
    finally:
        await src.close()
        server.stop()
    assert str(err.value) == "slurmrestd /slurm/v0.0.38/nodes: invalid JSON at byte 0 (not a JSON answer): reading stopped"


async def test_50_mb_of_garbage_is_invalid_json_read_off_the_loop() -> None:
    server = ThreadedServer([("GET", "/slurm/{v}/{what}", slurm_garbage(50))]).start()
    src = _source(server.url)
    try:
        async with LoopLag() as lag:
            with pytest.raises(SourceError) as err:
                await src.collect()
    finally:
        await src.close()
        server.stop()
    text = str(err.value)
    # nodes' garbage starts like JSON: read whole (50 MB < the cap), refused at its first bad byte
    assert "slurmrestd nodes: invalid JSON at byte 11 of a 50 MiB answer" in text, text
    assert "unreachable" not in text
    # the event loop kept running (keys, redraws): generous for a loaded 2-core machine
    assert lag.max_s < 1.0, f"event loop blocked for {lag.max_s:.2f} s"
