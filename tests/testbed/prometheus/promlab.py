"""The Prometheus test bed: Debian's ``prometheus`` (or, with ``engine="victoria-metrics"``,
Debian's single-node VictoriaMetrics, same scrape config) on 127.0.0.1 with tmp storage, scraping
the simulator exporter (exporter.py) every second. Started and stopped by pytest fixtures
and by the benchmark; the server runs in its own session and is stopped by pid.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from http.server import ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from exporter import SimExporter, serve

PROMETHEUS = os.environ.get("HPCTUI_PROMETHEUS", "prometheus")
VICTORIA = os.environ.get("HPCTUI_VICTORIA_METRICS", "victoria-metrics")
ENGINES = ("prometheus", "victoria-metrics")


def prometheus_installed(engine: str = "prometheus") -> str | None:
    """None when the bed can run with ``engine``, else why not."""
    binary = VICTORIA if engine == "victoria-metrics" else PROMETHEUS
    if shutil.which(binary) is None:
        return f"{binary!r} not found (apt-get install {engine}; see .ci/prom-deps.sh)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


CONFIG = """global:
  scrape_interval: {interval}
  evaluation_interval: {interval}
scrape_configs:
{jobs}"""
SIM_JOB = """  - job_name: sim-exporters
    honor_labels: true
    scrape_interval: {interval}
    scrape_timeout: {timeout}
    static_configs:
      - targets: ["{target}"]
"""


class PromLab:
    """One Prometheus + one exporter. ``exporter_port`` may name an exporter run elsewhere
    (the benchmark runs it as its own process); otherwise one is served from a thread here."""

    def __init__(self, nodes: int = 16, seed: int = 0, scrape_interval_s: float = 1.0,
                 exporter_port: int | None = None, scrape_timeout_s: float | None = None,
                 scrape_configs: str | None = None, engine: str = "prometheus") -> None:
        self.engine = engine
        self.nodes = nodes
        self.seed = seed
        self.scrape_interval_s = scrape_interval_s
        self.scrape_timeout_s = scrape_timeout_s or scrape_interval_s
        self.dir = Path(tempfile.mkdtemp(prefix="hpctui-prom-"))
        self.exporter: SimExporter | None = None
        self.server: ThreadingHTTPServer | None = None
        self.exporter_port = exporter_port
        self.scrape_configs = scrape_configs  # jobs instead of SIM_JOB (same placeholders)
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.start_s: float | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30.0) -> None:
        t0 = time.monotonic()
        if self.exporter_port is None:
            self.exporter = SimExporter(size=self.nodes, seed=self.seed, tick_s=self.scrape_interval_s)
            self.server = serve(self.exporter)
            self.exporter_port = int(self.server.server_address[1])
        self.port = free_port()
        fill = {"interval": f"{self.scrape_interval_s:g}s", "timeout": f"{self.scrape_timeout_s:g}s",
                "target": f"127.0.0.1:{self.exporter_port}"}
        jobs = (self.scrape_configs or SIM_JOB).format(**fill)
        (self.dir / "prometheus.yml").write_text(CONFIG.format(jobs=jobs, **fill))
        log = open(self.dir / "prometheus.log", "wb")  # noqa: SIM115 - owned by the process
        self.proc = subprocess.Popen(self._command(), stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited: {(self.dir / 'prometheus.log').read_text()[-800:]}")
            try:
                ready = "/health" if self.engine == "victoria-metrics" else "/-/ready"
                with urllib.request.urlopen(f"{self.url}{ready}", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError("prometheus not ready in time")
        self.start_s = time.monotonic() - t0

    def _command(self) -> list[str]:
        config, data = self.dir / "prometheus.yml", self.dir / "data"
        if self.engine == "victoria-metrics":
            # -search.latencyOffset=0s: else samples newer than 30 s are invisible to queries
            return [VICTORIA, f"-promscrape.config={config}", "-promscrape.config.strictParse=false",
                    f"-storageDataPath={data}",
                    f"-httpListenAddr=127.0.0.1:{self.port}", "-loggerLevel=WARN", "-retentionPeriod=1d",
                    "-search.latencyOffset=0s", "-search.maxUniqueTimeseries=2000000",
                    # the bed only: a vanished series leaves answers within 3 scrapes (as with
                    # Prometheus' staleness markers); VictoriaMetrics' own default is far longer
                    f"-search.maxStalenessInterval={3 * self.scrape_interval_s:g}s"]
        return [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={data}",
                f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn",
                "--storage.tsdb.retention.time=1h"]

    def wait_scraped(self, scrapes: int = 3, timeout_s: float = 60.0) -> None:
        """Until Prometheus holds ``scrapes`` samples of the exporter (rate()/increase() need two)."""
        deadline = time.monotonic() + timeout_s
        query = urllib.parse.quote(f"count_over_time(up[{int(max(60, 10 * self.scrape_interval_s))}s])")
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/api/v1/query?query={query}", timeout=5) as r:
                    body = r.read().decode()


                result = json.loads(body)["data"]["result"]
                if result and float(result[0]["value"][1]) >= scrapes:
                    return
            except (OSError, KeyError, ValueError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"prometheus did not scrape {scrapes} times in {timeout_s:g} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)
        self.proc = None
        if self.exporter is not None:
            self.exporter.stop()
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
        shutil.rmtree(self.dir, ignore_errors=True)




LAB_CONFIG = """# written by tests/testbed/prometheus/promlab.py: the test-bed Prometheus as a source
[clusters.lab]
[[clusters.lab.sources]]
kind = "prometheus"
url = "{url}"
scrape_interval_s = {interval:g}
mounts = ["/home", "/lustre/scratch"]
"""


def main() -> None:
    """Run the bed by hand: ``python tests/testbed/prometheus/promlab.py [--nodes N]`` writes
    prom-lab.toml for ``hpctui --config prom-lab.toml`` / ``hpctui snapshot --config prom-lab.toml``."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=32)
    ap.add_argument("--config", default="prom-lab.toml")
    args = ap.parse_args()
    lab = PromLab(nodes=args.nodes, scrape_interval_s=1.0)

    def on_term(_sig: int, _frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM too: stop the server in the finally below

    signal.signal(signal.SIGTERM, on_term)
    try:
        lab.start()
        lab.wait_scraped(3)
        Path(args.config).write_text(LAB_CONFIG.format(url=lab.url, interval=lab.scrape_interval_s))
        print(f"Prometheus at {lab.url}; wrote {args.config}; Ctrl-C stops", flush=True)
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        lab.stop()


if __name__ == "__main__":
    main()
