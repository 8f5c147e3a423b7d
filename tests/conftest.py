"""Suite-wide guard: a test that starts a real service must say so with ``@pytest.mark.live``.

``pytest -m 'not live'`` then runs every unit test and starts no daemon (as root or not).
A test bed's fixture is known by its name: list it in ``LIVE_FIXTURES`` (or name it ``*_lab`` /
``*_bed``); a module named ``test_live_*.py`` is live by its name. Collection fails when such a
test lacks the marker, so an unmarked daemon can never slip into the unit run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

LIVE_FIXTURES = frozenset({"slurm_lab"})


def _starts_a_service(item: pytest.Item) -> bool:
    names = set(getattr(item, "fixturenames", ()))
    if names & LIVE_FIXTURES or any(n.endswith(("_lab", "_bed")) for n in names):
        return True
    return Path(str(item.path)).name.startswith("test_live_")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unmarked = [item.nodeid for item in items if _starts_a_service(item) and item.get_closest_marker("live") is None]
    if unmarked:
        raise pytest.UsageError("tests that start a real service must be marked @pytest.mark.live:\n  "
                                + "\n  ".join(unmarked))


pytest_plugins = ["pytester"]  # tests/test_markers.py checks the guard above in a throw-away session
