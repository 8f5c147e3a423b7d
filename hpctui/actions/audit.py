"""Append-only audit log: JSON lines, each written whole, fsynced, or not at all.

Every action that runs leaves two records sharing an ``id``: an *intent* record written
(and fsynced) before any command is sent, and an *outcome* record after. A process killed
halfway (``kill -9``, a power cut) still leaves the intent: what was about to happen, by whom.
Refused actions leave one outcome record (nothing ran). A plan that spans backends (hybrid
drain) also leaves one *step* record per step as it finishes (its backend, commands and
per-target results), between the intent and the outcome.

What a record promises (:meth:`AuditLog._write`):

- whole or absent: every byte is written (short writes are looped on) and fsynced; on any
  failure (``ENOSPC``, ``EIO``, ...) the file is truncated back to where it ended before and
  ``OSError`` is raised, so a failed intent refuses the action;
- on its own line: a file whose last line was torn (a crash mid-write) gets a newline first;
- never through a link: the path is opened with ``O_NOFOLLOW``, must be a regular file, is
  created 0600 (missing parent directories 0700); a looser mode is tightened when the file is
  ours, refused when it is world-writable and someone else's;
- one writer at a time: an exclusive ``flock`` on the file, across processes; a path moved
  meanwhile (logrotate, another writer's rotation) is reopened, so the record goes to the
  file now at the path;
- bounded: past ``max_bytes`` the file is rotated (``audit.jsonl`` → ``.1`` … ``.keep``).

Readers (:func:`read_tail`) read only the newest ``tail_bytes`` (across the rotated files when
the current one is short), skip and count lines that are not a JSON object, never raise for a
bad line. The reading is blocking file I/O: callers in the UI run it in a worker thread.
"""

from __future__ import annotations

import errno
import fcntl
import os
import pwd
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from hpctui.base.private_files import private_dir
from hpctui.model.action import ActionPlan, ActionResult, StepResult

_encoder = msgspec.json.Encoder()

MAX_BYTES = 64 << 20  # rotate the current file once a record would take it past this (0: never)
KEEP = 5  # rotated files kept: audit.jsonl.1 (newest) … audit.jsonl.5
TAIL_BYTES = 4 << 20  # what a reader reads at most, newest first across the rotated files
TAIL_RECORDS = 20_000  # and at most this many records of it
_MAX_ROTATED_READ = 99  # rotated files a reader looks at, whatever ``keep`` was
_REOPEN_TRIES = 8  # a path moved under us this often in a row: give up (and refuse the action)
_READ_LOCK_TRIES = 20  # a reader waits at most this × 25 ms for a writer to finish its record

_OPEN_WRITE = (os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
               | getattr(os, "O_CLOEXEC", 0))
_OPEN_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def os_user() -> str:
    """The name of the uid we run as, from the OS: ``$LOGNAME``/``$USER`` can be set to anything."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def user_fields() -> dict[str, Any]:
    """Who acts: the uid's name, plus what the environment claims (extra fields, never the user)."""
    out: dict[str, Any] = {"uid": os.getuid()}
    for key, env in (("sudo_user", "SUDO_USER"), ("logname", "LOGNAME")):
        value = os.environ.get(env)
        if value:
            out[key] = value
    return out


def rotated(path: Path, index: int) -> Path:
    """``audit.jsonl`` → ``audit.jsonl.1`` (index 1 is the newest rotated file)."""
    return path.with_name(f"{path.name}.{index}")


@dataclass(frozen=True, slots=True)
class AuditRead:
    """The newest records of an audit log, in file order, and what reading them met."""

    records: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0  # non-empty lines that were not a JSON object (torn by a crash, edited)
    cut: bool = False  # older records were left out (only the tail was read)
    stamp: tuple[int, int] = (0, 0)  # (size, mtime_ns) of the current file; (0, 0): none yet
    error: str | None = None  # the log could not be read at all (one line, already phrased)

    @property
    def warnings(self) -> list[str]:
        """What a reader shows the user: nothing when every line was read."""
        out = [f"audit log: {self.error}"] if self.error else []
        if self.skipped:
            out.append(f"audit log: {self.skipped} unreadable line(s) skipped")
        return out


class AuditLog:
    """The audit log at ``path``; opened per record (nothing held between actions)."""

    def __init__(self, path: Path, *, max_bytes: int = MAX_BYTES, keep: int = KEEP,
                 tail_bytes: int = TAIL_BYTES, tail_records: int = TAIL_RECORDS) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.keep = keep
        self.tail_bytes = tail_bytes
        self.tail_records = tail_records
        self._warnings: list[str] = []
        self._said: set[str] = set()  # warnings given once per AuditLog (a shared log's mode, no rotation)

    # -- writing ----------------------------------------------------------------------------
    def take_warnings(self) -> list[str]:
        """Notices from the writes since the last call (a mode tightened, a torn line ended,
        a rotation that failed): the record was written, but the user should know."""
        out, self._warnings = self._warnings, []
        return out

    def _warn(self, text: str, *, once: bool = False) -> None:
        if once:
            if text in self._said:
                return
            self._said.add(text)
        self._warnings.append(text)

    def _write(self, record: dict[str, Any]) -> None:
        """Append ``record`` as one whole line, fsynced; raise OSError (the file left as it
        was before) when that cannot be done."""
        line = _encoder.encode(record) + b"\n"
        fd = self._open_locked()
        try:
            fd = self._rotate_if_full(fd, len(line))
            self._append_whole(fd, line)
        finally:
            os.close(fd)  # releases the lock

    def _append_whole(self, fd: int, line: bytes) -> None:
        end = os.fstat(fd).st_size
        torn = end > 0 and os.pread(fd, 1, end - 1) != b"\n"
        data = memoryview(b"\n" + line if torn else line)
        try:
            done = 0
            while done < len(data):
                n = os.write(fd, data[done:])
                if n <= 0:  # no progress and no error: treat as a full disk rather than spin
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                done += n
            os.fsync(fd)
        except BaseException as exc:
            undone = _truncate(fd, end)
            if isinstance(exc, OSError):
                detail = exc.strerror or str(exc)
                if undone is not None:
                    detail += f"; the partial record could not be removed ({undone})"
                raise OSError(exc.errno, detail, str(self.path)) from exc
            raise
        if torn:
            self._warn(f"audit log {self.path}: its last line was incomplete (a crash mid-write?); "
                       "kept, and the new record starts on a new line")

    def _open_locked(self) -> int:
        """The file now at the path, opened and exclusively locked."""
        for _ in range(_REOPEN_TRIES):
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                if self._is_current(fd):
                    return fd
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # moved away while we waited for the lock: the file at the path now
        raise OSError(errno.EAGAIN, "the file kept being moved while it was opened", str(self.path))

    def _is_current(self, fd: int) -> bool:
        try:
            st = self.path.lstat()
        except FileNotFoundError:
            return False
        own = os.fstat(fd)
        return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)

    def _open(self) -> int:
        self._make_parent()
        try:
            fd = os.open(self.path, _OPEN_WRITE, 0o600)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK) and self.path.is_symlink():
                raise OSError(errno.ELOOP, "is a symbolic link: refused (an audit log is never written "
                              "through a link)", str(self.path)) from None
            raise
        try:
            self._check_file(fd)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _check_file(self, fd: int) -> None:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file: refused", str(self.path))
        mode = stat.S_IMODE(st.st_mode)
        if not mode & 0o077:
            return
        if st.st_uid == os.geteuid():
            os.fchmod(fd, 0o600)
            self._warn(f"audit log {self.path}: was mode {mode:04o}, tightened to 0600")
        elif mode & 0o002:
            raise OSError(errno.EPERM, f"world-writable (mode {mode:04o}) and owned by uid {st.st_uid}: "
                          "refused (anyone could rewrite the records)", str(self.path))
        else:
            self._warn(f"audit log {self.path}: mode {mode:04o}, owned by uid {st.st_uid} (a shared log): "
                       "left as it is", once=True)

    def _make_parent(self) -> None:
        """Missing parent directories, each created 0700 (``mkdir -p`` would use the umask's mode)."""
        private_dir(self.path.parent)

    def _rotate_if_full(self, fd: int, incoming: int) -> int:
        """Rotate when ``incoming`` more bytes would take the locked file past ``max_bytes``;
        the descriptor to append to (the new file's, locked, after a rotation)."""
        if self.max_bytes <= 0:
            return fd
        size = os.fstat(fd).st_size
        if size == 0 or size + incoming <= self.max_bytes:
            return fd
        try:
            self._rotate()
        except OSError as exc:  # the record still goes in, to the file as it is
            self._warn(f"audit log {self.path}: not rotated ({exc.strerror or exc}); appended to it", once=True)
            return fd
        os.close(fd)  # the old file (now .1): waiting writers see it moved and reopen
        return self._open_locked()

    def _rotate(self) -> None:
        """``.keep-1`` → ``.keep`` (the oldest dropped) … ``.1`` → ``.2``, the path → ``.1``.
        Called with the current file locked: no other writer of ours appends meanwhile."""
        for i in range(max(1, self.keep) - 1, 0, -1):
            src = rotated(self.path, i)
            if os.path.lexists(src):
                src.replace(rotated(self.path, i + 1))
        self.path.replace(rotated(self.path, 1))
        _fsync_dir(self.path.parent)

    # -- records ----------------------------------------------------------------------------
    def intent(self, plan: ActionPlan, cluster: str, *, user: str, action_id: str, time: float,
               extra: dict[str, Any] | None = None) -> None:
        """Before any command: what is about to run (raises OSError when it cannot be recorded)."""
        self._write({
            "phase": "intent", "id": action_id, "time": time, "cluster": cluster, "user": user, **(extra or {}),
            "action": plan.kind.value, "source": plan.source, "targets": list(plan.targets),
            "params": plan.params, "commands": list(plan.commands), **_steps(plan), **_previous(plan),
        })

    def step(self, plan: ActionPlan, step: ActionPlan, outcome: StepResult, cluster: str, *, user: str,
             action_id: str, index: int, extra: dict[str, Any] | None = None) -> None:
        """One step of a multi-backend plan, once it has run (raises OSError when not recorded)."""
        self._write({
            "phase": "step", "id": action_id, "step": index, "time": outcome.started, "finished": outcome.finished,
            "cluster": cluster, "user": user, **(extra or {}), "action": plan.kind.value,
            "step_action": step.kind.value, "source": step.source, "targets": list(step.targets),
            "commands": list(step.commands), "results": [msgspec.to_builtins(r) for r in outcome.results],
            **_previous(plan, step.targets),
        })

    def append(self, result: ActionResult, cluster: str, *, action_id: str | None = None,
               extra: dict[str, Any] | None = None) -> None:
        """The outcome of an action (or its refusal); raises OSError when not recorded."""
        record = {
            "phase": "outcome",
            "id": action_id,
            "time": result.started,
            "finished": result.finished,
            "cluster": cluster,
            "user": result.user,
            **(extra or {}),
            "action": result.plan.kind.value,
            "source": result.plan.source,
            "targets": list(result.plan.targets),
            "params": result.plan.params,
            "commands": list(result.plan.commands),
            "refused": result.refused,
            "results": [msgspec.to_builtins(r) for r in result.results],
            **_previous(result.plan),
        }
        if result.steps:
            record["steps"] = [{"action": s.kind.value, "source": s.source, "ok": s.ok,
                                "results": [msgspec.to_builtins(r) for r in s.results]} for s in result.steps]
        self._write(record)

    # -- reading ----------------------------------------------------------------------------
    def tail(self, *, intents: bool = True) -> AuditRead:
        """The newest records (bounded by ``tail_bytes``/``tail_records``); never raises.
        Without ``intents`` only outcome records. Blocking I/O: not on the UI thread."""
        try:
            got = read_tail(self.path, tail_bytes=self.tail_bytes, max_records=self.tail_records)
        except OSError as exc:
            why = "a symbolic link: not read" if exc.errno == errno.ELOOP else exc.strerror or str(exc)
            return AuditRead(error=f"{self.path}: {why}")
        if intents:
            return got
        return AuditRead([r for r in got.records if r.get("phase") not in ("intent", "step")], got.skipped,
                         got.cut, got.stamp)

    def read(self, *, intents: bool = False) -> list[dict[str, Any]]:
        """Outcome records (with ``intents=True``: every record, intents and steps too, in order)
        of the tail; unreadable lines skipped (:meth:`tail` counts them)."""
        return self.tail(intents=intents).records


def read_tail(path: os.PathLike[str] | str, *, tail_bytes: int = TAIL_BYTES,
              max_records: int = TAIL_RECORDS) -> AuditRead:
    """At most the last ``tail_bytes`` of the log at ``path`` (continued into ``path.1``, ``.2``
    … while the budget lasts), at most ``max_records`` records, in file order. A line cut by
    the window's start is dropped silently; a line that is not a JSON object is counted in
    ``skipped``. OSError other than a missing file goes to the caller."""
    base = Path(path)
    budget = max(0, tail_bytes)
    chunks: list[bytes] = []
    cut = False
    stamp = (0, 0)
    for i in range(_MAX_ROTATED_READ + 1):
        p = base if i == 0 else rotated(base, i)
        if budget <= 0:
            cut = cut or (i > 0 and os.path.lexists(p))
            break
        try:
            data, whole, st = _read_window(p, budget)
        except FileNotFoundError:
            if i == 0:
                continue  # no current file (just rotated away): the rotated ones still count
            break
        if i == 0:
            stamp = (st.st_size, st.st_mtime_ns)
        chunks.append(data)
        budget -= len(data)
        if not whole:
            cut = True
            break
    records: list[dict[str, Any]] = []
    skipped = 0
    for data in reversed(chunks):  # oldest file first
        for raw in data.splitlines():
            if not raw.strip():
                continue
            try:
                rec = msgspec.json.decode(raw)
            except msgspec.DecodeError:
                rec = None
            if isinstance(rec, dict):
                records.append(rec)
            else:
                skipped += 1
    if len(records) > max_records:
        records, cut = records[-max_records:], True
    return AuditRead(records, skipped, cut, stamp)


def _read_window(path: Path, budget: int) -> tuple[bytes, bool, os.stat_result]:
    """``(bytes, whole, stat)``: the file's last ``budget`` bytes from a line start (the piece
    of a line the window's start cuts is dropped), ``whole`` when that is the whole file."""
    fd = os.open(path, _OPEN_READ)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        _wait_for_writer(fd)
        size = st.st_size
        start = max(0, size - budget)
        # one byte more before the window: is its first line whole?
        data = _pread_all(fd, size - start + (1 if start else 0), start - 1 if start else 0)
    finally:
        os.close(fd)
    if start:
        nl = data.find(b"\n")
        data = data[nl + 1:] if nl >= 0 else b""
    return data, start == 0, st


def _wait_for_writer(fd: int) -> None:
    """A shared lock for a moment, so a record being written is read whole; a writer that
    holds on (a hung NFS server) only costs the wait, the read goes ahead."""
    for _ in range(_READ_LOCK_TRIES):
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            time.sleep(0.025)
        except OSError:
            return  # no locks here (some network filesystems): read as it is


def _pread_all(fd: int, length: int, offset: int) -> bytes:
    parts: list[bytes] = []
    while length > 0:
        got = os.pread(fd, min(length, 1 << 20), offset)
        if not got:
            break  # truncated meanwhile (logrotate copytruncate)
        parts.append(got)
        length -= len(got)
        offset += len(got)
    return b"".join(parts)


def _truncate(fd: int, end: int) -> str | None:
    """Cut the file back to ``end`` (before a failed record); why not, or None when done."""
    try:
        os.ftruncate(fd, end)
        os.fsync(fd)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _previous(plan: ActionPlan, targets: tuple[str, ...] | None = None) -> dict[str, Any]:
    """``previous``: each target (of ``targets``, default all) as it was before: state, reason, who,
    when; ``set`` when it already was what the action makes it, so an overwritten drain reason or
    hold is never lost."""
    wanted = None if targets is None else set(targets)
    kept = tuple(p for p in plan.previous if wanted is None or p.target in wanted)
    if not kept:
        return {}
    return {"previous": [msgspec.to_builtins(p) for p in kept]}


def _steps(plan: ActionPlan) -> dict[str, Any]:
    if not plan.steps:
        return {}
    return {"steps": [{"action": s.kind.value, "source": s.source, "targets": list(s.targets),
                       "commands": list(s.commands)} for s in plan.steps]}
