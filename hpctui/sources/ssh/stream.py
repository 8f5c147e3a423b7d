"""One node's life: connect (with backoff), start the long-lived probe, feed its bytes to a
record splitter as they arrive, parse each complete record, restart the probe when the
stream dies or goes silent, reconnect when the connection is lost.

The transport knows nothing about what a record holds: a :class:`ProbeCodec` gives the
remote command, a fresh splitter per stream, and the parser.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import asyncssh

from hpctui.base.sanitize import clean_text
from hpctui.sources.ssh.pool import SshPool, describe_error
from hpctui.sources.ssh.targets import Target


class Splitter(Protocol):
    def feed(self, data: bytes) -> Iterable[Any]: ...


class ProbeCodec(Protocol):
    """What the transport runs on each node and how it turns the bytes into readings."""

    def command(self, node: str) -> str: ...

    def splitter(self) -> Splitter: ...

    def new_state(self, node: str) -> Any: ...

    def parse(self, node: str, record: Any, state: Any) -> Any: ...


class _ProbeSession(asyncssh.SSHClientSession[bytes]):
    def __init__(self, runner: NodeRunner) -> None:
        self.runner = runner

    def data_received(self, data: bytes, datatype: asyncssh.DataType) -> None:
        if datatype == asyncssh.EXTENDED_DATA_STDERR:
            self.runner.on_stderr(data)
        else:
            self.runner.on_data(data)

    def exit_status_received(self, status: int) -> None:
        self.runner.exit_status = status


class NodeRunner:
    """Keeps one node's probe stream alive; the source reads ``latest`` and ``status``."""

    def __init__(self, target: Target, pool: SshPool, codec: ProbeCodec, *,
                 clock: Callable[[], float] = time.time) -> None:
        self.target = target
        self.node = target.node
        self.pool = pool
        self.codec = codec
        self.clock = clock
        s = pool.settings
        self.stale_after = s.stale_after
        self.latest: Any = None  # the last parsed reading
        self.latest_time: float | None = None
        self.records = 0
        self.bad_records = 0
        self.bad_reported = 0  # bad records already counted in a SourceResult warning
        self.last_drop: str | None = None  # why the last unreadable piece of output was dropped
        self.error: str | None = target.error
        self.next_retry: float | None = None
        self.connected = False
        self.settled = asyncio.Event()  # first record, or first failure
        self.exit_status: int | None = None
        self.streams_started = 0
        self.reconnects = 0
        self._stderr_tail = b""
        self._state = codec.new_state(self.node)
        self._splitter: Splitter | None = None
        self._conn: asyncssh.SSHClientConnection | None = None
        self._chan: asyncssh.SSHClientChannel[bytes] | None = None
        self._task: asyncio.Task[None] | None = None
        self._failures = 0
        self.on_reading: Callable[[NodeRunner, Any], None] | None = None
        if target.error:
            self.settled.set()

    # -- called from the session ------------------------------------------------------------------

    def on_data(self, data: bytes) -> None:
        splitter = self._splitter
        if splitter is None:
            return
        try:
            records = list(splitter.feed(data))
        except Exception as exc:  # a splitter bug must not kill the stream
            self.bad_records += 1
            self.error = f"probe output unreadable: {type(exc).__name__}"
            return
        take = getattr(splitter, "take_warnings", None)
        dropped = take() if take is not None else []
        if dropped:  # garbage, binary or cut records: each costs itself only
            self.bad_records += len(dropped)
            self.last_drop = clean_text(str(dropped[-1]))[:200]
            self.error = f"unreadable probe output: {self.last_drop}"
            self.settled.set()
        for record in records:
            try:
                reading = self.codec.parse(self.node, record, self._state)
            except Exception as exc:  # one bad record costs that record
                self.bad_records += 1
                self.error = f"bad probe record dropped: {type(exc).__name__}: {clean_text(str(exc))[:120]}"
                continue
            self.latest = reading
            self.latest_time = self.clock()
            self.records += 1
            self.error = None
            self._failures = 0
            self.settled.set()
            if self.on_reading is not None:
                self.on_reading(self, reading)

    def on_stderr(self, data: bytes) -> None:
        self._stderr_tail = (self._stderr_tail + data)[-512:]

    def stderr_line(self) -> str | None:
        lines = [ln for ln in self._stderr_tail.decode("utf-8", "replace").splitlines() if ln.strip()]
        return clean_text(lines[-1].strip())[:200] if lines else None

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None and self.target.error is None:
            self._task = asyncio.create_task(self._run(), name=f"ssh:{self.node}")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        self._close_conn()

    def _close_conn(self) -> None:
        if self._chan is not None:
            self._chan.close()
            self._chan = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self.connected = False

    def _fail(self, message: str) -> float:
        """Record a failure; returns the backoff delay before the next try."""
        s = self.pool.settings
        delay = min(s.backoff_max_s, s.backoff_initial_s * (2 ** min(self._failures, 16)))
        self._failures += 1
        self.error = clean_text(message)
        self.next_retry = self.clock() + delay
        self.settled.set()
        return delay

    async def _run(self) -> None:
        s = self.pool.settings
        while True:
            if self._conn is None or self._conn.is_closed():
                self._close_conn()
                try:
                    self._conn = await self.pool.connect(self.target)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    await asyncio.sleep(self._fail(describe_error(exc, s.connect_timeout_s)))
                    continue
                self.connected = True
                self.next_retry = None
                if self.streams_started:
                    self.reconnects += 1
            ended = await self._stream_once()
            if ended is not None:
                # the stream died (or went silent): retry at once the first time, then back off
                delay = self._fail(ended)
                if self._failures > 1:
                    await asyncio.sleep(delay)

    async def _stream_once(self) -> str | None:
        """Run the probe until it ends; returns why it ended (None: cancelled cleanly)."""
        assert self._conn is not None
        conn = self._conn
        self._splitter = self.codec.splitter()
        self._stderr_tail = b""
        self.exit_status = None
        started = self.clock()
        records_before = self.records
        bad_before = self.bad_records
        try:
            chan, _session = await asyncio.wait_for(
                conn.create_session(lambda: _ProbeSession(self), self.codec.command(self.node), encoding=None),
                timeout=self.pool.settings.connect_timeout_s)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._close_conn()
            return f"could not start probe: {describe_error(exc)}"
        self._chan = chan
        self.streams_started += 1
        try:
            while True:
                if self.records > records_before and self.latest_time:
                    wait = self.latest_time + self.stale_after - self.clock()
                else:  # the first record of a stream: allow for a slow login (shell profile, busy node)
                    wait = started + 2 * self.stale_after - self.clock()
                if wait <= 0:
                    # the node or the connection is wedged: start over with a fresh connection
                    self._close_conn()
                    if self.bad_records > bad_before:  # output arrives but none of it is a readable record
                        return (f"no readable probe record for {self.stale_after:g} s ({self.last_drop}); "
                                "probe restarted")
                    return f"no probe record for {self.stale_after:g} s; probe restarted"
                try:
                    await asyncio.wait_for(chan.wait_closed(), timeout=wait)
                except TimeoutError:
                    continue
                break
        finally:
            self._chan = None
            self._splitter = None
        if conn.is_closed():
            self._close_conn()
            return "connection lost; reconnecting"
        why = f"probe exited (status {self.exit_status})" if self.exit_status is not None else "probe stream closed"
        err = self.stderr_line()
        return f"{why}: {err}" if err else why
