"""The live Ceph test bed (tests/testbed/ceph): one per session. With CI=true a missing Ceph fails, elsewhere
the live tests skip with the reason."""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "ceph"))

from cephlab import CephLab, ceph_installed

IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")


@pytest.fixture(scope="session")
def ceph_lab() -> Iterator[CephLab]:
    why_not = ceph_installed()
    if why_not:
        if IN_CI:
            pytest.fail(f"CI=true but the Ceph test bed cannot run: {why_not}", pytrace=False)
        pytest.skip(why_not)
    lab = CephLab()
    atexit.register(lab.stop)
    try:
        lab.start()
        print(f"\n[ceph bed] HEALTH_OK in {lab.start_s:.1f}s: {lab.conf}, S3 at {lab.s3_endpoint}", file=sys.stderr)
        yield lab
    finally:
        lab.stop()


@pytest.fixture(scope="session")
def ceph_metrics_url(ceph_lab: CephLab) -> str:
    """The session bed's mgr Prometheus module (bed.sh turns it on at mkfs, on 127.0.0.1, refreshed every
    second): its ``/metrics`` URL, once it answers with the PGs counted (its first answers count every PG as 0)."""
    import time
    import urllib.request

    t = time.monotonic()
    deadline = t + 60
    while True:
        try:
            with urllib.request.urlopen(ceph_lab.metrics_url, timeout=5) as resp:
                body = resp.read()
            if b"ceph_health_status" in body and b'ceph_pg_active{pool_id="1"} 0.0' not in body:
                break
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"the mgr's prometheus module does not answer on {ceph_lab.metrics_url}")
        time.sleep(0.25)
    print(f"\n[ceph bed] mgr prometheus module answering {time.monotonic() - t:.1f}s later", file=sys.stderr)
    return ceph_lab.metrics_url
