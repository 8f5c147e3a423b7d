"""``:`` command mode (k9s): an input docked at the bottom with completion.

The matching commands are listed above the input as you type; ``tab`` (or ``→`` at the end)
completes to the first match; ``enter`` runs; ``esc`` closes. As with ``g``, the keys typed
right after ``:`` are held by the app and handed to the input once it is mounted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.suggester import Suggester
from textual.widgets import Input, Static

from hpctui.ui.commands import BY_NAME, completions

MAX_LISTED = 8


class CommandSuggester(Suggester):
    def __init__(self, clusters: Sequence[str]) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.clusters = list(clusters)

    async def get_suggestion(self, value: str) -> str | None:
        if not value.strip():
            return None
        found = completions(value, self.clusters)
        return found[0] if found else None


def match_lines(text: str, clusters: Sequence[str]) -> Content:
    """The matching commands with their descriptions, the first one (what tab takes) highlighted."""
    found = completions(text, clusters)
    if not found:
        return Content.assemble(("no matching command", "$text-warning"))
    lines = []
    for i, line in enumerate(found[:MAX_LISTED]):
        command = BY_NAME.get(line.split(" ", 1)[0])
        what = command.description if command is not None and " " not in line else "cluster"
        style = "bold $accent" if i == 0 else ""
        lines.append(Content.assemble((f":{line:<22}", style), (what, "$text-muted")))
    if len(found) > MAX_LISTED:
        lines.append(Content(f"  … {len(found) - MAX_LISTED} more"))
    return Content("\n").join(lines)


class CommandScreen(ModalScreen[str | None]):
    BINDINGS = [
        Binding("escape", "cancel", "Close", show=False),
        Binding("tab", "complete", "Complete", show=False, priority=True),
    ]
    DEFAULT_CSS = """
    CommandScreen { align: left bottom; }
    CommandScreen > Vertical {
        width: 100%; height: auto; dock: bottom;
        border-top: solid $accent; background: $surface; padding: 0 1;
    }
    CommandScreen #command-matches { height: auto; max-height: 9; }
    CommandScreen #command-input, CommandScreen #command-input:focus {
        border: none; height: 1; width: 100%; padding: 0 0; background: $panel;
    }
    """

    def __init__(self, clusters: Sequence[str] = (),
                 on_mounted: Callable[[Input], Awaitable[None]] | None = None) -> None:
        super().__init__(id="command")
        self.clusters = list(clusters)
        self.on_mounted = on_mounted

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(match_lines("", self.clusters), id="command-matches", markup=False)
            yield Input(placeholder=":nodes  :jobs  :gpus  :cluster NAME  :help   (tab completes, esc closes)",
                        suggester=CommandSuggester(self.clusters), id="command-input", select_on_focus=False)

    async def on_mount(self) -> None:
        box = self.query_one(Input)
        self.set_focus(box)
        if self.on_mounted is not None:
            await self.on_mounted(box)

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_one("#command-matches", Static).update(match_lines(event.value, self.clusters))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_complete(self) -> None:
        box = self.query_one(Input)
        found = completions(box.value, self.clusters)
        if found:
            # one more space after a command that takes an argument, ready for the name
            box.value = found[0] + (" " if (c := BY_NAME.get(found[0])) is not None and c.arg else "")
            box.cursor_position = len(box.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
