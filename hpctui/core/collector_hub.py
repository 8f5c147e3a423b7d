"""One collector for many viewers: a poller's results published over a private unix socket.

``hpctui serve`` starts one collector process per served cluster (``hpctui collector``): it polls
the cluster's sources once, with the ordinary :class:`~hpctui.core.poller.Poller`, and a
:class:`CollectorHub` publishes every result and error to the subscribers on its socket. Each
browser tab's app is started with ``--collector SOCKET``: its runtime's poller gets a
:class:`CollectorFeed` instead of its polling loops, and applies what arrives to its own store. A
session keeps its own UI state, read-only rule, executor and audit identity; its sources are
built (actions and on-demand reads use them) but never polled.

What the transport promises:

- **Private.** The socket lives in a directory of its own, mode 0700 (:func:`private_socket_dir`),
  and is itself mode 0600; the hub answers only peers of its own uid (``SO_PEERCRED``), and a
  subscriber connects only to a socket in a directory of its own uid that nobody else can enter.
- **Typed, bounded frames.** A frame is a 4-byte big-endian length and one msgspec-msgpack
  :data:`Message`; a frame over :data:`MAX_FRAME_BYTES` is never sent (the source's error is
  published instead) and never read (the subscriber drops the connection).
- **Nobody waits on a subscriber.** A result is encoded once and queued to each subscriber
  without an ``await``; each subscriber has its own writer task. One whose queue is full
  (:data:`QUEUE_FRAMES` frames) or that does not read for :data:`WRITE_TIMEOUT_S` is dropped;
  it reconnects and starts again from the newest result of each source.
- **A late joiner sees what the others see.** On connect the hub sends the newest result of each
  source (and an error that came after it), then every result as it lands.
- **A collector that goes away is a stale source, never a frozen screen.** The hub beats every
  :data:`BEAT_S`; a subscriber that hears nothing for :data:`SILENT_AFTER_S`, or loses the
  connection, records an error for each source (the status line shows it, the data's age grows)
  and reconnects: every :data:`RETRY_MIN_S` for :data:`QUIET_S` (a collector still starting is
  quiet, not an error), then with a growing delay (at most :data:`RETRY_MAX_S`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import stat
import struct
import tempfile
import time
from collections import deque
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import msgspec

from hpctui.core.poller import Poller
from hpctui.model import SourceResult

PROTOCOL = 1
HEADER = struct.Struct(">I")
MAX_FRAME_BYTES = 512 * 1024 * 1024  # a 16k-node demo result is ~280 MB of msgpack
BIG_FRAME_BYTES = 1024 * 1024  # bigger frames are decoded in a worker thread, off the session's loop
REQUEST_MAX_BYTES = 4096  # what a subscriber may send (a refresh request is a few bytes)
QUEUE_FRAMES = 32  # frames waiting for one subscriber; one more and it is dropped (it reconnects)
WRITE_TIMEOUT_S = 30.0  # a subscriber that takes no bytes for this long is dropped
BEAT_S = 1.0  # the hub's heartbeat
SILENT_AFTER_S = 15.0  # a subscriber that hears nothing for this long calls the collector gone (a
# whole 16k-node result takes seconds to encode, and the beat waits for it)
BODY_TIMEOUT_S = 60.0  # once a frame's length is read, its body must arrive within this
REFRESH_MIN_S = 1.0  # refresh requests closer together than this (many tabs pressing r) are one
RETRY_MIN_S = 0.2
RETRY_MAX_S = 5.0
QUIET_S = 5.0  # a (re)connect that works within this long is not reported as an error
SOCKET_NAME = "collector.sock"
MAX_SOCKET_PATH = 107  # sun_path is 108 bytes on Linux, its NUL included


class SourceInfo(msgspec.Struct, frozen=True):
    name: str
    kind: str
    interval_s: float


class Hello(msgspec.Struct, frozen=True, tag="hello"):
    """The hub's first frame: protocol version, the cluster and its sources."""

    protocol: int
    cluster: str
    sources: tuple[SourceInfo, ...]


class Landed(msgspec.Struct, frozen=True, tag="result"):
    """One source's result, as its poll applied it (``duration_s``: how long the collect took).

    ``base`` 0: ``result`` is whole. Else it is a delta against the result numbered ``base`` of the
    same source (:func:`delta`): ``keys`` gives the full key order of each per-node part that
    left out the nodes whose value is the very object of the base, ``same`` the parts that are."""

    result: SourceResult
    duration_s: float | None = None
    seq: int = 0
    base: int = 0
    keys: dict[str, list[str]] = msgspec.field(default_factory=dict)
    same: tuple[str, ...] = ()


class Failed(msgspec.Struct, frozen=True, tag="error"):
    """One source's failed collect (or a result the hub could not send)."""

    source: str
    error: str
    at: float


class Beat(msgspec.Struct, frozen=True, tag="beat"):
    at: float


class Refresh(msgspec.Struct, frozen=True, tag="refresh"):
    """A subscriber's only request: collect now (the ``r`` key, an action's follow-up)."""


Message = Hello | Landed | Failed | Beat | Refresh

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Message)


class ProtocolError(Exception):
    """The other end broke the protocol (a frame too big, undecodable, the wrong cluster)."""


def frame(message: Message) -> bytes:
    """``message`` as one frame: its length, then its msgpack bytes."""
    body = _encoder.encode(message)
    return HEADER.pack(len(body)) + body


def decode(body: bytes) -> Message:
    try:
        return _decoder.decode(body)
    except msgspec.DecodeError as exc:
        raise ProtocolError(f"undecodable frame: {exc}") from None


async def read_message(reader: asyncio.StreamReader, *, silent_after_s: float | None,
                       limit: int = MAX_FRAME_BYTES) -> Message:
    """The next frame's message; TimeoutError after ``silent_after_s`` without one; ProtocolError
    for a frame over ``limit`` bytes (its body is never read)."""
    header = await asyncio.wait_for(reader.readexactly(HEADER.size), silent_after_s)
    (size,) = HEADER.unpack(header)
    if size > limit:
        raise ProtocolError(f"a frame of {size:,} bytes (at most {limit:,})")
    body = await asyncio.wait_for(reader.readexactly(size), BODY_TIMEOUT_S)
    if size > BIG_FRAME_BYTES:
        return await asyncio.to_thread(decode, body)
    return decode(body)


# -- deltas: what a source reused is not sent again, and stays the same object in every session --
# Sources reuse the objects of what did not change (a node's readings, its Slurm state); the store
# and the findings rely on it (no new history sample, no rules run for that node). A delta keeps
# that across the socket: the session rebuilds the result from its copy of the base.
DICT_PARTS = ("slurm_nodes", "k8s_nodes", "gpus", "ib", "mounts", "services", "resources", "probes",
              "nvswitches", "alerts")
WHOLE_PARTS = ("slurm_jobs", "pods", "k8s_queues", "partitions", "silences", "reservations", "fabric",
               "controller")  # sent again unless the very same object (events are always new: never)


def delta(base: SourceResult, new: SourceResult) -> tuple[SourceResult, dict[str, list[str]], tuple[str, ...]]:
    """(``new`` without what is the very object of ``base``, the key order of each part thinned,
    the parts left out whole): what :func:`undelta` rebuilds ``new`` from."""
    changes: dict[str, object] = {}
    keys: dict[str, list[str]] = {}
    same: list[str] = []
    for part in DICT_PARTS:
        now, before = getattr(new, part), getattr(base, part)
        if now is None or before is None:
            continue
        if now is before:
            same.append(part)
            changes[part] = None
            continue
        changed = {name: value for name, value in now.items() if before.get(name) is not value}
        if len(changed) < len(now):
            changes[part] = changed
            keys[part] = list(now)
    for part in WHOLE_PARTS:
        now = getattr(new, part)
        if now is not None and now is getattr(base, part):
            same.append(part)
            changes[part] = None
    return (msgspec.structs.replace(new, **changes) if changes else new), keys, tuple(same)


def undelta(base: SourceResult, sent: SourceResult, keys: dict[str, list[str]], same: tuple[str, ...]) -> SourceResult:
    """The result :func:`delta` thinned, rebuilt with ``base``'s own objects; ProtocolError when the
    delta does not fit ``base``."""
    changes: dict[str, object] = {}
    for part in same:
        if (part not in DICT_PARTS and part not in WHOLE_PARTS) or getattr(base, part) is None:
            raise ProtocolError(f"a delta names part {part[:40]!r} the base lacks")
        changes[part] = getattr(base, part)
    for part, order in keys.items():
        before, changed = getattr(base, part, None) if part in DICT_PARTS else None, getattr(sent, part, None)
        if before is None or changed is None:
            raise ProtocolError(f"a delta names part {part[:40]!r} the base lacks")
        try:
            changes[part] = {name: changed[name] if name in changed else before[name] for name in order}
        except KeyError:
            raise ProtocolError(f"a delta of {part} names a node the base lacks") from None
    return msgspec.structs.replace(sent, **changes) if changes else sent


# -- the socket's place ------------------------------------------------------------------------
def private_socket_dir(base: Path | None = None) -> Path:
    """A new directory only we can enter (mode 0700) for the collector's socket: under
    ``$XDG_RUNTIME_DIR`` when it is ours and private, else the system's temporary directory."""
    if base is None:
        runtime_dir = os.environ.get("XDG_RUNTIME_DIR", "")
        base = Path(runtime_dir) if runtime_dir and _private_dir(Path(runtime_dir)) else None
    where = tempfile.mkdtemp(prefix="hpctui-", dir=base)  # mkdtemp: mode 0700, a fresh name
    if len(str(Path(where) / SOCKET_NAME)) > MAX_SOCKET_PATH and base is not None:
        Path(where).rmdir()
        return private_socket_dir(Path("/tmp"))
    return Path(where)


def _private_dir(path: Path) -> bool:
    try:
        st = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077


def check_socket(path: Path) -> None:
    """Refuse (ProtocolError) a socket that is not ours: its directory must be a directory of ours
    that nobody else can enter, the socket a socket of ours."""
    if not _private_dir(path.parent):
        raise ProtocolError(f"{path.parent}: not a directory of ours with mode 0700")
    try:
        st = path.lstat()
    except FileNotFoundError:
        raise ConnectionRefusedError(f"{path}: no collector listening") from None
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.geteuid():
        raise ProtocolError(f"{path}: not a socket of ours")


def peer_uid(sock: socket.socket | None) -> int | None:
    """The uid of a unix socket's peer (Linux ``SO_PEERCRED``); None where it cannot be told."""
    if sock is None or not hasattr(socket, "SO_PEERCRED"):
        return None
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None
    return int(struct.unpack("3i", creds)[1])


# -- the collector's side ----------------------------------------------------------------------
class _Subscriber:
    """One connected session: its frames queued (bounded) and written by its own task."""

    def __init__(self, writer: asyncio.StreamWriter, limit: int, on_drop: Callable[[_Subscriber], None]) -> None:
        self.writer = writer
        self.limit = limit
        self.on_drop = on_drop
        self.queue: deque[bytes] = deque()
        self.wake = asyncio.Event()
        self.dropped: str | None = None

    def offer(self, data: bytes) -> None:
        """Queue one frame; never waits. A full queue drops the subscriber (it reconnects)."""
        if self.dropped is not None:
            return
        if len(self.queue) >= self.limit:
            self.drop(f"more than {self.limit} frames behind")
            return
        self.queue.append(data)
        self.wake.set()

    def drop(self, why: str) -> None:
        if self.dropped is None:
            self.dropped = why
            self.queue.clear()
            self.wake.set()
            self.writer.transport.abort()  # no goodbye: the socket is closed now, unread bytes lost
            self.on_drop(self)

    async def pump(self) -> None:
        """Write the queued frames until dropped; a write that does not drain in time drops it."""
        while self.dropped is None:
            await self.wake.wait()
            self.wake.clear()
            while self.queue and self.dropped is None:
                self.writer.write(self.queue.popleft())
                try:
                    await asyncio.wait_for(self.writer.drain(), WRITE_TIMEOUT_S)
                except TimeoutError:
                    self.drop(f"took nothing for {WRITE_TIMEOUT_S:.0f} s")
                except (ConnectionError, OSError):
                    self.drop("gone")


class CollectorHub:
    """Publishes ``poller``'s results and errors to every subscriber on ``path`` (see the module doc).

    The poller is the collector's own: the hub listens to it (:class:`~hpctui.core.poller.PollListener`)
    and passes the subscribers' refresh requests to it, at most one per :data:`REFRESH_MIN_S`.
    """

    def __init__(self, poller: Poller, path: Path, *, cluster: str, queue_frames: int = QUEUE_FRAMES,
                 beat_s: float = BEAT_S, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.poller = poller
        self.path = path
        self.cluster = cluster
        self.queue_frames = queue_frames
        self.beat_s = beat_s
        self.monotonic = monotonic
        self.subscribers: set[_Subscriber] = set()
        self.dropped = 0  # subscribers dropped for being slow or gone (tests, the log)
        self._results: dict[str, tuple[int, SourceResult, float]] = {}  # source -> its newest (seq, result, duration)
        self._seq = 0
        self._errors: dict[str, bytes] = {}  # source -> the frame of its newest error after that result
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._refreshed = -REFRESH_MIN_S

    async def start(self) -> None:
        """Listen (the socket mode 0600 in its 0700 directory) and hear the poller; start the poller
        yourself."""
        if not _private_dir(self.path.parent):
            raise ProtocolError(f"{self.path.parent}: not a directory of ours with mode 0700")
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # a socket left by a killed collector
        self._server = await asyncio.start_unix_server(self._connected, path=str(self.path))
        self.path.chmod(0o600)  # (nobody else can reach it meanwhile: the directory is 0700)
        self.poller.listeners.append(self)
        self._spawn(self._beat())

    async def stop(self) -> None:
        if self in self.poller.listeners:
            self.poller.listeners.remove(self)
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
        for sub in list(self.subscribers):
            sub.drop("the collector stops")
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    # -- PollListener --------------------------------------------------------------------------
    def result(self, result: SourceResult, duration_s: float) -> None:
        """Publish ``result`` as a delta against the source's previous one (each subscriber has that
        one: it came whole when it connected, or as a delta since); encoded only if someone listens."""
        self._seq += 1
        source = result.source
        previous = self._results.get(source)
        self._results[source] = (self._seq, result, duration_s)
        self._errors.pop(source, None)
        if not self.subscribers:
            return
        if previous is None:
            data = self._whole_frame(source)
        else:
            sent, keys, same = delta(previous[1], result)
            data = frame(Landed(sent, duration_s, self._seq, previous[0], keys, same))
        if len(data) - HEADER.size > MAX_FRAME_BYTES:
            del self._results[source]  # the subscribers' base is gone: they reconnect from whole frames
            self.error(source, f"collector: a result of {len(data):,} bytes is more than a frame holds "
                               f"({MAX_FRAME_BYTES:,})", result.time)
            for sub in list(self.subscribers):
                sub.drop("its base result could not be sent")
            return
        self._publish(data)

    def _whole_frame(self, source: str) -> bytes:
        """The newest result of ``source`` whole (encoded per newcomer: nothing that big is kept)."""
        seq, result, duration_s = self._results[source]
        return frame(Landed(result, duration_s, seq))

    def error(self, source: str, message: str, at: float) -> None:
        data = frame(Failed(source, message, at))
        self._errors[source] = data
        self._publish(data)

    def _publish(self, data: bytes) -> None:
        for sub in list(self.subscribers):
            sub.offer(data)

    # -- connections ---------------------------------------------------------------------------
    def _hello(self) -> bytes:
        return frame(Hello(PROTOCOL, self.cluster, tuple(SourceInfo(s.name, s.kind, s.interval_s)
                                                         for s in self.poller.sources)))

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        uid = peer_uid(writer.get_extra_info("socket"))
        if uid is not None and uid != os.geteuid():
            writer.transport.abort()
            return
        sub = _Subscriber(writer, self.queue_frames, self._forget)
        sub.offer(self._hello())
        for source in {**self._results, **self._errors}:  # what the others have: the newest of each source
            whole = self._whole_frame(source) if source in self._results else None
            if whole is not None and len(whole) - HEADER.size > MAX_FRAME_BYTES:
                whole = frame(Failed(source, f"collector: a result of {len(whole):,} bytes is more than a frame "
                                             f"holds ({MAX_FRAME_BYTES:,})", self._results[source][1].time))
            if whole is not None:
                sub.offer(whole)
            if (error := self._errors.get(source)) is not None:
                sub.offer(error)
        self.subscribers.add(sub)
        pump = asyncio.create_task(sub.pump(), name="collector:pump")
        try:
            while sub.dropped is None:
                message = await read_message(reader, silent_after_s=None, limit=REQUEST_MAX_BYTES)
                if isinstance(message, Refresh):
                    self._refresh()
        except (asyncio.IncompleteReadError, ConnectionError, OSError, ProtocolError):
            pass
        finally:
            sub.drop("gone")
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pump

    def _forget(self, sub: _Subscriber) -> None:
        if sub in self.subscribers:
            self.subscribers.discard(sub)
            if sub.dropped not in ("gone", "the collector stops"):
                self.dropped += 1

    def _refresh(self) -> None:
        now = self.monotonic()
        if now - self._refreshed >= REFRESH_MIN_S:
            self._refreshed = now
            self.poller.refresh_now()

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.beat_s)
            self._publish(frame(Beat(time.time())))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


# -- a session's side --------------------------------------------------------------------------
class CollectorFeed:
    """A served session's :class:`~hpctui.core.poller.Feed`: what the collector on ``path`` sends,
    applied to the session's store, reconnecting for good (see the module doc)."""

    def __init__(self, path: Path, *, cluster: str, silent_after_s: float = SILENT_AFTER_S,
                 clock: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self.cluster = cluster
        self.silent_after_s = silent_after_s
        self.clock = clock
        self.monotonic = monotonic
        self.connected = False
        self.connects = 0  # sessions with the collector so far (tests: a reconnect happened)
        self.problem: str | None = None  # why the last connection ended
        self._writer: asyncio.StreamWriter | None = None
        self._got_data = False  # the current connection delivered a result or an error
        self._landed: dict[str, tuple[int, float]] = {}  # source -> (number, time) of the result landed last

    def refresh(self) -> None:
        writer = self._writer
        if writer is not None and not writer.is_closing():
            with contextlib.suppress(Exception):
                writer.write(frame(Refresh()))

    async def run(self, poller: Poller) -> None:
        delay = RETRY_MIN_S
        down_since: float | None = None
        while True:
            self._got_data = False
            try:
                await self._session(poller)
                problem = "the collector closed the connection"
            except TimeoutError:
                problem = f"the collector sent nothing for {self.silent_after_s:.0f} s"
            except asyncio.IncompleteReadError:
                problem = "the collector went away"
            except (OSError, ProtocolError) as exc:
                problem = f"the collector is unreachable: {getattr(exc, 'strerror', None) or exc}"
            finally:
                self.connected = False
                self._writer = None
            now = self.monotonic()
            if self._got_data or down_since is None:  # down from now (at start: quiet for QUIET_S)
                down_since, delay = now, RETRY_MIN_S
            self.problem = problem
            if self._got_data or now - down_since >= QUIET_S:  # shown as each source's error: stale data
                for source in poller.sources:
                    poller.land_error(source.name, f"{problem}; reconnecting", self.clock())
            await asyncio.sleep(delay)
            if self.monotonic() - down_since >= QUIET_S:  # a collector (re)starting is there within seconds:
                delay = min(RETRY_MAX_S, delay * 2)  # tried every RETRY_MIN_S till then (the first paint waits)

    async def _session(self, poller: Poller) -> None:
        check_socket(self.path)
        reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(str(self.path)), self.silent_after_s)
        try:
            hello = await read_message(reader, silent_after_s=self.silent_after_s)
            if not isinstance(hello, Hello) or hello.protocol != PROTOCOL:
                raise ProtocolError("not an hpctui collector of this version")
            if hello.cluster != self.cluster:
                raise ProtocolError(f"it collects cluster {hello.cluster!r}, not {self.cluster!r}")
            known = {s.name for s in poller.sources}
            for info in hello.sources:
                if info.name not in known and info.name not in poller.store.health():
                    poller.store.register_source(info.name, info.kind)
            self._writer = writer
            self.connected = True
            self.connects += 1
            bases: dict[str, tuple[int, SourceResult]] = {}  # source -> the newest result and its number
            while True:
                message = await read_message(reader, silent_after_s=self.silent_after_s)
                if isinstance(message, Landed):
                    self._got_data = True
                    result = self._rebuilt(message, bases)
                    if self._landed.get(result.source) == (message.seq, result.time):
                        result = replayed(result)
                    self._landed[result.source] = (message.seq, result.time)
                    await poller.land(result, message.duration_s)
                elif isinstance(message, Failed):
                    self._got_data = True
                    poller.land_error(message.source, message.error, message.at)
        finally:
            writer.transport.abort()


    @staticmethod
    def _rebuilt(message: Landed, bases: dict[str, tuple[int, SourceResult]]) -> SourceResult:
        """The whole result of ``message`` (a delta rebuilt on its base), remembered as the next base."""
        result = message.result
        if message.base:
            base = bases.get(result.source)
            if base is None or base[0] != message.base:
                raise ProtocolError(f"a delta against result {message.base} of {result.source[:60]!r}, "
                                    "which this session does not have")
            result = undelta(base[1], result, message.keys, message.same)
        bases[result.source] = (message.seq, result)
        return result


def replayed(result: SourceResult) -> SourceResult:
    """A result this session landed already, sent again whole after a reconnect to the same collector: landed
    for the source's health (it is fresh again), without what would count twice — its events, the GPU and IB
    samples of the history series, the controller's history point (the store keeps the parts it had)."""
    return msgspec.structs.replace(result, events=None, gpus=None, ib=None, controller=None)


async def run_collector(poller: Poller, path: Path, *, cluster: str, stop: asyncio.Event,
                        parent: int | None = None) -> None:
    """The collector process's life: ``poller`` polls (no findings: nobody looks at its store), the
    hub publishes, until ``stop`` is set or the process whose pid is ``parent`` is gone (a
    SIGKILLed ``hpctui serve`` leaves no collector behind)."""
    poller.prepare = None
    hub = CollectorHub(poller, path, cluster=cluster)
    await hub.start()
    poller.start()
    try:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 1.0)
            if parent is not None and os.getppid() != parent:
                break
    finally:
        await hub.stop()
        await poller.stop()

