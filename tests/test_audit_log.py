"""The audit log (issue #19 §2): every record whole, or the action does not run.

Short writes, a full disk, a torn last line, a symlinked or loose-mode path, a FIFO, rotation,
a path moved by logrotate, parallel writers, and readers that read a bounded tail and skip bad
lines with a count. The real full-disk case (a small tmpfs) is in ``test_full_disk_*`` below.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_executor import RecordingBackend, make, snapshot_with

from hpctui.actions import audit as audit_mod
from hpctui.actions.audit import AuditLog
from hpctui.model.action import ActionKind, ActionPlan, ActionResult, TargetResult


def _result(message: str = "ok", targets: tuple[str, ...] = ("n1",)) -> ActionResult:
    plan = ActionPlan(kind=ActionKind.RESUME_NODES, source="rec", targets=targets, params={}, commands=("x",))
    return ActionResult(plan=plan, user="alice", started=1.0, finished=2.0,
                        results=tuple(TargetResult(target=t, ok=True, message=message) for t in targets))


def _lines(path: Path) -> list[dict[str, Any]]:
    """Every line of the file, each of which must be one whole JSON object."""
    data = path.read_bytes()
    assert data == b"" or data.endswith(b"\n"), "the file ends mid-record"
    out = []
    for raw in data.splitlines():
        rec = json.loads(raw)
        assert isinstance(rec, dict)
        out.append(rec)
    return out


@pytest.fixture
def short_writes(monkeypatch: pytest.MonkeyPatch) -> Callable[..., list[int]]:
    """``os.write`` as a full disk, a signal or a pipe-like file does it: at most ``chunk`` bytes a
    call, and ENOSPC once ``room`` bytes went out. Returns the sizes of the writes seen."""
    real = os.write
    sizes: list[int] = []

    def install(chunk: int = 512, room: int | None = None) -> list[int]:
        written = [0]

        def fake(fd: int, data: Any) -> int:
            if room is not None and written[0] >= room:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            n = min(len(data), chunk, (room - written[0]) if room is not None else chunk)
            sizes.append(n)
            written[0] += n
            return real(fd, bytes(data[:n]))

        monkeypatch.setattr(os, "write", fake)
        return sizes

    return install


# -- whole records ---------------------------------------------------------------------------


def test_short_writes_are_looped_and_a_record_over_a_page_is_whole(tmp_path: Path,
                                                                    short_writes: Callable[..., list[int]]) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    sizes = short_writes(chunk=1000)
    log.append(_result("y" * 20_000), "c", action_id="a1")
    assert len(sizes) > 1  # the writer went on after the first short write
    [rec] = _lines(log.path)
    assert rec["results"][0]["message"] == "y" * 20_000 and rec["id"] == "a1"


async def test_a_short_intent_write_on_a_full_disk_refuses_the_action_and_leaves_the_file_as_it_was(
        tmp_path: Path, short_writes: Callable[..., list[int]]) -> None:
    backend = RecordingBackend()
    ex = make(tmp_path, backend)
    first = ex.plan(ActionKind.RESUME_NODES, ["n1"], {}, snapshot_with("n1"))
    assert (await ex.execute(first, confirmation=True)).ok
    before = (tmp_path / "audit.jsonl").read_bytes()
    short_writes(chunk=4096, room=590)  # ~590 bytes fit, as seen on the nearly full filesystem
    plan = ex.plan(ActionKind.DRAIN_NODES, ["n1"], {"reason": "r" * 1000}, snapshot_with("n1"))
    result = await ex.execute(plan, confirmation=True)
    assert result.refused and "unwritable" in result.refused and "No space left" in result.refused
    assert [p.kind for p in backend.executed] == [ActionKind.RESUME_NODES]  # the drain never ran
    assert (tmp_path / "audit.jsonl").read_bytes() == before  # the partial intent was cut back out
    assert any("intent record not written" in e for e in ex.audit_errors)
    assert any("outcome record not written" in e for e in ex.audit_errors)  # the refusal could not be kept


async def test_a_failed_fsync_also_refuses_and_truncates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = RecordingBackend()
    ex = make(tmp_path, backend)

    def no_sync(fd: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(audit_mod.os, "fsync", no_sync)
    result = await ex.execute(ex.plan(ActionKind.RESUME_NODES, ["n1"], {}, snapshot_with("n1")), confirmation=True)
    assert result.refused and "Input/output error" in result.refused and not backend.executed
    assert (tmp_path / "audit.jsonl").read_bytes() == b""


async def test_a_lost_outcome_record_is_reported_clearly_and_nothing_is_half_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = RecordingBackend()
    ex = make(tmp_path, backend)
    real = os.write
    calls = [0]

    def second_fails_midway(fd: int, data: Any) -> int:
        calls[0] += 1
        if calls[0] == 1:
            return real(fd, data)  # the intent
        if calls[0] == 2:
            return real(fd, bytes(data[:100]))  # the outcome: a piece, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", second_fails_midway)
    result = await ex.execute(ex.plan(ActionKind.RESUME_NODES, ["n1"], {}, snapshot_with("n1")), confirmation=True)
    assert result.ok and backend.executed  # it ran: the lost record is reported, not raised
    assert [r["phase"] for r in _lines(tmp_path / "audit.jsonl")] == ["intent"]
    assert ex.audit_errors == [f"audit log {tmp_path / 'audit.jsonl'}: outcome record not written "
                               "(No space left on device)"]


def test_a_torn_last_line_is_ended_before_the_next_record(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_bytes(json.dumps({"phase": "outcome", "id": "old"}).encode() + b"\n{\"phase\": \"intent\", \"id\"")
    log = AuditLog(path)
    log.append(_result(), "c", action_id="new")
    raw = path.read_bytes().splitlines()
    assert len(raw) == 3 and json.loads(raw[2])["id"] == "new"  # not glued onto the torn line
    assert any("last line was incomplete" in w for w in log.take_warnings())
    got = log.tail()
    assert [r["id"] for r in got.records] == ["old", "new"] and got.skipped == 1
    assert got.warnings == ["audit log: 1 unreadable line(s) skipped"]


# -- the path: no links, 0600, 0700 ----------------------------------------------------------


async def test_a_symlinked_audit_path_is_refused_and_the_action_does_not_run(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    victim.chmod(0o644)
    (tmp_path / "audit.jsonl").symlink_to(victim)
    backend = RecordingBackend()
    ex = make(tmp_path, backend)
    result = await ex.execute(ex.plan(ActionKind.RESUME_NODES, ["n1"], {}, snapshot_with("n1")), confirmation=True)
    assert result.refused and "symbolic link" in result.refused and not backend.executed
    assert victim.read_text() == "precious\n" and stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert "symbolic link" in (AuditLog(tmp_path / "audit.jsonl").tail().error or "")


def test_created_0600_in_parent_directories_created_0700(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "audit.jsonl"
    old = os.umask(0o022)
    try:
        AuditLog(path).append(_result(), "c")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.parent.parent.stat().st_mode) == 0o700


async def test_a_looser_mode_of_our_own_file_is_tightened_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text("")
    path.chmod(0o666)
    ex = make(tmp_path, RecordingBackend())
    assert (await ex.execute(ex.plan(ActionKind.RESUME_NODES, ["n1"], {}, snapshot_with("n1")),
                             confirmation=True)).ok
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert any("was mode 0666, tightened to 0600" in e for e in ex.audit_errors)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the file to another user")
async def test_a_world_writable_log_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text("")
    os.chown(path, 65534, 65534)
    path.chmod(0o666)
    backend = RecordingBackend()
    ex = make(tmp_path, backend)
    result = await ex.execute(ex.plan(ActionKind.RESUME_NODES, ["n1"], {}, snapshot_with("n1")), confirmation=True)
    assert result.refused and "world-writable" in result.refused and not backend.executed
    assert path.read_text() == ""


def test_a_fifo_at_the_path_is_refused_without_hanging(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    os.mkfifo(path)
    errors: list[BaseException] = []

    def write() -> None:
        try:
            AuditLog(path).append(_result(), "c")
        except BaseException as exc:  # the test looks at what was raised
            errors.append(exc)

    worker = threading.Thread(target=write, daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "opening the FIFO blocked"
    assert errors and isinstance(errors[0], OSError) and "not a regular file" in str(errors[0])


# -- rotation, logrotate, parallel writers ---------------------------------------------------


def test_rotation_keeps_n_files_each_under_the_limit_and_readers_read_across(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, max_bytes=2000, keep=2)
    for i in range(40):
        log.append(_result(f"record {i:03d} " + "z" * 200), "c", action_id=f"id{i}")
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"]
    for name in files:
        assert (tmp_path / name).stat().st_size <= 2000
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600
        _lines(tmp_path / name)
    kept = [r["id"] for name in reversed(files) for r in _lines(tmp_path / name)]
    assert kept == [f"id{i}" for i in range(40 - len(kept), 40)]  # the newest, in order, none lost
    # a short current file: the tail goes on into .1 and .2
    reader = AuditLog(path, tail_bytes=1 << 20)
    assert [r["id"] for r in reader.tail().records] == kept
    small = AuditLog(path, tail_bytes=2500).tail()
    assert small.cut and [r["id"] for r in small.records] == kept[-len(small.records):]
    assert len(small.records) > len(_lines(path))


def test_a_failed_rotation_warns_once_and_still_writes_the_record_whole(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, max_bytes=500, keep=2)

    def refuse(self: Path, target: Any) -> Path:
        raise OSError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(Path, "replace", refuse)
    for i in range(4):
        log.append(_result("x" * 300), "c", action_id=f"id{i}")
    assert [r["id"] for r in _lines(path)] == ["id0", "id1", "id2", "id3"]
    assert log.take_warnings() == [f"audit log {path}: not rotated (Permission denied); appended to it"]


def test_a_log_moved_away_by_logrotate_is_reopened_at_the_path(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    log.append(_result(), "c", action_id="before")
    path.rename(tmp_path / "audit.jsonl-20240101")
    log.append(_result(), "c", action_id="after")
    assert [r["id"] for r in _lines(path)] == ["after"]
    assert [r["id"] for r in _lines(tmp_path / "audit.jsonl-20240101")] == ["before"]


def test_a_log_moved_while_a_writer_waits_for_the_lock_gets_the_record_at_the_new_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The race the lock's inode check is for: another writer (or logrotate) moves the file
    after we opened it and before we hold the lock; the record must go to the file now at the path."""
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    log.append(_result(), "c", action_id="first")
    real = audit_mod.fcntl.flock
    moved = [False]

    def flock_after_a_move(fd: int, op: int) -> None:
        if not moved[0]:
            moved[0] = True
            path.rename(tmp_path / "audit.jsonl.1")
        real(fd, op)

    monkeypatch.setattr(audit_mod.fcntl, "flock", flock_after_a_move)
    log.append(_result(), "c", action_id="second")
    assert [r["id"] for r in _lines(path)] == ["second"]
    assert [r["id"] for r in _lines(tmp_path / "audit.jsonl.1")] == ["first"]


WRITER = """
import sys
from pathlib import Path
from hpctui.actions.audit import AuditLog
from hpctui.model.action import ActionKind, ActionPlan, ActionResult, TargetResult

log = AuditLog(Path(sys.argv[1]), max_bytes=int(sys.argv[3]), keep=50) if int(sys.argv[3]) else AuditLog(Path(sys.argv[1]))
me = sys.argv[2]
for i in range(60):
    size = (i * 997) % 9000 + (70_000 if i % 15 == 0 else 0)  # some records far over a page
    plan = ActionPlan(kind=ActionKind.RESUME_NODES, source="rec", targets=("n1",), params={}, commands=())
    res = ActionResult(plan=plan, user=me, started=1.0, finished=2.0,
                       results=(TargetResult(target="n1", ok=True, message="m" * size),))
    log.append(res, "c", action_id=f"{me}-{i}")
"""


@pytest.mark.parametrize("max_bytes", [0, 200_000])
def test_three_parallel_writers_never_interleave_even_while_rotating(tmp_path: Path, max_bytes: int) -> None:
    path = tmp_path / "audit.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"w{k}", str(max_bytes)], env=env)
             for k in range(3)]
    for proc in procs:
        assert proc.wait(timeout=300) == 0
    files = [path, *sorted(tmp_path.glob("audit.jsonl.*"), key=lambda p: -int(p.suffix[1:]))]
    if max_bytes:
        assert len(files) > 3  # it did rotate, under the writers' feet
        assert all(p.stat().st_size <= max_bytes or len(p.read_bytes().splitlines()) == 1 for p in files)
    ids = [r["id"] for p in files for r in _lines(p)]  # every line whole JSON
    assert sorted(ids) == sorted(f"w{k}-{i}" for k in range(3) for i in range(60))


# -- readers ---------------------------------------------------------------------------------


def test_readers_skip_and_count_bad_lines_and_never_raise(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    good = json.dumps({"phase": "outcome", "id": "x", "cluster": "c", "time": 1.0, "results": []})
    path.write_bytes(b"\n".join([good.encode(), b"{torn", b"[1, 2]", b"\xff\xfe binary", b"", good.encode(),
                                 b"{\"phase\": \"outc"]))
    log = AuditLog(path)
    got = log.tail()
    assert len(got.records) == 2 and got.skipped == 4 and not got.cut
    assert got.warnings == ["audit log: 4 unreadable line(s) skipped"]
    assert len(log.read()) == 2


def test_a_reader_reads_a_bounded_tail_of_a_big_log(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    line = json.dumps({"phase": "outcome", "id": "x", "cluster": "c", "time": 1.0, "pad": "p" * 900}).encode()
    with path.open("wb") as fh:
        for _ in range(20_000):  # ~18 MB
            fh.write(line + b"\n")
    log = AuditLog(path, tail_bytes=1 << 20)
    got = log.tail()
    assert got.cut and 1000 <= len(got.records) <= (1 << 20) // len(line) + 1 and got.skipped == 0
    assert len(log.read()) == len(got.records)


def test_hpctui_report_survives_a_torn_line_and_says_so(tmp_path: Path) -> None:
    state = tmp_path / "state" / "hpctui"
    state.mkdir(parents=True)
    rec = {"phase": "outcome", "id": "a", "time": 1.0, "finished": 2.0, "cluster": "demo", "user": "alice",
           "action": "drain", "source": "demo", "targets": ["gpu0001"], "params": {"reason": "r"},
           "commands": [], "refused": None, "results": [{"target": "gpu0001", "ok": True, "message": ""}]}
    (state / "audit.jsonl").write_text(json.dumps(rec) + "\n{\"phase\": \"intent\", \"id\": \"b\", \"ti")
    env = {**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    proc = subprocess.run([sys.executable, "-m", "hpctui", "report", "--demo", "--demo-size", "8", "--nodes",
                           "gpu0001", "--output", str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "audit log: 1 unreadable line(s) skipped" in proc.stderr
    assert (tmp_path / "out" / "report.json").exists()


def test_the_events_history_keeps_every_readable_record_around_a_torn_line(tmp_path: Path) -> None:
    from hpctui.core.runtime import demo_runtime

    path = tmp_path / "audit.jsonl"

    def rec(user: str) -> str:
        return json.dumps({"phase": "outcome", "time": 10.0, "finished": 11.0, "cluster": "demo", "user": user,
                           "action": "resume", "source": "demo", "targets": ["gpu0003"], "params": {},
                           "commands": [], "refused": None, "results": []})

    path.write_text(rec("alice") + "\n{torn\n" + rec("bob") + "\n{\"also\": torn")
    runtime = demo_runtime(size=8, audit_path=path, clock=lambda: 100.0)
    events = runtime.audit_history()
    actions = [e for e in events if e.source == "action"]
    assert [e.message for e in actions] == ["alice resume: ok", "bob resume: ok"]
    [warning] = [e for e in events if e.source == "audit"]
    assert warning.message == "audit log: 2 unreadable line(s) skipped"


# -- the real full disk ----------------------------------------------------------------------


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 64 KiB tmpfs (root only), unmounted after the test."""
    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("the full-disk test needs root to mount a tmpfs, and CI must run it")
        pytest.skip("needs root to mount a small tmpfs")
    mnt = tmp_path / "small"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        if os.environ.get("CI") == "true":
            pytest.fail(f"cannot mount a tmpfs: {done.stderr.strip()}")
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def _fill(directory: Path) -> None:
    """Write a filler file until the filesystem says ENOSPC."""
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while os.write(fd, b"\0" * 512):
            pass
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)


@pytest.mark.live
def test_full_disk_refuses_the_drain_and_keeps_only_whole_records(small_tmpfs: Path, tmp_path: Path) -> None:
    state = small_tmpfs / "hpctui"
    state.mkdir(mode=0o700)
    audit = state / "audit.jsonl"
    first = {"phase": "outcome", "id": "earlier", "time": 1.0, "cluster": "demo", "user": "x", "pad": ""}
    first["pad"] = "p" * (4096 - 500 - len(json.dumps(first)) - 1)
    audit.write_text(json.dumps(first) + "\n")  # 500 bytes left in its page: a 1.6 KB intent half fits
    assert audit.stat().st_size == 4096 - 500
    audit.chmod(0o600)
    before = audit.read_bytes()
    _fill(small_tmpfs)
    env = {**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(small_tmpfs),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    proc = subprocess.run([sys.executable, "-m", "hpctui", "act", "drain", "--targets", "gpu0003", "--reason",
                           "r" * 1000, "--demo", "--demo-size", "8", "--yes"], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "not run" in proc.stdout and "No space left on device" in proc.stdout
    assert "1/1 ok" not in proc.stdout
    assert "intent record not written" in proc.stderr
    assert audit.read_bytes() == before  # the piece that fit was cut back out: only whole lines
    assert [r["id"] for r in _lines(audit)] == ["earlier"]
    # with room again, the next action is recorded whole after the earlier one
    (small_tmpfs / "filler").unlink()
    again = subprocess.run([sys.executable, "-m", "hpctui", "act", "drain", "--targets", "gpu0003", "--reason",
                            "r" * 1000, "--demo", "--demo-size", "8", "--yes"], capture_output=True, text=True,
                           timeout=300, env=env)
    assert again.returncode == 0, again.stderr
    phases = [r["phase"] for r in _lines(audit)]
    assert phases[:2] == ["outcome", "intent"] and phases[-1] == "outcome"  # (a demo drain has steps between)

