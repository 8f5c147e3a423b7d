"""SSH node probes at 64 / 256 / 1,024 addresses: hpctui (warm streaming) vs clush and pdsh.

Not a test. Starts the loopback sshd bed (tests/testbed/ssh), then per size:
  - hpctui cold connect: time until every node is connected, and until every node has a record;
  - hpctui warm: CPU % of one core and RSS over a window at a 2 s interval, and the time of a
    refresh (one collect(): every node's latest record, at most one interval old);
  - clush and pdsh running the same probe once (one record) against the same sshd, fan-out 64.

    python bench/bench_ssh.py [--sizes 64,256,1024] [--window 20] [--fanout 64]

Needs root (sshd as the test bed runs it), sshd, pdsh (``bash .ci/ssh-deps.sh``) and clush
(``pip install clustershell``, in the test extras).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "testbed" / "ssh"))

from sshbed import SshBed  # noqa: E402

from hpctui.sources.ssh.probe.script import ProbeOptions  # noqa: E402
from hpctui.sources.ssh.settings import SshSettings  # noqa: E402
from hpctui.sources.ssh.source import SshSource  # noqa: E402


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


SECTIONS = ("gpus", "xid", "ib", "mounts", "services", "resources")


def probe_options(sections: str) -> ProbeOptions:
    """``all``: the full probe (on this GPU-less host nvidia-smi, IB and systemd are absent);
    ``res``: only the /proc resources section (one awk per record), kinder to a shared 2-core bed."""
    if sections == "all":
        return ProbeOptions()
    keep = {"res": {"resources"}}[sections]
    return ProbeOptions(**{k: k in keep for k in SECTIONS})  # type: ignore[arg-type]


def settings_for(bed: SshBed, interval: float, fanout: int, sections: str = "res", **kw: Any) -> SshSettings:
    return SshSettings(nodes=f"{bed.prefix}[0001-{bed.n_nodes:04d}]", from_snapshot=False,
                       ssh_config=[str(bed.ssh_config)], known_hosts=[str(bed.known_hosts)],
                       interval_s=interval, connect_timeout_s=30, max_handshakes=fanout, keepalive_s=0,
                       probe=probe_options(sections), **kw)


async def run_hpctui(bed: SshBed, window: float, interval: float, fanout: int, sections: str) -> dict[str, float]:
    source = SshSource(settings_for(bed, interval, fanout, sections))
    n = bed.n_nodes
    t0 = time.perf_counter()
    c0 = cpu_s()
    connected_s = first_s = float("nan")
    try:
        await source.collect()
        p95_s = float("nan")
        while time.perf_counter() - t0 < 240:
            assert source.pool is not None
            if connected_s != connected_s and source.pool.handshakes_done >= n:
                connected_s = time.perf_counter() - t0
            have = sum(1 for r in source.runners.values() if r.records)
            if p95_s != p95_s and have >= 0.95 * n:
                p95_s = time.perf_counter() - t0
            if have == n:
                first_s = time.perf_counter() - t0
                if connected_s != connected_s:
                    connected_s = first_s
                break
            await asyncio.sleep(0.05)
        cold_cpu = cpu_s() - c0
        connected = sum(1 for r in source.runners.values() if r.connected)
        errors: dict[str, int] = {}
        for r in source.runners.values():
            if r.error:
                key = r.error.split(":")[0][:60]
                errors[key] = errors.get(key, 0) + 1
        if connected < n or errors:
            print(f"  after cold phase: {connected}/{n} connected; errors {errors}", flush=True)
        await asyncio.sleep(interval)  # settle
        # warm: what the poller does, one collect() per interval, over the window
        c1, w1 = cpu_s(), time.perf_counter()
        refresh: list[float] = []
        fresh: list[int] = []
        while time.perf_counter() - w1 < window:
            t = time.perf_counter()
            result = await source.collect()
            refresh.append(time.perf_counter() - t)
            fresh.append(sum(1 for p in (result.probes or {}).values() if p.reachable))
            await asyncio.sleep(max(0.0, interval - (time.perf_counter() - t)))
        wall = time.perf_counter() - w1
        cpu_pct = 100 * (cpu_s() - c1) / wall
        records = sum(r.records for r in source.runners.values())
        return {"connected_s": connected_s, "first_records_s": first_s, "p95_s": p95_s, "cold_cpu_s": cold_cpu,
                "cpu_pct": cpu_pct, "rss_mib": rss_mib(), "refresh_s": sorted(refresh)[len(refresh) // 2],
                "fresh_min": min(fresh), "records": records}
    finally:
        await source.close()


def peer_command(source_settings: SshSettings) -> str:
    """The same probe, one record then exit, as the peers run it."""
    from hpctui.sources.ssh.codec import ProbesCodec

    return ProbesCodec(source_settings, one_shot=True).command("node")


def run_peer(tool: str, bed: SshBed, command: str, fanout: int) -> tuple[float, int]:
    hosts = f"{bed.prefix}[0001-{bed.n_nodes:04d}]"
    env = dict(os.environ)
    if tool == "clush":
        clush = shutil.which("clush") or str(Path(sys.executable).parent / "clush")
        argv = [clush, "-w", hosts, "-f", str(fanout), "-o", f"-F {bed.ssh_config}", "-N", "-q", command]
    else:
        env["PDSH_SSH_ARGS_APPEND"] = f"-F {bed.ssh_config}"
        env["PDSH_RCMD_TYPE"] = "ssh"
        argv = ["pdsh", "-R", "ssh", "-f", str(fanout), "-w", hosts, command]
    t = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, timeout=900, check=False)
    wall = time.perf_counter() - t
    return wall, proc.stdout.count(b"@@hpctui end") or proc.stdout.count(b"\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="64,256,1024")
    ap.add_argument("--window", type=float, default=20.0, help="warm measurement window, s")
    ap.add_argument("--interval", type=float, default=2.0)
    ap.add_argument("--fanout", type=int, default=64)
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--sections", choices=("res", "all"), default="res", help="which probe sections run")
    args = ap.parse_args()
    from hpctui.sources.ssh.pool import raise_nofile_limit

    print(f"RLIMIT_NOFILE soft/hard after raise: {raise_nofile_limit()}; load {os.getloadavg()[0]:.1f}; "
          f"{os.cpu_count()} cores", flush=True)
    rows = []
    for n in (int(x) for x in args.sizes.split(",")):
        bed = SshBed(n_nodes=n, env=bench_env())
        try:
            t = time.perf_counter()
            bed.start()
            print(f"\n== {n} addresses: bed up in {time.perf_counter() - t:.1f} s "
                  f"({(n + 15) // 16} sshd listeners)", flush=True)
            h = asyncio.run(run_hpctui(bed, args.window, args.interval, args.fanout, args.sections))
            print(f"hpctui: connected {h['connected_s']:.2f} s, 95% of nodes' first records {h['p95_s']:.2f} s, "
                  f"every node's first record {h['first_records_s']:.2f} s "
                  f"(cold CPU {h['cold_cpu_s']:.2f} s); warm at {args.interval:g} s: {h['cpu_pct']:.1f}% of a core, "
                  f"RSS {h['rss_mib']:.0f} MiB, refresh (collect) {h['refresh_s'] * 1000:.1f} ms, "
                  f"fresh nodes min {h['fresh_min']}/{n}", flush=True)
            row: dict[str, Any] = {"n": n, **h}
            if not args.no_peers:
                cmd = peer_command(settings_for(bed, args.interval, args.fanout, args.sections))
                for tool in ("clush", "pdsh"):
                    wall, got = run_peer(tool, bed, cmd, args.fanout)
                    row[tool] = wall
                    print(f"{tool}: {wall:.2f} s for one round ({got} records) -> hpctui refresh is "
                          f"{wall / max(h['refresh_s'], 1e-6):,.0f}x faster; one round vs hpctui cold "
                          f"{wall / h['first_records_s']:.1f}x", flush=True)
            rows.append(row)
        finally:
            bed.stop()
    print("\nsize  connect_s  first_rec_s  cpu%  rss_MiB  refresh_ms  clush_s  pdsh_s")
    for r in rows:
        print(f"{r['n']:>5} {r['connected_s']:>9.2f} {r['first_records_s']:>11.2f} {r['cpu_pct']:>5.1f} "
              f"{r['rss_mib']:>8.0f} {r['refresh_s'] * 1000:>10.1f} {r.get('clush', float('nan')):>8.2f} "
              f"{r.get('pdsh', float('nan')):>7.2f}")
    return 0


def bench_env() -> dict[str, str]:
    return {}


if __name__ == "__main__":
    raise SystemExit(main())
