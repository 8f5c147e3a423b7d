"""``hpctui serve`` with 1 and with 10 browser sessions: what the cluster pays, and what the machine pays.

Usage: python bench/bench_serve_sessions.py [--sessions 1 10] [--window 20] [--warmup 8]
                                             [--source slurm|demo] [--demo-size 1024] [--out FILE]

For each mode (``shared``: one collector for every tab, today's default; ``per-tab``: ``[serve]
shared_collector = false``, every tab's app polls on its own, as before) and each session count it
starts the real ``hpctui serve`` on a free loopback port, opens that many websocket sessions (each
one an app process, as a browser tab), waits ``--warmup`` seconds and measures over ``--window``:

- Slurm tool calls (``--source slurm``): the fake Slurm of tests/test_serve.py, shell scripts via
  ``bin_dir`` answering from tests/fixtures/slurm and logging every call; calls per refresh
  interval (1 s) of each tool, and which processes made them. With the demo source there are no
  calls to count (its collects are in-process): the CPU columns still compare.
- CPU % of one core of the server, the collector and all the apps together (utime+stime, plus
  the children they reaped: the tools), from ``/proc/PID/stat``.
- first data: from the first tab's websocket handshake until its screen names a node count
  (``Nodes (N)``, N > 0, in the terminal output the app sends): the first paint with data.

The slurmctld side (sdiag's per-user RPC counts on a live bed) is tests/slurm/test_serve_rpcs.py.
Not a test: prints a Markdown table (and writes it to ``--out``). The machine may be shared: the
load average is printed with each row; compare within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "slurm"
TICK = os.sysconf("SC_CLK_TCK")
TOOLS = ("sinfo", "squeue", "sdiag", "scontrol")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fake_slurm(where: Path, *, shared: bool, sessions: int) -> Path:
    """A config with the fake Slurm (every call logged as ``<caller pid> <tool>``); its [serve] table."""
    bin_dir = where / "bin"
    bin_dir.mkdir(exist_ok=True)
    calls = where / "calls.log"
    answers = {"sinfo": "cat " + shlex.quote(str(FIX / "cli_sinfo.json")),
               "squeue": "cat " + shlex.quote(str(FIX / "cli_squeue.json")),
               "sdiag": "cat " + shlex.quote(str(FIX / "cli_sdiag.txt")),
               "scontrol": (f'case "$*" in *"show partition"*) cat "{FIX / "cli_scontrol_show_partition_oneliner.txt"}";; '
                            f'*"show reservation"*) cat "{FIX / "cli_25.11_scontrol_show_reservation.json"}";; '
                            '*) exit 1;; esac')}
    for name, answer in answers.items():
        tool = bin_dir / name
        tool.write_text(f'#!/bin/sh\necho "$PPID {name}" >> "{calls}"\n{answer}\n')
        tool.chmod(0o755)
    config = where / "lab.toml"
    config.write_text(f'audit_log = "{where / "audit.jsonl"}"\n[clusters.lab]\n'
                      f'sources = [{{ kind = "slurm", backend = "cli", bin_dir = "{bin_dir}", interval_s = 1 }}]\n'
                      f"[serve]\nmax_sessions = {max(sessions, 1) + 1}\nshared_collector = {str(shared).lower()}\n")
    return config


def demo_config(where: Path, *, shared: bool, sessions: int, size: int) -> Path:
    config = where / "demo.toml"
    config.write_text(f'audit_log = "{where / "audit.jsonl"}"\n[clusters.demo]\n'
                      f'sources = [{{ kind = "demo", size = {size} }}]\n'
                      f"[serve]\nmax_sessions = {max(sessions, 1) + 1}\nshared_collector = {str(shared).lower()}\n")
    return config


def tree(root: int) -> dict[int, str]:
    """pid -> role ("serve", "collector", "app") of ``root`` and its live children."""
    out = {root: "serve"}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
            if fields[0] != "Z" and int(fields[1]) == root:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                out[int(entry.name)] = "collector" if " collector --socket " in command else "app"
    return out


def cpu_seconds(pid: int) -> float:
    """utime + stime + the reaped children's (fields 14-17 of /proc/PID/stat), in seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / TICK


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


@dataclass
class Row:
    mode: str
    sessions: int
    calls_per_interval: dict[str, float]
    callers: int  # distinct processes that called a Slurm tool
    cpu_pct: dict[str, float]  # role -> % of one core
    load: str
    first_data_s: float | None = None


async def drain(ws: aiohttp.ClientWebSocketResponse, first_data: asyncio.Future[float] | None = None,
                started: float = 0.0) -> None:
    """Read the tab's output for good; ``first_data``: set to the seconds since ``started`` at which the
    output first named a node count."""
    seen = b""
    with contextlib.suppress(Exception):
        async for message in ws:
            if first_data is None or first_data.done() or message.type != aiohttp.WSMsgType.BINARY:
                continue
            seen += bytes(message.data)
            found = NODES.search(seen)
            if found and found.group(1) != b"0":
                first_data.set_result(time.monotonic() - started)
            seen = seen[-64:]  # a match may straddle two messages


NODES = re.compile(rb"Nodes \((\d+)")


@dataclass
class Window:
    lines: list[str]  # the calls logged in the window
    roles: dict[int, str]
    cpu: dict[int, float]  # pid -> CPU seconds over the window
    elapsed: float
    first_data_s: float | None


def logged(calls_log: Path) -> list[str]:
    return calls_log.read_text().splitlines() if calls_log.exists() else []


async def sessions_open(port: int, sessions: int, calls_log: Path, server: int, args: argparse.Namespace) -> Window:
    """``sessions`` websockets open (their output drained), then one measuring window."""
    own = f"http://127.0.0.1:{port}"
    first_data: asyncio.Future[float] = asyncio.get_running_loop().create_future()
    async with aiohttp.ClientSession() as client:
        started = time.monotonic()
        sockets = [await client.ws_connect(f"ws://127.0.0.1:{port}/ws", origin=own, max_msg_size=0)
                   for _ in range(sessions)]
        for ws in sockets:  # the terminal's size, as the browser's page sends it first
            await ws.send_str('["resize", {"width": 160, "height": 50}]')
        readers = [asyncio.create_task(drain(ws, first_data if i == 0 else None, started))
                   for i, ws in enumerate(sockets)]
        await asyncio.sleep(args.warmup)
        lines_before = len(logged(calls_log))
        roles = tree(server)
        before = {pid: cpu_seconds(pid) for pid in roles}
        started = time.monotonic()
        await asyncio.sleep(args.window)
        elapsed = time.monotonic() - started
        cpu = {pid: cpu_seconds(pid) - before[pid] for pid in roles}
        lines = logged(calls_log)[lines_before:]
        for ws in sockets:
            await ws.close()
        for task in readers:
            task.cancel()
    return Window(lines, roles, cpu, elapsed, first_data.result() if first_data.done() else None)


def measure(mode: str, sessions: int, args: argparse.Namespace) -> Row:
    shared = mode == "shared"
    with tempfile.TemporaryDirectory(prefix="hpctui-bench-serve-") as tmp:
        where = Path(tmp)
        config = (fake_slurm(where, shared=shared, sessions=sessions) if args.source == "slurm"
                  else demo_config(where, shared=shared, sessions=sessions, size=args.demo_size))
        port = free_port()
        env = {**os.environ, "HOME": tmp, "XDG_STATE_HOME": f"{tmp}/state", "XDG_CONFIG_HOME": f"{tmp}/config",
               "XDG_RUNTIME_DIR": tmp, "PYTHONPATH": str(ROOT)}
        with (where / "serve.log").open("wb") as log:
            server = subprocess.Popen([sys.executable, "-m", "hpctui", "serve", "--config", str(config), "--port",
                                       str(port)], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while True:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"hpctui serve did not listen: {(where / 'serve.log').read_text()[-2000:]}")
                time.sleep(0.2)
            window = asyncio.run(sessions_open(port, sessions, where / "calls.log", server.pid, args))
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
    per_tool = Counter(line.split()[1] for line in window.lines if len(line.split()) == 2)
    cpu: dict[str, float] = {}
    for pid, role in window.roles.items():
        cpu[role] = cpu.get(role, 0.0) + 100.0 * window.cpu[pid] / window.elapsed
    intervals = window.elapsed / 1.0  # the fake Slurm's interval_s
    return Row(mode, sessions, {tool: per_tool[tool] / intervals for tool in TOOLS},
               len({line.split()[0] for line in window.lines}), dict(cpu), load(), window.first_data_s)


def table(rows: list[Row], args: argparse.Namespace) -> str:
    out = [f"`hpctui serve` sessions, source {args.source}" + (f" ({args.demo_size} nodes)" if args.source == "demo" else
                                                                 " (fake Slurm, 1 s interval)")
           + f", {args.window:.0f} s window after {args.warmup:.0f} s warm-up", "",
           "| mode | sessions | sinfo/interval | squeue/interval | sdiag/interval | scontrol/interval | calling processes "
           "| CPU serve % | CPU collector % | CPU apps % | CPU total % | first data s | load |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        c = r.calls_per_interval
        total = sum(r.cpu_pct.values())
        out.append(f"| {r.mode} | {r.sessions} | {c['sinfo']:.2f} | {c['squeue']:.2f} | {c['sdiag']:.2f} | "
                   f"{c['scontrol']:.2f} | {r.callers} | {r.cpu_pct.get('serve', 0):.1f} | "
                   f"{r.cpu_pct.get('collector', 0):.1f} | {r.cpu_pct.get('app', 0):.1f} | {total:.1f} | "
                   f"{'—' if r.first_data_s is None else f'{r.first_data_s:.2f}'} | {r.load} |")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--modes", nargs="+", default=["per-tab", "shared"], choices=["per-tab", "shared"])
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=8.0)
    parser.add_argument("--source", choices=["slurm", "demo"], default="slurm")
    parser.add_argument("--demo-size", type=int, default=1024)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    rows = []
    for mode in args.modes:
        for sessions in args.sessions:
            row = measure(mode, sessions, args)
            print(f"{mode} × {sessions}: {row}", file=sys.stderr)
            rows.append(row)
    text = table(rows, args)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main(sys.argv[1:])
