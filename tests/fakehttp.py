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
                         content_type: str = "application/json", prefix: bytes = b"") -> web.StreamResponse:
    """``prefix`` then garbage, ``size`` bytes in all in 1 MiB writes, without a Content-Length
    (chunked). A prefix like ``{"nodes": [`` makes the garbage look like JSON until it is parsed."""
    resp = web.StreamResponse(status=status, headers={"Content-Type": content_type})
    await resp.prepare(request)
    sent = 0
    try:
        if prefix:
            await resp.write(prefix)
            sent += len(prefix)
        while sent < size:
            block = GARBAGE_BLOCK[: min(MIB, size - sent)]
            await resp.write(block)
            sent += len(block)
        await resp.write_eof()
    except (ConnectionResetError, ConnectionError, asyncio.CancelledError):
        pass  # the client stopped reading: what a bounded client does
    return resp


class RssPeak:
    """The process's resident set sampled every 10 ms: peak growth over the start, in MiB."""

    def __init__(self) -> None:
        self.start = self.peak = self._rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, self._rss())

    def __enter__(self) -> RssPeak:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def growth_mib(self) -> float:
        return (self.peak - self.start) / MIB


def _serve_slurm_garbage(size_mib: int) -> None:
    """A fake slurmrestd in this process: every read answers ``size_mib`` MiB of garbage."""
    server = ThreadedServer([("GET", "/slurm/{v}/{what}", slurm_garbage(size_mib))]).start()
    print(server.port, flush=True)
    import sys

    sys.stdin.read()  # until the test closes our stdin (or kills us)
    server.stop()


def slurm_garbage(size_mib: int) -> Handler:
    """Garbage three ways: nodes and jobs look like JSON at first (``{"nodes": [``), partitions
    do not, the diag is an HTTP 500 of garbage."""
    async def garbage(request: web.Request) -> web.StreamResponse:
        what = request.match_info["what"]
        status = 500 if what == "diag" else 200
        prefix = f'{{"{what}": ['.encode() if what in ("nodes", "jobs") else b""
        return await stream_garbage(request, size_mib * MIB, status=status, prefix=prefix)
    return garbage


if __name__ == "__main__":  # python tests/fakehttp.py slurm-garbage 50  (prints its port)
    import sys

    if sys.argv[1:2] == ["slurm-garbage"]:
        _serve_slurm_garbage(int(sys.argv[2]))
