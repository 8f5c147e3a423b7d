"""Shells from the TUI: the terminal handover (:class:`AppTerminal`) and the container picker.

``s`` on a node, a job or a pod posts :class:`~hpctui.ui.messages.ShellRequested`; the app asks
:func:`hpctui.actions.shells.open_shell`, which plans the session and runs it through the one
executor with an :class:`AppTerminal` as its runner: the app suspends (``App.suspend()``), the
session has the real terminal in its foreground, the app resumes, redraws and polls again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList

from hpctui.actions.shells import run_in_foreground

if TYPE_CHECKING:
    from textual.app import App


class AppTerminal:
    """The :class:`~hpctui.actions.shells.TerminalRunner` of a running app: suspends it for the
    session's length (the session in the terminal's foreground), then resumes and redraws it.

    ``wall``: the app is a wall display (no shell opens there)."""

    def __init__(self, app: App[Any], *, wall: bool = False) -> None:
        self.app = app
        self.wall = wall
        self.ran: list[tuple[str, ...]] = []  # what it ran (the app's notice, tests)

    def unavailable(self) -> str | None:
        if self.app.is_web:
            return "a browser session (hpctui serve) has no terminal to hand over: no shells there"
        if self.wall:
            return "the wall display opens no shells"
        driver = self.app._driver
        if driver is None or not driver.can_suspend:
            return "this terminal cannot be handed over (the app cannot suspend here)"
        return None

    async def run(self, argv: Sequence[str]) -> int:
        self.ran.append(tuple(argv))
        # The event loop keeps running (the poller, an action in flight): no repaint meanwhile, and
        # whatever is still written (a bell) dropped; suspend's exit resumes first, the batch's
        # end then repaints on the terminal we have back.
        with self.app.batch_update(), self.app.suspend():
            _drop_output(self.app)
            status = await run_in_foreground(argv)
        self.app.refresh(layout=True)
        self.app.screen.refresh(layout=True)
        return status


class _Discard:
    """A writer for the suspended app: keeps nothing, never blocks."""

    def write(self, text: str) -> None:
        """Dropped: the terminal is the session's now."""

    def flush(self) -> None:
        """Nothing to flush."""

    def stop(self) -> None:
        """Nothing runs."""


def _drop_output(app: App[Any]) -> None:
    """While suspended the terminal belongs to the session. Textual's driver stops its writer thread
    but keeps it: each write the running app still makes (a bell, a notice's sequence) would queue
    for a thread that no longer reads, and its bounded queue (30) would then block the event loop
    for good. Resuming starts a new writer, replacing this sink."""
    driver = app._driver
    if driver is not None and getattr(driver, "_writer_thread", None) is not None:
        driver._writer_thread = _Discard()  # type: ignore[attr-defined]


class ContainerPicker(ModalScreen[str | None]):
    """Which container of a pod a shell opens in (a pod with more than one); escape: none."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", show=False)]
    DEFAULT_CSS = """
    ContainerPicker { align: center middle; }
    ContainerPicker > Vertical {
        width: 64; max-width: 95%; height: auto; max-height: 80%; border: thick $accent; background: $surface;
        padding: 0 1;
    }
    ContainerPicker OptionList { height: auto; max-height: 20; }
    """

    def __init__(self, pod: str, containers: Sequence[str]) -> None:
        super().__init__(id="container-picker")
        self.pod = pod
        self.containers = tuple(containers)

    def compose(self) -> ComposeResult:
        from rich.text import Text

        with Vertical():
            yield Label(Text(f"Shell in which container of {self.pod}?"))
            yield OptionList(*(Text(c) for c in self.containers), id="containers")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.containers[event.option_index])

    def action_cancel(self) -> None:
        self.dismiss(None)
