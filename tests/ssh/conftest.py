"""Fixtures for the SSH tests: a real OpenSSH bed per session (tests/testbed/ssh).

With CI=true a missing sshd is a failure, never a skip; elsewhere the live tests skip with
the reason. The bed is stopped at session end by a finalizer and by atexit.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testbed" / "ssh"))

from sshbed import SshBed, sshd_missing

IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")

# ~11% of the 64 nodes are faulty, one of each kind the transport must survive
FAULTS = {
    "node0003": "unreachable",
    "node0007": "silent",
    "node0011": "auth",
    "node0019": "hostkey_unknown",
    "node0023": "hostkey_changed",
    "node0031": "hang",
    "node0042": "dies",
}


def _bed(**kw: object) -> Iterator[SshBed]:
    why_not = sshd_missing()
    if why_not:
        if IN_CI:
            pytest.fail(f"CI=true but the SSH test bed cannot run: {why_not}", pytrace=False)
        pytest.skip(why_not)
    bed = SshBed(**kw)  # type: ignore[arg-type]
    atexit.register(bed.stop)
    try:
        bed.start()
        yield bed
    finally:
        bed.stop()


@pytest.fixture(scope="session")
def ssh_bed() -> Iterator[SshBed]:
    yield from _bed(n_nodes=64, faults=dict(FAULTS))


@pytest.fixture()
def garbage_bed() -> Iterator[SshBed]:
    """A small bed of its own: node0001 prints garbage between records, node0002 cuts a record and exits."""
    yield from _bed(n_nodes=3, faults={"node0001": "garbage", "node0002": "cut"})
