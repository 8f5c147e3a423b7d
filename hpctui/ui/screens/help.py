"""``?``: every key (with its binding id), generated from the same registry as the bindings and
footer; the ``:`` commands; the colour legend; a glossary of the column titles."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from hpctui.ui.heat import GLYPH_LEGEND
from hpctui.ui.keys import ALL_KEYS, SCOPE_TITLES, display_key
from hpctui.ui.screens.scrolling import SCROLL_BINDINGS, scroll_body

# What the column titles of the node panel and the tables mean (units included).
GLOSSARY: tuple[tuple[str, str], ...] = (
    ("UTIL", "GPU utilisation, % of the last sample period"),
    ("MEM GiB", "GPU memory used / total"),
    ("TEMP/HBM", "GPU core / HBM memory temperature, °C"),
    ("POWER W", "power draw / limit, watts"),
    ("ECC c/u", "ECC errors since the driver loaded: corrected / uncorrected"),
    ("REMAP", "row remap pending (yes: reset the GPU); FAIL: remap failed (RMA)"),
    ("PCIe g/w", "PCIe generation x width, now / max (narrower: reseat, check slot)"),
    ("MIG", "MIG mode on/off"),
    ("util / temp", "node sparklines (GPU mean): fixed 0–100 %; 20 °C to crit + 10 °C"),
    ("RATE", "InfiniBand rate and generation (400G NDR); yellow: below max"),
    ("PHYS", "physical link state (LinkUp, Polling, Disabled)"),
    ("ERR Δ", "link error counters' increase since the previous poll"),
    ("LAT ms", "how long a stat of the mount took; N/A: no answer (hung)"),
    ("TIME / TIME_LEFT", "a job's elapsed / remaining time (squeue %M / %L)"),
    ("RST", "a pod's container restarts"),
    ("SEV", "severity: info, warn, error, CRIT"),
    ("SINCE", "how long the problem has been seen"),
)


def _legend() -> list[Content]:
    """The colours and glyphs of the heatmap and the tables."""
    swatches: list[tuple[str, str] | str] = ["  health  "]
    for var, label in (("sev-ok", "ok"), ("sev-info", "info"), ("sev-warning", "warn"), ("sev-error", "error"),
                       ("sev-critical", "critical"), ("heat-na", "no data")):
        swatches += [("  ", f"on ${var}"), f" {label}  "]
    load: list[tuple[str, str] | str] = ["  util    "]
    for i in range(5):
        load.append(("  ", f"on $util-{i}"))
    load.append("  idle → busy (load, not health: never red)")
    heat: list[tuple[str, str] | str] = ["  temp    "]
    for i in range(5):
        heat.append(("  ", f"on $heat-{i}"))
    heat.append("  cool → hot (the thresholds set the steps)")
    text: list[tuple[str, str] | str] = ["  rows    "]
    for style, label in (("$success", "running / ok"), ("$primary", "info"), ("$warning", "pending / warning"),
                         ("$error", "failed / error"), ("$sev-critical-text", "critical")):
        text += [(label, style), "  "]
    glyphs = "  cells   " + "  ".join(f"{g} {label}" for g, label in GLYPH_LEGEND) + "  • marked"
    return [Content.assemble(*swatches), Content.assemble(*load), Content.assemble(*heat),
            Content.assemble(*text), Content(glyphs)]


def help_content(actions_enabled: bool, keymap: dict[str, str] | None = None) -> Content:
    """Keys (with the binding ids a ``[keymap]`` uses), navigation, the ``:`` commands, the colour
    legend and a glossary of the column titles."""
    lines: list[Content] = [Content.assemble(("hpctui keys", "bold $primary"),
                                             ("   (binding id in brackets: remap it in [keymap])", "$text-muted"))]
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
            what = f"{spec.description}{danger}"
            lines.append(Content.assemble((f"  {display_key(spec, keymap):>7}  ", "bold $accent"), f"{what:<42}",
                                         (f" [{spec.id}]", "$text-muted")))
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
    lines.append(Content(""))
    lines.append(Content.assemble(("Colours", "bold underline")))
    lines.extend(_legend())
    lines.append(Content(""))
    lines.append(Content.assemble(("Columns", "bold underline")))
    width = max(len(term) for term, _ in GLOSSARY)
    lines.extend(Content.assemble((f"  {term:<{width}}  ", "bold"), meaning) for term, meaning in GLOSSARY)
    if not actions_enabled:
        lines.append(Content(""))
        lines.append(Content.assemble(("Read-only: cluster actions are disabled.", "$warning bold")))
    lines.append(Content(""))
    lines.append(Content("escape, q or ? closes this help"))
    return Content("\n").join(lines)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close", key_display="esc"), *SCROLL_BINDINGS]

    def __init__(self, actions_enabled: bool, keymap: dict[str, str] | None = None) -> None:
        super().__init__(id="help")
        self.actions_enabled = actions_enabled
        self.keymap = keymap

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(help_content(self.actions_enabled, self.keymap), markup=False)

    def action_scroll_body(self, dx: int, dy: int) -> None:
        scroll_body(self, dx, dy)
