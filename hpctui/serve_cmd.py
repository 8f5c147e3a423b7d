"""``hpctui serve``: the dashboard (or ``--wall``) in a web browser, through textual-serve.

Every browser tab gets its own ``hpctui`` process (textual-serve runs the command per
websocket), started with the same source options as this command (``--demo``, ``--config``,
``--cluster``, ...). Safe by default:

- bound to 127.0.0.1 (config ``[serve] host``); a host that is not loopback is refused unless
  ``[serve] allow_remote = true``: textual-serve has no authentication, so anyone who can
  reach the port gets the app;
- the app is started ``--read-only`` unless ``--allow-actions`` or ``[serve] allow_actions``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

from hpctui.config import ConfigError, default_config_path, load_config
from hpctui.ui.wall_settings import ServeSettings, is_loopback

EXIT_USAGE = 2


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", metavar="HOST", help="address to listen on (default 127.0.0.1, or [serve] host)")
    parser.add_argument("--port", type=int, metavar="PORT", help="port to listen on (default 8765, or [serve] port)")
    parser.add_argument("--wall", action="store_true", help="serve the wall display (read-only)")
    parser.add_argument("--theme", metavar="NAME", help="colour theme of the served app")
    parser.add_argument("--allow-actions", action="store_true",
                        help="let the browser run actions (default: read-only, or [serve] allow_actions)")


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


def plan(args: argparse.Namespace) -> tuple[str, int, bool, list[str]]:
    """(host, port, read_only, app argv) or ConfigError with the reason to refuse."""
    settings = serve_settings(args)
    host = args.host or settings.host
    port = args.port if args.port is not None else settings.port
    if not 1 <= port <= 65_535:
        raise ConfigError(f"--port: not a TCP port: {port}")
    if not is_loopback(host) and not settings.allow_remote:
        raise ConfigError(f"refusing to serve on {host!r}: it is not a loopback address and textual-serve has no "
                          "authentication (anyone who reaches the port gets the app); set allow_remote = true in "
                          "the config's [serve] table to allow it")
    read_only = not (args.allow_actions or settings.allow_actions) or args.wall or bool(args.read_only)
    return host, port, read_only, app_argv(args, read_only=read_only)


def run_serve(args: argparse.Namespace, check_app_args: Any) -> int:
    """Serve until SIGINT/SIGTERM; then no app process is left behind."""
    try:
        host, port, read_only, argv = plan(args)
        check_app_args(argv)  # the app's own parser and config checks, before any browser connects
    except ConfigError as exc:
        sys.stderr.write(f"hpctui serve: {' '.join(str(exc).split())}\n")
        return EXIT_USAGE
    from textual_serve.server import Server

    command = "exec " + shlex.join([sys.executable, "-m", "hpctui", *argv])  # exec: no shell left in between

    class HpcServer(Server):
        async def on_startup(self, app: Any) -> None:
            mode = "read-only" if read_only else "ACTIONS ALLOWED"
            sys.stderr.write(f"hpctui serve: http://{host}:{port}/ ({mode}{', wall' if args.wall else ''}); "
                             "Ctrl+C stops\n")
            sys.stderr.flush()

    url_host = f"[{host}]" if ":" in host else host
    server = HpcServer(command, host=host, port=port, title="hpctui", public_url=f"http://{url_host}:{port}")
    try:
        server.serve()
    except OSError as exc:  # the port is taken, the address is not ours
        sys.stderr.write(f"hpctui serve: cannot listen on {host}:{port}: {exc.strerror or exc}\n")
        return 1
    finally:
        stop_children()
    return 0


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
