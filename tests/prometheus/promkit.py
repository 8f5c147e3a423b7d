"""Helpers of the live Prometheus tests (a module of its own: ``from conftest import`` would pick
whichever test folder's conftest was imported first)."""

from __future__ import annotations

import time

from promlab import PromLab


async def complete(source: object, lab: PromLab, tries: int = 10) -> object:
    """A collection holding every GPU node the exporter serves: on a loaded machine a scrape can
    time out, and Prometheus then marks the exporter's series stale until the next one."""
    assert lab.exporter is not None
    wanted = {s.name for s in lab.exporter.sim.topo.gpu_nodes} - lab.exporter.absent
    result = None
    for _ in range(tries):
        result = await source.collect()  # type: ignore[attr-defined]
        if wanted <= set(result.gpus or ()) and not any("dropped" in w for w in result.warnings):
            return result
        wait_scrapes(lab, 1)
    return result


def wait_scrapes(lab: PromLab, count: int = 2, timeout_s: float = 30.0) -> None:
    """Until the exporter has been scraped ``count`` more times (what it serves now is in Prometheus)."""
    assert lab.exporter is not None
    lab.exporter.touch()
    target = lab.exporter.scrapes + count
    deadline = time.monotonic() + timeout_s
    while lab.exporter.scrapes < target:
        if time.monotonic() > deadline:
            raise AssertionError(f"exporter not scraped {count} times in {timeout_s:g} s")
        time.sleep(0.1)
    time.sleep(0.2)  # the scrape's samples are appended right after the answer
