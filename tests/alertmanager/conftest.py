"""The live Alertmanager test bed (tests/testbed/alertmanager): one per session. With CI=true a missing
prometheus-alertmanager fails, elsewhere the live tests skip with the reason."""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "alertmanager"))

from amlab import AlertmanagerLab, alertmanager_installed

IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")


@pytest.fixture(scope="session")
def am_lab() -> Iterator[AlertmanagerLab]:
    why_not = alertmanager_installed()
    if why_not:
        if IN_CI:
            pytest.fail(f"CI=true but the Alertmanager test bed cannot run: {why_not}", pytrace=False)
        pytest.skip(why_not)
    lab = AlertmanagerLab()
    atexit.register(lab.stop)
    try:
        lab.start()
        print(f"\n[alertmanager bed] up in {lab.start_s:.2f}s at {lab.url}", file=sys.stderr)
        yield lab
    finally:
        lab.stop()


@pytest.fixture
def am(am_lab: AlertmanagerLab) -> Iterator[AlertmanagerLab]:
    """The session's Alertmanager, with no alert and no silence left over from the test before."""
    am_lab.resolve_all()
    yield am_lab
    am_lab.resolve_all()
