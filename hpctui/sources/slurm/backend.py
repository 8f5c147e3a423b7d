"""The internal interface behind :class:`SlurmSource`: one per way of talking to Slurm.

Each backend (CLI, slurmrestd, pyslurm) reads the whole cluster in a few calls and declares
which actions it can carry out itself; the source falls back to the CLI for the rest and
says so in the plan's notes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from hpctui.actions.base import ActionKind, TargetResult
from hpctui.model import ControllerHealth, SlurmJob, SlurmNodeInfo


@dataclass
class Collected:
    nodes: dict[str, SlurmNodeInfo]
    jobs: tuple[SlurmJob, ...]
    controller: ControllerHealth | None = None
    warnings: list[str] = field(default_factory=list)


class SlurmBackend(Protocol):
    name: str  # "cli", "rest", "pyslurm"

    @property
    def calls(self) -> list[str]:
        """argv / HTTP requests / library calls since the last reset_calls()."""
        ...

    def reset_calls(self) -> None: ...

    def capabilities(self) -> frozenset[ActionKind]:
        """Action kinds this backend runs itself (the rest go to the CLI)."""
        ...

    def describe(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str]) -> list[str]:
        """The exact commands/requests ``act`` will run, for the plan preview and the audit."""
        ...

    async def collect(self) -> Collected: ...

    async def act(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str]) -> list[TargetResult]:
        """Run one action; one result per target carrying Slurm's own error text."""
        ...

    async def close(self) -> None: ...


# Text that means "the controller is not there" in CLI stderr / REST errors[].
UNREACHABLE_MARKERS = (
    "unable to contact slurm controller", "connect failure", "connection refused",
    "socket timed out", "zero bytes were transmitted", "slurm_persist_conn_open",
)


def looks_unreachable(text: str) -> bool:
    low = text.lower()
    return any(m in low for m in UNREACHABLE_MARKERS)
