"""SIGHUP (an SSH drop), SIGTERM and SIGINT: finish or record in-flight actions, kill our children, exit.

Python's default for SIGHUP/SIGTERM is to die on the spot: no ``finally``, no audit outcome,
and every CLI child (started in its own session) left orphaned. Both entry points (the TUI and
``hpctui snapshot``) install these handlers on their event loop instead; the Slurm runner kills
the process group of every child still running on each exit path (see ``kill_children``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Callable

EXIT_SIGNALS = (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)


def install(loop: asyncio.AbstractEventLoop, on_signal: Callable[[int], None]) -> Callable[[], None]:
    """Route the exit signals to ``on_signal(signum)`` on ``loop``; returns the undo."""
    for sig in EXIT_SIGNALS:
        loop.add_signal_handler(sig, on_signal, int(sig))

    def undo() -> None:
        for sig in EXIT_SIGNALS:
            loop.remove_signal_handler(sig)

    return undo


# How long a clean exit may take after an exit signal before the process ends itself: in-flight
# actions get ACTION_GRACE_S (runtime) first; a terminal that went away can also leave Textual's
# shutdown blocked for good (its writer queue full, nobody draining it: seen after `tmux
# kill-server`), and a TUI that outlives its SSH session must not stay behind.
EXIT_DEADLINE_S = 45.0  # > hpctui.core.runtime.ACTION_GRACE_S (30 s): actions in flight finish first


def arm_exit_deadline(code: int, deadline_s: float | None = None) -> threading.Thread:
    """After ``deadline_s`` (default EXIT_DEADLINE_S), if the process is still here: kill our
    children, exit with ``code`` (128+signal after a signal)."""
    if deadline_s is None:
        deadline_s = EXIT_DEADLINE_S

    def expire() -> None:
        time.sleep(deadline_s)
        from hpctui.sources.slurm.runner import kill_children

        try:
            kill_children()
            os.write(2, f"hpctui: exiting took over {deadline_s:g}s; ending now\n".encode())
        except Exception:  # the terminal is gone (EIO on a hung-up tty): end anyway
            pass
        finally:
            os._exit(code)

    watchdog = threading.Thread(target=expire, name="exit-deadline", daemon=True)
    watchdog.start()
    return watchdog
