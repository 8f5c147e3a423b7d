"""``q`` while an action runs: ask first (quitting waits for the action, up to its grace time)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label


class ConfirmQuitScreen(ModalScreen[bool]):
    BINDINGS = [
        Binding("y", "answer(True)", "Quit", show=False),
        Binding("n,escape", "answer(False)", "Stay", show=False),
    ]
    DEFAULT_CSS = """
    ConfirmQuitScreen { align: center middle; }
    ConfirmQuitScreen > Vertical {
        width: 64; max-width: 95%; height: auto; border: thick $warning; background: $surface; padding: 0 1;
    }
    """

    def __init__(self, running: int) -> None:
        super().__init__(id="confirm-quit")
        self.running = running

    def compose(self) -> ComposeResult:
        what = "an action is" if self.running == 1 else f"{self.running} actions are"
        with Vertical():
            yield Label(f"{what} still running.", id="confirm-quit-text")
            yield Label("Quit anyway? It finishes (and is audited) before hpctui exits.   y / n")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
