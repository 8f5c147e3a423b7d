"""Fixtures for the live Slurm tests: one real cluster per session (tests/testbed/slurm).

With CI=true a missing Slurm is a failure, never a skip; elsewhere the tests skip with
the reason. The cluster is stopped at session end by a finalizer and by atexit.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "slurm"))

from slurmlab import SlurmLab, slurm_installed

IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")


@pytest.fixture(scope="session")
def slurm_lab() -> Iterator[SlurmLab]:
    why_not = slurm_installed()
    if why_not:
        if IN_CI:
            pytest.fail(f"CI=true but the Slurm test bed cannot run: {why_not}", pytrace=False)
        pytest.skip(why_not)
    lab = SlurmLab()
    atexit.register(lab.stop)
    try:
        lab.start()
        print(f"\n[slurm bed] up in {lab.start_s:.2f}s at {lab.dir} (port offset {lab.offset})", file=sys.stderr)
        yield lab
    finally:
        lab.stop()
        print(f"\n[slurm bed] down in {lab.stop_s or 0:.2f}s", file=sys.stderr)


@pytest.fixture()
def lab(slurm_lab: SlurmLab) -> SlurmLab:
    """The session cluster, reset: no jobs, every node idle and resumed."""
    slurm_lab.reset()
    return slurm_lab
