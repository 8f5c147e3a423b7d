"""The dashboard's shell drawn before Textual loads (hpctui.ui.splash): its geometry, when it is
shown, that a config error still reaches the normal screen, and that the real app takes the
shell's screen over without switching screens again (in a pseudo-terminal)."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hpctui.ui import splash

CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def screen_lines(frame: str, height: int) -> list[str]:
    """The shell's lines: it draws each row after an absolute cursor move (ESC[row;1H)."""
    rows = [""] * height
    for m in re.finditer(r"\x1b\[(\d+);1H([^\x1b]*(?:\x1b\[[0-9;]*m[^\x1b]*)*)", frame):
        rows[int(m.group(1)) - 1] = CSI.sub("", m.group(2))
    return rows


@pytest.mark.parametrize(("width", "height"), [(200, 60), (120, 40), (100, 24), (80, 24), (20, 6)])
def test_shell_fills_the_screen_and_nothing_past_it(width: int, height: int) -> None:
    frame = splash.shell(width, height, "demo")
    assert frame.startswith(splash.ENTER)
    lines = screen_lines(frame, height)
    assert lines[0].strip() == f"demo  {splash.MARKER}"
    assert "? Help" in lines[-1] and "q Quit" in lines[-1]
    body = lines[1:-1]
    drawn = [line for line in body if line.strip()]
    assert all(len(line) == width for line in drawn), {len(line) for line in drawn}
    titles = " ".join(body)
    if width >= splash.NARROW_BELOW:
        for title in ("Nodes", "Node", "Slurm queue", "K8s pods", "IB links", "Mounts"):
            assert f"─ {title} ─" in titles, title
        assert body[-1].startswith("╰") and body[-1].endswith("╯")  # the panes reach the key bar
    else:  # narrow: one pane under the tab bar's row, as the dashboard shows it
        assert "─ Nodes ─" in titles and "Slurm queue" not in titles


def test_shell_prints_no_control_character_of_the_label() -> None:
    frame = splash.shell(120, 30, "x\x1b]0;evil\x07\x9b2J")
    assert not [c for c in CSI.sub("", frame) if ord(c) < 32 or 0x7F <= ord(c) < 0xA0]
    assert "x]0;evil" in frame  # what is left of the name is shown


@pytest.mark.parametrize("env", [{"TERM": "dumb"}, {"TERM": ""}, {"TERM": "xterm", "HPCTUI_NO_SPLASH": "1"},
                                 {"TERM": "xterm", "TEXTUAL_DRIVER": "textual.drivers.web_driver:WebDriver"}])
def test_not_wanted_without_a_plain_terminal(env: dict[str, str]) -> None:
    assert not splash.wanted(env)


def test_not_wanted_when_output_is_not_a_tty() -> None:
    assert not splash.wanted({"TERM": "xterm"})  # pytest captures stdout: not a TTY


def _pty_run(args: list[str], env: dict[str, str], *, until: bytes | None = None, send: bytes = b"",
             timeout: float = 60) -> tuple[int | None, bytes]:
    """Run ``python -m hpctui ARGS`` on a pseudo-terminal; once ``until`` is seen, type ``send``."""
    import pty

    master, slave = pty.openpty()
    os.set_blocking(master, False)
    import fcntl
    import struct
    import termios

    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "hpctui", *args], stdin=slave, stdout=slave, stderr=slave,
                            env=env, start_new_session=True)
    os.close(slave)
    out = b""
    sent = False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
            if until is not None and not sent and until in out:
                os.write(master, send)
                sent = True
            if proc.poll() is not None and not ready:
                break
        try:
            return proc.wait(timeout=30), out
        except subprocess.TimeoutExpired:
            return None, out
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(master)


def _env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, TERM="xterm-256color", XDG_CONFIG_HOME=str(tmp_path), XDG_STATE_HOME=str(tmp_path),
                COLORTERM="truecolor")


def test_config_error_leaves_the_shell_before_saying_so(tmp_path: Path) -> None:
    rc, out = _pty_run(["--config", str(tmp_path / "missing.toml")], _env(tmp_path))
    assert rc == 2
    text = out.decode(errors="replace")
    enter, leave = text.find(splash.ENTER), text.find(splash.LEAVE)
    assert 0 <= enter < leave, text[:200]
    assert text.find("hpctui: ") > leave, "the error is written on the normal screen, after the shell is gone"


def test_app_takes_the_shell_over_without_switching_screens_again(tmp_path: Path) -> None:
    rc, out = _pty_run(["--demo", "--demo-size", "8"], _env(tmp_path), until=b"gpu0001", send=b"q")
    text = out.decode(errors="replace")
    assert rc == 0, text[-500:]
    assert text.startswith(splash.ENTER), text[:80]  # the shell is the very first thing drawn
    assert splash.MARKER in text
    assert text.count(splash.ALT_SCREEN_ON) == 1, "Textual's own switch (which clears on xterm) is dropped"
    assert "Help" in text[len(splash.ENTER):] and "gpu0001" in text
    assert text.count("\x1b[?1049l") == 1, "left once, by Textual at exit"


def test_no_shell_when_asked_not_to(tmp_path: Path) -> None:
    rc, out = _pty_run(["--demo", "--demo-size", "8"], dict(_env(tmp_path), HPCTUI_NO_SPLASH="1"),
                       until=b"gpu0001", send=b"q")
    text = out.decode(errors="replace")
    assert rc == 0 and splash.MARKER not in text
    assert text.count(splash.ALT_SCREEN_ON) == 1  # Textual's own
