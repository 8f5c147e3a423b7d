"""The confirmation dialog every action goes through.

It only *shows* what the executor planned (targets, exact commands, what is hit)
and passes the user's confirmation back to the executor; it never runs anything
itself, so the executor's read-only and confirmation rules always apply.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from hpctui.actions.base import REQUIRED_PARAMS, ActionKind, ActionPlan, ActionResult
from hpctui.model.hostlist import collect

if TYPE_CHECKING:
    from hpctui.runtime import Runtime

TITLES: dict[ActionKind, str] = {
    ActionKind.DRAIN_NODES: "Drain nodes (running jobs finish, no new ones start)",
    ActionKind.RESUME_NODES: "Resume nodes",
    ActionKind.REBOOT_NODES: "Reboot nodes ASAP (drain, reboot when idle, then resume)",
    ActionKind.CANCEL_REBOOT: "Cancel a pending reboot",
    ActionKind.REQUEUE_JOBS: "Requeue jobs (they restart from the top)",
    ActionKind.REQUEUE_HOLD_JOBS: "Requeue and hold jobs",
    ActionKind.HOLD_JOBS: "Hold pending jobs",
    ActionKind.RELEASE_JOBS: "Release held jobs",
    ActionKind.CANCEL_JOBS: "Cancel jobs",
    ActionKind.CORDON_NODES: "Cordon Kubernetes nodes",
    ActionKind.UNCORDON_NODES: "Uncordon Kubernetes nodes",
    ActionKind.K8S_DRAIN_NODES: "Drain Kubernetes nodes (evict pods)",
    ActionKind.MIG_RECONFIGURE: "Reconfigure MIG",
    ActionKind.DELETE_PODS: "Delete Kubernetes pods",
}
MAX_LISTED = 12


def _targets_text(plan: ActionPlan) -> str:
    if plan.kind.value in ("drain", "resume", "reboot", "cancel_reboot", "cordon", "uncordon", "k8s_drain"):
        try:
            return collect(plan.targets)
        except Exception:  # job ids or odd names: fall back to a plain list
            pass
    shown = ", ".join(plan.targets[:MAX_LISTED])
    more = len(plan.targets) - MAX_LISTED
    return shown + (f" … and {more} more" if more > 0 else "")


def render_plan(plan: ActionPlan) -> Text:
    """The preview block: what runs, on what, and what it hits."""
    out = Text()
    out.append("Targets: ", style="bold")
    out.append(f"{_targets_text(plan) or '(none)'}  [{len(plan.targets)}]\n")
    if plan.rejected_targets:
        out.append("Rejected: ", style="bold")
        out.append(", ".join(plan.rejected_targets) + "\n")
    if plan.commands:
        out.append("Will run:\n", style="bold")
        for cmd in plan.commands[:MAX_LISTED]:
            out.append(f"  $ {cmd}\n")
        if len(plan.commands) > MAX_LISTED:
            out.append(f"  … {len(plan.commands) - MAX_LISTED} more\n")
    if plan.affected:
        out.append(f"Affects ({len(plan.affected)}):\n", style="bold")
        for item in plan.affected[:MAX_LISTED]:
            out.append(f"  • {item}\n")
        if len(plan.affected) > MAX_LISTED:
            out.append(f"  … {len(plan.affected) - MAX_LISTED} more\n")
    for note in plan.notes:
        out.append(f"note: {note}\n", style="italic")
    for warning in plan.warnings:
        out.append(f"warning: {warning}\n", style="bold")
    for error in plan.errors:
        out.append(f"✗ {error}\n", style="bold reverse")
    return out


def render_result(result: ActionResult) -> Text:
    out = Text()
    if result.refused:
        out.append(f"Not run: {result.refused}\n", style="bold reverse")
        return out
    ok = sum(r.ok for r in result.results)
    out.append(f"{ok}/{len(result.results)} succeeded\n", style="bold")
    for r in result.results:
        out.append("  ✓ " if r.ok else "  ✗ ", style="bold" if not r.ok else "")
        out.append(f"{r.target}" + (f": {r.message}" if r.message else "") + "\n")
    return out


class ActionDialog(ModalScreen["ActionResult | None"]):
    """Preview an action, collect its reason and confirmation, run it, show results."""

    BINDINGS = [Binding("escape", "dismiss_dialog", "Close")]
    DEFAULT_CSS = """
    ActionDialog { align: center middle; }
    ActionDialog > Vertical {
        width: 90%; max-width: 110; height: auto; max-height: 90%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    ActionDialog #title { text-style: bold; color: $text; width: 100%; }
    ActionDialog #preview { height: auto; max-height: 20; }
    ActionDialog #result { height: auto; color: $text; }
    ActionDialog Input { margin: 0 0 0 0; }
    ActionDialog #buttons { height: auto; align-horizontal: right; }
    ActionDialog Button { margin-left: 1; }
    """

    def __init__(self, runtime: Runtime, kind: ActionKind, targets: tuple[str, ...],
                 params: dict[str, str] | None = None) -> None:
        super().__init__()
        self.runtime = runtime
        self.kind = kind
        self.targets = targets
        self.params: dict[str, str] = dict(params or {})
        self.plan = self._make_plan()
        self.result: ActionResult | None = None
        self.running = False

    def _make_plan(self) -> ActionPlan:
        return self.runtime.executor.plan(self.kind, self.targets, self.params, self.runtime.store.snapshot())

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(TITLES.get(self.kind, self.kind.value), id="title")
            for name in REQUIRED_PARAMS.get(self.kind, ()):
                yield Input(placeholder=f"{name} (required), e.g. 'xid 79 gpu3 - ticket 4411'", id=f"param-{name}")
            with VerticalScroll(id="preview"):
                yield Static(render_plan(self.plan), id="plan")
            yield Input(id="confirm", placeholder="")
            yield Static("", id="result")
            with Horizontal(id="buttons"):
                yield Button("Run", id="run", variant="error" if self.plan.destructive else "primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self._refresh_controls()

    def _refresh_controls(self) -> None:
        self.query_one("#plan", Static).update(render_plan(self.plan))
        confirm = self.query_one("#confirm", Input)
        word = self.plan.confirm_word
        confirm.display = word is not None and self.result is None
        if word is not None:
            confirm.placeholder = f"type {word} to confirm"
        run = self.query_one("#run", Button)
        run.disabled = self.result is not None or not self.plan.runnable or (
            word is not None and confirm.value.strip() != word)
        run.display = self.result is None
        self.query_one("#cancel", Button).label = "Close" if self.result is not None else "Cancel"

    @on(Input.Changed)
    def _input_changed(self, event: Input.Changed) -> None:
        if event.input.id and event.input.id.startswith("param-"):
            self.params[event.input.id.removeprefix("param-")] = event.value
            self.plan = self._make_plan()
        self._refresh_controls()

    @on(Input.Submitted)
    def _input_submitted(self) -> None:
        if not self.query_one("#run", Button).disabled:
            self._start()

    @on(Button.Pressed, "#run")
    def _run_pressed(self) -> None:
        self._start()

    @on(Button.Pressed, "#cancel")
    def _cancel_pressed(self) -> None:
        self.action_dismiss_dialog()

    def action_dismiss_dialog(self) -> None:
        if self.running:
            self.app.notify("the action is still running; its results will show here", severity="warning")
            return
        self.dismiss(self.result)

    def _start(self) -> None:
        """Start once: a second Enter or click while it runs does nothing."""
        if self.running or self.result is not None:
            return
        self.running = True
        self.query_one("#run", Button).disabled = True
        word = self.plan.confirm_word
        confirmation: str | bool = self.query_one("#confirm", Input).value.strip() if word else True
        self._wait_for(self.runtime.run_action(self.plan, confirmation))

    @work(exclusive=True, group="action", description="action")
    async def _wait_for(self, task: asyncio.Task[ActionResult]) -> None:
        running = f"running {self.kind.value} on {len(self.plan.targets)} target(s)…"
        self.query_one("#result", Static).update(Text(running))
        backend = next((b for b in self.runtime.executor.backends if b.name == self.plan.source), None)
        try:
            while not task.done():  # a backend that reports progress (K8s drain: per pod) is shown live
                await asyncio.wait({task}, timeout=0.5)
                progress = getattr(backend, "progress", None)
                if isinstance(progress, list) and progress:
                    self.query_one("#result", Static).update(Text("\n".join([running, *progress[-8:]])))
            self.result = await asyncio.shield(task)  # the runtime owns the task; we only watch it
        finally:
            self.running = False
        self.query_one("#result", Static).update(render_result(self.result))
        self._refresh_controls()
        self.runtime.refresh_now()
        for problem in self.runtime.executor.audit_errors:
            self.app.notify(escape(problem), title="Audit record not written", severity="error", timeout=30)
        self.runtime.executor.audit_errors.clear()
        self.app.notify(escape(f"{self.kind.value}: {sum(r.ok for r in self.result.results)}/"
                               f"{len(self.result.results)} ok" if not self.result.refused
                               else f"{self.kind.value} not run: {self.result.refused}"),
                        severity="information" if self.result.ok else "error")
