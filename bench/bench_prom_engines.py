"""Prometheus source against Debian's VictoriaMetrics with preloaded data: N GPU nodes × 8 GPUs
(+ N/4 CPU nodes, IB ports, mounts) imported through ``/api/v1/import/prometheus`` (two samples,
so ``rate()``/``increase()`` answer), then ``PrometheusSource.collect()`` measured with no scrape
running: the numbers are hpctui's, not a scrape storm's.

Per size, both values of ``detail`` against the same engine and data, each in a process of its own
(median of REFRESHES): hpctui's CPU per refresh (HTTP client + decode + model) and its share of a
core at a 5 s interval; the engine's CPU for the same refresh; the bytes of one refresh's answers
on the wire (gzip, what the client asks for) and decoded; the peak RSS of that process; how many
nodes and GPUs were read in full (aggregate: the sick ones and 16 looked at).

Run: ``python bench/bench_prom_engines.py [gpu_nodes ...] [--aggregate-only]`` (default 1024 4096). Needs
``victoria-metrics`` (.ci/prom-deps.sh). Not a test: it prints a table (Markdown).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "testbed" / "prometheus"))

import aiohttp  # noqa: E402
from promlab import VICTORIA, free_port  # noqa: E402

from hpctui.sources.prometheus.settings import PrometheusSettings  # noqa: E402
from hpctui.sources.prometheus.source import PrometheusSource  # noqa: E402

REFRESHES = int(os.environ.get("HPCTUI_BENCH_REFRESHES", "5"))
LOOKED_AT = 16  # nodes someone looked at (want_detail): the selected node, charts, problems opened
INTERVAL_S = 5.0
CLK = os.sysconf("SC_CLK_TCK")
RENDER = ("import sys; sys.path.insert(0, {tb!r}); from exporter import SimExporter; "
          "sys.stdout.buffer.write(SimExporter(size={n}, tick_s=3600).render())")


def proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def self_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def rss_mib() -> float:
    """Peak RSS of this process (VmHWM: unlike ru_maxrss, not inherited across fork + exec from the parent)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def start_vm(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [VICTORIA, f"-storageDataPath={workdir / 'data'}", f"-httpListenAddr=127.0.0.1:{port}", "-loggerLevel=ERROR",
         "-retentionPeriod=1d", "-search.latencyOffset=0s", "-search.maxUniqueTimeseries=4000000",
         "-search.minStalenessInterval=10m"],  # two imported samples stay visible for the whole run
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=1):
                return proc, url
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("victoria-metrics not ready")


def preload(url: str, text: bytes) -> float:
    """Two imports of the exposition text, 2 s apart; seconds until a query sees the series."""
    t0 = time.monotonic()
    for i in range(2):
        if i:
            time.sleep(2.0)
        req = urllib.request.Request(f"{url}/api/v1/import/prometheus", data=text, method="POST")
        with urllib.request.urlopen(req, timeout=600):
            pass
    urllib.request.urlopen(f"{url}/internal/force_flush", timeout=60).close()
    return time.monotonic() - t0


async def wire(source: PrometheusSource, exprs: list[str], t: float) -> tuple[int, int]:
    """Bytes of the answers to ``exprs`` on the wire (gzip asked for, not decoded) and decoded."""
    url = f"{source.client.base}/api/v1/query"
    gate = asyncio.Semaphore(source.settings.max_parallel_queries)
    sizes: list[tuple[int, int]] = []

    async def one(session: aiohttp.ClientSession, expr: str) -> None:
        async with gate:
            async with session.post(url, data={"query": expr, "time": f"{t:.3f}"},
                                    headers={"Accept-Encoding": "gzip"}) as resp:
                raw = await resp.read()
            async with session.post(url, data={"query": expr, "time": f"{t:.3f}"},
                                    headers={"Accept-Encoding": "identity"}) as resp:
                sizes.append((len(raw), len(await resp.read())))

    async with aiohttp.ClientSession(auto_decompress=False, timeout=aiohttp.ClientTimeout(total=600)) as session:
        await asyncio.gather(*(one(session, e) for e in exprs))
    return sum(s[0] for s in sizes), sum(s[1] for s in sizes)


async def measure(url: str, vm_pid: int, nodes: int, detail: str) -> dict[str, float | str]:
    """One mode's refreshes (in a process of its own, so peak RSS is this mode's alone)."""
    settings = PrometheusSettings(url=url, timeout_s=600.0, scrape_interval_s=15.0, rate_window_s=60.0,
                                  delta_window_s=60.0, keep_stale_s=3600.0, mounts=["/home", "/lustre/scratch"],
                                  detail=detail)  # type: ignore[arg-type]
    source = PrometheusSource(settings)
    asked: list[str] = []
    query_raw = source.client.query_raw

    async def recording(expr: str, at: float | None = None) -> bytes:
        asked.append(expr)
        return await query_raw(expr, at)

    source.client.query_raw = recording  # type: ignore[method-assign]
    walls, cpus, engine = [], [], []
    gpus = summaries = 0
    failed: list[str] = []
    try:
        first = await source.collect()  # warm: connection pool, name cache
        names = sorted(first.gpu_summaries or first.gpus or ())
        for name in names[::max(1, len(names) // LOOKED_AT)][:LOOKED_AT]:  # looked at: selected, charted, opened
            source.want_detail(name)
        await source.collect()
        for _ in range(REFRESHES):
            asked.clear()
            cpu0, vm0, wall0 = self_cpu_s(), proc_cpu_s(vm_pid), time.perf_counter()
            result = await source.collect()
            walls.append(time.perf_counter() - wall0)
            cpus.append(self_cpu_s() - cpu0)
            engine.append(proc_cpu_s(vm_pid) - vm0)
            gpus = sum(len(g) for g in (result.gpus or {}).values())
            summaries = len(result.gpu_summaries or {})
            failed = [w for w in result.warnings if "queries failed" in w]
        rss = rss_mib()
        exprs = list(asked)
        gz, plain = await wire(source, exprs, time.time())
    finally:
        await source.close()
    cpu = statistics.median(cpus)
    return {"nodes": nodes, "detail": detail, "gpus": gpus, "summaries": summaries,
            "detailed": len(set(source.last_detail)), "queries": len(exprs), "wire_mb": gz / 1e6,
            "plain_mb": plain / 1e6, "wall_s": statistics.median(walls), "cpu_s": cpu,
            "core_pct": 100 * cpu / INTERVAL_S, "engine_cpu_s": statistics.median(engine), "rss_mib": rss,
            "failed": failed[0] if failed else ""}


def run_size(nodes: int, modes: list[str]) -> list[dict[str, float | str]]:
    workdir = Path(tempfile.mkdtemp(prefix="hpctui-vmbench-"))
    proc, url = start_vm(workdir)
    try:
        t0 = time.monotonic()
        text = subprocess.run([sys.executable, "-c", RENDER.format(tb=str(ROOT / "tests/testbed/prometheus"), n=nodes)],
                              check=True, capture_output=True).stdout
        rendered = time.monotonic() - t0
        loaded = preload(url, text)
        print(f"# {nodes} GPU nodes: {len(text) / 1e6:.0f} MB of text rendered in {rendered:.0f} s, "
              f"imported twice in {loaded:.0f} s", file=sys.stderr)
        del text
        rows = []
        for detail in modes:  # the same engine and data for both modes: before and after in one run
            out = subprocess.run([sys.executable, __file__, "--child", url, str(proc.pid), str(nodes), detail],
                                 check=True, capture_output=True, text=True).stdout
            rows.append(json.loads(out.strip().splitlines()[-1]))
            print(f"#   {detail}: {rows[-1]['cpu_s']:.3f} s CPU per refresh", file=sys.stderr)
        return rows
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=60)
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--child"]:
        url, pid, nodes, detail = argv[1], int(argv[2]), int(argv[3]), argv[4]
        print(json.dumps(asyncio.run(measure(url, pid, nodes, detail))))
        return
    modes = ["series", "aggregate"]
    if "--aggregate-only" in argv:
        modes = ["aggregate"]
    sizes = [int(a) for a in argv if a.isdigit()] or [1024, 4096]
    rows = [r for n in sizes for r in run_size(n, modes)]
    print(f"load average at the end: {os.getloadavg()[0]:.2f} / {os.cpu_count()} cores")
    print("| GPU nodes | detail | GPUs read in full | nodes read in full | summaries | queries | wire MB (gzip) "
          "| decoded MB | hpctui wall s | hpctui CPU s | % core @5s | VM CPU s | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['nodes']} | {r['detail']} | {r['gpus']} | {r['detailed']} | {r['summaries']} | {r['queries']} "
              f"| {r['wire_mb']:.2f} | {r['plain_mb']:.1f} | {r['wall_s']:.3f} | {r['cpu_s']:.3f} "
              f"| {r['core_pct']:.1f} | {r['engine_cpu_s']:.3f} | {r['rss_mib']:.0f} |")
    for r in rows:  # a refresh with failed queries is partial: its numbers do not compare
        if r["failed"]:
            print(f"- {r['nodes']} {r['detail']}: last refresh partial: {r['failed']}")


if __name__ == "__main__":
    main(sys.argv[1:])
