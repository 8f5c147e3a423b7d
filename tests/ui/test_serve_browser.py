"""`hpctui serve` in a REAL headless Chromium (Debian's chromium + chromium-driver, driven by selenium).

The test starts ``hpctui serve --demo`` on a free loopback port (under setsid, its own state dir),
loads the page, and reads what the terminal (xterm.js) was sent over the app's websocket: xterm
draws on a canvas, so the page keeps a copy of every frame it receives (a WebSocket wrapper
installed before the page's scripts run). It waits for the heatmap pane's title, presses the drain
key and checks the app refused it (read-only), saves screenshots/browser.png, and stops everything:
Chromium, chromedriver, the server and the app process it spawned for the tab. A page from another
origin (a tiny HTTP server on another loopback port, its script opening ``ws://127.0.0.1:PORT/ws``)
is refused, also when the browser holds the token's cookie; with ``--token`` the page opens only
through the printed ``?token=`` URL, which leaves the address bar once the cookie is set.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
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


def descendants(pid: int) -> list[int]:
    """Every process under ``pid`` (children, their children, ...), from /proc."""
    parent_of: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                parent_of[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[-1].split()[1])
    out: list[int] = []
    frontier = [pid]
    while frontier:
        kids = [child for child, parent in parent_of.items() if parent in frontier]
        out += kids
        frontier = kids
    return out


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def serving(tmp_path: Path, *extra: str) -> Iterator[tuple[str, Path, subprocess.Popen[bytes]]]:
    """``hpctui serve --demo EXTRA`` on a free loopback port; stopped by pid, with nothing left behind."""
    port = free_port()
    state = tmp_path / "state"
    runtime_dir = tmp_path / "run"  # the shared collector's socket directory goes here
    runtime_dir.mkdir(mode=0o700)
    env = {**os.environ, "XDG_STATE_HOME": str(state), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_RUNTIME_DIR": str(runtime_dir)}
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
    driver = webdriver.Chrome(service=service, options=options)
    ours: set[int] = set()
    try:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_JS})
        yield driver
    finally:
        if service.process is not None:  # chromedriver and every process under it: ours, nobody else's
            ours = {service.process.pid, *descendants(service.process.pid)}
        driver.quit()

        def ours_alive() -> list[int]:
            # what is left of them, and any Chromium process of our profile (another test's browsers are not touched)
            return sorted({p for p in ours if _alive(p)} | set(pids_where(lambda _pgid, cmd: str(profile) in cmd)))

        # Chromium's helpers exit a moment after quit() returns (slower on a loaded machine): give them that moment,
        # then kill what is still there; the promise is that nothing of ours survives the fixture.
        deadline = time.monotonic() + 15
        while (left := ours_alive()) and time.monotonic() < deadline:
            time.sleep(0.2)
        kill_all(left)
        deadline = time.monotonic() + 5
        while (survivors := ours_alive()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not survivors, f"browser processes survived SIGKILL: {survivors}"


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


def type_keys(driver: object, key: str) -> None:
    """Keys as a user types them right after the page opened: to whatever has the focus, no click."""
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(key).perform()  # type: ignore[arg-type]


def screenshot(driver: object, name: str) -> None:
    out = ROOT / "screenshots"
    out.mkdir(exist_ok=True)
    assert driver.save_screenshot(str(out / name))  # type: ignore[attr-defined]


# The page another site would serve: its script opens the served app's websocket (with the browser's
# cookies for 127.0.0.1, whatever port they came from) and, if it opened, types the drain key.
FOREIGN_PAGE = """<!DOCTYPE html><html><body><script>
window.__hpcForeign = "pending";
const ws = new WebSocket("ws://127.0.0.1:PORT/ws?width=80&height=24");
ws.onopen = () => { window.__hpcForeign = "open"; ws.send(JSON.stringify(["stdin", "d"])); };
ws.onclose = (ev) => { if (window.__hpcForeign === "pending") { window.__hpcForeign = "closed " + ev.code; } };
</script>foreign page</body></html>"""


@contextlib.contextmanager
def foreign_site(served_port: int) -> Iterator[str]:
    """A page on another loopback port (another origin) whose script opens ws://127.0.0.1:PORT/ws."""
    body = FOREIGN_PAGE.replace("PORT", str(served_port)).encode()

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def _children_of(pid: int) -> list[int]:
    """The server's app processes (one per tab): its live children but the shared collector."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                if fields[0] != "Z" and int(fields[1]) == pid and " collector --socket " not in command:
                    out.append(int(entry.name))
    return out


def check_a_foreign_page_is_refused(driver: object, url: str, server: subprocess.Popen[bytes]) -> None:
    """In a second tab, a page from another origin opens the app's websocket: refused, no app started."""
    before = _children_of(server.pid)
    port = int(url.rstrip("/").rsplit(":", 1)[1])
    main_tab = driver.current_window_handle  # type: ignore[attr-defined]
    with foreign_site(port) as foreign:
        driver.switch_to.new_window("tab")  # type: ignore[attr-defined]
        driver.get(foreign)  # type: ignore[attr-defined]
        deadline = time.monotonic() + 30
        result = "pending"
        while time.monotonic() < deadline and result == "pending":
            time.sleep(0.25)
            result = driver.execute_script("return window.__hpcForeign;")  # type: ignore[attr-defined]
        time.sleep(1.0)
        assert result.startswith("closed"), f"the foreign page's websocket: {result}"
        assert _children_of(server.pid) == before, "no app process for the foreign page"
        driver.close()  # type: ignore[attr-defined]
        driver.switch_to.window(main_tab)  # type: ignore[attr-defined]


def printed_token(tmp_path: Path) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = re.search(r"\?token=([A-Za-z0-9_-]+)", (tmp_path / "serve.log").read_text())
        if found:
            return found.group(1)
        time.sleep(0.2)
    raise AssertionError(f"no token printed: {(tmp_path / 'serve.log').read_text()[-1500:]}")


def test_serve_shows_the_dashboard_in_headless_chromium(tmp_path: Path) -> None:
    with serving(tmp_path) as (url, state, server), chromium(tmp_path) as driver:
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
        check_a_foreign_page_is_refused(driver, url, server)


def test_serve_keys_work_without_clicking_the_terminal_first(tmp_path: Path) -> None:
    """The page focuses the terminal on load: the first key typed reaches the app (issue #22 §7)."""
    with serving(tmp_path) as (url, _state, _server), chromium(tmp_path) as driver:
        driver.get(url)  # type: ignore[attr-defined]
        wait_for(driver, r"Nodes \(\d+\)")
        time.sleep(0.5)
        focused = driver.execute_script(  # type: ignore[attr-defined]
            "return document.activeElement && document.activeElement.className;")
        assert "xterm-helper-textarea" in (focused or ""), f"focus on {focused!r}, not the terminal"
        type_keys(driver, "d")  # no click anywhere: the drain key still reaches the app (refused: read-only)
        wait_for(driver, r"Drain: read-only mode, actions are disabled", timeout=20)


def test_serve_with_a_token_in_headless_chromium(tmp_path: Path) -> None:
    with serving(tmp_path, "--token") as (url, state, server), chromium(tmp_path) as driver:
        token = printed_token(tmp_path)
        driver.get(url)  # type: ignore[attr-defined]
        assert "a token is required" in driver.page_source  # type: ignore[attr-defined]
        driver.get(f"{url}?token=wrong-{token}")  # type: ignore[attr-defined]
        assert "wrong token" in driver.page_source  # type: ignore[attr-defined]
        assert _children_of(server.pid) == [], "no app process without the token"
        driver.get(f"{url}?token={token}")  # type: ignore[attr-defined]
        text = wait_for(driver, r"Nodes \(\d+\)")
        assert "READ-ONLY" in text
        assert "token" not in driver.current_url, "the token left the address bar (a cookie holds it)"  # type: ignore[attr-defined]
        assert len(_children_of(server.pid)) == 1
        check_a_foreign_page_is_refused(driver, url, server)  # with the token's cookie in the browser
        assert not list(state.rglob("audit.jsonl"))


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
