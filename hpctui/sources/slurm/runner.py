"""Async subprocess runner: argv lists only, a hard timeout, and a kill that really kills.

Why its own module: every Slurm CLI call goes through one place, so the source can count
calls per refresh (controller load) and a hung ``sinfo`` can never stall the event loop.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence

import msgspec

from hpctui.base.sanitize import clean_text

STREAM_PIECE = 1 << 20  # what Runner.stream hands to its consumer at a time

# Process groups of children still running (pid == pgid: each starts its own session).
_LIVE: set[int] = set()


def kill_children() -> int:
    """SIGKILL the process group of every child still running; how many were there.

    Called on every exit path (signal handlers, atexit): a hung ``sinfo`` started in its
    own session would otherwise outlive us as an orphan (ppid 1)."""
    n = 0
    for pgid in list(_LIVE):
        try:
            os.killpg(pgid, signal.SIGKILL)
            n += 1
        except (ProcessLookupError, PermissionError):
            pass
        _LIVE.discard(pgid)
    return n


atexit.register(kill_children)

# Children whose spawn finished after their caller was cancelled: killed at once by
# _kill_spawned, but nobody awaited them. ``reap_killed`` does, before the event loop closes
# (else asyncio's child watcher reports "Loop … that handles pid N is closed" on exit).
_KILLED_UNREAPED: set[asyncio.subprocess.Process] = set()


async def reap_killed(limit_s: float = 2.0) -> None:
    """Wait (bounded) for every killed-during-spawn child to be reaped."""
    procs = list(_KILLED_UNREAPED)
    _KILLED_UNREAPED.clear()
    for proc in procs:
        await _reap(proc, limit_s)

# After SIGKILL, how long to wait for the child to go. A process stuck in the kernel (D state,
# e.g. on a hung NFS mount) ignores SIGKILL until the kernel lets go: never wait for it forever.
KILL_WAIT_S = 5.0


class CommandError(Exception):
    """The command could not run to completion (not found, timed out)."""


class CommandTimeout(CommandError):
    pass


class RunResult(msgspec.Struct, frozen=True, kw_only=True):
    argv: tuple[str, ...]
    rc: int
    stdout: bytes
    stderr: str
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.rc == 0

    @property
    def message(self) -> str:
        """Slurm's own words: stderr if any, else stdout; one line per message, trimmed."""
        text = self.stderr.strip() or self.stdout.decode(errors="replace").strip()
        return clean_text(" ".join(line.strip() for line in text.splitlines() if line.strip())[:500])


class Runner:
    """Runs Slurm commands with a fixed environment (SLURM_CONF, PATH with bin_dir first)."""

    def __init__(self, *, timeout_s: float = 10.0, slurm_conf: str | None = None,
                 bin_dir: str | None = None, extra_env: Mapping[str, str] | None = None) -> None:
        self.timeout_s = timeout_s
        env = dict(os.environ)
        if slurm_conf:
            env["SLURM_CONF"] = slurm_conf
        if bin_dir:
            env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
        env.update(extra_env or {})
        self.env = env
        self.calls: list[str] = []  # argv of every call since the last reset_calls()

    def reset_calls(self) -> None:
        self.calls = []

    async def run(self, argv: Sequence[str], *, timeout_s: float | None = None) -> RunResult:
        """Run ``argv`` (never via a shell). Raises CommandError if it cannot run or times out."""
        return await self._run(tuple(argv), timeout_s, None)

    async def stream(self, argv: Sequence[str], feed: Callable[[bytes], None], *,
                     timeout_s: float | None = None) -> RunResult:
        """Run ``argv`` with its stdout handed to ``feed`` piece by piece (about 1 MiB each, in a
        worker thread) instead of gathered: a 300 MB ``squeue --json`` is never whole in memory
        and never parsed by the event loop. ``stdout`` of the result is empty. An exception from
        ``feed`` kills the command and propagates."""
        return await self._run(tuple(argv), timeout_s, feed)

    async def _run(self, argv: tuple[str, ...], timeout_s: float | None,
                   feed: Callable[[bytes], None] | None) -> RunResult:
        limit = self.timeout_s if timeout_s is None else timeout_s
        self.calls.append(" ".join(argv))
        started = time.monotonic()
        # The spawn is shielded: a cancel (SIGHUP/SIGTERM) landing inside create_subprocess_exec
        # would otherwise kill only the child, then wait for its pipes, which a grandchild (the
        # `sleep` of a hung wrapper) keeps open: the exit would hang. The group is killed instead.
        spawn = asyncio.ensure_future(asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=self.env, start_new_session=True,
        ))
        try:
            proc = await asyncio.shield(spawn)
        except asyncio.CancelledError:
            spawn.add_done_callback(_kill_spawned)
            raise
        except FileNotFoundError as exc:
            raise CommandError(f"{argv[0]}: command not found") from exc
        except OSError as exc:
            raise CommandError(f"{argv[0]}: {exc}") from exc
        _LIVE.add(proc.pid)
        try:
            return await self._wait(proc, argv, limit, started, feed)
        finally:
            if proc.returncode is None:  # any way out while it runs: no orphan
                _kill_group(proc)
            _LIVE.discard(proc.pid)

    async def _wait(self, proc: asyncio.subprocess.Process, argv: tuple[str, ...], limit: float,
                    started: float, feed: Callable[[bytes], None] | None) -> RunResult:
        try:
            if feed is None:
                out, err = await asyncio.wait_for(proc.communicate(), timeout=limit)
            else:
                out, err = await asyncio.wait_for(_pump(proc, feed), timeout=limit)
        except (TimeoutError, asyncio.CancelledError) as exc:
            _kill_group(proc)
            reaped = await _reap(proc, KILL_WAIT_S)
            if isinstance(exc, asyncio.CancelledError):
                raise
            if not reaped:
                raise CommandTimeout(f"{argv[0]} timed out after {limit:g}s and is unkillable: pid {proc.pid} "
                                     f"still there {KILL_WAIT_S:g}s after SIGKILL (stuck in the kernel, "
                                     f"e.g. a hung NFS mount?)") from None
            raise CommandTimeout(f"{argv[0]} timed out after {limit:g}s") from None
        except Exception:  # the stream's consumer refused the output: stop the command now
            _kill_group(proc)
            await _reap(proc, KILL_WAIT_S)
            await _drain(proc)  # the rest of its output, to EOF: its pipes close with the loop still open
            raise
        return RunResult(argv=argv, rc=proc.returncode if proc.returncode is not None else -1,
                         stdout=out, stderr=err.decode(errors="replace"),
                         duration_s=time.monotonic() - started)


async def _pump(proc: asyncio.subprocess.Process, feed: Callable[[bytes], None]) -> tuple[bytes, bytes]:
    """stdout to ``feed`` in ~1 MiB pieces (one worker-thread hop each), stderr gathered."""
    assert proc.stdout is not None and proc.stderr is not None
    err = asyncio.ensure_future(proc.stderr.read())
    try:
        pending: list[bytes] = []
        size = 0
        while data := await proc.stdout.read(STREAM_PIECE):
            pending.append(data)
            size += len(data)
            if size >= STREAM_PIECE:
                piece, pending, size = b"".join(pending), [], 0
                await asyncio.to_thread(feed, piece)
        if pending:
            await asyncio.to_thread(feed, b"".join(pending))
        await proc.wait()
        return b"", await err
    finally:
        err.cancel()


async def _drain(proc: asyncio.subprocess.Process, limit_s: float = 1.0) -> None:
    """Read what a killed command left in its pipes (bounded): EOF closes its transport now,
    not when it is collected after the event loop has closed."""
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            try:
                await asyncio.wait_for(stream.read(), timeout=limit_s)
            except (TimeoutError, OSError):
                pass


def _kill_spawned(spawn: asyncio.Future[asyncio.subprocess.Process]) -> None:
    """A child whose spawn finished after we were cancelled: kill its whole group at once."""
    if spawn.cancelled() or spawn.exception() is not None:
        return
    _kill_group(spawn.result())
    _KILLED_UNREAPED.add(spawn.result())


async def _reap(proc: asyncio.subprocess.Process, limit_s: float) -> bool:
    """Wait at most ``limit_s`` for the killed child; False if it is still there."""
    try:
        await asyncio.wait_for(proc.wait(), timeout=limit_s)
    except TimeoutError:
        return False
    return True


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL the child's whole session (it was started with start_new_session): no orphans."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass
