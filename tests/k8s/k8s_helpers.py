"""Helpers for the live Kubernetes tests (tests/k8s)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from k8slab import K8sLab

from hpctui.model import SourceResult
from hpctui.model.names import NodeNameMap
from hpctui.sources.k8s.settings import K8sSettings
from hpctui.sources.k8s.source import K8sSource

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "k8s"


def gfd_labels(name: str = "gpu-operator_node-labels_h100-80gb-hbm3_mig-mixed_all-balanced.json") -> dict[str, str]:
    """Real GPU Operator / GFD node labels (NVIDIA cloud-native-docs, see tests/fixtures/k8s)."""
    return dict(json.loads((FIXTURES / name).read_text()))


def make_source(lab: K8sLab, *, token: str = "admin-token", user: str = "admin",
                name_map: NodeNameMap | None = None, **kw: Any) -> K8sSource:
    kw.setdefault("timeout_s", 20.0)
    settings = K8sSettings(kubeconfig=str(lab.kubeconfig(token, user)), **kw)
    return K8sSource(settings, name_map=name_map)


async def collect_until(src: K8sSource, what: str, cond: Callable[[SourceResult], Any],
                        timeout: float = 90.0) -> SourceResult:
    """Collect until ``cond(result)`` holds (a generous limit, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            res = await src.collect()
        except Exception as exc:  # the source may be failing for a while (server restart)
            last = exc
        else:
            if cond(res):
                return res
            last = res
        await asyncio.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r}; stats {src.stats()})")


def wait_for(what: str, cond: Callable[[], Any], timeout: float = 90.0, interval: float = 0.2) -> Any:
    """Poll until ``cond()`` is truthy (a generous limit, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = cond()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


async def await_for(what: str, cond: Callable[[], Any], timeout: float = 90.0, interval: float = 0.2) -> Any:
    import asyncio

    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = cond()
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")
