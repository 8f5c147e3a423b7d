"""Prometheus source at scale: one refresh of N GPU nodes × 8 GPUs (+ N/4 CPU nodes) through a
real Prometheus (Debian's, loopback) scraping the simulator exporter.

For each size it reports, per refresh (median of REFRESHES):
- floor: wall time for Prometheus to answer the same queries, bodies read but not decoded
  (same concurrency), and the CPU Prometheus itself spent on them;
- hpctui: wall time of ``PrometheusSource.collect()``, the CPU this process spent on it
  (HTTP client + JSON decode + model), that CPU as a share of one core at a 5 s interval,
  and the process's peak RSS.

Run: ``python bench/bench_prometheus.py [gpu_nodes ...]`` (default 1024 4096). Needs the
``prometheus`` binary (.ci/prom-deps.sh). Not a test: it prints a table.
"""

from __future__ import annotations

import asyncio
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "testbed" / "prometheus"))

import aiohttp  # noqa: E402
from promlab import PromLab, free_port  # noqa: E402

from hpctui.sources.prometheus.settings import PrometheusSettings  # noqa: E402
from hpctui.sources.prometheus.source import PrometheusSource  # noqa: E402

REFRESHES = 5
INTERVAL_S = 5.0
CLK = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def self_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


async def floor(source: PrometheusSource, prom_pid: int) -> tuple[float, float, int]:
    """Wall time and Prometheus CPU to answer every query of one refresh; bytes received."""
    gate = asyncio.Semaphore(source.settings.max_parallel_queries)
    url = f"{source.client.base}/api/v1/query"
    t = time.time()
    total = 0

    async def one(session: aiohttp.ClientSession, expr: str) -> None:
        nonlocal total
        async with gate, session.post(url, data={"query": expr, "time": f"{t:.3f}"}) as resp:
            total += len(await resp.read())

    cpu0, wall0 = proc_cpu_s(prom_pid), time.perf_counter()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as session:
        await asyncio.gather(*(one(session, f.expr) for f in source.families))
    return time.perf_counter() - wall0, proc_cpu_s(prom_pid) - cpu0, total


async def measure(lab: PromLab, nodes: int) -> dict[str, float]:
    settings = PrometheusSettings(url=lab.url, timeout_s=300.0, scrape_interval_s=lab.scrape_interval_s,
                                  mounts=["/home", "/lustre/scratch"])
    source = PrometheusSource(settings)
    assert lab.proc is not None
    floors, prom_cpu, walls, cpus = [], [], [], []
    size = 0
    gpus = 0
    rss_before = rss_mib()
    try:
        await source.collect()  # warm: connection pool, name cache
        for _ in range(REFRESHES):
            w, c, size = await floor(source, lab.proc.pid)
            floors.append(w)
            prom_cpu.append(c)
            cpu0, wall0 = self_cpu_s(), time.perf_counter()
            result = await source.collect()
            walls.append(time.perf_counter() - wall0)
            cpus.append(self_cpu_s() - cpu0)
            gpus = sum(len(g) for g in (result.gpus or {}).values())
    finally:
        await source.close()
    cpu = statistics.median(cpus)
    return {"nodes": nodes, "gpus": gpus, "queries": len(source.families), "mb": size / 1e6,
            "floor_s": statistics.median(floors), "prom_cpu_s": statistics.median(prom_cpu),
            "wall_s": statistics.median(walls), "cpu_s": cpu, "core_pct": 100 * cpu / INTERVAL_S,
            "rss_mib": rss_mib(), "rss_before_mib": rss_before}


def run_size(nodes: int) -> dict[str, float]:
    port = free_port()
    exporter = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/testbed/prometheus/exporter.py"), "--nodes", str(nodes), "--port", str(port),
         "--tick-s", "3600"], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)
    interval = 15.0 if nodes <= 1024 else 30.0
    lab = PromLab(exporter_port=port, scrape_interval_s=interval, scrape_timeout_s=interval - 1)
    try:
        assert exporter.stdout is not None
        exporter.stdout.readline()  # the port: it listens
        lab.start()
        t = time.monotonic()
        lab.wait_scraped(2, timeout_s=10 * interval)
        print(f"# {nodes} GPU nodes: 2 scrapes in {time.monotonic() - t:.0f} s", file=sys.stderr)
        return asyncio.run(measure(lab, nodes))
    finally:
        lab.stop()
        exporter.terminate()
        exporter.wait(timeout=30)


def main(argv: list[str]) -> None:
    sizes = [int(a) for a in argv] or [1024, 4096]
    rows = [run_size(n) for n in sizes]
    print(f"{'GPU nodes':>9} {'GPUs':>6} {'queries':>7} {'answer MB':>9} {'prom wall s':>11} {'prom CPU s':>10} "
          f"{'hpctui wall s':>13} {'hpctui CPU s':>12} {'% core @5s':>10} {'peak RSS MiB':>12}")
    for r in rows:
        print(f"{r['nodes']:>9.0f} {r['gpus']:>6.0f} {r['queries']:>7.0f} {r['mb']:>9.1f} {r['floor_s']:>11.3f} "
              f"{r['prom_cpu_s']:>10.3f} {r['wall_s']:>13.3f} {r['cpu_s']:>12.3f} {r['core_pct']:>10.1f} "
              f"{r['rss_mib']:>12.0f}")


if __name__ == "__main__":
    main(sys.argv[1:])
