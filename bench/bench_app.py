"""End-to-end cost of the real app in a real terminal, at 64, 4,096 and 16,384 demo nodes.

Usage: python bench/bench_app.py [--sizes 64 4096 16384] [--window 30] [--warmup 10]
                                 [--presses 30] [--tabs 12] [--out bench/results/NAME.md]

For each size it starts ``python -m hpctui --demo --demo-size N`` in a private tmux
server (200×60, truecolor), and measures:

- first paint: spawn → the first non-blank screen (the shell hpctui.ui.splash draws before Textual
  loads, where the code has one); first frame: → the first screen drawn by the app itself (no
  splash marker on it); first data: → the node panel names a node. Each checkout's modules are
  byte-compiled first (``compileall``), as ``pip install`` leaves them: with
  PYTHONDONTWRITEBYTECODE set, every start would otherwise compile ~150 modules from source
- CPU % of one core over ``--window`` seconds of idle (after ``--warmup``), from
  ``/proc/PID/stat`` (utime+stime of the whole process, all threads)
- RSS (``VmRSS``) at the end of the idle window
- bytes/s the app wrote to the terminal while idle (tmux ``pipe-pane`` of the pane's output)
- key → update latency: ``Right`` in the heatmap until the node panel's title names the next
  node, and ``Tab``/``Shift+Tab`` until the footer changes; the screen is polled with
  ``capture-pane`` every ~5 ms
- the demo simulator's own cost per tick, measured separately in a subprocess, as % of one
  core at the 2 s refresh, so the app's share is ``CPU - sim``

Not a test: it prints a Markdown table (and writes it to ``--out`` if given). The machine may
be shared: the load average before and after each size is printed; compare ratios within one run.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLS, ROWS = 200, 60
TICK_S = os.sysconf("SC_CLK_TCK")
SPLASH_MARKER = "loading…"  # hpctui.ui.splash.MARKER (not imported: --compare runs older checkouts too)
NODE_TITLE = re.compile(r"Node ([A-Za-z][\w.-]*)")


@dataclass
class Result:
    size: int
    label: str = ""
    first_paint_s: float | None = None
    first_frame_s: float | None = None
    first_data_s: float | None = None
    cpu_pct: float | None = None
    rss_mb: float | None = None
    bytes_per_s: float | None = None
    arrow: list[float] = field(default_factory=list)
    arrow_timeouts: int = 0
    tab: list[float] = field(default_factory=list)
    tab_timeouts: int = 0
    sim_pct: float | None = None
    sim_tick_ms: float | None = None
    sim_rss_mb: float | None = None
    load: str = ""


class Tmux:
    def __init__(self, socket: str) -> None:
        self.socket = socket

    def __call__(self, *args: str, check: bool = True) -> str:
        out = subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args],
                             capture_output=True, text=True, check=check)
        return out.stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "bench", check=False)

    def keys(self, *keys: str) -> None:
        self("send-keys", "-t", "bench", *keys)


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def sim_cost(size: int, ticks: int = 4, src: Path | None = None) -> tuple[float, float, float]:
    """(mean ms per tick, % of one core at a 2 s refresh, RSS MB) of the simulator alone, in a
    subprocess, with ``src``'s code (another checkout) or this one's."""
    code = f"""
import time
from hpctui.sim import SimCluster
T0 = 1_700_000_000.0
sim = SimCluster(size={size}, seed=0, start_time=T0)
sim.to_result(T0, "demo")
ts = []
for k in range(1, {ticks} + 1):
    t = time.process_time(); sim.advance(T0 + 2.0 * k); sim.to_result(T0 + 2.0 * k, "demo"); ts.append(time.process_time() - t)
rss = [int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS:")][0] / 1024
print(sum(ts) / len(ts), rss)
"""
    tree = src if src is not None else ROOT
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tree, env=env)
    # CPU time, not wall time: comparable with the app's /proc CPU figures on a busy machine
    mean, rss = (float(v) for v in out.stdout.split())
    return mean * 1000, 100 * mean / 2.0, rss


def _wait(predicate, timeout: float, poll: float = 0.005) -> float | None:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    while True:
        if predicate():
            return time.perf_counter() - start
        if time.perf_counter() - start > timeout:
            return None
        time.sleep(poll)


def _node(screen: str) -> str | None:
    m = NODE_TITLE.search(screen)
    return m.group(1) if m else None


def _footer(screen: str) -> str:
    lines = screen.rstrip("\n").split("\n")
    return lines[-1] if lines else ""


def run_size(size: int, args: argparse.Namespace, src: Path | None = None, label: str = "",
             sim: tuple[float, float, float] | None = None) -> Result:
    res = Result(size, label)
    res.sim_tick_ms, res.sim_pct, res.sim_rss_mb = sim or sim_cost(size)
    socket = f"hpctui-bench-{os.getpid()}-{size}-{label or 'this'}"  # one tmux server per run
    tmux = Tmux(socket)
    tmp = Path(tempfile.mkdtemp(prefix="hpctui-bench-"))
    out_file = tmp / "out.bin"
    env = f"env XDG_CONFIG_HOME={tmp} XDG_STATE_HOME={tmp} COLORTERM=truecolor TERM=tmux-256color"
    if src is not None:  # another checkout's hpctui (e.g. the code before a change)
        env += f" PYTHONPATH={src}"
    cmd = f"{env} {sys.executable} -m hpctui --demo --demo-size {size}"
    load_before = _load()
    try:
        t0 = time.perf_counter()
        cwd = str(src if src is not None else ROOT)  # `python -m` puts the cwd first on sys.path
        tmux("new-session", "-d", "-s", "bench", "-x", str(COLS), "-y", str(ROWS), "-c", cwd, cmd)
        tmux("set-option", "-t", "bench", "default-terminal", "tmux-256color", check=False)
        tmux("pipe-pane", "-t", "bench", "-o", f"cat >> {out_file}")
        pid = int(tmux("display-message", "-p", "-t", "bench", "#{pane_pid}").strip())
        deadline = t0 + 120
        while time.perf_counter() < deadline:
            screen = tmux.screen()
            now = time.perf_counter() - t0
            if res.first_paint_s is None and screen.strip():
                res.first_paint_s = now
            if res.first_frame_s is None and screen.strip() and SPLASH_MARKER not in screen:
                res.first_frame_s = now
            if _node(screen):
                res.first_data_s = now
                break
            time.sleep(0.005)
        time.sleep(args.warmup)
        # -- idle window ------------------------------------------------------------
        b0 = out_file.stat().st_size if out_file.exists() else 0
        c0, w0 = _cpu_ticks(pid), time.perf_counter()
        time.sleep(args.window)
        c1, w1 = _cpu_ticks(pid), time.perf_counter()
        b1 = out_file.stat().st_size if out_file.exists() else 0
        res.cpu_pct = 100 * (c1 - c0) / TICK_S / (w1 - w0)
        res.rss_mb = _rss_mb(pid)
        res.bytes_per_s = (b1 - b0) / (w1 - w0)
        # -- key → update -----------------------------------------------------------
        rng = random.Random(size)
        for _ in range(args.presses):
            before = _node(tmux.screen())
            tmux.keys("Right")
            took = _wait(lambda b=before: (n := _node(tmux.screen())) is not None and n != b, args.key_timeout)
            if took is None:
                res.arrow_timeouts += 1
            else:
                res.arrow.append(took)
            time.sleep(rng.uniform(0.05, 0.4))  # land at different phases of the refresh
        for i in range(args.tabs):
            before = _footer(tmux.screen())
            tmux.keys("Tab" if i % 2 == 0 else "BTab")
            took = _wait(lambda b=before: _footer(tmux.screen()) != b, args.key_timeout)
            if took is None:
                res.tab_timeouts += 1
            else:
                res.tab.append(took)
            time.sleep(rng.uniform(0.05, 0.4))
    finally:
        tmux("kill-server", check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    res.load = f"{load_before} → {_load()}"
    return res


def _ms(v: float | None) -> str:
    return "N/A" if v is None else f"{v * 1000:,.0f}"


def _lat(values: list[float], timeouts: int) -> str:
    if not values:
        return f"N/A ({timeouts} timed out)"
    text = f"{_pct(values, 0.5) * 1000:,.0f} / {_pct(values, 0.9) * 1000:,.0f} / {max(values) * 1000:,.0f}"
    return text + (f" ({timeouts} timed out)" if timeouts else "")


def table(results: list[Result], args: argparse.Namespace) -> str:
    lines = [
        f"tmux {COLS}×{ROWS}, idle window {args.window:.0f} s after {args.warmup:.0f} s, "
        f"{args.presses} Right + {args.tabs} Tab presses, {os.cpu_count()} CPUs, python {sys.version.split()[0]}",
        "",
        "| nodes | code | first paint ms | first frame ms | first data ms | CPU % core | sim % core (ms/tick) | app % core | RSS MB (sim alone) "
        "| bytes/s idle | Right p50/p90/max ms | Tab p50/p90/max ms | load 1/5/15 before → after |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        app = None if r.cpu_pct is None or r.sim_pct is None else max(0.0, r.cpu_pct - r.sim_pct)
        lines.append(
            f"| {r.size:,} | {r.label or 'this'} | {_ms(r.first_paint_s)} | {_ms(r.first_frame_s)} | {_ms(r.first_data_s)} | {r.cpu_pct:.1f} "
            f"| {r.sim_pct:.1f} ({r.sim_tick_ms:.0f}) | {app:.1f} | {r.rss_mb:.0f} ({r.sim_rss_mb:.0f}) "
            f"| {r.bytes_per_s:,.0f} "
            f"| {_lat(r.arrow, r.arrow_timeouts)} | {_lat(r.tab, r.tab_timeouts)} | {r.load} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 4096, 16384])
    p.add_argument("--window", type=float, default=30.0, help="idle measuring window, s")
    p.add_argument("--warmup", type=float, default=10.0, help="wait after first data, s")
    p.add_argument("--presses", type=int, default=30, help="Right presses")
    p.add_argument("--tabs", type=int, default=12, help="Tab/Shift+Tab presses")
    p.add_argument("--key-timeout", type=float, default=10.0)
    p.add_argument("--out", type=Path, help="also write the table here")
    p.add_argument("--compare", type=Path, metavar="DIR",
                   help="another checkout (e.g. `git archive` of the old commit): each size runs that code, "
                        "then this one, back to back, so both see the same machine load")
    args = p.parse_args(argv)
    if shutil.which("tmux") is None:
        sys.exit("bench_app: tmux is needed (apt-get install tmux)")
    for tree in (ROOT, args.compare):  # as installed: byte-compiled (see the module's docstring)
        if tree is not None:
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(tree) / "hpctui")],
                           check=False, capture_output=True, env=dict(os.environ, PYTHONDONTWRITEBYTECODE=""))
    results = []
    for size in args.sizes:
        sim = sim_cost(size)
        if args.compare is not None:  # each checkout's own simulator, so "app" subtracts the right one
            r = run_size(size, args, args.compare.resolve(), "before", sim_cost(size, src=args.compare.resolve()))
            results.append(r)
            print(f"  {size} before: done ({r.load})", file=sys.stderr, flush=True)
        r = run_size(size, args, None, "after" if args.compare is not None else "", sim)
        results.append(r)
        print(f"  {size}: done ({r.load})", file=sys.stderr, flush=True)
    text = table(results, args)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)


if __name__ == "__main__":
    main(sys.argv[1:])
