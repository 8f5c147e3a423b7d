"""A stand-in probe codec for transport tests (tests/testbed/ssh/standin.sh): the transport
is tested on its own, independent of what a real probe record holds."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "testbed" / "ssh" / "standin.sh"


@dataclass
class Reading:
    address: str
    seq: int
    pid: int
    gpus: tuple[()] = ()
    late: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    events: tuple[()] = ()


class LineSplitter:
    def __init__(self) -> None:
        self.buf = b""

    def feed(self, data: bytes) -> Iterator[str]:
        self.buf += data
        *lines, self.buf = self.buf.split(b"\n")
        for line in lines:
            if line.startswith(b"@@REC "):
                yield line.decode("ascii", "replace")


@dataclass
class StandinCodec:
    interval_s: float = 0.2
    commands: list[str] = field(default_factory=list)

    def command(self, node: str) -> str:
        return f"sh {SCRIPT} {self.interval_s}"

    def splitter(self) -> LineSplitter:
        return LineSplitter()

    def new_state(self, node: str) -> dict[str, int]:
        return {}

    def parse(self, node: str, record: str, state: dict[str, int]) -> Reading:
        _tag, addr, seq, pid = record.split()
        return Reading(addr, int(seq), int(pid))
