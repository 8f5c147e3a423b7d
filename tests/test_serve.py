"""`hpctui serve` without a browser: loopback and read-only by default, a remote host refused unless
the config allows it, the app options passed through to the app each tab runs (the live browser
test is tests/ui/test_serve_browser.py)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hmac
import logging
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request
from aiohttp.typedefs import Middleware

from hpctui.cli import main as cli
from hpctui.cli.serve import add_serve_arguments, banner, banner_host, plan, redact_token
from hpctui.cli.serve_guard import Access, Sessions, guard, host_headers, origin_matches, token_matches
from hpctui.core.config import ConfigError
from hpctui.core.wall_settings import is_loopback


def parse(*argv: str) -> argparse.Namespace:
    parser = cli.OneLineParser(prog="hpctui serve")
    add_serve_arguments(parser)
    cli._add_source_options(parser)
    parser.add_argument("--read-only", action="store_true")
    return parser.parse_args(list(argv))


def write_config(tmp_path: Path, serve: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(f'[serve]\n{serve}\n[clusters.lab]\nsources = [{{ kind = "demo", size = 8 }}]\n')
    return path


def test_defaults_are_loopback_and_read_only() -> None:
    host, port, read_only, argv, access = plan(parse("--demo"))
    assert (host, port, read_only) == ("127.0.0.1", 8765, True)
    assert access.token is None and access.max_sessions == 4, "a loopback read-only display: no token, 4 sessions"
    assert argv == ["--demo", "--demo-size", "64", "--seed", "0", "--read-only"]


def test_options_pass_through_to_the_app(tmp_path: Path) -> None:
    config = write_config(tmp_path, "port = 9100")
    host, port, read_only, argv, _access = plan(parse("--config", str(config), "--cluster", "lab", "--wall", "--theme", "light",
                                             "--port", "9200"))
    assert (host, port, read_only) == ("127.0.0.1", 9200, True)
    assert argv == ["--config", str(config.resolve()), "--cluster", "lab", "--theme", "light", "--wall", "--read-only"]


def test_actions_only_when_explicitly_allowed(tmp_path: Path) -> None:
    assert plan(parse("--demo", "--allow-actions"))[2] is False
    assert plan(parse("--demo", "--allow-actions", "--wall"))[2] is True, "the wall stays read-only"
    config = write_config(tmp_path, "allow_actions = true")
    _host, _port, read_only, argv, _access = plan(parse("--config", str(config)))
    assert read_only is False and "--read-only" not in argv


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.org"])
def test_a_remote_host_is_refused_without_allow_remote(host: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a loopback address and textual-serve has no authentication"):
        plan(parse("--demo", "--host", host))
    config = write_config(tmp_path, "allow_remote = true")
    assert plan(parse("--config", str(config), "--host", host))[0] == host


def test_loopback_names() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "gpu01"))


def test_cli_refusals_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert cli.main(["serve", "--demo", "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "refusing to serve on '0.0.0.0'" in err and "allow_remote = true" in err
    assert cli.main(["serve", "--demo", "--port", "70000"]) == 2
    assert "not a TCP port" in capsys.readouterr().err
    assert cli.main(["serve", "--config", str(tmp_path / "missing.toml")]) == 2
    assert "config file not found" in capsys.readouterr().err
    assert cli.split_subcommand(["--demo", "serve", "--wall"]) == ("serve", ["--demo", "--wall"])


# --- the guard in front of textual-serve (hpctui/cli/serve_guard.py): unit level, mocked requests -----------------

def guard_access(token: str | None = None, cap: int = 2, hostnames: tuple[str, ...] = ()) -> Access:
    return Access(port=8765, host_headers=host_headers("127.0.0.1", 8765, list(hostnames)), token=token,
                  max_sessions=cap)


async def through(middleware: Middleware, path: str, headers: dict[str, str],
                  calls: list[str] | None = None) -> web.StreamResponse:
    """The guard's answer to ``GET path``; the handler (textual-serve's route) records each call."""
    async def handler(request: web.Request) -> web.StreamResponse:
        if calls is not None:
            calls.append(request.path)
        return web.Response(text="app")

    return await middleware(make_mocked_request("GET", path, headers=headers), handler)


OURS = {"Host": "127.0.0.1:8765"}


def test_host_headers_answered() -> None:
    loop = host_headers("127.0.0.1", 8765, [])
    assert loop == {"127.0.0.1:8765", "localhost:8765", "[::1]:8765"}
    assert "evil.example:8765" not in loop and "127.0.0.1" not in loop and "127.0.0.1:8766" not in loop
    assert host_headers("::1", 8765, []) == loop
    lan = host_headers("192.168.1.10", 8765, ["hpc.example.org", "gw.example.org:8443"])
    assert lan == {"192.168.1.10:8765", "hpc.example.org", "hpc.example.org:8765", "gw.example.org:8443"}
    assert "localhost:80" in host_headers("127.0.0.1", 80, []) and "localhost" in host_headers("127.0.0.1", 80, [])
    assert host_headers("0.0.0.0", 8765, ["gpu-login01"]) >= {"localhost:8765", "gpu-login01:8765"}
    assert "0.0.0.0:8765" not in host_headers("0.0.0.0", 8765, [])


@pytest.mark.parametrize(("origin", "host", "ok"), [
    ("http://127.0.0.1:8765", "127.0.0.1:8765", True),
    ("http://localhost:8765", "LOCALHOST:8765", True),
    ("https://hpc.example.org", "hpc.example.org", True),
    ("https://hpc.example.org", "hpc.example.org:443", True),
    ("http://127.0.0.1:8766", "127.0.0.1:8765", False),  # another port is another origin
    ("http://localhost:8765", "127.0.0.1:8765", False),
    ("https://evil.example", "127.0.0.1:8765", False),
    ("null", "127.0.0.1:8765", False),
    ("file://", "127.0.0.1:8765", False),
    ("http://127.0.0.1:8765/x", "127.0.0.1:8765", False),
    ("http://u@127.0.0.1:8765", "127.0.0.1:8765", False),
    ("http://127.0.0.1:port", "127.0.0.1:8765", False),
])
def test_origin_must_be_the_pages_own(origin: str, host: str, ok: bool) -> None:
    assert origin_matches(origin, host) is ok


async def test_guard_refuses_a_foreign_host_and_origin() -> None:
    middleware, calls = guard(guard_access(), Sessions(2)), []
    answer = await through(middleware, "/ws", {"Host": "evil.example:8765"}, calls)
    assert answer.status == 421 and "not an address of this server" in answer.text  # type: ignore[attr-defined]
    answer = await through(middleware, "/", {"Host": "evil.example"}, calls)
    assert answer.status == 421
    answer = await through(middleware, "/ws", {**OURS, "Origin": "https://evil.example"}, calls)
    assert answer.status == 403 and "cross-origin" in answer.text  # type: ignore[attr-defined]
    assert calls == [], "textual-serve's handler never ran"
    assert (await through(middleware, "/ws", {**OURS, "Origin": "http://127.0.0.1:8765"}, calls)).status == 200
    assert (await through(middleware, "/ws", OURS, calls)).status == 200, "no Origin: not a browser, let through"
    assert calls == ["/ws", "/ws"]


async def test_guard_caps_the_sessions_before_the_handler_runs() -> None:
    sessions = Sessions(2)
    middleware = guard(guard_access(cap=2), sessions)
    entered, release = asyncio.Event(), asyncio.Event()
    started: list[int] = []

    async def session(request: web.Request) -> web.StreamResponse:  # a websocket, open until released
        started.append(len(started))
        if len(started) == 2:
            entered.set()
        await release.wait()
        return web.Response(text="bye")

    open_two = [asyncio.ensure_future(middleware(make_mocked_request("GET", "/ws", headers=OURS), session))
                for _ in range(2)]
    await asyncio.wait_for(entered.wait(), 5)
    third = await middleware(make_mocked_request("GET", "/ws", headers=OURS), session)
    assert third.status == 503 and "2 sessions already open" in third.text  # type: ignore[attr-defined]
    page = await through(middleware, "/", OURS)
    assert page.status == 503, "the page itself says so while full"
    assert started == [0, 1], "no third app process"
    release.set()
    await asyncio.gather(*open_two)
    assert sessions.active == 0
    assert (await through(middleware, "/", OURS)).status == 200


async def test_guard_token_by_url_then_cookie(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    token = "s3cret-token-0123456789"
    middleware, calls = guard(guard_access(token=token), Sessions(2)), []
    answer = await through(middleware, "/", OURS, calls)
    assert answer.status == 401 and "token is required" in answer.text  # type: ignore[attr-defined]
    assert (await through(middleware, "/ws", OURS, calls)).status == 401
    assert (await through(middleware, "/?token=wrong", OURS, calls)).status == 403
    assert (await through(middleware, "/ws", {**OURS, "Cookie": "hpctui_token_8765=wrong"}, calls)).status == 403
    assert calls == []
    redirect = await through(middleware, f"/?fontsize=14&token={token}", OURS, calls)
    assert redirect.status == 303 and redirect.headers["Location"] == "/?fontsize=14", "the token leaves the URL"
    cookie = redirect.cookies["hpctui_token_8765"]
    assert cookie.value == token and cookie["httponly"] and cookie["samesite"] == "Strict" and cookie["path"] == "/"
    assert (await through(middleware, "/", {**OURS, "Cookie": f"hpctui_token_8765={token}"}, calls)).status == 200
    assert (await through(middleware, "/ws", {**OURS, "Cookie": f"hpctui_token_8765={token}"}, calls)).status == 200
    assert (await through(middleware, f"/ws?token={token}", OURS, calls)).status == 200
    assert (await through(middleware, "/", {**OURS, "Cookie": f"hpctui_token_8766={token}"}, calls)).status == 401
    assert calls == ["/", "/ws", "/ws"]
    assert (b"wrong", token.encode()) in [(b, a) for a, b in compared], "compared with hmac.compare_digest"
    assert token_matches(token, token) and not token_matches(token, None) and not token_matches(token, "é" * 23)


def test_a_token_beyond_a_loopback_read_only_display(tmp_path: Path) -> None:
    assert plan(parse("--demo")).access.token is None
    assert plan(parse("--demo", "--wall")).access.token is None
    for argv in (("--demo", "--token"), ("--demo", "--allow-actions")):
        token = plan(parse(*argv)).access.token
        assert token is not None and len(token) >= 40, argv
    assert plan(parse("--demo", "--token")).access.token != plan(parse("--demo", "--token")).access.token, "random"
    config = write_config(tmp_path, "allow_remote = true\nmax_sessions = 3\nhostnames = [\"hpc.example.org\"]")
    remote = plan(parse("--config", str(config), "--host", "192.168.1.10")).access
    assert remote.token is not None, "a non-loopback host: never without a token"
    assert remote.max_sessions == 3 and "hpc.example.org:8765" in remote.host_headers
    assert plan(parse("--config", str(config), "--host", "10.0.0.1", "--allow-actions")).access.token is not None
    assert plan(parse("--demo", "--max-sessions", "1")).access.max_sessions == 1
    with pytest.raises(ConfigError, match="--max-sessions"):
        plan(parse("--demo", "--max-sessions", "0"))


def test_the_token_file_must_be_private(tmp_path: Path) -> None:
    secret = tmp_path / "token"
    secret.write_text("abcdefghijklmnopqrstuvwxyz-0123456789\n")
    secret.chmod(0o644)
    config = write_config(tmp_path, f"token_file = {str(secret)!r}")
    with pytest.raises(ConfigError, match="mode 0644 lets group or others read"):
        plan(parse("--config", str(config)))
    secret.chmod(0o600)
    access = plan(parse("--config", str(config))).access
    assert access.token == "abcdefghijklmnopqrstuvwxyz-0123456789" and access.token_file == secret
    secret.write_text("short\n")
    with pytest.raises(ConfigError, match="16 to 512 characters"):
        plan(parse("--config", str(config)))
    secret.unlink()
    with pytest.raises(ConfigError, match="cannot read"):
        plan(parse("--config", str(config)))
    with pytest.raises(ConfigError, match="hostnames"):
        plan(parse("--config", str(write_config(tmp_path, 'hostnames = ["http://x/"]'))))


def test_the_access_log_never_shows_the_token() -> None:
    record = logging.LogRecord("aiohttp.access", logging.INFO, "", 0,
                               '127.0.0.1 "GET /?fontsize=3&token=abc-DEF_123 HTTP/1.1" 303', None, None)
    assert redact_token(record) and "abc" not in record.getMessage() and "token=REDACTED" in record.getMessage()


# --- live: a real `hpctui serve --demo` on a free loopback port, a plain websocket client -------------------------

ROOT = Path(__file__).resolve().parents[1]
EVIL = "https://evil.example"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def children(server: subprocess.Popen[bytes]) -> list[int]:
    """The server's live children."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
                if fields[0] != "Z" and int(fields[1]) == server.pid:
                    out.append(int(entry.name))
    return out


def is_collector(pid: int) -> bool:
    return " collector --socket " in cmdline(pid)


def app_processes(server: subprocess.Popen[bytes]) -> list[int]:
    """The server's live children but its shared collector: one ``hpctui`` app per accepted websocket."""
    return [pid for pid in children(server) if not is_collector(pid)]


def collectors(server: subprocess.Popen[bytes]) -> list[int]:
    """The server's collector processes (``hpctui collector``): one, whatever the tabs."""
    return [pid for pid in children(server) if is_collector(pid)]


def group_of(server: subprocess.Popen[bytes]) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
                if fields[0] != "Z" and int(fields[2]) == server.pid:
                    out.append(int(entry.name))
    return out


def cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    return "?"


DEMO = ("--demo", "--demo-size", "8")


@contextlib.contextmanager
def served(tmp_path: Path, *extra: str, source: tuple[str, ...] = DEMO,
           ) -> Iterator[tuple[int, subprocess.Popen[bytes], Path]]:
    """``hpctui serve SOURCE EXTRA`` (SOURCE: ``--demo --demo-size 8``) on a free loopback port (own
    session, HOME and XDG dirs under tmp_path, the collector's socket too); (port, process, log).
    Stopped by pid; its process group must be empty after, and the socket's directory gone."""
    port, log_path = free_port(), tmp_path / "serve.log"
    runtime_dir = tmp_path / "run"
    runtime_dir.mkdir(mode=0o700, exist_ok=True)
    env = {**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_RUNTIME_DIR": str(runtime_dir), "PYTHONPATH": str(ROOT)}
    with log_path.open("wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "hpctui", "serve", *source, "--port",
                                 str(port), *extra], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"hpctui serve did not listen: {log_path.read_text()[-2000:]}")
            time.sleep(0.2)
        yield port, proc, log_path
        assert proc.poll() is None, "the server ran until we stopped it"
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        deadline = time.monotonic() + 10  # a killed app may still be on its way out (a loaded machine)
        while group_of(proc) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = {pid: cmdline(pid) for pid in group_of(proc)}
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert not left, f"processes left behind by hpctui serve: {left}; log: {log_path.read_text()[-3000:]}"
        assert not list(runtime_dir.iterdir()), "the collector's socket directory is removed"


async def refused(session: aiohttp.ClientSession, url: str, **kwargs: object) -> int:
    """The HTTP status a websocket handshake was answered with (it must not succeed)."""
    try:
        ws = await session.ws_connect(url, **kwargs)  # type: ignore[arg-type]
    except aiohttp.WSServerHandshakeError as exc:
        return exc.status
    await ws.close()
    raise AssertionError(f"the websocket {url} {kwargs} was accepted")


async def first_bytes(ws: aiohttp.ClientWebSocketResponse) -> bytes:
    """The first output of the session's app (it started), within 90 s."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        message = await ws.receive(timeout=deadline - time.monotonic())
        if message.type == aiohttp.WSMsgType.BINARY:
            return bytes(message.data)
        assert message.type == aiohttp.WSMsgType.TEXT, f"the websocket ended: {message}"
    raise AssertionError("no output from the app")


async def wait_until(predicate: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.2)
    return predicate()


@pytest.mark.live
async def test_live_foreign_origin_and_host_refused(tmp_path: Path) -> None:
    with served(tmp_path) as (port, server, _log):
        ws_url, own = f"ws://127.0.0.1:{port}/ws", f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as session:
            assert await refused(session, ws_url, origin=EVIL) == 403
            assert await refused(session, ws_url, origin=f"http://127.0.0.1:{free_port()}") == 403, "another port"
            assert await refused(session, ws_url, origin="null") == 403
            assert await refused(session, ws_url, origin=own, headers={"Host": f"evil.example:{port}"}) == 421
            assert await refused(session, ws_url, headers={"Host": f"evil.example:{port}"}) == 421
            async with session.get(f"{own}/", headers={"Host": "evil.example"}) as page:  # DNS rebinding
                assert page.status == 421 and "not an address of this server" in await page.text()
            await asyncio.sleep(1.0)
            assert app_processes(server) == [], "no refused websocket started an app"
            async with session.ws_connect(ws_url, origin=own) as ws:  # our own page's origin: served
                assert await first_bytes(ws)
                assert len(app_processes(server)) == 1


@pytest.mark.live
async def test_live_the_session_cap_holds(tmp_path: Path) -> None:
    cap = 4  # the default [serve] max_sessions
    with served(tmp_path) as (port, server, _log):
        ws_url, own = f"ws://127.0.0.1:{port}/ws", f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as session:
            sockets = [await session.ws_connect(ws_url, origin=own) for _ in range(cap)]
            for ws in sockets:
                assert await first_bytes(ws)
            assert await wait_until(lambda: len(app_processes(server)) == cap)
            assert await refused(session, ws_url, origin=own) == 503
            async with session.get(f"{own}/") as page:
                body = await page.text()
                assert page.status == 503 and f"{cap} sessions already open" in body and "max_sessions" in body
            await asyncio.sleep(1.5)
            assert len(app_processes(server)) == cap, "no app process for the refused one"
            await sockets.pop().close()
            assert await wait_until(lambda: len(app_processes(server)) == cap - 1), "a closed tab frees its slot"
            async with session.ws_connect(ws_url, origin=own) as ws:
                assert await first_bytes(ws)
            for ws in sockets:
                await ws.close()


@pytest.mark.live
async def test_live_a_token_is_required_with_actions(tmp_path: Path) -> None:
    with served(tmp_path, "--allow-actions") as (port, server, log):
        ws_url, own = f"ws://127.0.0.1:{port}/ws", f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as session:
            assert await refused(session, ws_url, origin=own) == 401
            assert await refused(session, f"{ws_url}?token=wrong-token-0123456789", origin=own) == 403
            async with session.get(f"{own}/") as page:
                assert page.status == 401 and "token is required" in await page.text()
            assert app_processes(server) == []
            assert await wait_until(lambda: "?token=" in log.read_text())
            token = re.search(r"\?token=([A-Za-z0-9_-]+)", log.read_text()).group(1)  # type: ignore[union-attr]
            cookie = f"hpctui_token_{port}"
            assert await refused(session, ws_url, origin=own, headers={"Cookie": f"{cookie}=x{token}"}) == 403
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser:  # keeps cookies (of an IP too)
            async with browser.get(f"{own}/?fontsize=14&token={token}", allow_redirects=False) as hop:
                assert hop.status == 303 and hop.headers["Location"] == "/?fontsize=14"
                set_cookie = hop.headers["Set-Cookie"]
                assert "HttpOnly" in set_cookie and "SameSite=Strict" in set_cookie
            async with browser.get(f"{own}/?fontsize=14") as page:
                assert page.status == 200 and f'data-session-websocket-url="ws://127.0.0.1:{port}/ws"' in await page.text()
            async with browser.ws_connect(ws_url, origin=own) as ws:
                assert await first_bytes(ws)
                assert len(app_processes(server)) == 1
        assert log.read_text().count(token) == 1, "the token is printed once, and never in the access log"


def test_the_banner_prints_an_address_the_guard_answers(tmp_path: Path) -> None:
    access = plan(parse("--demo", "--token")).access
    line = banner(f"http://{banner_host('127.0.0.1', access)}:8765/", access, read_only=True, wall=False)
    assert f"http://127.0.0.1:8765/?token={access.token} (read-only, token printed once, at most 4 sessions)" in line
    config = write_config(tmp_path, 'allow_remote = true\nhostnames = ["gpu-login01"]')
    wildcard = plan(parse("--config", str(config), "--host", "0.0.0.0")).access
    assert banner_host("0.0.0.0", wildcard) == "gpu-login01"
    assert banner_host("::", plan(parse("--demo", "--token")).access) == "localhost"


def test_the_served_page_focuses_the_terminal_on_load() -> None:
    """textual-serve's page leaves the focus on <body> (keys did nothing until a click): ours adds a
    script that focuses xterm's input once the terminal exists (checked in Chromium by
    tests/ui/test_serve_browser.py)."""
    from hpctui.cli.serve import FOCUS_SCRIPT, with_focus_script

    page = "<html><body><div id='terminal'></div></body></html>"
    out = with_focus_script(page)
    assert out.index(FOCUS_SCRIPT) < out.index("</body>") and out.count("<script>") == 1
    assert ".xterm-helper-textarea" in FOCUS_SCRIPT and "addEventListener(\"load\"" in FOCUS_SCRIPT
    assert with_focus_script("<p>no body</p>").endswith(FOCUS_SCRIPT)


# --- one collector for every tab (hpctui.core.collector_hub) -------------------------------------------------------

SLURM_FIX = ROOT / "tests" / "fixtures" / "slurm"


def slurm_lab(tmp_path: Path) -> Path:
    """A config whose Slurm tools (shell scripts via ``bin_dir``) answer from fixtures and log each
    call as ``<pid of the hpctui process that ran it> <tool>`` to ``calls.log``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.log"
    answers = {"sinfo": "cat " + shlex.quote(str(SLURM_FIX / "cli_sinfo.json")),
               "squeue": "cat " + shlex.quote(str(SLURM_FIX / "cli_squeue.json")),
               "sdiag": "cat " + shlex.quote(str(SLURM_FIX / "cli_sdiag.txt")),
               "scontrol": (f'case "$*" in *"show partition"*) cat "{SLURM_FIX / "cli_scontrol_show_partition_oneliner.txt"}";; '
                            f'*"show reservation"*) cat "{SLURM_FIX / "cli_25.11_scontrol_show_reservation.json"}";; '
                            '*) echo "scontrol: error: not in this lab" >&2; exit 1;; esac')}
    for name, answer in answers.items():
        tool = bin_dir / name
        tool.write_text(f'#!/bin/sh\necho "$PPID {name}" >> "{calls}"\n{answer}\n')
        tool.chmod(0o755)
    config = tmp_path / "lab.toml"
    config.write_text(f'audit_log = "{tmp_path / "audit.jsonl"}"\n[clusters.lab]\n'
                      f'sources = [{{ kind = "slurm", backend = "cli", bin_dir = "{bin_dir}", interval_s = 1 }}]\n')
    return config


def slurm_callers(tmp_path: Path) -> list[int]:
    """The pid of the process behind each logged Slurm call, in order."""
    path = tmp_path / "calls.log"
    lines = path.read_text().splitlines() if path.exists() else []
    return [int(line.split()[0]) for line in lines if line.split() and line.split()[0].isdigit()]


@pytest.mark.live
async def test_live_tabs_share_one_collector(tmp_path: Path) -> None:
    """Three tabs, one collector: every Slurm call comes from the collector process, none from a tab's app;
    the collector killed is started again, the tabs live on and are fed by the new one."""
    tabs = 3
    with served(tmp_path, source=("--config", str(slurm_lab(tmp_path)))) as (port, server, log):
        ws_url, own = f"ws://127.0.0.1:{port}/ws", f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as session:
            sockets = [await session.ws_connect(ws_url, origin=own) for _ in range(tabs)]
            for ws in sockets:
                assert await first_bytes(ws)
            assert await wait_until(lambda: len(app_processes(server)) == tabs)
            [collector] = collectors(server)
            apps = app_processes(server)
            assert all(" --collector " in cmdline(pid) for pid in apps), [cmdline(pid) for pid in apps]
            assert await wait_until(lambda: slurm_callers(tmp_path).count(collector) >= 12), log.read_text()[-2000:]
            assert set(slurm_callers(tmp_path)) == {collector}, "every Slurm call came from the one collector"

            os.kill(collector, signal.SIGKILL)  # the collector dies: hpctui serve starts another
            assert await wait_until(lambda: len(collectors(server)) == 1 and collectors(server) != [collector],
                                    timeout=60), log.read_text()[-2000:]
            [second] = collectors(server)
            assert await wait_until(lambda: second in slurm_callers(tmp_path))
            assert set(slurm_callers(tmp_path)) == {collector, second}, "the tabs never polled, not even meanwhile"
            assert sorted(app_processes(server)) == sorted(apps), "the tabs lived on"
            assert "the collector exited" in log.read_text()
            for ws in sockets:
                await ws.close()


@pytest.mark.live
async def test_live_shared_collector_off_polls_per_tab(tmp_path: Path) -> None:
    """``[serve] shared_collector = false``: no collector; each tab's app runs its own Slurm calls (the
    contrast that shows the test above measures something)."""
    config = slurm_lab(tmp_path)
    config.write_text(config.read_text() + "[serve]\nshared_collector = false\n")
    with served(tmp_path, source=("--config", str(config))) as (port, server, _log):
        ws_url, own = f"ws://127.0.0.1:{port}/ws", f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as session:
            sockets = [await session.ws_connect(ws_url, origin=own) for _ in range(2)]
            for ws in sockets:
                assert await first_bytes(ws)
            assert await wait_until(lambda: len(app_processes(server)) == 2)
            assert collectors(server) == []
            apps = set(app_processes(server))
            assert await wait_until(lambda: apps <= set(slurm_callers(tmp_path))), "each tab polls on its own"
            for ws in sockets:
                await ws.close()


def test_the_collector_runs_the_apps_sources_and_is_shared_unless_a_demo_may_act(tmp_path: Path) -> None:
    from hpctui.cli.serve import collector_argv, shares_a_collector

    config = write_config(tmp_path, "port = 9100")
    args = parse("--config", str(config), "--cluster", "lab", "--wall", "--theme", "light", "--context", "k")
    assert collector_argv(args) == ["--config", str(config.resolve()), "--cluster", "lab", "--context", "k"]
    assert collector_argv(parse("--demo", "--demo-size", "32")) == ["--demo", "--demo-size", "32", "--seed", "0"]
    demo = parse("--demo")
    assert shares_a_collector(demo, read_only=True, source_kinds=["demo"])
    assert not shares_a_collector(demo, read_only=False, source_kinds=["demo"]), "a tab's drain must show in it"
    assert shares_a_collector(args, read_only=False, source_kinds=["slurm", "k8s"]), "actions on a real cluster"
    off = write_config(tmp_path, "shared_collector = false")
    assert not shares_a_collector(parse("--config", str(off)), read_only=True, source_kinds=["slurm"])
