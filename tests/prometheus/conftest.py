"""The live Prometheus test bed (tests/testbed/prometheus): Debian's prometheus and Debian's
VictoriaMetrics on loopback, each scraping the simulator exporter, one of each per session: every
live test runs against both engines. With CI=true a missing engine fails, elsewhere the live tests
skip with the reason. ``HPCTUI_PROM_ENGINES=prometheus`` narrows the run to one engine."""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "prometheus"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from promlab import ENGINES, PromLab, prometheus_installed

IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")
LAB_NODES = 32  # GPU nodes (+ 8 CPU nodes): two MIG nodes, Kubernetes pods on gpu0008/gpu0024
WANTED = tuple(e for e in os.environ.get("HPCTUI_PROM_ENGINES", ",".join(ENGINES)).split(",") if e in ENGINES)


@pytest.fixture(scope="session", params=WANTED)
def prom_lab(request: pytest.FixtureRequest) -> Iterator[PromLab]:
    engine: str = request.param
    why_not = prometheus_installed(engine)
    if why_not:
        if IN_CI:
            pytest.fail(f"CI=true but the Prometheus test bed cannot run: {why_not}", pytrace=False)
        pytest.skip(why_not)
    lab = PromLab(nodes=LAB_NODES, scrape_interval_s=1.0, engine=engine)
    atexit.register(lab.stop)
    try:
        lab.start()
        lab.wait_scraped(3)
        print(f"\n[{engine} bed] up in {lab.start_s:.2f}s at {lab.url}", file=sys.stderr)
        yield lab
    finally:
        lab.stop()
