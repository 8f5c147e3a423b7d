"""The confirmation dialog every action goes through.

It only *shows* what the executor planned (targets, exact commands, what is hit)
and passes the user's confirmation back to the executor; it never runs anything
itself, so the executor's read-only and confirmation rules always apply.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Input, Label, RadioButton, RadioSet, Static

from hpctui.actions.plans import REASON_KINDS, describe_prior, drain_reason
from hpctui.actions.render import plan_lines
from hpctui.model.action import JOB_ACTIONS, REQUIRED_PARAMS, ActionKind, ActionPlan, ActionResult, ProgressItem
from hpctui.model.hostlist import HostlistError, expand
from hpctui.model.jobs import array_task_count
from hpctui.ui.literal import literal

if TYPE_CHECKING:
    from hpctui.core.ports import UiPort

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
    ActionKind.HEALTH_CHECK: "Health check (the result is kept per node; a failure offers the drain)",
}
DEFAULT_CHECK = "dcgm-r2"  # clears a critical GPU finding for the resume gate, in minutes
MAX_LISTED = 12
PROGRESS_SHOWN = 8  # the last progress lines of a running action


LINE_STYLES: dict[str, str] = {"warning": "bold", "step": "bold", "commands": "bold", "affects": "bold",
                               "rule": "italic", "note": "italic", "error": "bold reverse"}


def render_plan(plan: ActionPlan, shown: frozenset[str] = frozenset()) -> Text:
    """The preview block (:func:`hpctui.actions.render.plan_lines`, lists cut at MAX_LISTED),
    styled: warnings first (what will fail or surprise), then what runs, on what, and what it hits;
    a plan spanning backends shows each step with only what that step affects. Warnings in
    ``shown`` are left out (the dialog says them above, with the choice they ask for)."""
    out = Text()
    for line in plan_lines(plan, limit=MAX_LISTED, hide=shown):
        style = LINE_STYLES.get(line.kind, "")
        if line.kind == "targets":
            out.append("Targets: ", style="bold")
            out.append(f"{line.text or '(none)'}  [{line.count}]\n")
        elif line.kind == "rejected":
            out.append("Rejected: ", style="bold")
            out.append(line.text + "\n")
        elif line.kind == "warning":
            out.append(f"⚠ {line.text}\n", style=style)
        elif line.kind == "step":
            out.append(f"Step {line.step}: {line.text} [{line.count}]\n", style=style)
        elif line.kind == "commands":
            out.append("Will run:\n", style=style)
        elif line.kind == "affects":
            out.append(f"Affects ({line.count}):\n", style=style)
        elif line.kind in ("command", "affected", "more"):
            mark = {"command": "$ ", "affected": "• ", "more": ""}[line.kind]
            out.append(f"  {mark}{line.text}\n")
        elif line.kind == "note":
            out.append(f"note: {line.text}\n", style=style)
        elif line.kind == "error":
            out.append(f"✗ {line.text}\n", style=style)
        elif line.kind == "rule":
            out.append(line.text + "\n", style=style)
        # "confirm": the dialog asks for the word in its own field
    return out


def render_result(result: ActionResult) -> Text:
    out = Text()
    if result.refused:
        out.append(f"Not run: {result.refused}\n", style="bold reverse")
        return out
    ok = sum(r.ok for r in result.results)
    out.append(f"{ok}/{len(result.results)} succeeded\n", style="bold")
    groups = [(f"Step {i}: {s.source} {s.kind.value}", s.results) for i, s in enumerate(result.steps, 1)] \
        or [("", result.results)]
    for title, results in groups:
        if title:
            out.append(f"{title}: {sum(r.ok for r in results)}/{len(results)} ok\n", style="bold")
        for r in results:
            out.append("  ✓ " if r.ok else "  ✗ ", style="bold" if not r.ok else "")
            out.append(f"{r.target}" + (f": {r.message}" if r.message else "") + "\n")
    return out


_VERBS: dict[ActionKind, str] = {
    ActionKind.DRAIN_NODES: "Drain", ActionKind.RESUME_NODES: "Resume", ActionKind.REBOOT_NODES: "Reboot",
    ActionKind.CANCEL_REBOOT: "Cancel reboot of", ActionKind.REQUEUE_JOBS: "Requeue",
    ActionKind.REQUEUE_HOLD_JOBS: "Requeue and hold", ActionKind.HOLD_JOBS: "Hold", ActionKind.RELEASE_JOBS: "Release",
    ActionKind.CANCEL_JOBS: "Cancel", ActionKind.CORDON_NODES: "Cordon", ActionKind.UNCORDON_NODES: "Uncordon",
    ActionKind.K8S_DRAIN_NODES: "Drain (K8s)", ActionKind.MIG_RECONFIGURE: "Reconfigure MIG on",
    ActionKind.DELETE_PODS: "Delete", ActionKind.RESERVE_MAINT: "Reserve",
    ActionKind.DELETE_RESERVATION: "Delete", ActionKind.PARTITION_STATE: "Set state of",
}


def run_label(plan: ActionPlan) -> str:
    """The confirm button says what it does: "Cancel 4 jobs", "Drain 2 nodes" (never a bare "Run")."""
    n = len(plan.targets)
    verb = _VERBS.get(plan.kind)
    if verb is None:
        return f"Run {plan.kind.value} on {n}"
    if plan.kind in JOB_ACTIONS:
        noun = "job"
    elif plan.kind is ActionKind.DELETE_PODS:
        noun = "pod"
    elif plan.kind is ActionKind.DELETE_RESERVATION:
        noun = "reservation"
    elif plan.kind is ActionKind.PARTITION_STATE:
        noun = "partition"
    else:
        noun = "node"
    label = f"{verb} {n} {noun}{'' if n == 1 else 's'}"
    if plan.kind in JOB_ACTIONS:  # a pending array remainder (1234_[5-16%4]) is many tasks, not one job
        tasks = sum(array_task_count(t) for t in plan.targets)
        if tasks != n:
            label += f" ({tasks} tasks)"
    return label


DIALOG_KEYS = "enter confirm / next field   tab next   shift+tab previous   esc back"
# The choice for targets that already are what the action makes them (reason_mode), first = default.
MODE_LABELS: dict[str, str] = {
    "keep": "Keep: leave it as it is (nothing is sent for it)",
    "append": "Append: current reason; new reason",
    "replace": "Replace: my action overwrites it (the audit record keeps the old one)",
}


def expand_or(expr: str) -> list[str]:
    """The names of a hostlist, or the expression itself when it is not one."""
    try:
        return expand(expr)
    except HostlistError:
        return [expr]


def mode_choices(kind: ActionKind) -> tuple[str, ...]:
    """The reason_mode values that mean something for ``kind``: append only where there is a reason."""
    return ("keep", "append", "replace") if kind in REASON_KINDS else ("keep", "replace")


class ActionDialog(ModalScreen["ActionResult | None"]):
    """Preview an action, collect its reason and confirmation, run it, show results.

    Focus starts where the user acts first (an empty reason, else the typed confirmation,
    else the confirm button), so ``enter`` on a fresh dialog does the obvious thing; ``enter``
    in a parameter field only moves on (it never runs a drain at once); the confirm button says
    what it does ("Cancel 4 jobs") and the other one says "Back"; the bottom bar shows the
    dialog's own keys, not the pane underneath.
    """

    BINDINGS = [Binding("escape", "dismiss_dialog", "Back")]
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
    ActionDialog #hint { color: $text-muted; width: 100%; }
    ActionDialog #already { color: $warning; text-style: bold; width: 100%; }
    ActionDialog #reason-mode { height: auto; width: 100%; border: none; padding: 0; }
    ActionDialog #buttons { height: auto; align-horizontal: right; }
    ActionDialog Button { margin-left: 1; }
    ActionDialog #dialog-keys {
        dock: bottom; width: 100%; height: 1; background: $footer-background; color: $footer-foreground;
    }
    """

    def __init__(self, runtime: UiPort, kind: ActionKind, targets: tuple[str, ...],
                 params: dict[str, str] | None = None) -> None:
        super().__init__()
        self.runtime = runtime
        self.kind = kind
        self.targets = targets
        self.params: dict[str, str] = dict(params or {})
        self.prefilled: dict[str, str] = {}
        if kind is ActionKind.REBOOT_NODES and not self.params.get("reason", "").strip():
            kept = drain_reason(targets, runtime.current_snapshot())  # keep why the node was drained
            if kept:
                self.params["reason"] = self.prefilled["reason"] = kept
        self.checks: list[tuple[str, str]] = runtime.check_choices() if kind is ActionKind.HEALTH_CHECK else []
        if self.checks and self.params.get("check") not in [c for c, _ in self.checks]:
            self.params["check"] = DEFAULT_CHECK if DEFAULT_CHECK in dict(self.checks) else self.checks[0][0]
        self.plan = self._make_plan()
        # the health-check gate holds nodes of a resume/uncordon: an override reason field (audited)
        self.gate_field = bool(self.plan.held) or bool(self.params.get("override"))
        self.offers: list[tuple[str, str]] = []  # a finished check's drains of its failed nodes
        if self.plan.already and not self.params.get("reason_mode"):
            self.params["reason_mode"] = "keep"  # the safe default; replacing is an explicit choice
            self.plan = self._make_plan()
        # what is already true (a drained node, a cordon, a hold), said above the choice it asks for
        now = runtime.current_snapshot().time
        self.already_lines = tuple(dict.fromkeys(describe_prior(p, now) for p in self.plan.already))
        self.modes = mode_choices(kind) if self.already_lines else ()
        self.result: ActionResult | None = None
        self.running = False
        # what the backends report while the action runs (K8s: per pod), appended from the loop or a
        # worker thread (list.append and slicing are atomic: no lock)
        self._progress: list[ProgressItem] = []

    def _make_plan(self) -> ActionPlan:
        params = {k: v for k, v in self.params.items() if k != "override" or v.strip()}
        return self.runtime.plan_action(self.kind, self.targets, params)

    def _fields(self) -> tuple[str, ...]:
        """The required parameters typed into a field (a check is chosen from a list)."""
        return tuple(n for n in REQUIRED_PARAMS.get(self.kind, ()) if not (n == "check" and self.checks))

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self._title(), id="title", markup=False)  # step labels may name cluster objects
            if self.modes:
                yield Static(Text("\n".join(f"⚠ {line}" for line in self.already_lines)), id="already", markup=False)
                chosen = self.params.get("reason_mode", "keep")
                with RadioSet(id="reason-mode"):
                    for mode in self.modes:
                        yield RadioButton(MODE_LABELS[mode], value=mode == chosen, id=f"mode-{mode}")
            if self.checks:
                chosen_check = self.params.get("check")
                with RadioSet(id="check-choice"):
                    for check, title in self.checks:
                        yield RadioButton(literal(f"{check}  {title}"), value=check == chosen_check)
            if self.gate_field:
                yield Input(value=self.params.get("override", ""), id="param-override",
                            placeholder="override the health-check gate: reason (audited), e.g. 'RMA swap, diag ok'")
            for name in self._fields():
                kept = self.prefilled.get(name)
                yield Input(value=self.params.get(name, ""), placeholder=self._placeholder(name), id=f"param-{name}",
                            tooltip="the current drain reason, kept" if kept else None)
            with VerticalScroll(id="preview"):
                yield Static(render_plan(self.plan), id="plan", markup=False)
            yield Input(id="confirm", placeholder="")
            yield Static("", id="result", markup=False)
            yield Static("", id="hint", markup=False)
            with Horizontal(id="buttons"):
                yield Button("Drain failed", id="drain-failed", variant="warning")
                yield Button(literal(run_label(self.plan)), id="run", variant="error" if self.plan.destructive else "primary")
                yield Button("Back", id="cancel")
        yield Static(Text(DIALOG_KEYS), id="dialog-keys")

    def _title(self) -> str:
        """What the action does; a plan spanning backends (or kept targets) names its steps."""
        title = TITLES.get(self.kind, self.kind.value)
        if self.plan.steps:  # a plan spanning backends says so up front
            title += " · " + " → ".join(step.label for step in self.plan.steps)
        return title

    def _placeholder(self, name: str) -> str:
        """What a parameter field asks for; the reason's depends on the reason_mode chosen."""
        if name == "reason" and self.modes:
            return {"keep": "reason for the targets not drained yet (the others keep theirs)",
                    "append": "reason to append to the current one",
                    }.get(self.params.get("reason_mode", ""), "new reason (required): replaces the current one")
        return f"{name} (required), e.g. 'xid 79 gpu3 - ticket 4411'"

    def on_mount(self) -> None:
        if self.checks:  # the highlight on the chosen check, not the first (Textual starts at the first)
            picker = self.query_one("#check-choice", RadioSet)
            chosen = [c for c, _ in self.checks].index(self.params["check"])
            if hasattr(picker, "_selected"):
                picker._selected = chosen
        self._refresh_controls()
        self._first_focus().focus()

    def _first_focus(self) -> Widget:
        """Where the user acts first: the choice for what is already true, an empty parameter,
        the typed word, the confirm button."""
        if self.modes:
            return self.query_one("#reason-mode", RadioSet)
        if self.checks:
            return self.query_one("#check-choice", RadioSet)
        if self.gate_field and not self.plan.runnable:
            return self.query_one("#param-override", Input)
        for name in self._fields():
            field = self.query_one(f"#param-{name}", Input)
            if not field.value.strip():
                return field
        return self._next_after_params()

    def _next_after_params(self) -> Widget:
        confirm = self.query_one("#confirm", Input)
        if confirm.display:
            return confirm
        run = self.query_one("#run", Button)
        return run if not run.disabled and run.display else self.query_one("#cancel", Button)

    def _refresh_controls(self) -> None:
        self.query_one("#title", Label).update(self._title())  # keep/append/replace change the steps
        self.query_one("#plan", Static).update(render_plan(self.plan, frozenset(self.already_lines)))
        confirm = self.query_one("#confirm", Input)
        word = self.plan.confirm_word
        confirm.display = word is not None and self.result is None
        if word is not None:
            confirm.placeholder = f"type {word} to confirm"
        run = self.query_one("#run", Button)
        run.label = literal(run_label(self.plan))
        run.disabled = self.result is not None or not self.plan.runnable or (
            word is not None and confirm.value.strip() != word)
        run.display = self.result is None
        drain = self.query_one("#drain-failed", Button)
        drain.display = bool(self.offers)
        if self.offers:
            failed = sum(len(expand_or(nodes)) for nodes, _ in self.offers)
            drain.label = f"Drain {failed} failed"
        self.query_one("#cancel", Button).label = "Close" if self.result is not None else "Back"
        self._update_hint()

    def _update_hint(self) -> None:
        """What ``enter`` does where the focus is now."""
        focused = self.focused
        run = self.query_one("#run", Button)
        if self.result is not None:
            hint = "enter / esc: close"
        elif isinstance(focused, Input) and focused.id == "confirm":
            hint = f"type {self.plan.confirm_word}, then enter: {run.label}" if run.disabled else f"enter: {run.label}"
        elif isinstance(focused, Input):
            hint = "enter: next field (nothing runs yet)"
        elif focused is run:
            hint = f"enter: {run.label}"
        elif isinstance(focused, RadioSet) and focused.id == "check-choice":
            hint = "↑/↓ then enter: choose the check · tab: next field"
        elif isinstance(focused, RadioSet):
            hint = "↑/↓ then enter: keep, append to or replace what is already set · tab: next field"
        else:
            hint = "tab: move to the confirm button"
        editing = isinstance(focused, Input) and focused.id != "confirm"
        if not self.plan.runnable and self.result is None and not editing:
            hint = "cannot run: see ✗ above · esc: back"
        if self.plan.held and not self.plan.runnable and self.result is None:
            hint = "held by the health-check gate: run a check first (K on the node), or type an override reason"
        if self.offers:
            hint = "tab: Drain the failed node(s) (a preview first) · enter / esc: close"
        self.query_one("#hint", Static).update(Text(hint + "   esc: back" if "esc" not in hint else hint))

    def on_descendant_focus(self) -> None:
        self._update_hint()

    @on(Input.Changed)
    def _input_changed(self, event: Input.Changed) -> None:
        if event.input.id and event.input.id.startswith("param-"):
            self.params[event.input.id.removeprefix("param-")] = event.value
            self.plan = self._make_plan()
        self._refresh_controls()

    @on(RadioSet.Changed, "#reason-mode")
    def _mode_changed(self, event: RadioSet.Changed) -> None:
        """keep / append / replace: re-plan; replacing starts from the current reason to edit."""
        if not 0 <= event.index < len(self.modes):
            return
        mode = self.modes[event.index]
        self.params["reason_mode"] = mode
        if mode == "replace" and self.kind is ActionKind.DRAIN_NODES and not self.params.get("reason", "").strip():
            current = drain_reason(self.targets, self.runtime.current_snapshot())
            if current:
                self.params["reason"] = current
                self.query_one("#param-reason", Input).value = current  # (its Changed re-plans too)
        if "reason" in REQUIRED_PARAMS.get(self.kind, ()):
            self.query_one("#param-reason", Input).placeholder = self._placeholder("reason")
        self.plan = self._make_plan()
        self._refresh_controls()

    @on(Input.Submitted)
    def _input_submitted(self, event: Input.Submitted) -> None:
        """``enter`` in a parameter field moves on; only the typed confirmation word runs."""
        if event.input.id == "confirm":
            if not self.query_one("#run", Button).disabled:
                self._start()
            return
        if not event.input.value.strip():
            self.app.bell()  # a required field: stay until it is filled
            return
        fields = [self.query_one(f"#param-{n}", Input) for n in self._fields()]
        later = fields[fields.index(event.input) + 1:] if event.input in fields else []
        nxt: Widget = next((f for f in later if not f.value.strip()), None) or self._next_after_params()
        nxt.focus()

    @on(RadioSet.Changed, "#check-choice")
    def _check_changed(self, event: RadioSet.Changed) -> None:
        """Another check: re-plan (its commands, timeouts and warnings differ)."""
        if 0 <= event.index < len(self.checks) and self.result is None:
            self.params["check"] = self.checks[event.index][0]
            self.plan = self._make_plan()
            self._refresh_controls()

    @on(Button.Pressed, "#run")
    def _run_pressed(self) -> None:
        self._start()

    @on(Button.Pressed, "#drain-failed")
    def _drain_pressed(self) -> None:
        """A failed check's drain, with the failure as the reason: through its own preview and confirmation
        (one dialog per distinct failure, one after another)."""
        offers, self.offers = list(self.offers), []
        app, runtime = self.app, self.runtime
        self.dismiss(self.result)

        def next_offer(_: object = None) -> None:
            if offers:
                nodes, reason = offers.pop(0)
                app.push_screen(ActionDialog(runtime, ActionKind.DRAIN_NODES, (nodes,), {"reason": reason}), next_offer)

        next_offer()

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
        self._wait_for(self.runtime.run_plan(self.plan, confirmation, progress=self._progress.append))

    @work(exclusive=True, group="action", description="action")
    async def _wait_for(self, task: asyncio.Task[ActionResult]) -> None:
        running = f"running {self.kind.value} on {len(self.plan.targets)} target(s)…"
        self.query_one("#result", Static).update(Text(running))
        try:
            while not task.done():  # a backend that reports progress (K8s drain: per pod) is shown live
                await asyncio.wait({task}, timeout=0.5)
                progress = [item for item in self._progress[-PROGRESS_SHOWN:] if isinstance(item, str)]
                if progress:
                    self.query_one("#result", Static).update(Text("\n".join([running, *progress[-8:]])))
            self.result = await asyncio.shield(task)  # the runtime owns the task; we only watch it
        finally:
            self.running = False
        self.query_one("#result", Static).update(render_result(self.result))
        if self.kind is ActionKind.HEALTH_CHECK:
            self.offers = self.runtime.drain_offers(self.result)
        self._refresh_controls()
        self.query_one("#cancel", Button).focus()  # enter now closes
        self.runtime.refresh_now()
        for problem in self.result.audit_errors:
            self.app.notify(problem, title="Audit record not written", severity="error", timeout=30)
        self.app.notify(f"{self.kind.value}: {sum(r.ok for r in self.result.results)}/"
                        f"{len(self.result.results)} ok" if not self.result.refused
                        else f"{self.kind.value} not run: {self.result.refused}",
                        severity="information" if self.result.ok else "error")
