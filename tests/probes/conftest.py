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


@pytest.fixture(autouse=True)
def _cold_parser_caches():
    """Each test parses with empty module-level memo caches (row parsers, NVLink error labels, bus keys,
    IB state strings), so what it asserts comes from the parsing code, not from an earlier test's cache
    (mutation testing forks every run from one process that has parsed before)."""
    from hpctui.sources.ssh.probe import parse_gpu, parse_node

    parse_gpu._ROW_PARSERS.clear()
    parse_gpu._ERR_KIND.clear()
    parse_gpu.bus_key.cache_clear()
    parse_node._STATE_CACHE.clear()
    yield
