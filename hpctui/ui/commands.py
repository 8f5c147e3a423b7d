"""``:`` commands (k9s): parsing and completion of the command line. The commands themselves
(names, aliases, what each opens) are entries of the action registry (:data:`hpctui.ui.registry.COMMANDS`).

Dashboard panes open through ``DashboardScreen.show_view``; full-screen views are Screen
classes imported lazily by module and class name (the contract in COMMON.md), so a view
whose branch is not there yet is "not available", never an import error at startup.
"""

from __future__ import annotations

from collections.abc import Sequence

from hpctui.ui.registry import BY_NAME, COMMANDS, Command

__all__ = ["BY_NAME", "COMMANDS", "Command", "completions", "parse"]


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
