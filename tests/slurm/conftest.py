"""Fixtures for the live Slurm tests: one real cluster per Slurm version per session.

``slurm_lab`` is parametrised over the versions the suite runs against: Debian 12's 22.05 on the
host (tests/testbed/slurm), Debian 13's 24.11 in a chroot (tests/testbed/slurm2411) and 25.11
built from SchedMD's source with a real pyslurm (tests/testbed/slurm2511), the same cluster on all.
The 25.11 bed runs only the tests marked ``slurm2511`` (a focused set: the reads, the actions
pyslurm carries out, the three-backend comparison); ``slurm2511(backends=(...))`` narrows a test
parametrised by ``backend`` to those backends there, ``slurm2511(only=True)`` runs a test there
only. The ``pyslurm`` backend runs on 25.11 only
(PyPI's pyslurm builds against exactly one Slurm release). With CI=true a missing bed of either version is a failure, never a skip;
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
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "slurm2511"))

from slurm2411lab import Slurm2411Lab, slurm2411_installed
from slurm2511lab import Slurm2511Lab, slurm2511_installed
from slurmlab import SlurmLab, accounting_installed, slurm_installed

IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")
VERSIONS = ("22.05", "24.11", "25.11")
PYSLURM_VERSION = "25.11"  # the one bed with a real pyslurm


def new_lab(version: str) -> SlurmLab:
    """A (not yet started) bed of ``version``."""
    return {"24.11": Slurm2411Lab, "25.11": Slurm2511Lab}.get(version, SlurmLab)()


def why_not(version: str) -> str | None:
    """None when a bed of ``version`` can run here, else why not."""
    return {"24.11": slurm2411_installed, "25.11": slurm2511_installed}.get(version, slurm_installed)()


def runs_here(item: pytest.Item) -> bool:
    """Whether this (version, backend) combination of a live Slurm test is one the suite runs."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    version, backend = params.get("slurm_lab"), params.get("backend")
    if backend == "pyslurm" and version != PYSLURM_VERSION:
        return False
    only = item.get_closest_marker("slurm_versions")  # a test written for some beds only: the others deselect it
    if only is not None and version is not None and version not in only.args:
        return False
    mark = item.get_closest_marker("slurm2511")
    if version != "25.11":
        return not (mark is not None and mark.kwargs.get("only"))
    if mark is None:
        return False
    allowed = mark.kwargs.get("backends")
    return backend is None or allowed is None or backend in allowed


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    keep = [i for i in items if runs_here(i)]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if not runs_here(i)])
        items[:] = keep


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
    saved_conf = os.environ.get("SLURM_CONF")
    if isinstance(lab, (Slurm2411Lab, Slurm2511Lab)):  # in-process sources find the bed's tools first
        os.environ["PATH"] = f"{lab.bin_dir}:{saved_path}"
    if isinstance(lab, Slurm2511Lab):  # the real pyslurm, built for this bed (not in the venv)
        sys.path.insert(0, str(lab.pyslurm_site))
    try:
        lab.start()
        print(f"\n[slurm {version} bed] up in {lab.start_s:.2f}s at {lab.dir} (port offset {lab.offset})",
              file=sys.stderr)
        yield lab
    finally:
        os.environ["PATH"] = saved_path
        if saved_conf is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = saved_conf
        if isinstance(lab, Slurm2511Lab) and str(lab.pyslurm_site) in sys.path:
            sys.path.remove(str(lab.pyslurm_site))
        lab.stop()
        print(f"\n[slurm {version} bed] down in {lab.stop_s or 0:.2f}s", file=sys.stderr)


@pytest.fixture()
def lab(slurm_lab: SlurmLab) -> SlurmLab:
    """The session cluster, reset: no jobs, every node idle and resumed."""
    slurm_lab.reset()
    return slurm_lab


@pytest.fixture()
def alab(lab: SlurmLab) -> SlurmLab:
    """The reset session bed, which must have accounting (CI installs slurmdbd + mariadb-server):
    a bed that cannot have it skips with the reason; one started without it fails under CI=true."""
    if lab.no_accounting:
        pytest.skip(lab.no_accounting)
    if not lab.accounting:
        why = ("the bed runs without accounting: install slurmdbd and mariadb-server (.ci/slurm-deps.sh)"
               if not accounting_installed() else "the bed was started with SLURMLAB_ACCOUNTING=0")
        if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
            pytest.fail(f"CI=true: {why}", pytrace=False)
        pytest.skip(why)
    return lab
