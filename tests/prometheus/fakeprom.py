"""A scriptable stand-in for Prometheus' HTTP API on 127.0.0.1, for the bad-input tests
(down, slow, 4xx/5xx, warnings, partial data, stale series, Xid changes)."""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass, field

from aiohttp import web


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class FakeProm:
    port: int = field(default_factory=free_port)
    nodes: list[str] = field(default_factory=lambda: ["n1", "n2"])
    temp: str = "50"
    # metric name -> value, answered instead of ``temp`` by queries naming that metric (flags such
    # as DCGM_FI_DEV_MIG_MODE are 0/1: "50" there would be implausible, dropped with a warning)
    values: dict[str, str] = field(default_factory=lambda: {"DCGM_FI_DEV_MIG_MODE": "0",
                                                             "DCGM_FI_DEV_ROW_REMAP": "0"})
    # extra series: (text in the query, labels, value; "now" = the query time), answered by every
    # query containing that text, for answers beyond the DCGM gauges (node_exporter's IB series)
    series: list[tuple[str, dict[str, str], str]] = field(default_factory=list)
    xid: dict[str, str] = field(default_factory=dict)  # node -> value of DCGM_FI_DEV_XID_ERRORS
    sample_time: float | None = None  # what timestamp() answers (None: the query time)
    status: int = 200
    body: bytes | None = None  # a raw body instead of a vector
    delay_s: float = 0.0
    warnings: list[str] = field(default_factory=list)
    fail_matching: str | None = None  # answer 422 to queries containing this
    headers_seen: list[dict[str, str]] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    _runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/api/v1/query", self._query)
        app.router.add_post("/api/v1/query_range", self._query_range)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _query(self, request: web.Request) -> web.Response:
        form = await request.post()
        expr, at = str(form["query"]), float(str(form.get("time", "0")))
        self.headers_seen.append(dict(request.headers))
        self.queries.append(expr)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.body is not None:
            return web.Response(status=self.status, body=self.body)
        if self.status >= 400:
            return web.json_response({"status": "error", "errorType": "internal", "error": "boom"}, status=self.status)
        if self.fail_matching and self.fail_matching in expr:
            return web.json_response({"status": "error", "errorType": "execution", "error": "query too heavy"},
                                     status=422)
        result = []
        if "DCGM_FI_DEV" in expr:
            for node in self.nodes:
                value = next((v for m, v in self.values.items() if m in expr), self.temp)
                if "timestamp(" in expr:
                    value = str(self.sample_time if self.sample_time is not None else at)
                elif "XID" in expr:
                    value = self.xid.get(node, "0")
                metric = {"Hostname": node} if "timestamp(" in expr else {"Hostname": node, "gpu": "0", "UUID": f"GPU-{node}"}
                result.append({"metric": metric, "value": [at, value]})
        for name, labels, value in self.series:
            if name in expr:
                result.append({"metric": labels, "value": [at, str(at) if value == "now" else value]})
        answer: dict[str, object] = {"status": "success", "data": {"resultType": "vector", "result": result}}
        if self.warnings:
            answer["warnings"] = self.warnings
        return web.json_response(answer)

    async def _query_range(self, request: web.Request) -> web.Response:
        form = await request.post()
        self.queries.append(str(form["query"]))
        start, end, step = (float(str(form[k])) for k in ("start", "end", "step"))
        values = [[start + k * step, str(40 + k)] for k in range(int((end - start) / step) + 1)]
        return web.json_response({"status": "success", "data": {"resultType": "matrix",
                                                                 "result": [{"metric": {}, "values": values}]}})
