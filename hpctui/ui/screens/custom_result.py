"""Custom actions in the app: the preview (the exact argv per node), then a scrollable result
view whose folded output (``clush -b`` style) grows live as nodes answer.

Neither screen runs anything itself: the preview hands the user's confirmation to a
:class:`~hpctui.actions.custom.CustomRun`, whose task the runtime owns (read-only rule,
confirmation, audit); the result view only watches it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.widgets import Button, Input, Label, Static

from hpctui.actions.custom import CustomPlan, CustomRun
from hpctui.actions.fold import NO_OUTPUT, NodeOutput, exit_codes, failures, fold, label_set, summary
from hpctui.base.sanitize import clean_text
from hpctui.ui.keys import custom_key_specs
from hpctui.ui.widgets.footer import KeyBar

if TYPE_CHECKING:
    from hpctui.actions.custom import CustomActionSettings
    from hpctui.core.runtime import Runtime

MAX_PREVIEW = 40  # argv lines shown in the preview (grouped by identical argv)
THREAD_ABOVE = 512  # runs: fold in a worker thread above this many


def bind_custom_keys(panes: dict[str, Widget], actions: Sequence[CustomActionSettings]) -> list[str]:
    """Bind each custom action's key on its scope's pane widget (``panes``: key scope → widget).

    Returns the bound ids. Raises CustomKeyError if a key is taken (checked before any is bound)."""
    bound: list[str] = []
    for spec in custom_key_specs(actions):
        widget = panes.get(spec.scope)
        if widget is None:
            continue
        widget._bindings.key_to_bindings.setdefault(spec.key, []).append(spec.binding())
        bound.append(spec.id)
    return bound


def plan_text(plan: CustomPlan) -> Text:
    a = plan.action
    out = Text()
    out.append("Targets: ", style="bold")
    out.append(f"{clean_text(label_set(plan.targets)) or '(none)'}  [{len(plan.targets)}]\n")
    where = "on each node over SSH" if a.run == "ssh" else (
        "here, once per target" if len(plan.invocations) > 1 or (plan.invocations[:1] and
        plan.invocations[0].label != "local") else "here, once")
    out.append("Runs: ", style="bold")
    out.append(f"{where}; timeout {a.timeout_s:g} s" + (f", {a.max_parallel} at a time" if len(plan.invocations) > 1
                                                          else "") + "\n")
    commands = plan.commands()
    out.append("Will run (exact argv):\n", style="bold")
    for line in commands[:MAX_PREVIEW]:
        out.append(f"  $ {line}\n")
    if len(commands) > MAX_PREVIEW:
        out.append(f"  … {len(commands) - MAX_PREVIEW} more\n")
    for note in plan.notes:
        out.append(f"note: {note}\n", style="italic")
    for warning in plan.warnings:
        out.append(f"warning: {clean_text(warning)}\n", style="bold")
    for error in plan.errors:
        out.append(f"✗ {clean_text(error)}\n", style="bold reverse")
    return out


class CustomPreviewScreen(ModalScreen[bool]):
    """What will run, where, exactly; Run (typed word for a dangerous action) or Back."""

    BINDINGS = [Binding("escape", "back", "Back")]
    DEFAULT_CSS = """
    CustomPreviewScreen { align: center middle; }
    CustomPreviewScreen > Vertical {
        width: 90%; max-width: 120; height: auto; max-height: 90%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    CustomPreviewScreen #title { text-style: bold; width: 100%; }
    CustomPreviewScreen #preview { height: auto; max-height: 24; }
    CustomPreviewScreen #hint { color: $text-muted; }
    CustomPreviewScreen #buttons { height: auto; align-horizontal: right; }
    CustomPreviewScreen Button { margin-left: 1; }
    """

    def __init__(self, run: CustomRun) -> None:
        super().__init__()
        self.run = run
        self.plan = run.plan

    def compose(self) -> ComposeResult:
        a = self.plan.action
        flag = " — DANGEROUS" if a.dangerous else ""
        with Vertical():
            yield Label(clean_text(f"Custom action: {a.name} ({a.title}){flag}"), id="title", markup=False)
            with VerticalScroll(id="preview"):
                yield Static(plan_text(self.plan), id="plan", markup=False)
            yield Input(id="confirm", placeholder=f"type {self.plan.confirm_word} to confirm")
            yield Static(self._hint(), id="hint", markup=False)
            with Horizontal(id="buttons"):
                yield Button(f"Run on {len(self.plan.invocations)}" if self.plan.invocations else "Run", id="run",
                             variant="error" if a.dangerous else "primary")
                yield Button("Back", id="back")

    def _hint(self) -> str:
        if not self.plan.runnable:
            return "cannot run: see above · escape: back"
        if self.plan.confirm_word:
            return f"type {self.plan.confirm_word} then enter · escape: back"
        if self.plan.action.confirm:
            return "tab to Run and press enter to confirm · escape: back"
        return "enter: run · escape: back"

    def on_mount(self) -> None:
        confirm = self.query_one("#confirm", Input)
        confirm.display = self.plan.confirm_word is not None and self.plan.runnable
        run = self.query_one("#run", Button)
        run.disabled = not self.plan.runnable or self.plan.confirm_word is not None
        if confirm.display:
            confirm.focus()
        elif self.plan.runnable and not self.plan.action.confirm:
            run.focus()  # a harmless diagnostic: enter runs it
        else:
            self.query_one("#back", Button).focus()

    @on(Input.Changed, "#confirm")
    def _typed(self, event: Input.Changed) -> None:
        self.query_one("#run", Button).disabled = not self.plan.runnable or event.value.strip() != self.plan.confirm_word

    @on(Input.Submitted, "#confirm")
    def _submitted(self, event: Input.Submitted) -> None:
        if event.value.strip() == self.plan.confirm_word and self.plan.runnable:
            self._go()

    @on(Button.Pressed, "#run")
    def _run_pressed(self) -> None:
        self._go()

    @on(Button.Pressed, "#back")
    def _back_pressed(self) -> None:
        self.action_back()

    def action_back(self) -> None:
        self.dismiss(False)

    def _go(self) -> None:
        word = self.plan.confirm_word
        self.run.confirmation = self.query_one("#confirm", Input).value.strip() if word else True
        self.dismiss(True)


def result_text(run: CustomRun) -> Text:
    """The folded output: one block per set of nodes that printed the same, failures apart."""
    return folded_text(run.ordered(), run.pending, run.refused)


def folded_text(outputs: Sequence[NodeOutput], pending: Sequence[str], refused: str | None) -> Text:
    """:func:`result_text` of copied state (pure: it may run in a thread for thousands of nodes)."""
    out = Text()
    if refused:
        out.append(f"Not run: {clean_text(refused)}\n", style="bold reverse")
        return out
    for f in fold(outputs):
        out.append(f.header + "\n", style="bold")
        if f.text:
            out.append(f.text + "\n")
        else:
            out.append(NO_OUTPUT + "\n", style="dim italic")
    codes = exit_codes(outputs)
    fails = failures(outputs)
    if codes or fails:
        out.append("\n")
    for rc, labels in codes:
        out.append(f"exit code {rc}: ", style="bold")
        out.append(f"{label_set(labels)} ({len(labels)})\n")
    for err, labels in fails:
        out.append("FAILED ", style="bold reverse")
        out.append(f" {label_set(labels)} ({len(labels)}): ", style="bold")
        out.append(f"{err}\n")
    if pending:
        out.append(f"\nwaiting for {label_set(pending)} ({len(pending)})…\n", style="italic")
    return out


class CustomResultScreen(Screen[None]):
    """Scrollable folded output of one custom action run, live as nodes answer; escape closes
    (the run goes on and is audited; its outcome also lands in the Events view)."""

    BINDINGS = [Binding("escape", "close", "Close"), Binding("q", "close", "Close", show=False)]
    DEFAULT_CSS = """
    CustomResultScreen #custom-head { height: auto; padding: 0 1; background: $panel; text-style: bold; }
    CustomResultScreen #custom-body { height: 1fr; padding: 0 1; }
    """

    def __init__(self, runtime: Runtime, run: CustomRun) -> None:
        super().__init__(id="custom-result")
        self.runtime = runtime
        self.run = run
        self._dirty = True
        self._drawing = False
        self._targets = label_set(run.plan.targets)
        run.on_update = self._updated

    def compose(self) -> ComposeResult:
        yield Static("", id="custom-head", markup=False)
        with VerticalScroll(id="custom-body"):
            yield Static("", id="custom-output", markup=False)
        yield KeyBar()

    def on_mount(self) -> None:
        if self.run.task is None and self.run.result is None:
            self.run.start()
        self.query_one("#custom-body").focus()
        self._draw()
        self.set_interval(0.25, self._draw_if_dirty)

    def _updated(self, _run: CustomRun) -> None:
        self._dirty = True

    def _draw_if_dirty(self) -> None:
        if self._dirty and not self._drawing:
            self._draw()

    def _draw(self) -> None:
        """Head now; the folds in a thread past THREAD_ABOVE outputs (python-hostlist needs ~50 ms
        per thousand nodes), one draw at a time, the latest state each time."""
        self._dirty = False
        run = self.run
        self._draw_head()
        outputs, pending, refused = run.ordered(), run.pending, run.refused
        if len(outputs) + len(pending) <= THREAD_ABOVE:
            self.query_one("#custom-output", Static).update(folded_text(outputs, pending, refused))
            return
        self._drawing = True
        self.run_worker(self._draw_thread(outputs, pending, refused), exclusive=True, group="custom-draw")

    async def _draw_thread(self, outputs: list[NodeOutput], pending: list[str], refused: str | None) -> None:
        try:
            text = await asyncio.to_thread(folded_text, outputs, pending, refused)
            if self.is_attached:
                self.query_one("#custom-output", Static).update(text)
        finally:
            self._drawing = False

    def _draw_head(self) -> None:
        run = self.run
        a = run.plan.action
        n = len(run.plan.invocations)
        if run.refused:
            state = "not run"
        elif run.result is not None:
            state = "done: " + summary(run.result.outputs)
        else:
            state = f"running… {len(run.outputs)}/{n} answered"
        where = "ssh" if a.run == "ssh" else "local"
        head = f"{a.name} ({where}) on {self._targets} [{len(run.plan.targets)}] · {state} · esc: close"
        self.query_one("#custom-head", Static).update(clean_text(head))

    def action_close(self) -> None:
        self.run.on_update = None
        self.app.pop_screen()
