"""SIGHUP (an SSH drop), SIGTERM and SIGINT: finish or record in-flight actions, kill our children, exit.

Python's default for SIGHUP/SIGTERM is to die on the spot: no ``finally``, no audit outcome,
and every CLI child (started in its own session) left orphaned. Both entry points (the TUI and
``hpctui snapshot``) install these handlers on their event loop instead; the Slurm runner kills
the process group of every child still running on each exit path (see ``kill_children``).
"""

from __future__ import annotations

import asyncio
import signal
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
