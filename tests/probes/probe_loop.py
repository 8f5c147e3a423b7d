"""Run the real probe loop with a local ``sh`` against the node shims and parse what it prints."""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hpctui.sources.ssh.probe import (
    ProbeOptions,
    ProbeReading,
    ProbeState,
    RecordSplitter,
    build_probe_script,
    parse_record,
)

SHELL = shutil.which("dash") or "/bin/sh"


def session_pids(sid: int) -> list[int]:
    """Every process whose session id is ``sid`` (the loop and whatever it started, ``timeout`` included)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[3]) == sid and fields[0] != "Z":  # after "(comm)": state ppid pgrp session; zombies are dead
            out.append(int(entry.name))
    return out


def kill_session(sid: int) -> None:
    for _ in range(50):
        pids = session_pids(sid)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.02)
    raise AssertionError(f"processes of session {sid} survive SIGKILL: {session_pids(sid)}")


class Loop:
    """One probe loop for one shim node, streamed like an SSH channel would stream it."""

    def __init__(self, root: Path, node: str, options: ProbeOptions, shell: str = SHELL) -> None:
        self.node = node
        self.script = build_probe_script(None, options)
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        env = {**os.environ, "HPCTUI_SHIM_NODE": node, "HPCTUI_SHIM_HANG_S": "20"}
        self.proc = subprocess.Popen([shell, "-c", self.script], stdout=subprocess.PIPE, stderr=self.stderr,
                                     stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        self.splitter = RecordSplitter()
        self.state = ProbeState()
        self.texts: list[str] = []
        self.eof = False

    def records(self, n: int, deadline_s: float = 90.0, count_dropped: bool = False) -> list[ProbeReading]:
        """The next ``n`` parsed records (fewer only if the stream ends; with ``count_dropped``,
        records the splitter dropped count towards ``n``)."""
        out: list[ProbeReading] = []
        dropped0 = self.splitter.dropped
        end = time.monotonic() + deadline_s
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while len(out) + (self.splitter.dropped - dropped0 if count_dropped else 0) < n and not self.eof:
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{self.node}: {len(out)} of {n} records before the deadline")
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            data = os.read(fd, 65536)
            if not data:
                self.eof = True
                self.splitter.end_of_stream()
                break
            for text in self.splitter.feed(data):
                self.texts.append(text)
                out.append(parse_record(self.node, text, self.state, time.time()))
        return out

    def stderr_text(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def close(self) -> None:
        kill_session(self.proc.pid)
        self.proc.wait(timeout=10)
        if self.proc.stdout:
            self.proc.stdout.close()
        self.stderr.close()


@contextmanager
def probe_loop(root: Path, node: str, options: ProbeOptions, shell: str = SHELL) -> Iterator[Loop]:
    loop = Loop(root, node, options, shell)
    try:
        yield loop
    finally:
        loop.close()
