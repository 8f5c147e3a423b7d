"""The live Prometheus test bed (tests/testbed/prometheus): Debian's prometheus on loopback
scraping the simulator exporter, one per session. With CI=true a missing prometheus fails,
elsewhere the live tests skip with the reason."""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "prometheus"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from promlab import PromLab, prometheus_installed

IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")
LAB_NODES = 32  # GPU nodes (+ 8 CPU nodes): two MIG nodes, Kubernetes pods on gpu0008/gpu0024


@pytest.fixture(scope="session")
def prom_lab() -> Iterator[PromLab]:
    why_not = prometheus_installed()
    if why_not:
        if IN_CI:
            pytest.fail(f"CI=true but the Prometheus test bed cannot run: {why_not}", pytrace=False)
        pytest.skip(why_not)
    lab = PromLab(nodes=LAB_NODES, scrape_interval_s=1.0)
    atexit.register(lab.stop)
    try:
        lab.start()
        lab.wait_scraped(3)
        print(f"\n[prometheus bed] up in {lab.start_s:.2f}s at {lab.url}", file=sys.stderr)
        yield lab
    finally:
        lab.stop()
