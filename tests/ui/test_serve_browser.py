"""`hpctui serve` in a REAL headless Chromium (Debian's chromium + chromium-driver, driven by selenium).

The test starts ``hpctui serve --demo`` on a free loopback port (under setsid, its own state dir),
loads the page, and reads what the terminal (xterm.js) was sent over the app's websocket: xterm
draws on a canvas, so the page keeps a copy of every frame it receives (a WebSocket wrapper
installed before the page's scripts run). It waits for the heatmap pane's title, presses the drain
key and checks the app refused it (read-only), saves screenshots/browser.png, and stops everything:
Chromium, chromedriver, the server and the app process it spawned for the tab.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
IN_CI = os.environ.get("CI") == "true"
ANSI = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")

# Keeps every text frame xterm.js is sent (textual-serve's data packets carry the app's ANSI output).
RECORD_JS = r"""
window.__hpcFrames = [];
(function () {
  const Orig = window.WebSocket;
  const decoder = new TextDecoder("utf-8");
  function keep(data) {
    if (typeof data === "string") { window.__hpcFrames.push(data); }
    else if (data instanceof ArrayBuffer) { window.__hpcFrames.push(decoder.decode(new Uint8Array(data))); }
    else if (data && data.arrayBuffer) { data.arrayBuffer().then(b => window.__hpcFrames.push(decoder.decode(new Uint8Array(b)))); }
    if (window.__hpcFrames.length > 5000) { window.__hpcFrames.splice(0, 1000); }
  }
  function Wrapped(url, protocols) {
    const ws = protocols === undefined ? new Orig(url) : new Orig(url, protocols);
    ws.addEventListener("message", ev => keep(ev.data));
    return ws;
  }
  Wrapped.prototype = Orig.prototype;
  Object.assign(Wrapped, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
  window.WebSocket = Wrapped;
})();
"""


def _need(path: str, what: str) -> None:
    if not Path(path).exists():
        message = f"{what} not installed ({path}); bash .ci/browser-deps.sh installs it"
        if IN_CI:
            pytest.fail(message)  # CI must run this test, never skip it
        pytest.skip(message)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pids_where(predicate: object) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[-1].split()
            if fields and fields[0] != "Z" and predicate(int(fields[3]), cmdline):  # type: ignore[operator]
                out.append(int(entry.name))
    return out


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def serving(tmp_path: Path, *extra: str) -> Iterator[tuple[str, Path, subprocess.Popen[bytes]]]:
    """``hpctui serve --demo EXTRA`` on a free loopback port; stopped by pid, with nothing left behind."""
    port = free_port()
    state = tmp_path / "state"
    env = {**os.environ, "XDG_STATE_HOME": str(state), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "hpctui", "serve", "--demo", "--port", str(port), *extra],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"hpctui serve did not listen: {(tmp_path / 'serve.log').read_text()[-2000:]}")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/", state, proc
        assert proc.poll() is None, "the server ran until we stopped it"
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # the server's own shutdown: the tab's app gets "quit"
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        left = pids_where(lambda pgid, _cmd: pgid == proc.pid)  # its process group (setsid): nothing may remain
        kill_all(left)
        log.close()
        assert not left, f"processes left behind by hpctui serve: {left}"


@contextlib.contextmanager
def chromium(tmp_path: Path) -> Iterator[object]:
    """Headless Chromium through chromedriver; every process of it gone afterwards."""
    _need(CHROMIUM, "chromium")
    _need(CHROMEDRIVER, "chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tmp_path / "chromium-profile"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1600,1000", f"--user-data-dir={profile}", "--no-first-run",
                "--disable-background-networking", "--disable-extensions"):
        options.add_argument(arg)
    service = Service(executable_path=CHROMEDRIVER, log_output=str(tmp_path / "chromedriver.log"))
    before = set(pids_where(lambda _pgid, cmd: "chrom" in cmd))  # browser processes not ours
    driver = webdriver.Chrome(service=service, options=options)
    try:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_JS})
        yield driver
    finally:
        driver.quit()
        # every Chromium process of our profile, and any chromium/chromedriver process that appeared since
        left = sorted(set(pids_where(lambda _pgid, cmd: str(profile) in cmd or "chrom" in cmd)) - before)
        if service.process is not None and service.process.poll() is None:
            left.append(service.process.pid)  # chromedriver itself
        kill_all(left)
        assert not left, f"browser processes left behind: {left}"


def terminal_text(driver: object) -> str:
    frames = driver.execute_script("return window.__hpcFrames.join('');")  # type: ignore[attr-defined]
    return ANSI.sub("", frames or "")


def wait_for(driver: object, pattern: str, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = terminal_text(driver)
        if re.search(pattern, text):
            return text
        time.sleep(0.25)
    raise AssertionError(f"{pattern!r} never reached the terminal; last text: {text[-1500:]!r}")


def press(driver: object, key: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    terminal = driver.find_element(By.CSS_SELECTOR, ".textual-terminal")  # type: ignore[attr-defined]
    ActionChains(driver).move_to_element(terminal).click().send_keys(key).perform()  # type: ignore[arg-type]


def screenshot(driver: object, name: str) -> None:
    out = ROOT / "screenshots"
    out.mkdir(exist_ok=True)
    assert driver.save_screenshot(str(out / name))  # type: ignore[attr-defined]


def test_serve_shows_the_dashboard_in_headless_chromium(tmp_path: Path) -> None:
    with serving(tmp_path) as (url, state, _server), chromium(tmp_path) as driver:
        driver.get(url)  # type: ignore[attr-defined]
        text = wait_for(driver, r"Nodes \(\d+\)")  # the heatmap pane's title: the dashboard is drawn
        assert re.search(r"gpu00\d\d|g00\d\d", text), "node names in the heatmap / queue"
        assert "READ-ONLY" in text, "served read-only by default"
        time.sleep(1.0)
        press(driver, "d")  # drain the node under the heatmap cursor: refused
        wait_for(driver, r"Drain: read-only mode, actions are disabled")
        assert not list(state.rglob("audit.jsonl")), "no action reached the executor (no audit record)"
        time.sleep(0.5)
        screenshot(driver, "browser.png")


def test_serve_wall_in_headless_chromium(tmp_path: Path) -> None:
    with serving(tmp_path, "--wall") as (url, state, _server), chromium(tmp_path) as driver:
        driver.get(url)  # type: ignore[attr-defined]
        text = wait_for(driver, r"NODES DOWN")
        assert "JOBS PENDING" in text and "WALL" in text and re.search(r"Nodes \(\d+\)", text)
        time.sleep(1.0)
        before = len(terminal_text(driver))
        for key in ("d", "p", "?", " ", "x"):  # drain, problems, help, mark, cancel: the wall answers none
            press(driver, key)
        time.sleep(1.0)
        after = terminal_text(driver)[before:]
        assert "read-only" not in after and "Everywhere" not in after, "no refusal notice, no help screen"
        drawn = len(terminal_text(driver))
        time.sleep(2.5)
        assert len(terminal_text(driver)) > drawn, "the wall still draws (its clock ticks): nothing quit it"
        assert not list(state.rglob("audit.jsonl"))
        screenshot(driver, "browser-wall.png")
