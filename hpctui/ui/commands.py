"""``:`` commands (k9s): one table of names, what they open, and their completion.

Dashboard panes open through ``DashboardScreen.show_view``; full-screen views are Screen
classes imported lazily by module and class name (the contract in COMMON.md), so a view
whose branch is not there yet is "not available", never an import error at startup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    description: str
    pane: str | None = None  # a key of dashboard.PANES
    screen: tuple[str, str] | None = None  # (module, class) of a Screen taking the runtime
    aliases: tuple[str, ...] = ()
    arg: str | None = None  # what the argument names ("cluster"), for completion and help


COMMANDS: tuple[Command, ...] = (
    Command("nodes", "Node heatmap", pane="heatmap", aliases=("heatmap",)),
    Command("jobs", "Slurm queue", pane="queue", aliases=("queue",)),
    Command("pods", "Kubernetes pods", pane="pods"),
    Command("ib", "InfiniBand links", pane="ib"),
    Command("mounts", "Filesystem mounts", pane="mounts"),
    Command("events", "Event and action timeline", pane="events"),
    Command("problems", "Findings of warning and worse", pane="problems"),
    Command("gpus", "Every GPU as a table", screen=("hpctui.ui.screens.gpus", "GpusScreen")),
    Command("charts", "History charts", screen=("hpctui.ui.screens.charts", "ChartsScreen")),
    Command("audit", "Audit trail of actions", screen=("hpctui.ui.screens.audit", "AuditScreen")),
    Command("partitions", "Slurm partitions", screen=("hpctui.ui.screens.partitions", "PartitionsScreen")),
    Command("drained", "Drained nodes: who, when, why", screen=("hpctui.ui.screens.drained", "DrainedScreen")),
    Command("mig", "MIG layout wizard", screen=("hpctui.ui.screens.mig_wizard", "MigWizardScreen")),
    Command("cluster", "Switch to another configured cluster", arg="cluster"),
    Command("help", "Every key and command"),
    Command("quit", "Quit (asks first while an action runs)", aliases=("q",)),
)
BY_NAME: dict[str, Command] = {n: c for c in COMMANDS for n in (c.name, *c.aliases)}


def parse(text: str) -> tuple[Command | None, str, str]:
    """``":cluster  b "`` → (the cluster command, "cluster", "b"); unknown names give None."""
    word, _, rest = text.strip().removeprefix(":").strip().partition(" ")
    word = word.lower()
    return BY_NAME.get(word), word, rest.strip()


def completions(text: str, clusters: Sequence[str] = ()) -> list[str]:
    """Every full command line that starts with ``text`` (names first, then aliases);
    after ``cluster `` the configured cluster names."""
    text = text.lstrip().removeprefix(":").lstrip()
    word, space, rest = text.partition(" ")
    if space:
        command = BY_NAME.get(word.lower())
        if command is None or command.arg != "cluster":
            return []
        return [f"{word} {name}" for name in clusters if name.startswith(rest.strip())]
    low = word.lower()
    names = [c.name for c in COMMANDS if c.name.startswith(low)]
    names += [a for c in COMMANDS for a in c.aliases if a.startswith(low) and c.name not in names]
    return names
