"""Run a command as the session leader of a new pseudo-terminal and type into it (test helper).

The command's pty is its controlling terminal, as a person's terminal is: a program that needs
one (``ssh`` asking for a remote pty, ``srun --pty``, a shell's job control) behaves as it would.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import signal
import struct
import termios
import time
from collections.abc import Mapping, Sequence


def run_in_pty(argv: Sequence[str], script: Sequence[tuple[bytes, bytes]] = (), *, timeout: float = 30.0,
               env: Mapping[str, str] | None = None, size: tuple[int, int] = (40, 120)) -> tuple[int, str]:
    """Run ``argv`` on a fresh pty; for each (``wait_for``, ``keys``) of ``script`` wait until
    ``wait_for`` has been printed (after the previous step's), then type ``keys``. Returns (exit
    status as ``subprocess`` gives it, everything printed). Killed (by pid) after ``timeout``.
    ``size``: the terminal's (rows, columns)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: never returns into the test
        try:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", size[0], size[1], 0, 0))
            os.execvpe(argv[0], list(argv), dict(env if env is not None else os.environ))
        finally:
            os._exit(127)
    out = b""
    mark = 0  # where the next wait_for is looked for
    steps = list(script)
    deadline = time.monotonic() + timeout
    status: int | None = None
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # EIO: the child's side closed
                    chunk = b""
                if not chunk:
                    break
                out += chunk
            if steps and steps[0][0] in out[mark:]:
                wait_for, keys = steps.pop(0)
                mark = out.index(wait_for, mark) + len(wait_for)
                os.write(fd, keys)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _, raw = os.waitpid(pid, 0)
        status = os.waitstatus_to_exitcode(raw)
    finally:
        os.close(fd)
        if status is None:
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
    return status, out.decode(errors="replace")
