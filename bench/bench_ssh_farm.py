"""The SSH source at 1,024 nodes against the SSH farm, with pdsh and clush on the same farm in the same run.

Not a test. The farm (tests/testbed/sshfarm) is ONE asyncssh server process on N loopback addresses that
answers the probe with recorded probe records at the interval and plain commands with canned answers, so
the server side costs little and what is measured is the client. The farm's CPU is read from its own
/proc entry and reported beside the client's, never mixed in.

Phases (one farm, one run):
  1. hpctui cold: the real SshSource (this process), max_handshakes = --fanout: time until every node is
     connected, until 95 % and until every node has its first record; client and farm CPU of that phase.
  2. hpctui warm: one collect() per interval over --window seconds (what the poller does): client CPU % of
     one core, RSS (and its growth over the imports alone), records received vs expected, the farm's CPU %.
  3. peers, one round each over all N nodes at fan-out --fanout: pdsh and clush running ``uptime`` and the
     probe once (one record); hpctui's command runner (fresh connections) running ``uptime`` for
     comparison. Wall time, nodes answered, CPU of the tool with its ssh children, the farm's CPU.

    PYTHONPATH=$PWD python bench/bench_ssh_farm.py [--nodes 1024] [--interval 2] [--window 30] [--fanout 64]
        [--mix h100-busy] [--no-peers] [--profile FILE.svg] [--json FILE] [--code CHECKOUT]

The cyclic GC runs as in the app (``--gc app``: hpctui/core/gc_tuning.py) unless ``--gc default``.
``--mix`` names the recordings served (comma list, given to the nodes in turn): ``h100-busy`` (default:
8-GPU H100 whose GPU values change every record, the parser's caches do not help), ``gpu-faulty``,
``gpu-mig``, ``cpu-ro`` (tests/fixtures/probes/loop). ``--profile`` runs py-spy on this process over the
warm window (``pip install py-spy``). The load average is printed with every phase: compare within a run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _code_arg() -> str | None:
    """``--code DIR``: the hpctui checkout to measure (read before hpctui is imported)."""
    for i, a in enumerate(sys.argv):
        if a == "--code" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if a.startswith("--code="):
            return a.split("=", 1)[1]
    return None


sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "testbed" / "sshfarm"))
if _code_arg():
    sys.path.insert(0, str(Path(_code_arg() or ".").resolve()))

from farm import SshFarm  # noqa: E402

from hpctui.model.action import CommandRun  # noqa: E402
from hpctui.sources.ssh.settings import SshSettings  # noqa: E402
from hpctui.sources.ssh.source import SshSource  # noqa: E402

NAN = float("nan")


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def rss_mib(key: str = "VmRSS:") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1]) / 1024
    return NAN


def cpu_s(who: int = resource.RUSAGE_SELF) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def settings_for(farm: SshFarm, interval: float, fanout: int) -> SshSettings:
    """The source as a site would configure it: ssh_config (one Host block per node), known_hosts, the
    default probe options and keepalive; only the connect timeout is raised for a loaded 2-core box."""
    return SshSettings(nodes=farm.hostlist, from_snapshot=False, ssh_config=[str(farm.ssh_config)],
                       known_hosts=[str(farm.known_hosts)], interval_s=interval, connect_timeout_s=30,
                       max_handshakes=fanout)


class Profiler:
    """py-spy on this process for a while (an SVG flame graph), if asked for and installed."""

    def __init__(self, out: str | None, seconds: float) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        if not out:
            return
        spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        if not Path(spy).exists():
            print("  (py-spy not installed: no profile)", flush=True)
            return
        fmt = "raw" if out.endswith(".txt") else "flamegraph"
        self.proc = subprocess.Popen([spy, "record", "--pid", str(os.getpid()), "--duration", str(int(seconds)),
                                      "--rate", "50", "--nonblocking", "--format", fmt, "--output", out],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def wait(self) -> None:
        if self.proc is not None:
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def gc_settings(mode: str) -> None:
    """``app``: the cyclic-GC settings the app runs with (hpctui/core/gc_tuning.py: fewer young collections,
    what is alive at start frozen, full collections only when the app asks, after a refresh);
    ``default``: CPython's."""
    if mode == "app":
        from hpctui.core import gc_tuning

        gc_tuning.tune()
        gc_tuning.freeze_startup()


def after_refresh(mode: str) -> None:
    if mode == "app":
        from hpctui.core import gc_tuning

        gc_tuning.collect()  # as the app does after drawing a new snapshot (itself limited to every ~5 s)


async def run_hpctui(farm: SshFarm, args: argparse.Namespace) -> dict[str, Any]:
    n = farm.n_nodes
    gc_settings(args.gc)
    source = SshSource(settings_for(farm, args.interval, args.fanout))
    out: dict[str, Any] = {"rss_before_mib": rss_mib()}
    t0 = time.perf_counter()
    c0, f0 = cpu_s(), farm.cpu_s()
    marks: dict[str, float] = {}

    async def watch() -> None:
        """Milestones while the first collect() waits for every node's first record: wall s since the start,
        and the client's and the farm's CPU seconds up to the last one."""
        while True:
            now = time.perf_counter() - t0
            pool = source.pool
            if "connected_s" not in marks and pool is not None and pool.handshakes_done >= n:
                marks["connected_s"] = now
            have = sum(1 for r in source.runners.values() if r.records)
            if "p95_s" not in marks and have >= 0.95 * n:
                marks["p95_s"] = now
            if have >= n:
                marks.update(first_records_s=now, cold_cpu_s=cpu_s() - c0, cold_farm_cpu_s=farm.cpu_s() - f0)
                marks.setdefault("connected_s", now)
                return
            await asyncio.sleep(0.02)

    try:
        watcher = asyncio.create_task(watch())
        await source.collect()
        out["first_collect_s"] = time.perf_counter() - t0
        try:
            await asyncio.wait_for(watcher, timeout=300)
        except TimeoutError:
            pass
        out.update({"connected_s": NAN, "p95_s": NAN, "first_records_s": NAN, "cold_cpu_s": NAN,
                    "cold_farm_cpu_s": NAN}, **marks, cold_load=load())
        connected_s, p95_s, first_s = out["connected_s"], out["p95_s"], out["first_records_s"]
        errors: dict[str, int] = {}
        for r in source.runners.values():
            if r.error:
                errors[r.error.split(":")[0][:60]] = errors.get(r.error.split(":")[0][:60], 0) + 1
        out["cold_errors"] = errors
        print(f"cold ({out['cold_load']}): first collect returned {out['first_collect_s']:.2f} s; every node "
              f"connected {connected_s:.2f} s; 95% of first records {p95_s:.2f} s; every first record "
              f"{first_s:.2f} s; CPU client {out['cold_cpu_s']:.2f} s, farm {out['cold_farm_cpu_s']:.2f} s"
              + (f"; errors {errors}" if errors else ""), flush=True)
        await asyncio.sleep(args.interval)  # settle: the streams' phases spread over one interval
        # warm: one collect() per interval, as the poller calls it
        prof = Profiler(args.profile, args.window)
        records0 = sum(r.records for r in source.runners.values())
        c1, f1, w1 = cpu_s(), farm.cpu_s(), time.perf_counter()
        refresh: list[float] = []
        fresh: list[int] = []
        while time.perf_counter() - w1 < args.window:
            t = time.perf_counter()
            result = await source.collect()
            refresh.append(time.perf_counter() - t)
            fresh.append(sum(1 for p in (result.probes or {}).values() if p.reachable))
            after_refresh(args.gc)
            await asyncio.sleep(max(0.0, args.interval - (time.perf_counter() - t)))
        wall = time.perf_counter() - w1
        cpu, fcpu = cpu_s() - c1, farm.cpu_s() - f1
        records = sum(r.records for r in source.runners.values()) - records0
        prof.wait()
        out.update(warm_cpu_pct=100 * cpu / wall, warm_farm_cpu_pct=100 * fcpu / wall, warm_wall_s=wall,
                   rss_mib=rss_mib(), hwm_mib=rss_mib("VmHWM:"), farm_rss_mib=farm.rss_mib(),
                   refresh_ms=1000 * sorted(refresh)[len(refresh) // 2], fresh_min=min(fresh),
                   records=records, records_expected=n * wall / args.interval,
                   bad_records=sum(r.bad_records for r in source.runners.values()),
                   us_per_record=1e6 * cpu / max(records, 1), warm_load=load())
        print(f"warm ({out['warm_load']}), {wall:.0f} s at {args.interval:g} s: client {out['warm_cpu_pct']:.1f}% "
              f"of a core ({out['us_per_record']:.0f} µs CPU per record), farm {out['warm_farm_cpu_pct']:.1f}%; "
              f"RSS {out['rss_mib']:.0f} MiB (peak {out['hwm_mib']:.0f}; {out['rss_before_mib']:.0f} before the "
              f"source), farm {out['farm_rss_mib']:.0f} MiB; {records} records of {out['records_expected']:.0f} "
              f"expected, {out['bad_records']} bad; collect {out['refresh_ms']:.1f} ms; fresh nodes min "
              f"{out['fresh_min']}/{n}", flush=True)
    finally:
        await source.close()
    return out


async def runner_round(farm: SshFarm, args: argparse.Namespace, command: tuple[str, ...]) -> tuple[int, int]:
    """hpctui's command runner (custom actions): fresh connections, --fanout at once; (answered, rc 0)."""
    runner = SshSource(settings_for(farm, args.interval, args.fanout)).command_runner()
    gate = asyncio.Semaphore(args.fanout)

    async def one(node: str) -> bool:
        async with gate:
            o = await runner.run(CommandRun(label=node, argv=command, host=node), 60, 65536)
            return o.rc == 0 and bool(o.output.strip())

    try:
        await runner.resolve(farm.names)
        ok = await asyncio.gather(*(one(n) for n in farm.names))
    finally:
        await runner.close()
    return len(ok), sum(ok)


def peer_round(tool: str, farm: SshFarm, command: str, fanout: int) -> tuple[int, str]:
    """One round of ``tool`` over every farm node; (nodes answered, stderr tail)."""
    env = dict(os.environ)
    if tool == "clush":
        clush = shutil.which("clush") or str(Path(sys.executable).parent / "clush")
        argv = [clush, "-w", farm.hostlist, "-f", str(fanout), "-o", f"-F {farm.ssh_config}", "-t", "60",
                "-u", "120", command]
    else:
        env["PDSH_SSH_ARGS_APPEND"] = f"-F {farm.ssh_config}"
        argv = ["pdsh", "-R", "ssh", "-f", str(fanout), "-u", "120", "-w", f"^{farm.hosts_file}", command]
    proc = subprocess.run(argv, env=env, capture_output=True, timeout=900, check=False, stdin=subprocess.DEVNULL)
    answered: set[str] = set()
    end_marks = 0
    for line in proc.stdout.decode(errors="replace").splitlines():
        node, sep, rest = line.partition(": ")
        if sep and node in farm.names:
            answered.add(node)
            end_marks += rest.startswith("@@hpctui end ")
    got = end_marks if "hpctui node probe" in command else len(answered)
    return got, proc.stderr.decode(errors="replace")[-300:]


def timed(fn: Any, farm: SshFarm) -> tuple[Any, float, float, float]:
    """(result, wall s, CPU s of this process + its children, farm CPU s)."""
    c, k, f, t = cpu_s(), cpu_s(resource.RUSAGE_CHILDREN), farm.cpu_s(), time.perf_counter()
    result = fn()
    wall = time.perf_counter() - t
    return result, wall, cpu_s() - c + cpu_s(resource.RUSAGE_CHILDREN) - k, farm.cpu_s() - f


def run_peers(farm: SshFarm, args: argparse.Namespace) -> list[dict[str, Any]]:
    from hpctui.sources.ssh.codec import ProbesCodec

    probe_once = ProbesCodec(settings_for(farm, args.interval, args.fanout), one_shot=True).command("node")
    rows = []
    plan: list[tuple[str, str, Any]] = [
        ("hpctui command runner", "uptime", lambda: asyncio.run(runner_round(farm, args, ("uptime",)))[1])]
    for tool in ("pdsh", "clush"):
        if tool == "pdsh" and shutil.which("pdsh") is None:
            print("pdsh: not installed (apt-get install pdsh)", flush=True)
            continue
        if tool == "clush" and not (shutil.which("clush") or (Path(sys.executable).parent / "clush").exists()):
            print("clush: not installed (pip install clustershell, or apt-get install clustershell)", flush=True)
            continue
        plan.append((tool, "uptime", lambda t=tool: peer_round(t, farm, "uptime", args.fanout)))
        plan.append((tool, "probe once", lambda t=tool: peer_round(t, farm, probe_once, args.fanout)))
    for tool, what, fn in plan:
        got, wall, cpu, fcpu = timed(fn, farm)
        answered, why = got if isinstance(got, tuple) else (got, "")
        row = {"tool": tool, "command": what, "wall_s": wall, "answered": answered, "cpu_s": cpu,
               "farm_cpu_s": fcpu, "load": load()}
        rows.append(row)
        print(f"{tool} {what} ({row['load']}): {wall:.2f} s, {answered}/{farm.n_nodes} nodes, CPU {cpu:.2f} s "
              f"(with its ssh processes), farm {fcpu:.2f} s" + (f"; stderr: {why.strip()[-200:]}"
                                                                 if answered < farm.n_nodes and why else ""),
              flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1024)
    ap.add_argument("--interval", type=float, default=2.0)
    ap.add_argument("--window", type=float, default=30.0, help="warm measurement window, s")
    ap.add_argument("--fanout", type=int, default=64, help="handshakes in flight (max_handshakes), peers' -f")
    ap.add_argument("--mix", default="h100-busy", help="recordings served, given to the nodes in turn")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--profile", default=None, help="py-spy output of the warm window (.svg, or .txt = raw)")
    ap.add_argument("--json", default=None, help="write every number here")
    ap.add_argument("--gc", choices=("app", "default"), default="app",
                    help="cyclic-GC settings: the app's (default) or CPython's")
    ap.add_argument("--code", default=None, help="hpctui checkout to measure (default: this one)")
    args = ap.parse_args()
    import hpctui
    from hpctui.sources.ssh.pool import raise_nofile_limit

    print(f"hpctui from {Path(hpctui.__file__).parent}; RLIMIT_NOFILE after raise: {raise_nofile_limit()}; "
          f"{os.cpu_count()} cores; {load()}", flush=True)
    farm = SshFarm(n_nodes=args.nodes, mix=tuple(args.mix.split(",")))
    t = time.perf_counter()
    farm.start(timeout=120)
    report: dict[str, Any] = {"nodes": args.nodes, "interval_s": args.interval, "fanout": args.fanout,
                              "mix": args.mix, "cores": os.cpu_count()}
    try:
        print(f"farm: {args.nodes} addresses ({farm.addresses[0]} ...) port {farm.port}, up in "
              f"{time.perf_counter() - t:.1f} s, pid {farm.pid}, RSS {farm.rss_mib():.0f} MiB; {load()}", flush=True)
        report["hpctui"] = asyncio.run(run_hpctui(farm, args))
        report["farm_sessions_cpu_s"] = farm.cpu_s()
        if not args.no_peers:
            report["peers"] = run_peers(farm, args)
    finally:
        farm.stop()
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
