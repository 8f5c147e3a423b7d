"""One poll loop per source: never overlapping, bounded by a timeout, backing off on errors.

A hung source costs a stale marker in the status line, never a frozen screen:
``collect()`` runs under ``asyncio.wait_for`` and the other sources keep going.

Two hooks let one poller serve many viewers (``hpctui serve``, :mod:`hpctui.core.collector_hub`):
``listeners`` hear every result and error as it lands (the collector publishes them), and a
``feed`` replaces the per-source loops (a served session applies what the collector sends,
through :meth:`Poller.land` and :meth:`Poller.land_error`, and collects nothing itself).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from hpctui.base.errors import describe_error
from hpctui.core.store import Store
from hpctui.model import ClusterSnapshot, SourceResult
from hpctui.sources.base import Source

MAX_BACKOFF_S = 60.0
PREPARE_IN_THREAD_ABOVE = 1024  # nodes: bigger results are merged, joined and derived off the loop
FIRST_POLL_WAIT_S = 1.0  # the longest the first polls wait for the UI's first frame


def result_size(result: SourceResult) -> int:
    """Nodes a result speaks for (its biggest per-node part)."""
    return max((len(part) for part in (result.slurm_nodes, result.k8s_nodes, result.gpus, result.ib,
                                       result.mounts, result.resources, result.probes) if part), default=0)


def backoff_delay(interval_s: float, consecutive_errors: int) -> float:
    """Interval doubled per consecutive error, capped, so a dead controller is not hammered."""
    if consecutive_errors <= 0:
        return interval_s
    return min(MAX_BACKOFF_S, interval_s * (2 ** min(consecutive_errors, 6)))


class PollListener(Protocol):
    """Told of every collect's outcome, on the event loop, after the store has it (never raises
    into the poller: an exception is swallowed)."""

    def result(self, result: SourceResult, duration_s: float) -> None: ...

    def error(self, source: str, message: str, at: float) -> None: ...


class Feed(Protocol):
    """Results from elsewhere instead of the per-source loops (:meth:`Poller.start` runs it)."""

    async def run(self, poller: Poller) -> None:
        """Deliver results and errors through ``poller.land`` / ``poller.land_error`` until cancelled."""
        ...

    def refresh(self) -> None:
        """Ask whoever collects for a collect now (the ``r`` key); never blocks."""
        ...


class Poller:
    def __init__(
        self,
        sources: Sequence[Source],
        store: Store,
        on_change: Callable[[], None] | None = None,
        timeout_s: float | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sources = list(sources)
        self.store = store
        self.on_change = on_change
        self.timeout_s = timeout_s
        self.monotonic = monotonic
        # Derives what every reader of a new snapshot needs (the runtime computes findings here),
        # once per change and, for big clusters, in a thread, before the UI is told.
        self.prepare: Callable[[ClusterSnapshot], object] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._wake: dict[str, asyncio.Event] = {}
        self._apply_lock = asyncio.Lock()
        self.listeners: list[PollListener] = []  # told of every result and error (the collector's hub)
        self.feed: Feed | None = None  # set: start() runs it instead of polling (a served session)
        for source in self.sources:
            store.register_source(source.name, source.kind)

    def _timeout_for(self, source: Source) -> float:
        own = getattr(source, "timeout_s", None)
        if isinstance(own, (int, float)) and own > 0:
            return float(own) + min(1.0, float(own) / 2)  # the source's own limit, plus a margin
        return self.timeout_s or max(10.0, 3 * source.interval_s)

    async def poll_once(self, source: Source) -> bool:
        """Collect once from ``source`` into the store; True on success."""
        started = self.monotonic()
        try:
            result = await asyncio.wait_for(source.collect(), timeout=self._timeout_for(source))
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            self._failed(source.name, f"timed out after {self._timeout_for(source):.0f} s")
            ok = False
        except Exception as exc:  # any source failure is data for the status line
            self._failed(source.name, describe_error(exc))
            ok = False
        else:
            duration = self.monotonic() - started
            await self._apply(result, duration)
            for listener in self.listeners:
                try:
                    listener.result(result, duration)
                except Exception:  # a listener's bug must not stop polling
                    pass
            ok = True
        if self.on_change is not None:
            self.on_change()
        return ok

    def _failed(self, source: str, message: str) -> None:
        at = self.store.clock()
        self.store.record_error(source, message, at)
        for listener in self.listeners:
            try:
                listener.error(source, message, at)
            except Exception:  # a listener's bug must not stop polling
                pass

    async def _apply(self, result: SourceResult, duration: float) -> None:
        async with self._apply_lock:  # one writer at a time (a thread may be applying)
            if result_size(result) > PREPARE_IN_THREAD_ABOVE:
                await asyncio.to_thread(self._apply_and_prepare, result, duration)
            else:
                self.store.apply(result, duration_s=duration)
                await self._prepare()

    async def land(self, result: SourceResult, duration_s: float | None) -> None:
        """A result collected elsewhere (a feed's): applied and prepared as a poll's own, then
        ``on_change``."""
        await self._apply(result, duration_s if duration_s is not None else 0.0)
        if self.on_change is not None:
            self.on_change()

    def land_error(self, source: str, message: str, at: float | None = None) -> None:
        """A failure met elsewhere (a feed's, or the feed itself): recorded as a poll's own, then
        ``on_change``; a source this poller does not know is registered first."""
        if source not in self.store.health():
            self.store.register_source(source, "?")
        self.store.record_error(source, message, at)
        if self.on_change is not None:
            self.on_change()

    def _apply_and_prepare(self, result: SourceResult, duration: float) -> None:
        """A big result, in a worker thread: merged into the store, the joined snapshot built and
        its derived data computed, so the UI thread only reads a cached snapshot. At 16k nodes
        these took ~40% of the event loop's busy time and held key presses back."""
        self.store.apply(result, duration_s=duration)
        snapshot = self.store.snapshot()
        if self.prepare is not None:
            try:
                self.prepare(snapshot)
            except Exception:  # readers compute it themselves then; a bug here must not stop polling
                pass

    async def _prepare(self) -> None:
        if self.prepare is None:
            return
        snapshot = self.store.snapshot()
        try:
            if len(snapshot.nodes) > PREPARE_IN_THREAD_ABOVE:
                await asyncio.to_thread(self.prepare, snapshot)
            else:
                self.prepare(snapshot)
        except Exception:  # readers compute it themselves then; a bug here must not stop polling
            pass

    async def poll_all_once(self) -> None:
        await asyncio.gather(*(self.poll_once(s) for s in self.sources))

    async def _loop(self, source: Source, after: asyncio.Event | None = None) -> None:
        wake = self._wake[source.name]
        if after is not None:  # the UI's first frame: drawn before a big first collect competes for the GIL
            try:
                await asyncio.wait_for(after.wait(), timeout=FIRST_POLL_WAIT_S)
            except TimeoutError:
                pass
        while True:
            await self.poll_once(source)
            errors = self.store.health()[source.name].consecutive_errors
            wake.clear()
            try:
                await asyncio.wait_for(wake.wait(), timeout=backoff_delay(source.interval_s, errors))
            except TimeoutError:
                pass

    def start(self, after: asyncio.Event | None = None) -> None:
        """One polling task per source; ``after``: the first polls wait for it (at most
        FIRST_POLL_WAIT_S). The tasks exist at once either way, so ``stop`` always finds them.
        With a ``feed``: one task runs it instead (after ``after`` the same way), no source is polled."""
        if self.feed is not None:
            self._tasks.append(asyncio.create_task(self._fed(self.feed, after), name="poll:feed"))
            return
        for source in self.sources:
            self._wake[source.name] = asyncio.Event()
            self._tasks.append(asyncio.create_task(self._loop(source, after), name=f"poll:{source.name}"))

    async def _fed(self, feed: Feed, after: asyncio.Event | None) -> None:
        if after is not None:
            try:
                await asyncio.wait_for(after.wait(), timeout=FIRST_POLL_WAIT_S)
            except TimeoutError:
                pass
        await feed.run(self)

    @property
    def running(self) -> bool:
        """The per-source loops run (``start()`` was called and they were not stopped)."""
        return any(not task.done() for task in self._tasks)

    def refresh_now(self) -> None:
        """Ask every loop to poll now (the ``r`` key); a poll in flight is not duplicated. With a
        feed: the feed is asked (its collector decides)."""
        if self.feed is not None:
            self.feed.refresh()
            return
        for event in self._wake.values():
            event.set()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        for source in self.sources:
            try:
                await asyncio.wait_for(source.close(), timeout=2.0)
            except Exception:  # closing is best effort
                pass
