"""Command line: ``hpctui`` (the dashboard) and ``hpctui snapshot`` (headless, no Textual).

Every user error is one line on stderr and exit code 2; no tracebacks.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from hpctui import __version__
from hpctui.base.sanitize import clean_text
from hpctui.core import signals
from hpctui.core.config import ConfigError, default_config_path, load_config, pick_cluster
from hpctui.sources.slurm.runner import kill_children

if TYPE_CHECKING:
    from hpctui.core.runtime import Runtime

EXIT_USAGE = 2
EXIT_FINDINGS = 3  # snapshot --fail-on: findings of that level or worse exist
MAX_DEMO_SIZE = 65_536
DEMO_SEED = 0  # the demo's default seed: the app, snapshot, act, report and serve all start from it


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
    p.add_argument("--seed", type=int, default=DEMO_SEED,
                   help=f"random seed of the demo cluster (default {DEMO_SEED}, the same in every command)")
    p.add_argument("--config", type=Path, metavar="PATH", help=f"config file (default {default_config_path()})")
    p.add_argument("--cluster", metavar="NAME", help="which configured cluster to show")
    p.add_argument("--context", metavar="NAME", help="kubeconfig context for the cluster's k8s sources")


def build_parser() -> OneLineParser:
    parser = OneLineParser(prog="hpctui", description="Terminal UI for Slurm + Kubernetes GPU clusters.")
    parser.add_argument("--version", action="version", version=f"hpctui {__version__}")
    _add_source_options(parser)
    parser.add_argument("--theme", metavar="NAME", help="colour theme (dark, light, wall, or one of yours)")
    parser.add_argument("--read-only", action="store_true", help="disable every action (enforced, not just hidden)")
    parser.add_argument("--wall", action="store_true", help="wall display: read-only, large heatmap")
    # hpctui serve's sessions: the data from its collector's socket, no polling of their own (hidden)
    parser.add_argument("--collector", type=Path, metavar="SOCKET", help=argparse.SUPPRESS)
    return parser


def build_snapshot_parser() -> OneLineParser:
    parser = OneLineParser(prog="hpctui snapshot", description="Collect once from every source, print, exit.")
    _add_source_options(parser)
    parser.add_argument("--format", choices=("json", "table"), default="table")
    parser.add_argument("--problems", action="store_true",
                        help="print only the findings of warning and worse (with --format json: a list)")
    parser.add_argument("--fail-on", choices=("warning", "error", "critical"), metavar="LEVEL",
                        help=f"exit {EXIT_FINDINGS} when a finding of LEVEL or worse exists (warning|error|critical)")
    parser.add_argument("--pretty", action="store_true",
                        help="indent JSON (the default only on a terminal; compact when piped)")
    return parser


def _runtime(args: argparse.Namespace, *, read_only: bool | None = None, theme: str | None = None) -> Runtime:
    from hpctui.core.runtime import runtime_from_config

    if args.demo:
        return _demo_runtime(args, read_only=bool(read_only), theme=theme)
    path: Path = args.config or default_config_path()
    if args.config is None and not path.exists():
        raise ConfigError(f"no config file at {path}: run `hpctui --demo` for the built-in demo cluster, "
                          "or pass --config PATH")
    config = load_config(path)
    cluster = pick_cluster(config, args.cluster, str(path))
    if getattr(args, "context", None):  # --context overrides every k8s source's kubeconfig context
        entries = [e for e in config.clusters[cluster].sources if e.get("kind") == "k8s"]
        if not entries:
            raise ConfigError(f"{path}: --context given but cluster {cluster!r} has no k8s source")
        for entry in entries:
            entry["context"] = args.context
    args.loaded_config = config  # the app also needs the keymap and the other clusters (:cluster)
    return runtime_from_config(config, cluster, read_only=read_only, theme=theme)


def _demo_runtime(args: argparse.Namespace, *, read_only: bool, theme: str | None) -> Runtime:
    """The demo cluster; with ``--config FILE`` also that file's look and rules: ``theme``,
    ``[thresholds]``, ``[keymap]`` (checked and applied by the app), ``[heatmap]``, ``[wall]`` and
    ``[mig_layouts]``. Its clusters and sources are not used (the demo is the cluster)."""
    from hpctui.core.runtime import demo_runtime

    if args.config is None:
        return demo_runtime(size=args.demo_size, seed=args.seed, read_only=read_only, theme=theme or "dark")
    config = load_config(args.config)
    runtime = demo_runtime(size=args.demo_size, seed=args.seed, read_only=read_only,
                           theme=theme or config.theme, thresholds=config.thresholds)
    runtime.heatmap, runtime.wall_settings = config.heatmap, config.wall
    runtime.mig_layouts = dict(config.mig_layouts)
    args.demo_keymap = config.keymap  # the app checks it (a bad id or key: exit 2) and applies it
    return runtime


def run_snapshot(argv: Sequence[str]) -> int:
    """Headless one-shot collection; exit 0 if every source answered, 1 if any failed."""
    import msgspec

    from hpctui.cli.snapshot import problem_findings, render_json, render_problems, render_table
    from hpctui.model import Severity

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
    problems = problem_findings(snapshot, runtime.thresholds)
    pretty = args.pretty or sys.stdout.isatty()
    if args.problems:
        if args.format == "json":
            out = (msgspec.json.format(msgspec.json.encode(problems), indent=2) if pretty
                   else msgspec.json.encode(problems)).decode() + "\n"
        else:
            out = render_problems(problems)
    elif args.format == "json":
        out = render_json(snapshot, problems, pretty=pretty)
    else:
        out = render_table(snapshot, runtime.thresholds)
    sys.stdout.write(out)
    if args.fail_on is not None:
        level = Severity[args.fail_on.upper()]
        if any(f.severity >= level for f in problems):
            return EXIT_FINDINGS
    return 0 if all(h.ok for h in snapshot.sources.values()) else 1


def run_act(argv: Sequence[str]) -> int:
    """``hpctui act``: one action through the executor; 0 ok, 1 some failed, 2 usage/refused."""
    from hpctui.cli.act import action_kind, add_act_arguments, parse_params
    from hpctui.cli.act import run_act as act
    from hpctui.model.action import split_targets

    parser = OneLineParser(prog="hpctui act", description="Run one action (preview, confirm, audit) and exit.")
    add_act_arguments(parser)
    _add_source_options(parser)
    args = parser.parse_args(list(argv))
    kind = action_kind(args.action)
    try:
        params = parse_params(args.param)
    except ValueError as exc:
        parser.error(str(exc))
    if args.reason is not None:
        params["reason"] = args.reason
    try:
        runtime = _runtime(args, read_only=True if args.read_only else None)
    except ConfigError as exc:
        sys.stderr.write(f"hpctui: {exc}\n")
        return EXIT_USAGE

    async def go() -> int:
        try:
            return await act(runtime, kind, split_targets(kind, args.targets), params, dry_run=args.dry_run,
                             yes=args.yes, as_json=args.json, interactive=sys.stdin.isatty())
        finally:
            await runtime.stop()

    return asyncio.run(go())


def run_logs(argv: Sequence[str]) -> int:
    """``hpctui logs``: a job's output, a node's journal window or a pod's log (hpctui.cli.logs)."""
    from hpctui.cli.logs import add_logs_arguments
    from hpctui.cli.logs import run_logs as logs

    parser = OneLineParser(prog="hpctui logs", description="Print a job's output, a node's journal or a pod's log.")
    add_logs_arguments(parser)
    _add_source_options(parser)
    args = parser.parse_args(list(argv))
    try:
        runtime = _runtime(args, read_only=True)
    except ConfigError as exc:
        sys.stderr.write(f"hpctui: {exc}\n")
        return EXIT_USAGE

    async def go() -> int:
        try:
            return await logs(runtime, args)
        finally:
            await runtime.stop()

    return asyncio.run(go())


def run_report(argv: Sequence[str]) -> int:
    """``hpctui report``: an incident report (md, json, html) for nodes/jobs over a time window."""
    from hpctui.cli.report import add_report_arguments, make_report

    parser = OneLineParser(prog="hpctui report", description="Write an incident report (report.md/.json/.html).")
    add_report_arguments(parser)
    _add_source_options(parser)
    args = parser.parse_args(list(argv))
    try:
        return make_report(args, lambda: _runtime(args, read_only=True))
    except ConfigError as exc:
        sys.stderr.write(f"hpctui: {exc}\n")
        return EXIT_USAGE


def run_acct(command: str, argv: Sequence[str]) -> int:
    """``hpctui history|sacct|gpu-hours``: what the cluster remembers (hpctui.cli.acct); read-only."""
    from hpctui.cli import acct

    descriptions = {"history": "A node's history (drains, resumes, cordons, jobs that died) or the repeat offenders.",
                    "sacct": "Finished jobs from Slurm accounting (bounded: a window and a row cap).",
                    "gpu-hours": "GPU-hours per account and user from sreport (gres/gpu)."}
    parser = OneLineParser(prog=f"hpctui {command}", description=descriptions[command])
    {"history": acct.add_history_arguments, "sacct": acct.add_sacct_arguments,
     "gpu-hours": acct.add_gpu_hours_arguments}[command](parser)
    _add_source_options(parser)
    args = parser.parse_args(list(argv))
    if command == "history" and not args.rank and not args.node:
        parser.error("give a NODE, or --rank for the repeat offenders")
    try:
        since_s = acct.window_of(args) if command != "history" else 0.0
        runtime = _runtime(args, read_only=True)
    except ValueError as exc:
        parser.error(str(exc))
    except ConfigError as exc:
        sys.stderr.write(f"hpctui: {exc}\n")
        return EXIT_USAGE

    async def go() -> int:
        try:
            await runtime.collect_once()  # the timeline's events (and the demo's cluster) first
            if command == "history":
                return await acct.run_history(runtime, args)
            if command == "sacct":
                return await acct.run_sacct(runtime, args, since_s)
            return await acct.run_gpu_hours(runtime, args, since_s)
        except ValueError as exc:  # a bad node, user, account or state name
            sys.stderr.write(f"hpctui {command}: error: {exc}\n")
            return EXIT_USAGE
        finally:
            await runtime.stop()

    return asyncio.run(go())


def run_app(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    from hpctui.ui import splash

    splash.paint(clean_text(args.cluster or ("demo" if args.demo else "hpctui")))
    try:
        return _run_app(args)
    finally:
        splash.close()  # a way out before Textual took over the screen (then Textual leaves it)


def _usage_error(message: str) -> int:
    from hpctui.ui import splash

    splash.close()  # the message must land on the normal screen, not the shell that goes away
    sys.stderr.write(f"hpctui: {message}\n")
    return EXIT_USAGE


def _run_app(args: argparse.Namespace) -> int:
    read_only = bool(args.read_only or args.wall) or None
    from hpctui.ui.registry import CustomKeyError, custom_key_specs
    from hpctui.ui.themes import ThemeError, load_themes  # outside the try: a failed import is not a ThemeError

    try:
        runtime = _runtime(args, read_only=read_only, theme=args.theme)
        theme_errors: list[str] = []
        themes = load_themes(errors=theme_errors)
        if theme_errors:  # a broken theme file is a configuration error, not something to guess around
            raise ThemeError(theme_errors[0])
        custom_key_specs(runtime.custom_actions)  # a custom action's key taken on its pane: a config error
        if args.collector is not None:  # a served session: hpctui serve's collector polls, for every tab
            runtime.subscribe(args.collector)
    except (ConfigError, ThemeError, CustomKeyError) as exc:
        return _usage_error(one_line(str(exc)))
    theme = args.theme or ("wall" if args.wall else runtime.theme)  # --wall means the wall theme
    if theme not in themes:
        return _usage_error(f"unknown theme {theme!r} (available: {', '.join(sorted(themes))})")
    from hpctui.core.clusters import ClusterSet
    from hpctui.ui.app import HpcApp
    from hpctui.ui.keymap import check_keymap

    config = getattr(args, "loaded_config", None)
    raw_keymap = config.keymap if config else getattr(args, "demo_keymap", {})
    try:  # [keymap]: unknown ids and bad keys are config errors, before the screen opens
        keymap = check_keymap(raw_keymap, str(args.config or default_config_path())) if raw_keymap else {}
    except ConfigError as exc:
        return _usage_error(one_line(str(exc)))
    clusters = ClusterSet.from_config(config, read_only=read_only, theme=args.theme) if config else None
    if clusters is not None and args.collector is not None:  # back on the served cluster: its collector again
        clusters.prepare = served_by_collector(runtime.cluster, args.collector)
    app = HpcApp(runtime, theme=theme, wall=args.wall, handle_signals=True, keymap=keymap, clusters=clusters,
                 freeze_gc=True)
    from hpctui.core import gc_tuning

    gc_tuning.tune()
    try:
        app.run()
    finally:
        kill_children()
    if app.exit_signal is not None:
        sys.stderr.write(f"hpctui: exited on {signal.Signals(app.exit_signal).name}\n")
    # a crash inside the app (Textual prints the traceback) must never look like success
    return app.return_code or 0


def served_by_collector(cluster: str, socket_path: Path) -> Callable[[Runtime], None]:
    """For a served session's ``:cluster`` switches: a runtime of the served cluster subscribes to the
    collector (another cluster's polls on its own: the collector serves one)."""

    def prepare(runtime: Runtime) -> None:
        if runtime.cluster == cluster:
            runtime.subscribe(socket_path)

    return prepare


def run_serve(argv: Sequence[str]) -> int:
    """``hpctui serve``: the app in a browser (textual-serve), loopback and read-only by default."""
    from hpctui.cli.serve import add_serve_arguments
    from hpctui.cli.serve import run_serve as serve

    parser = OneLineParser(prog="hpctui serve", description="Serve the dashboard to a web browser (textual-serve).")
    add_serve_arguments(parser)
    _add_source_options(parser)
    parser.add_argument("--read-only", action="store_true", help="disable every action (the default unless allowed)")
    args = parser.parse_args(list(argv))

    def check_app_args(app_argv: list[str]) -> list[str]:  # what each tab will run must start: fail here, not there
        """The kinds of the sources each tab's app would build (the app's own checks passed)."""
        return [source.kind for source in _runtime(build_parser().parse_args(app_argv), read_only=True).sources]

    return serve(args, check_app_args)


def run_collector(argv: Sequence[str]) -> int:
    """``hpctui collector --socket PATH [source options]``: the one collector ``hpctui serve`` starts
    for its sessions (hpctui.core.collector_hub); not for users (no help entry). Runs until SIGTERM or
    SIGHUP, or until the process that started it is gone. SIGINT is ignored: a Ctrl+C reaches the
    terminal's whole process group, and ``hpctui serve`` then stops its collector itself, in order."""
    import os

    parser = OneLineParser(prog="hpctui collector", description="hpctui serve's shared collector (internal).")
    _add_source_options(parser)
    parser.add_argument("--socket", type=Path, required=True, metavar="PATH")
    args = parser.parse_args(list(argv))
    parent = os.getppid()
    try:
        runtime = _runtime(args, read_only=True)
    except ConfigError as exc:
        sys.stderr.write(f"hpctui collector: {one_line(str(exc))}\n")
        return EXIT_USAGE
    from hpctui.core.collector_hub import ProtocolError, run_collector

    async def go() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(signum, stop.set)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            await run_collector(runtime.poller, args.socket, cluster=runtime.cluster, stop=stop, parent=parent)
        except (OSError, ProtocolError) as exc:
            sys.stderr.write(f"hpctui collector: {args.socket}: {one_line(str(exc))}\n")
            return 1
        finally:
            from hpctui.sources.slurm.runner import reap_killed

            await reap_killed()  # children killed while they were being spawned: reaped before the loop closes
        return 0

    try:
        return asyncio.run(go())
    finally:
        kill_children()


# Options that take a value: their value is never the subcommand.
_VALUE_OPTIONS = frozenset({"--config", "--cluster", "--demo-size", "--seed", "--theme", "--format", "--context",
                            "--collector", "--socket"})


SUBCOMMANDS = ("snapshot", "act", "report", "serve", "history", "sacct", "gpu-hours", "logs", "collector")


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
        if arg in SUBCOMMANDS:
            return arg, args[:i] + args[i + 1:]
        break
    return None, args


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        command, rest = split_subcommand(args)
        if command == "snapshot":
            return run_snapshot(rest)
        if command == "act":
            return run_act(rest)
        if command == "report":
            return run_report(rest)
        if command == "logs":
            return run_logs(rest)
        if command == "serve":
            return run_serve(rest)
        if command == "collector":
            return run_collector(rest)
        if command in ("history", "sacct", "gpu-hours"):
            return run_acct(command, rest)
        return run_app(rest)
    except KeyboardInterrupt:
        kill_children()
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
