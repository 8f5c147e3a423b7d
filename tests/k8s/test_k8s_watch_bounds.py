"""Kubernetes watches and answers against a hostile API server (issue #19 §5/§6), a tiny fake
on 127.0.0.1 (tests/fakehttp.py): a line that never ends costs at most the line cap and ends
the watch with an error that says so; lines that are not JSON events are counted into a
warning; a redirect is refused, so the bearer token never reaches another host."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from fakehttp import MIB, ThreadedServer

from hpctui.model import SourceResult
from hpctui.sources.k8s.settings import K8sSettings
from hpctui.sources.k8s.source import K8sSource

TOKEN = "k8s-SECRET-token"


def _node(name: str, rv: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "resourceVersion": rv}, "spec": {},
            "status": {}}


def _kubeconfig(tmp_path: Path, url: str) -> str:
    path = tmp_path / "kubeconfig.json"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": url}}],
        "users": [{"name": "u", "user": {"token": TOKEN}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}]}))
    return str(path)


WatchHandler = Callable[[web.Request, web.StreamResponse], Awaitable[None]]


def _apiserver(nodes_watch: WatchHandler) -> ThreadedServer:
    """Lists answer one node (pods: none); the nodes watch runs ``nodes_watch``; others idle."""
    async def handle(request: web.Request) -> web.StreamResponse:
        kind = request.match_info["what"]
        if request.query.get("watch") != "true":
            items = [_node("gpu-a", "1")] if kind == "nodes" else []
            return web.json_response({"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
                                      "items": items})
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        try:
            if kind == "nodes":
                await nodes_watch(request, resp)
            await asyncio.sleep(30)
        except (ConnectionError, asyncio.CancelledError):
            pass
        return resp
    return ThreadedServer([("GET", "/api/v1/{what}", handle)])


def _settings(tmp_path: Path, url: str, **kw: Any) -> K8sSettings:
    return K8sSettings(kubeconfig=_kubeconfig(tmp_path, url), events=False, queues=False, timeout_s=5.0, **kw)


async def _until(src: K8sSource, what: str, cond: Callable[[SourceResult], bool],
                 timeout: float = 30.0) -> SourceResult:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = await src.collect()
        except Exception as exc:  # not listed yet
            last = exc
        else:
            if cond(last):
                return last
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r}; stats {src.stats()})")


@pytest.fixture
def stop_after() -> Iterator[list[ThreadedServer]]:
    servers: list[ThreadedServer] = []
    yield servers
    for s in servers:
        s.stop()


async def test_lines_that_are_not_json_events_are_counted_into_a_warning(
        tmp_path: Path, stop_after: list[ThreadedServer]) -> None:
    async def watch(_request: web.Request, resp: web.StreamResponse) -> None:
        added = json.dumps({"type": "ADDED", "object": _node("gpu-b", "2")}).encode()
        await resp.write(b"not json at all\n" + added + b"\n[1, 2]\n")
    server = _apiserver(watch).start()
    stop_after.append(server)
    src = K8sSource(_settings(tmp_path, server.url))
    try:
        res = await _until(src, "gpu-b from the watch and a warning",
                           lambda r: bool(r.k8s_nodes and "gpu-b" in r.k8s_nodes and r.warnings))
    finally:
        await src.close()
    text = " | ".join(res.warnings)
    assert "nodes watch: 2 line(s) dropped" in text, text
    assert "JSON but not an event object" in text or "invalid JSON at byte 0" in text, text


async def test_a_watch_line_without_end_costs_the_cap_and_is_an_error(
        tmp_path: Path, stop_after: list[ThreadedServer]) -> None:
    sent: list[int] = []  # bytes written per watch connection before the client hung up

    async def endless(_request: web.Request, resp: web.StreamResponse) -> None:
        block, total = b"x" * MIB, 0
        sent.append(0)
        try:
            while total < 512 * MIB:
                await resp.write(block)
                total += len(block)
                sent[-1] = total
        finally:
            sent[-1] = total
    server = _apiserver(endless).start()
    stop_after.append(server)
    src = K8sSource(_settings(tmp_path, server.url, max_watch_line_mib=1))
    try:
        res = await _until(src, "the line-cap error", lambda r: "k8s_nodes" in r.part_errors)
    finally:
        await src.close()
    error = res.part_errors["k8s_nodes"]
    assert "a line over 1 MiB without a newline" in error and "max_watch_line_mib" in error, error
    assert any("nodes watch: 1 line(s) dropped" in w for w in res.warnings), res.warnings
    # the client stopped reading right after the cap (plus what socket buffers held)
    assert sent and sent[0] < 48 * MIB, f"{sent[0] / MIB:.0f} MiB sent before the client hung up"


async def test_a_redirect_is_refused_and_the_token_stays_home(
        tmp_path: Path, stop_after: list[ThreadedServer]) -> None:
    async def ok(_request: web.Request) -> web.StreamResponse:
        return web.json_response({"kind": "List", "metadata": {"resourceVersion": "1"}, "items": []})
    other = ThreadedServer([("GET", "/{tail:.*}", ok)], host="127.0.0.2").start()
    stop_after.append(other)

    async def redirect(request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(f"{other.url}{request.path_qs}")
    server = ThreadedServer([("GET", "/{tail:.*}", redirect)]).start()
    stop_after.append(server)
    src = K8sSource(_settings(tmp_path, server.url))
    try:
        with pytest.raises(Exception) as err:
            await _until(src, "an error", lambda r: False, timeout=3.0)
        stats = src.stats()
    finally:
        await src.close()
    errors = [s["error"] for s in stats.values() if s["error"]]
    assert errors and all("redirects are refused" in e for e in errors), (errors, err.value)
    assert other.requests == [], "a request followed the redirect to another host"
    assert server.requests and server.requests[0][2].get("Authorization") == f"Bearer {TOKEN}"
