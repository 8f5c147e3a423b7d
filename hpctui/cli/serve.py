"""``hpctui serve``: the dashboard (or ``--wall``) in a web browser, through textual-serve.

Every browser tab gets its own ``hpctui`` process (textual-serve runs the command per
websocket), started with the same source options as this command (``--demo``, ``--config``,
``--cluster``, ...): its own screens, keys, read-only rule, executor and audit identity.

The cluster is polled once, not once per tab: this command starts one collector process
(``hpctui collector``, :class:`CollectorChild`) that polls the served cluster's sources and
publishes every result on a private unix socket (a 0700 directory of its own under
``$XDG_RUNTIME_DIR`` or the temporary directory, the socket 0600), and every tab's app is started
with ``--collector SOCKET``: it applies what the collector sends to its own store and polls
nothing (:mod:`hpctui.core.collector_hub`). Ten wall viewers cost slurmctld what one costs. When
the collector dies it is started again (after a pause that grows to 30 s); meanwhile the tabs
show each source's error and the data's age, as for a hung source, and reconnect by themselves.
``[serve] shared_collector = false`` goes back to one set of pollers per tab; a demo with actions
allowed always does (its simulator lives in each process: an action must change what that tab
shows). Switching to another cluster (``:cluster``) in a tab polls that cluster from the tab (back on
the served one, the tab subscribes again).

Safe by default:

- bound to 127.0.0.1 (config ``[serve] host``); a host that is not loopback is refused unless
  ``[serve] allow_remote = true``;
- the app is started ``--read-only`` unless ``--allow-actions`` or ``[serve] allow_actions``;
- every request passes :mod:`hpctui.cli.serve_guard` first (textual-serve itself checks nothing): its
  ``Host`` must be ours, a websocket's ``Origin`` our page's, at most ``max_sessions`` app
  processes run at once, and a token is required for anything beyond a loopback read-only
  display (a random one printed once at start, or ``[serve] token_file``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from hpctui.cli.serve_guard import WILDCARD_HOSTS, Access, Sessions, access_for, guard, is_https
from hpctui.core.config import ConfigError, default_config_path, load_config
from hpctui.core.wall_settings import ServeSettings, is_loopback

EXIT_USAGE = 2


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", metavar="HOST", help="address to listen on (default 127.0.0.1, or [serve] host)")
    parser.add_argument("--port", type=int, metavar="PORT", help="port to listen on (default 8765, or [serve] port)")
    parser.add_argument("--wall", action="store_true", help="serve the wall display (read-only)")
    parser.add_argument("--theme", metavar="NAME", help="colour theme of the served app")
    parser.add_argument("--allow-actions", action="store_true",
                        help="let the browser run actions (default: read-only, or [serve] allow_actions)")
    parser.add_argument("--token", action="store_true",
                        help="require a token even for a loopback read-only display (always required otherwise)")
    parser.add_argument("--max-sessions", type=int, metavar="N",
                        help="browser sessions (app processes) at once (default 4, or [serve] max_sessions)")


class ServePlan(NamedTuple):
    host: str
    port: int
    read_only: bool
    argv: list[str]  # the options of the app each browser tab runs
    access: Access  # what the guard in front of textual-serve accepts


def serve_settings(args: argparse.Namespace) -> ServeSettings:
    """The config's ``[serve]`` table: from --config, else the default config file if there is one
    (not with --demo alone), else the defaults."""
    path: Path | None = args.config
    if path is None and not args.demo and default_config_path().exists():
        path = default_config_path()
    return load_config(path).serve if path is not None else ServeSettings()


def app_argv(args: argparse.Namespace, *, read_only: bool) -> list[str]:
    """The options of the app each browser tab runs: the same sources as this command."""
    argv: list[str] = []
    if args.demo:
        argv += ["--demo", "--demo-size", str(args.demo_size), "--seed", str(args.seed)]
    for option, value in (("--config", args.config), ("--cluster", args.cluster), ("--context", args.context),
                          ("--theme", args.theme)):
        if value is not None:
            argv += [option, str(Path(value).resolve()) if option == "--config" else str(value)]
    if args.wall:
        argv.append("--wall")
    if read_only:
        argv.append("--read-only")
    return argv


def collector_argv(args: argparse.Namespace) -> list[str]:
    """The options of the shared collector: the source options of the apps (no theme, wall, read-only)."""
    argv: list[str] = []
    if args.demo:
        argv += ["--demo", "--demo-size", str(args.demo_size), "--seed", str(args.seed)]
    for option, value in (("--config", args.config), ("--cluster", args.cluster), ("--context", args.context)):
        if value is not None:
            argv += [option, str(Path(value).resolve()) if option == "--config" else str(value)]
    return argv


def shares_a_collector(args: argparse.Namespace, *, read_only: bool, source_kinds: list[str]) -> bool:
    """One collector for every tab: unless ``[serve] shared_collector = false``, or a demo source
    may be acted on (each app's simulator is its own: the tab that acts must see the change)."""
    if not serve_settings(args).shared_collector:
        return False
    return read_only or "demo" not in source_kinds


def plan(args: argparse.Namespace) -> ServePlan:
    """What to serve and to whom, or ConfigError with the reason to refuse."""
    settings = serve_settings(args)
    host = args.host or settings.host
    port = args.port if args.port is not None else settings.port
    if not 1 <= port <= 65_535:
        raise ConfigError(f"--port: not a TCP port: {port}")
    if not is_loopback(host) and not settings.allow_remote:
        raise ConfigError(f"refusing to serve on {host!r}: it is not a loopback address and textual-serve has no "
                          "authentication (anyone who reaches the port gets the app); set allow_remote = true in "
                          "the config's [serve] table to allow it (a token is then required)")
    read_only = not (args.allow_actions or settings.allow_actions) or args.wall or bool(args.read_only)
    access = access_for(settings, host, port, read_only, asked=bool(getattr(args, "token", False)),
                        max_sessions=getattr(args, "max_sessions", None))
    if access.token is None and (not is_loopback(host) or not read_only):
        raise ConfigError("refusing to serve actions or a non-loopback host without a token")  # never: access_for
    return ServePlan(host, port, read_only, app_argv(args, read_only=read_only), access)


def run_serve(args: argparse.Namespace, check_app_args: Callable[[list[str]], Any]) -> int:
    """Serve until SIGINT/SIGTERM; then no app process is left behind."""
    try:
        host, port, read_only, argv, access = plan(args)
        kinds = check_app_args(argv)  # the app's own parser and config checks, before any browser connects
        shared = shares_a_collector(args, read_only=read_only, source_kinds=list(kinds or []))
    except ConfigError as exc:
        sys.stderr.write(f"hpctui serve: {' '.join(str(exc).split())}\n")
        return EXIT_USAGE
    collector: CollectorChild | None = None
    if shared:
        from hpctui.core.collector_hub import SOCKET_NAME, private_socket_dir

        directory = private_socket_dir()
        collector = CollectorChild(collector_argv(args), directory / SOCKET_NAME)
        argv = [*argv, "--collector", str(collector.socket)]
    command = "exec " + shlex.join([sys.executable, "-m", "hpctui", *argv])  # exec: no shell left in between

    url_host = f"[{host}]" if ":" in host else host
    server = guarded_server(access, collector)(command, host=host, port=port, title="hpctui",
                                               public_url=f"http://{url_host}:{port}")
    server.banner = banner(f"http://{banner_host(host, access)}:{port}/", access, read_only=read_only, wall=args.wall)
    try:
        server.serve()
    except OSError as exc:  # the port is taken, the address is not ours
        sys.stderr.write(f"hpctui serve: cannot listen on {host}:{port}: {exc.strerror or exc}\n")
        return 1
    finally:
        stop_children()
        if collector is not None:
            shutil.rmtree(collector.socket.parent, ignore_errors=True)
    return 0


class CollectorChild:
    """The shared collector process (``hpctui collector --socket SOCKET …``): started with the
    server, started again when it exits (after 1 s, doubling to 30 s while it keeps dying young),
    stopped with the server. Its stderr is ours (the serve log)."""

    RESTART_MIN_S = 1.0
    RESTART_MAX_S = 30.0
    STABLE_S = 60.0  # a collector that lived this long restarts after the shortest pause again

    def __init__(self, argv: list[str], socket: Path) -> None:
        self.argv = argv
        self.socket = socket
        self.process: asyncio.subprocess.Process | None = None
        self.starts = 0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._supervise(), name="serve:collector")

    async def _supervise(self) -> None:
        delay = self.RESTART_MIN_S
        while True:
            started = time.monotonic()
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "hpctui", "collector", "--socket", str(self.socket), *self.argv,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
            self.starts += 1
            code = await self.process.wait()
            if time.monotonic() - started >= self.STABLE_S:
                delay = self.RESTART_MIN_S
            sys.stderr.write(f"hpctui serve: the collector exited (status {code}); starting it again in "
                             f"{delay:.0f} s (the tabs show stale data meanwhile)\n")
            sys.stderr.flush()
            await asyncio.sleep(delay)
            delay = min(self.RESTART_MAX_S, delay * 2)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        process = self.process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 5.0)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()


def banner(url: str, access: Access, *, read_only: bool, wall: bool) -> str:
    """The one line printed at start: the URL (with a random token, the only time it is shown)."""
    mode = ("read-only" if read_only else "ACTIONS ALLOWED") + (", wall" if wall else "")
    if access.token is None:
        where = f"{url} ({mode}, no token: loopback read-only"
    elif access.token_file is not None:
        where = f"{url}?token=<the token in {access.token_file}> ({mode}"
    else:
        where = f"{url}?token={access.token} ({mode}, token printed once"
    return f"hpctui serve: {where}, at most {access.max_sessions} sessions); Ctrl+C stops\n"


def banner_host(host: str, access: Access) -> str:
    """The host of the printed URL: one the guard answers to (a wildcard bind is no address to open)."""
    if host in WILDCARD_HOSTS:
        named = sorted(h for h in access.host_headers if not h.startswith(("localhost", "127.0.0.1", "[::1]")))
        return named[0].split(":")[0] if named and not named[0].startswith("[") else "localhost"
    return f"[{host}]" if ":" in host else host


def guarded_server(access: Access, collector: CollectorChild | None = None) -> type[Any]:
    """textual-serve's Server with :func:`hpctui.cli.serve_guard.guard` in front of every route, and a
    page whose websocket URL is the page's own origin (as the browser reached it: ``localhost`` or
    a proxy's name), so that the Origin check holds for every name in ``host_headers``; the shared
    ``collector`` (if any) runs from its start to its shutdown."""
    import aiohttp_jinja2
    from aiohttp import web
    from textual_serve.server import Server, to_int

    class HpcServer(Server):
        banner = ""

        async def _make_app(self) -> web.Application:
            app: web.Application = await super()._make_app()
            app.middlewares.append(guard(access, Sessions(access.max_sessions)))
            return app

        def initialize_logging(self) -> None:
            super().initialize_logging()
            logging.getLogger("aiohttp.access").addFilter(redact_token)  # the log never shows a token

        async def on_startup(self, app: web.Application) -> None:
            if collector is not None:
                collector.start()
            sys.stderr.write(self.banner)
            sys.stderr.flush()

        async def on_shutdown(self, app: web.Application) -> None:
            if collector is not None:
                await collector.stop()

        async def handle_index(self, request: web.Request) -> web.Response:
            secure = is_https(request)
            origin = f"{'https' if secure else 'http'}://{request.host}"  # Host: checked by the guard
            static = str(request.app.router["static"].url_for(filename="/")).rstrip("/") + "/"
            websocket = str(request.app.router["websocket"].url_for())
            context = {"font_size": to_int(request.query.get("fontsize", "16"), 16),
                       "app_websocket_url": f"{'wss' if secure else 'ws'}://{request.host}{websocket}",
                       "config": {"static": {"url": f"{origin}{static}"}},
                       "application": {"name": self.title}}
            response = aiohttp_jinja2.render_template("app_index.html", request, context)
            if response.text is not None:
                response.text = with_focus_script(response.text)
            return response

    return HpcServer


# textual-serve's page leaves the focus on <body>: keys did nothing until the terminal was clicked.
# This focuses xterm.js's input as soon as textual.js has opened the terminal, and again when the
# tab gets the focus back with nothing else focused. Inline, like the page's own scripts (the
# guard's Content-Security-Policy restricts framing only).
FOCUS_SCRIPT = """<script>
(function () {
  var tries = 0;
  function input() { return document.querySelector("#terminal .xterm-helper-textarea"); }
  function focusTerminal() {
    var el = input();
    if (el) { el.focus({preventScroll: true}); }
    if ((!el || document.activeElement !== el) && ++tries < 150) { setTimeout(focusTerminal, 100); }
  }
  window.addEventListener("load", function () { setTimeout(focusTerminal, 0); });
  window.addEventListener("focus", function () {
    var el = input();
    if (el && (document.activeElement === document.body || document.activeElement === null)) { el.focus(); }
  });
})();
</script>
"""


def with_focus_script(page: str) -> str:
    """The served page with :data:`FOCUS_SCRIPT` before ``</body>`` (at the end if it has none)."""
    at = page.rfind("</body>")
    return page + FOCUS_SCRIPT if at < 0 else page[:at] + FOCUS_SCRIPT + page[at:]


TOKEN_IN_URL = re.compile(r"([?&]token=)[^&\s\"]*")


def redact_token(record: logging.LogRecord) -> bool:
    """A logging filter: ``?token=…`` in an access-log line is replaced by ``token=REDACTED``."""
    if isinstance(record.msg, str):
        record.msg = TOKEN_IN_URL.sub(r"\1REDACTED", record.msg)
    return True


def stop_children() -> int:
    """SIGTERM (then SIGKILL) every process whose parent is us: the app of a tab still open."""
    pids = _children(os.getpid())
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    import time

    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    for pid in pids:
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    return len(pids)


def _children(parent: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 2 and fields[1] == str(parent):
            out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False
