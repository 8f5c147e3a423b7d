"""Command line: ``hpctui`` (the dashboard) and ``hpctui snapshot`` (headless, no Textual).

Every user error is one line on stderr and exit code 2; no tracebacks.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from hpctui import __version__, signals
from hpctui.config import ConfigError, default_config_path, load_config, pick_cluster
from hpctui.sanitize import clean_text
from hpctui.sources.slurm.runner import kill_children

if TYPE_CHECKING:
    from hpctui.runtime import Runtime

EXIT_USAGE = 2
MAX_DEMO_SIZE = 65_536


class OneLineParser(argparse.ArgumentParser):
    """argparse prints usage + message; we print one line and exit 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {one_line(message)} (see --help)\n")
        raise SystemExit(EXIT_USAGE)


def one_line(message: str) -> str:
    """A message for stderr: one line, nothing a terminal would act on (it may quote the file)."""
    return clean_text(" ".join(message.split()))


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return value


def _demo_size(text: str) -> int:
    value = _positive_int(text)
    if value > MAX_DEMO_SIZE:
        raise argparse.ArgumentTypeError(f"at most {MAX_DEMO_SIZE:,}: {text}")
    return value


def _add_source_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--demo", action="store_true", help="use the built-in simulated cluster")
    p.add_argument("--demo-size", type=_demo_size, default=64, metavar="N", help="GPU nodes in the demo cluster (default 64)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the demo cluster (default 0)")
    p.add_argument("--config", type=Path, metavar="PATH", help=f"config file (default {default_config_path()})")
    p.add_argument("--cluster", metavar="NAME", help="which configured cluster to show")


def build_parser() -> OneLineParser:
    parser = OneLineParser(prog="hpctui", description="Terminal UI for Slurm + Kubernetes GPU clusters.")
    parser.add_argument("--version", action="version", version=f"hpctui {__version__}")
    _add_source_options(parser)
    parser.add_argument("--theme", metavar="NAME", help="colour theme (dark, light, wall, or one of yours)")
    parser.add_argument("--read-only", action="store_true", help="disable every action (enforced, not just hidden)")
    parser.add_argument("--wall", action="store_true", help="wall display: read-only, large heatmap")
    return parser


def build_snapshot_parser() -> OneLineParser:
    parser = OneLineParser(prog="hpctui snapshot", description="Collect once from every source, print, exit.")
    _add_source_options(parser)
    parser.add_argument("--format", choices=("json", "table"), default="table")
    return parser


def _runtime(args: argparse.Namespace, *, read_only: bool | None = None, theme: str | None = None) -> Runtime:
    from hpctui.runtime import demo_runtime, runtime_from_config

    if args.demo:
        return demo_runtime(size=args.demo_size, seed=args.seed, read_only=bool(read_only),
                            theme=theme or "dark")
    path: Path = args.config or default_config_path()
    if args.config is None and not path.exists():
        raise ConfigError(f"no config file at {path}: run `hpctui --demo` for the built-in demo cluster, "
                          "or pass --config PATH")
    config = load_config(path)
    cluster = pick_cluster(config, args.cluster, str(path))
    return runtime_from_config(config, cluster, read_only=read_only, theme=theme)


def run_snapshot(argv: Sequence[str]) -> int:
    """Headless one-shot collection; exit 0 if every source answered, 1 if any failed."""
    from hpctui.snapshot_cmd import render_json, render_table

    args = build_snapshot_parser().parse_args(list(argv))
    try:
        runtime = _runtime(args, read_only=True)
    except ConfigError as exc:
        sys.stderr.write(f"hpctui: {one_line(str(exc))}\n")
        return EXIT_USAGE

    signalled: list[int] = []

    async def collect() -> None:
        task = asyncio.current_task()
        assert task is not None

        def on_signal(signum: int) -> None:  # SIGHUP/TERM/INT: stop now, kill our children
            signalled.append(signum)
            task.cancel()

        undo = signals.install(asyncio.get_running_loop(), on_signal)
        try:
            await runtime.collect_once()
        except asyncio.CancelledError:
            if not signalled:
                raise
        finally:
            try:
                await runtime.stop()
            finally:
                undo()

    try:
        asyncio.run(collect())
    finally:
        kill_children()
    if signalled:
        sys.stderr.write(f"hpctui: interrupted by {signal.Signals(signalled[0]).name}\n")
        return 128 + signalled[0]
    snapshot = runtime.store.snapshot()
    out = render_json(snapshot) if args.format == "json" else render_table(snapshot, runtime.thresholds)
    sys.stdout.write(out)
    return 0 if all(h.ok for h in snapshot.sources.values()) else 1


def run_app(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    read_only = bool(args.read_only or args.wall) or None
    from hpctui.ui.themes import ThemeError, load_themes  # outside the try: a failed import is not a ThemeError

    try:
        runtime = _runtime(args, read_only=read_only, theme=args.theme)
        theme_errors: list[str] = []
        themes = load_themes(errors=theme_errors)
        if theme_errors:  # a broken theme file is a configuration error, not something to guess around
            raise ThemeError(theme_errors[0])
    except ConfigError as exc:
        sys.stderr.write(f"hpctui: {one_line(str(exc))}\n")
        return EXIT_USAGE
    except ThemeError as exc:
        sys.stderr.write(f"hpctui: {one_line(str(exc))}\n")
        return EXIT_USAGE
    theme = args.theme or runtime.theme
    if theme not in themes:
        sys.stderr.write(f"hpctui: unknown theme {theme!r} (available: {', '.join(sorted(themes))})\n")
        return EXIT_USAGE
    from hpctui.ui.app import HpcApp

    app = HpcApp(runtime, theme=theme, wall=args.wall, handle_signals=True)
    try:
        app.run()
    finally:
        kill_children()
    if app.exit_signal is not None:
        sys.stderr.write(f"hpctui: exited on {signal.Signals(app.exit_signal).name}\n")
    # a crash inside the app (Textual prints the traceback) must never look like success
    return app.return_code or 0


# Options that take a value: their value is never the subcommand.
_VALUE_OPTIONS = frozenset({"--config", "--cluster", "--demo-size", "--seed", "--theme", "--format"})


def split_subcommand(args: list[str]) -> tuple[str | None, list[str]]:
    """``hpctui --config F snapshot --format json`` → ("snapshot", [--config F --format json]):
    global options are accepted before or after the subcommand, as users type them."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            break
        if arg in _VALUE_OPTIONS:
            i += 2
            continue
        if arg.startswith("-"):
            i += 1
            continue
        if arg == "snapshot":
            return "snapshot", args[:i] + args[i + 1:]
        break
    return None, args


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        command, rest = split_subcommand(args)
        if command == "snapshot":
            return run_snapshot(rest)
        return run_app(rest)
    except KeyboardInterrupt:
        kill_children()
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
