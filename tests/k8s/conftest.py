"""Fixtures for the live Kubernetes tests: one real kube-apiserver + etcd per session
(tests/testbed/k8s). With CI=true a missing bed is a failure, never a skip; elsewhere the
tests skip with the reason. The bed is stopped by pid at session end and by atexit.
"""

from __future__ import annotations

import atexit
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "k8s"))

from k8slab import K8sLab, k8s_installed

IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")
NAMESPACES = ("hpc", "gpu-operator")


@pytest.fixture(scope="session")
def k8s_lab() -> Iterator[K8sLab]:
    why_not = k8s_installed()
    if why_not:
        if IN_CI:
            pytest.fail(f"CI=true but the Kubernetes test bed cannot run: {why_not}", pytrace=False)
        pytest.skip(why_not)
    lab = K8sLab()
    atexit.register(lab.stop)
    try:
        lab.start()
        print(f"\n[k8s bed] kube-apiserver v1.20.2 up in {lab.start_s:.2f}s at {lab.host}", file=sys.stderr)
        for ns in NAMESPACES:
            lab.ensure_namespace(ns)
        yield lab
    finally:
        lab.stop()


CLEAR_DEADLINE_S = 300.0


def _clear_pods(lab: K8sLab, ns: str) -> None:
    """Every pod of ``ns`` gone. A delete-collection of the scale test's 10,000 pods can outlast the
    API server's request timeout on a loaded machine and stop half-way: repeat until none is left."""
    deadline = time.monotonic() + CLEAR_DEADLINE_S
    while True:
        lab.http("DELETE", f"/api/v1/namespaces/{ns}/pods?gracePeriodSeconds=0")
        status, doc = lab.http("GET", f"/api/v1/namespaces/{ns}/pods?limit=1")
        if status == 200 and not doc.get("items"):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"pods of namespace {ns} still there after {CLEAR_DEADLINE_S:g}s of deleting")
        time.sleep(0.5)


def _clear(lab: K8sLab) -> None:
    for ns in NAMESPACES:
        _clear_pods(lab, ns)
        lab.http("DELETE", f"/api/v1/namespaces/{ns}/events")
        lab.http("DELETE", f"/apis/policy/v1beta1/namespaces/{ns}/poddisruptionbudgets")
    lab.http("DELETE", "/api/v1/nodes")


@pytest.fixture()
def lab(k8s_lab: K8sLab) -> K8sLab:
    """The session's API server with no nodes, pods, events or PDBs left from other tests."""
    _clear(k8s_lab)
    return k8s_lab
