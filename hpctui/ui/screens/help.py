"""``?``: every key, generated from the same registry as the bindings and footer."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from hpctui.ui.keys import ALL_KEYS, SCOPE_TITLES, display_key
from hpctui.ui.screens.scrolling import SCROLL_BINDINGS, scroll_body


def help_content(actions_enabled: bool, keymap: dict[str, str] | None = None) -> Content:
    lines: list[Content] = [Content.assemble(("hpctui keys", "bold $primary"))]
    for scope, title in SCOPE_TITLES.items():
        specs = [k for k in ALL_KEYS if k.scope == scope and (actions_enabled or k.kind is None)]
        if scope == "table":
            specs = [k for k in ALL_KEYS if k.scope == "table"]
        if not specs:
            continue
        lines.append(Content(""))
        lines.append(Content.assemble((title, "bold underline")))
        for spec in specs:
            danger = "  (confirms first)" if spec.kind is not None else ""
            lines.append(Content.assemble((f"  {display_key(spec, keymap):>7}  ", "bold $accent"), spec.description,
                                         danger))
    lines.append(Content(""))
    lines.append(Content.assemble(("Navigation", "bold underline")))
    lines.append(Content("  tab / shift+tab  move between panes;  arrows, pgup/pgdn, home/end  move the cursor"))
    lines.append(Content("  mouse: click a node or a row; click a table header to sort; ctrl+click marks a node"))
    lines.append(Content("  enter drills down (a node → its jobs and pods; a job → its detail), esc goes back"))
    lines.append(Content(""))
    lines.append(Content.assemble((": commands (tab completes)", "bold underline")))
    from hpctui.ui.commands import COMMANDS

    for command in COMMANDS:
        name = ":" + "/:".join((command.name, *command.aliases)) + (" NAME" if command.arg else "")
        lines.append(Content.assemble((f"  {name:<18}", "bold $accent"), command.description))
    if not actions_enabled:
        lines.append(Content(""))
        lines.append(Content.assemble(("Read-only: cluster actions are disabled.", "$warning bold")))
    lines.append(Content(""))
    lines.append(Content("escape, q or ? closes this help"))
    return Content("\n").join(lines)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close", show=False), *SCROLL_BINDINGS]

    def __init__(self, actions_enabled: bool, keymap: dict[str, str] | None = None) -> None:
        super().__init__(id="help")
        self.actions_enabled = actions_enabled
        self.keymap = keymap

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(help_content(self.actions_enabled, self.keymap), markup=False)

    def action_scroll_body(self, dx: int, dy: int) -> None:
        scroll_body(self, dx, dy)
