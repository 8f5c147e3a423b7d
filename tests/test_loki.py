"""The Loki (LogQL) path against answers in Loki's recorded shape (tests/fixtures/loki/README.md: no Loki
server can run here), served by a local HTTP server: the request Loki gets, the lines parsed and
sanitised, a metric answer and a syntax error refused in plain words, a bound on the answer."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web
from fakehttp import ThreadedServer

from hpctui.core.logs import LogService
from hpctui.core.store import Store
from hpctui.sources.loki.parse import LokiAnswerError, parse_query_range
from hpctui.sources.loki.settings import LokiSettings
from hpctui.sources.loki.source import LokiError, LokiSource

FIX = Path(__file__).parent / "fixtures" / "loki"


def test_parse_streams_sorted_deduped_hosts_and_sanitised() -> None:
    lines = parse_query_range((FIX / "query_range_streams.json").read_bytes())
    assert [ln.time for ln in lines] == [1764644401.5, 1764644401.5, 1764644402.0, 1764644403.0]
    assert {ln.host for ln in lines} == {"gpu01", "gpu02"}  # instance="gpu02:9100" → gpu02
    assert lines[2].ident == "job=systemd-journal,unit=nvidia-fabricmanager.service"
    assert "\x1b" not in lines[2].message and "with error" in lines[2].message
    assert lines[-1].message.startswith("NVRM: Xid (PCI:0000:18:00): 79")
    assert len(parse_query_range((FIX / "query_range_streams.json").read_bytes(), limit=2)) == 2  # the newest


def test_parse_categorized_three_element_values() -> None:
    lines = parse_query_range((FIX / "query_range_categorized.json").read_bytes())
    assert [(ln.host, ln.ident) for ln in lines] == [("gpu03", "service_name=slurmd")] * 2
    assert lines[0].message == "Node reboot request received"


def test_parse_refuses_what_is_not_log_lines() -> None:
    with pytest.raises(LokiAnswerError, match="metric query"):
        parse_query_range((FIX / "query_range_matrix.json").read_bytes())
    with pytest.raises(LokiAnswerError, match="not JSON"):
        parse_query_range(b"<html>")
    with pytest.raises(LokiAnswerError):
        parse_query_range(b'{"status":"error","error":"boom"}')


def test_settings_validate() -> None:
    with pytest.raises(ValueError, match="node"):
        LokiSettings(node_query="{job=\"x\"}")
    with pytest.raises(ValueError, match="http"):
        LokiSettings(url="ftp://x")
    assert LokiSource(LokiSettings()).node_selector("gpu01") == '{host="gpu01"}'


@pytest.fixture()
def loki() -> Iterator[ThreadedServer]:
    seen: list[dict[str, str]] = []

    async def query_range(request: web.Request) -> web.StreamResponse:
        seen.append(dict(request.query) | {"org": request.headers.get("X-Scope-OrgID", "")})
        if "bad" in request.query.get("query", ""):
            return web.Response(status=400, text=(FIX / "error_400.txt").read_text())
        if "huge" in request.query.get("query", ""):
            return web.Response(body=b'{"status":"success","data":{"resultType":"streams","result":[' + b" " * 3_000_000
                                + b"]}}", content_type="application/json")
        return web.Response(body=(FIX / "query_range_streams.json").read_bytes(), content_type="application/json")

    server = ThreadedServer([("GET", "/loki/api/v1/query_range", query_range)]).start()
    server.seen = seen  # type: ignore[attr-defined]
    try:
        yield server
    finally:
        server.stop()


async def test_query_over_http_request_and_answer(loki: ThreadedServer) -> None:
    src = LokiSource(LokiSettings(url=loki.url, org_id="hpc", max_answer_mib=1))
    service = LogService(lambda: [src], lambda: Store("c"))
    try:
        lines = await service.query('{host="gpu01"} |= "Xid"', 1764644000.0, 1764644600.0, limit=100)
        assert lines is not None and len(lines) == 4
        asked = loki.seen[-1]  # type: ignore[attr-defined]
        assert asked["query"] == '{host="gpu01"} |= "Xid"' and asked["start"] == "1764644000000000000"
        assert asked["end"] == "1764644600000000000" and asked["limit"] == "100" and asked["org"] == "hpc"
        with pytest.raises(LokiError, match=r"HTTP 400 .*parse error at line 1, col 6"):
            await src.query_logs("{bad", 0, 1)
        with pytest.raises(LokiError, match="max_answer_mib = 1"):
            await src.query_logs('{huge="1"}', 0, 1)
    finally:
        await src.close()


async def test_unreachable_loki_is_one_line() -> None:
    src = LokiSource(LokiSettings(url="http://127.0.0.1:9", timeout_s=2))
    try:
        with pytest.raises(LokiError, match=re.escape("cannot reach http://127.0.0.1:9")):
            await src.query_logs('{host="a"}', 0, 1)
    finally:
        await src.close()
    assert await LogService(list, lambda: Store("c")).query("{a}", 0, 1) is None


async def test_node_journal_falls_back_to_loki_and_feeds_the_timeline(loki: ThreadedServer) -> None:
    """No SSH source: the node log viewer's window comes from Loki, per node, with the filter as ``|=``."""
    src = LokiSource(LokiSettings(url=loki.url))
    store = Store("c")
    service = LogService(lambda: [src], lambda: store)
    try:
        read = await service.journal(["gpu01"], 1764644000.0, 1764644600.0, grep="Xid")
        assert read is not None and read.command.startswith("Loki loki: ")
        assert loki.seen[-1]["query"] == '{host="gpu01"} |= `Xid`'  # type: ignore[attr-defined]
        assert len(read.lines) == 4 and read.added_events == 3  # the duplicate entry once
        assert {e.object for e in store.snapshot().events} == {"node/gpu01", "node/gpu02"}
    finally:
        await src.close()
