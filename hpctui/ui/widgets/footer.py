"""The key bar at the bottom of a screen: the keys of whatever has focus, one line.

htop's rule: the essential keys (``?`` help, the triage keys ``n`` ``p`` ``g``, ``q`` quit) come
first, so they are on screen at every width and with any pane focused.

Why not Textual's ``Footer``: it recomposes on every focus change, mounting a widget per key
(~30 here), which costs 50–100 ms per ``tab`` and repaints the whole screen. This bar is one
widget that renders one line, and repaints only when the keys it shows actually change.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.screen import ModalScreen, Screen
from textual.widget import Widget

# Actions shown first, in this order: help, the triage walk (next problem, the problem list,
# go to a node), quit. Everything else follows in the bindings' order, as far as the width allows.
PINNED = ("help", "next_problem(1)", "show_view('problems')", "go_to", "quit")
DIM = Style(dim=True)


@dataclass(frozen=True)
class KeyEntry:
    """One key as the bar shows it, with the columns it occupies (for clicks and tests)."""

    key: str            # the key to simulate on click
    display: str        # how the key is written ("^p", "tab", "?")
    description: str
    action: str
    enabled: bool = True
    palette: bool = False  # the command palette's key, kept at the right edge
    start: int = 0
    end: int = 0


def _rank(entry: KeyEntry) -> int:
    return PINNED.index(entry.action) if entry.action in PINNED else len(PINNED)


class KeyBar(Widget, can_focus=False):
    """The keys of the focused widget and its screen, like Textual's Footer, in one widget."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"keybar--key", "keybar--description"}
    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        width: 1fr;
        color: $footer-foreground;
        background: $footer-background;
        & > .keybar--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        & > .keybar--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._entries: tuple[KeyEntry, ...] = ()
        self._placed: tuple[KeyEntry, ...] = ()
        self._source: Screen[object] | None = None  # whose keys are shown: our screen, or a dialog over it

    # -- what to show ---------------------------------------------------------
    def on_mount(self) -> None:
        self._source = self.screen
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self.app.screen_change_signal.subscribe(self, self._screen_changed)
        self._bindings_changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)
        if self._source is not None and self._source is not self.screen:
            self._source.bindings_updated_signal.unsubscribe(self)
        self.app.screen_change_signal.unsubscribe(self)

    def _dialog_over_us(self) -> Screen[object] | None:
        """The modal screen (a dialog, the help) drawn over ours, whose keys are the ones that
        work while it is open; None when our screen is the active one or is covered by a full one."""
        stack = self.app.screen_stack
        if self.screen not in stack:
            return None
        above = stack[stack.index(self.screen) + 1:]
        if above and all(isinstance(s, ModalScreen) for s in above):
            return above[-1]
        return None

    def _screen_changed(self, _screen: Screen[object]) -> None:
        """A screen was pushed or popped: show the dialog's keys while it is open, ours after."""
        if not self.is_attached:
            return
        source = self._dialog_over_us() or self.screen
        if source is self._source:
            return
        if self._source is not None and self._source is not self.screen:
            self._source.bindings_updated_signal.unsubscribe(self)
        if source is not self.screen:
            source.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._source = source
        self._bindings_changed(source)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        if not self.is_attached or screen is not self._source:
            return
        entries = self._collect()
        if entries != self._entries:  # a focus change within one pane shows the same keys: no repaint
            self._entries = entries
            self.refresh()

    def _collect(self) -> tuple[KeyEntry, ...]:
        app = self.app
        active = (self._source or self.screen).active_bindings
        seen: set[str] = set()
        keys: list[KeyEntry] = []
        for _node, binding, enabled, _tooltip in active.values():
            if not binding.show or binding.action in seen:
                continue  # one entry per action, as Textual's Footer shows them
            seen.add(binding.action)
            keys.append(KeyEntry(binding.key, app.get_key_display(binding), binding.description,
                                 binding.action, enabled))
        keys.sort(key=_rank)  # stable: everything else keeps the bindings' order
        palette = active.get(app.COMMAND_PALETTE_BINDING) if app.ENABLE_COMMAND_PALETTE else None
        if palette is not None:
            _node, binding, enabled, _tooltip = palette
            keys.append(KeyEntry(binding.key, app.get_key_display(binding), binding.description,
                                 binding.action, enabled, palette=True))
        return tuple(keys)

    @property
    def entries(self) -> tuple[KeyEntry, ...]:
        """The keys as last drawn, with the columns each occupies (empty ranges: cut off)."""
        return self._placed

    # -- drawing ---------------------------------------------------------------
    def render(self) -> Text:
        width = self.size.width
        key_style = self.get_component_rich_style("keybar--key")
        desc_style = self.get_component_rich_style("keybar--description")
        palette = [e for e in self._entries if e.palette]
        right = Text()
        if palette:
            e = palette[0]
            right.append("▏", style="dim")
            right.append(e.display, style=key_style)
            right.append(f" {e.description} ", style=desc_style)
        room = max(0, width - right.cell_len)
        line = Text(no_wrap=True, overflow="crop", end="")
        placed: list[KeyEntry] = []
        for e in self._entries:
            if e.palette:
                continue
            start = line.cell_len
            key_text, desc_text = f" {e.display} ", f"{e.description} " if e.description else ""
            if start + cell_len(key_text) + cell_len(desc_text) > room:  # a key is shown whole or not at all
                placed.append(replace(e, start=start, end=start))
                room = start  # and nothing after it: the order is the priority
                continue
            dim = None if e.enabled else DIM
            line.append(key_text, style=key_style + dim)
            line.append(desc_text, style=desc_style + dim)
            placed.append(replace(e, start=start, end=line.cell_len))
        room = max(0, width - right.cell_len)
        line.pad_right(room - line.cell_len)
        if palette:
            placed.append(replace(palette[0], start=room, end=room + right.cell_len))
            line.append_text(right)
        self._placed = tuple(placed)
        return line

    def on_resize(self) -> None:
        self.refresh()

    def on_click(self, event: events.Click) -> None:
        for e in self._placed:
            if e.start <= event.x < e.end:
                event.stop()
                if e.enabled:
                    self.app.simulate_key(e.key)
                else:
                    self.app.bell()
                return
