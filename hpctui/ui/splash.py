"""The dashboard's empty shell, drawn before Textual is imported.

Importing Textual and composing the dashboard take ~300–450 ms on a login node before the
first frame; over a slow SSH link that is a blank terminal for half a second or more. This
module (standard library only, imported by the command line before anything heavy) draws
the dashboard's frame at once: the status line, the six panes' borders and titles, and the
key bar, on the alternate screen. Textual's driver then takes over that same screen (its
own switch to the alternate screen is dropped, so nothing is cleared in between), and its
first full frame replaces the shell cell for cell.

Shown only for the interactive dashboard on a real terminal: never when stdout or stdin is
not a TTY, under ``TEXTUAL_DRIVER`` (``hpctui serve``), with ``TERM=dumb``, or with
``HPCTUI_NO_SPLASH`` set. Any way out before Textual starts (a config error, an exception)
leaves the alternate screen again (:func:`close`, also registered with ``atexit``).
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import Any

ENTER = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J"  # alternate screen, cursor hidden, cleared
LEAVE = "\x1b[?25h\x1b[?1049l"
ALT_SCREEN_ON = "\x1b[?1049h"  # what Textual's driver writes first (dropped after a splash)
MARKER = "loading…"  # only the shell says this: the benchmark tells the shell from the app by it
NARROW_BELOW = 100  # the dashboard's own breakpoint (one pane under a tab bar)

_BORDER = "\x1b[38;5;240m"
_TITLE = "\x1b[1;38;5;250m"
_DIM = "\x1b[38;5;244m"
_KEY = "\x1b[1;38;5;214m"
_RESET = "\x1b[0m"


class _State:
    showing = False   # the shell is on screen and Textual has not taken over
    handed_over = False


_state = _State()


def wanted(environ: dict[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    if env.get("HPCTUI_NO_SPLASH") or env.get("TEXTUAL_DRIVER") or env.get("TERM", "dumb") in ("", "dumb"):
        return False
    try:
        return sys.stdout.isatty() and sys.stdin.isatty()
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


def _box(rows: list[list[str]], top: int, left: int, height: int, width: int, title: str) -> None:
    if height < 2 or width < 4:
        return
    right, bottom = left + width - 1, top + height - 1
    label = f" {title} "[: max(0, width - 4)]
    rows[top][left] = f"{_BORDER}╭─{_TITLE}{label}{_BORDER}" + "─" * max(0, width - 3 - len(label)) + "╮"
    for x in range(left + 1, right + 1):
        rows[top][x] = ""
    for y in range(top + 1, bottom):
        rows[y][left] = f"{_BORDER}│{_RESET}"
        rows[y][right] = f"{_BORDER}│{_RESET}"
    rows[bottom][left] = f"{_BORDER}╰" + "─" * (width - 2) + "╯"
    for x in range(left + 1, right + 1):
        rows[bottom][x] = ""


def shell(width: int, height: int, cluster: str) -> str:
    """The frame as one string of escape sequences (cursor homed, nothing past the screen)."""
    width, height = max(width, 20), max(height, 6)
    cluster = "".join(c for c in cluster if c.isprintable())  # a name typed on the command line
    rows = [[" "] * width for _ in range(height)]
    body_top, body_h = 1, height - 2
    if width < NARROW_BELOW:
        _box(rows, body_top + 1, 0, body_h - 1, width, "Nodes")
    else:
        top_h = max(3, body_h * 45 // 100)
        mid_h = max(3, (body_h - top_h) * 55 // 100)
        bot_h = body_h - top_h - mid_h
        left_w = max(12, width * 38 // 100)
        half = width // 2
        _box(rows, body_top, 0, top_h, left_w, "Nodes")
        _box(rows, body_top, left_w, top_h, width - left_w, "Node")
        _box(rows, body_top + top_h, 0, mid_h, half, "Slurm queue")
        _box(rows, body_top + top_h, half, mid_h, width - half, "K8s pods")
        _box(rows, body_top + top_h + mid_h, 0, bot_h, half, "IB links")
        _box(rows, body_top + top_h + mid_h, half, bot_h, width - half, "Mounts")
    lines = ["".join(r) for r in rows]
    status = f" {cluster}  {MARKER}"[:width]
    keys = f"{_KEY} ? {_RESET}Help {_KEY} q {_RESET}Quit"
    out = [ENTER, f"\x1b[1;1H{_TITLE}{status}{_RESET}"]
    for y in range(body_top, height - 1):
        out.append(f"\x1b[{y + 1};1H{lines[y]}{_RESET}")
    out.append(f"\x1b[{height};1H{keys}{_RESET}")
    return "".join(out)


def paint(cluster: str) -> bool:
    """Draw the shell if :func:`wanted`; True if drawn."""
    if _state.showing or not wanted():
        return False
    try:
        size = os.get_terminal_size(sys.stdout.fileno())
        data = shell(size.columns, size.lines, cluster).encode()
        sys.stdout.flush()
        os.write(sys.stdout.fileno(), data)
    except (OSError, ValueError):
        return False
    _state.showing = True
    atexit.register(close)
    return True


def close() -> None:
    """Leave the alternate screen unless Textual took it over (then Textual leaves it)."""
    if not _state.showing or _state.handed_over:
        return
    _state.showing = False
    try:
        sys.stdout.flush()
        os.write(sys.stdout.fileno(), LEAVE.encode())
    except (OSError, ValueError):
        pass


def showing() -> bool:
    return _state.showing and not _state.handed_over


def over_splash(driver_class: Any) -> Any:
    """``driver_class`` (Textual's Linux driver), minus its first switch to the alternate
    screen: the shell is there already, and some terminals (xterm) clear on that switch."""

    class DriverOverSplash(driver_class):
        def write(self, data: str) -> None:
            if _state.showing and not _state.handed_over and data == ALT_SCREEN_ON:
                _state.handed_over = True  # from here on Textual owns the screen (and leaves it)
                return
            super().write(data)

    DriverOverSplash.__name__ = f"{driver_class.__name__}OverSplash"
    return DriverOverSplash
