from __future__ import annotations

import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "probes"
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "nodeshims"))


@pytest.fixture
def fixture_text():
    def read(name: str) -> str:
        return (FIXTURES / name).read_text()
    return read
