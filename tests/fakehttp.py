"""Tiny scriptable HTTP servers on 127.0.0.x for the bounded-answer and credential tests
(issue #19 §5/§6): a fake slurmrestd, a fake Prometheus and a fake kube-apiserver that send
what a hostile or broken endpoint sends (garbage, huge answers, redirects, endless lines).

Each runs in a thread with its own event loop, as a real server would run in another
process: its work never counts against the event loop of the code under test.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
MIB = 1024 * 1024
GARBAGE_BLOCK = (b"garbage \x00\xff{[ not json ]} " * 40_000)[:MIB]  # 1 MiB, reused for every block


@dataclass
class ThreadedServer:
    """An aiohttp app on ``host``:ephemeral port, served from a thread until :meth:`stop`."""

    routes: list[tuple[str, str, Handler]]
    host: str = "127.0.0.1"
    port: int = 0
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)  # method, path, headers
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> ThreadedServer:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        async def setup() -> None:
            @web.middleware
            async def record(request: web.Request, handler: Handler) -> web.StreamResponse:
                self.requests.append((request.method, request.path, dict(request.headers)))
                return await handler(request)

            app = web.Application(middlewares=[record])
            for method, path, handler in self.routes:
                app.router.add_route(method, path, handler)
            self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.5)
            await self._runner.setup()
            site = web.TCPSite(self._runner, self.host, self.port)
            await site.start()
            server = site._server
            assert server is not None
            self.port = int(server.sockets[0].getsockname()[1])  # type: ignore[attr-defined]

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(setup())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True, name="fakehttp")
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("fake server did not start")
        return self

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        loop = self._loop

        async def down() -> None:
            if self._runner is not None:
                await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(down(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(10)
        loop.close()
        self._loop = None


async def stream_garbage(request: web.Request, size: int, status: int = 200,
                         content_type: str = "application/json") -> web.StreamResponse:
    """``size`` bytes of garbage in 1 MiB writes, without a Content-Length (chunked)."""
    resp = web.StreamResponse(status=status, headers={"Content-Type": content_type})
    await resp.prepare(request)
    sent = 0
    try:
        while sent < size:
            block = GARBAGE_BLOCK[: min(MIB, size - sent)]
            await resp.write(block)
            sent += len(block)
        await resp.write_eof()
    except (ConnectionResetError, ConnectionError, asyncio.CancelledError):
        pass  # the client stopped reading: what a bounded client does
    return resp
