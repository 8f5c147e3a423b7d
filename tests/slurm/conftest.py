"""Fixtures for the live Slurm tests: one real cluster per Slurm version per session.

``slurm_lab`` is parametrised over the versions the suite runs against: Debian 12's 22.05 on the
host (tests/testbed/slurm) and Debian 13's 24.11 in a chroot (tests/testbed/slurm2411), the same
cluster on both. With CI=true a missing bed of either version is a failure, never a skip;
elsewhere the tests skip with the reason. Each bed is stopped at the end of its tests by a
finalizer and by atexit.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "slurm"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "slurm2411"))

from slurm2411lab import Slurm2411Lab, slurm2411_installed
from slurmlab import SlurmLab, slurm_installed

IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")
VERSIONS = ("22.05", "24.11")


def new_lab(version: str) -> SlurmLab:
    """A (not yet started) bed of ``version``."""
    return Slurm2411Lab() if version == "24.11" else SlurmLab()


def why_not(version: str) -> str | None:
    """None when a bed of ``version`` can run here, else why not."""
    return slurm2411_installed() if version == "24.11" else slurm_installed()


@pytest.fixture(scope="session", params=VERSIONS, ids=[f"slurm{v}" for v in VERSIONS])
def slurm_lab(request: pytest.FixtureRequest) -> Iterator[SlurmLab]:
    version: str = request.param
    reason = why_not(version)
    if reason:
        if IN_CI:
            pytest.fail(f"CI=true but the Slurm {version} test bed cannot run: {reason}", pytrace=False)
        pytest.skip(reason)
    lab = new_lab(version)
    atexit.register(lab.stop)
    saved_path = os.environ.get("PATH", "")
    if isinstance(lab, Slurm2411Lab):  # in-process sources find the chroot's tools first
        os.environ["PATH"] = f"{lab.bin_dir}:{saved_path}"
    try:
        lab.start()
        print(f"\n[slurm {version} bed] up in {lab.start_s:.2f}s at {lab.dir} (port offset {lab.offset})",
              file=sys.stderr)
        yield lab
    finally:
        os.environ["PATH"] = saved_path
        lab.stop()
        print(f"\n[slurm {version} bed] down in {lab.stop_s or 0:.2f}s", file=sys.stderr)


@pytest.fixture()
def lab(slurm_lab: SlurmLab) -> SlurmLab:
    """The session cluster, reset: no jobs, every node idle and resumed."""
    slurm_lab.reset()
    return slurm_lab
