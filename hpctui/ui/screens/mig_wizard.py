"""The MIG reconfiguration wizard: pick a layout for the marked nodes, see the checklist of
steps (idle check, drain/cordon, wait, apply, verify, gres.conf, resume) with their live
status, type the confirmation word, follow it run. ``escape`` cancels before the apply step
(what was drained is resumed) and closes the screen when nothing runs.

The workflow itself is :class:`hpctui.actions.mig.MigWorkflow`, shared with ``hpctui act mig``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from hpctui.actions.mig import MigWorkflow, Status, Step
from hpctui.base.errors import describe_error
from hpctui.base.sanitize import clean_text
from hpctui.model.hostlist import collect
from hpctui.model.mig_layouts import LayoutError, available, family, resolve

if TYPE_CHECKING:
    from hpctui.core.runtime import Runtime
    from hpctui.model import ClusterSnapshot

MARK = {Status.PENDING: ("[ ]", ""), Status.RUNNING: ("[…]", "bold"), Status.OK: ("[✓]", "green"),
        Status.WARN: ("[!]", "yellow"), Status.FAILED: ("[✗]", "bold red"), Status.SKIPPED: ("[-]", "dim"),
        Status.CANCELLED: ("[×]", "dim")}
DETAIL_LINES = 6  # per step on screen (all of them are in the audit/CLI)


def render_steps(steps: list[Step]) -> Text:
    out = Text()
    for s in steps:
        mark, style = MARK[s.status]
        out.append(f"{mark} ", style=style)
        out.append(f"{s.title}", style="bold" if s.status is Status.RUNNING else "")
        out.append(f"  {s.status.value}\n", style=style or "dim")
        lines = s.detail if s.key == "gres" else s.detail[-DETAIL_LINES:]
        if len(s.detail) > len(lines):
            out.append(f"      … {len(s.detail) - len(lines)} earlier line(s)\n", style="dim")
        for line in lines:
            out.append(f"      {line}\n", style="dim" if s.status is not Status.FAILED else "")
    return out


class MigWizardScreen(Screen[None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel/close")]
    DEFAULT_CSS = """
    MigWizardScreen > Vertical { padding: 0 1; height: 1fr; }
    MigWizardScreen #mig-title { text-style: bold; width: 100%; }
    MigWizardScreen #mig-layouts { height: auto; max-height: 9; width: 1fr; }
    MigWizardScreen .mig-row { height: auto; }
    MigWizardScreen .mig-row Label { padding: 1 1 0 0; }
    MigWizardScreen #mig-gpus { width: 24; }
    MigWizardScreen #mig-confirm { width: 40; }
    MigWizardScreen #mig-body { height: 1fr; }
    MigWizardScreen #mig-steps-box { width: 1fr; border: round $primary; border-title-align: left; }
    MigWizardScreen #mig-preview-box { width: 1fr; border: round $secondary; border-title-align: left; }
    MigWizardScreen #mig-status { height: auto; }
    """

    def __init__(self, runtime: Runtime, nodes: list[str] | None = None) -> None:
        super().__init__()
        self.runtime = runtime
        self.nodes = list(nodes) if nodes is not None else []
        self._from_heatmap = nodes is None  # `:mig`: the heatmap's marked nodes (or its cursor node)
        self.workflow: MigWorkflow | None = None
        self.running = False

    # -- layout ------------------------------------------------------------------------------------
    def _model(self) -> str | None:
        snap = self.runtime.store.snapshot()
        for n in self.nodes:
            gpus = snap.gpus.get(n, ())
            if gpus:
                return gpus[0].model
            node = snap.nodes.get(n)
            if node is not None and node.k8s is not None:
                return node.k8s.labels.get("nvidia.com/gpu.product")
        return None

    def _family(self) -> str | None:
        return family(self._model())

    def _options(self) -> list[Option]:
        fam = self._family()
        config = getattr(self.runtime, "mig_layouts", {}) or {}
        out = []
        for name in available(fam, config):
            try:
                text = f"{name:<14} {resolve(name, fam, config).summary()}"
            except LayoutError as exc:
                text = f"{name:<14} ✗ {exc}"
            out.append(Option(clean_text(text), id=name))
        return out

    def compose(self) -> ComposeResult:
        if self._from_heatmap:
            heatmap = getattr(getattr(self.app, "dashboard", None), "heatmap", None)
            targets = getattr(heatmap, "targets", None)
            self.nodes = list(targets()) if callable(targets) else []
        where = collect(self.nodes) if self.nodes else "no nodes"
        with Vertical():
            yield Label(clean_text(f"MIG reconfiguration · {where} ({len(self.nodes)} node(s)) · "
                                   f"{self._family() or (f'{model}: no MIG profile table' if (model := self._model()) else 'GPU model unknown')}"),
                        id="mig-title", markup=False)  # node names and GPU models are cluster strings: no markup
            yield Label("1. pick a layout (enter) · GPUs: 'all' or a list like 0,1", id="mig-hint", markup=False)
            with Horizontal(classes="mig-row"):
                yield OptionList(*self._options(), id="mig-layouts", markup=False)
            with Horizontal(classes="mig-row"):
                yield Label("GPUs:")
                yield Input(value="all", id="mig-gpus")
                yield Label("  Confirm:")
                yield Input(placeholder="pick a layout first", id="mig-confirm", disabled=True)
                yield Button("Run", id="mig-run", variant="error", disabled=True)
            yield Static("", id="mig-status", markup=False)
            with Horizontal(id="mig-body"):
                with VerticalScroll(id="mig-steps-box") as steps:
                    steps.border_title = "Steps"
                    yield Static("", id="mig-steps", markup=False)
                with VerticalScroll(id="mig-preview-box") as preview:
                    preview.border_title = "Will run"
                    yield Static("", id="mig-preview", markup=False)

    def on_mount(self) -> None:
        if self.runtime.executor.read_only:
            self._status("read-only mode: actions are disabled, the MIG wizard too", error=True)
        elif not self.nodes:
            self._status("no nodes: mark nodes on the heatmap (space), then press M", error=True)
        self.query_one("#mig-layouts", OptionList).focus()

    def _status(self, text: str, error: bool = False) -> None:
        self.query_one("#mig-status", Static).update(Text(clean_text(text), style="bold red" if error else "bold"))

    # -- prepare -----------------------------------------------------------------------------------
    @on(OptionList.OptionSelected, "#mig-layouts")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        if self.running or (self.workflow is not None and self.workflow.done):
            return
        self.prepare(str(event.option.id))

    def prepare(self, layout: str) -> bool:
        gpus = self.query_one("#mig-gpus", Input).value.strip() or "all"
        self.workflow = MigWorkflow(self.runtime, self.nodes, layout, gpus, on_change=self._changed,
                                    poll_s=1.0)
        ok = self.workflow.prepare()
        self._draw_steps()
        confirm = self.query_one("#mig-confirm", Input)
        confirm.value = ""
        confirm.disabled = not ok
        confirm.placeholder = f"type {self.workflow.confirm_word} to run" if ok else "cannot run (see above)"
        self.query_one("#mig-preview", Static).update(Text("\n".join(self.workflow.preview()) if ok else ""))
        if ok:
            self._status(f"2. check the steps and commands, then type {self.workflow.confirm_word} "
                         "and press enter (escape: back)")
            confirm.focus()
        else:
            self._status("; ".join(self.workflow.errors) or "cannot run", error=True)
        return ok

    def _draw_steps(self) -> None:
        if self.workflow is not None:
            self.query_one("#mig-steps", Static).update(render_steps(self.workflow.steps))
            if self.running:  # follow the step that is running
                self.query_one("#mig-steps-box", VerticalScroll).scroll_end(animate=False)

    def _changed(self, step: Step, line: str | None) -> None:
        if self.is_attached:
            self._draw_steps()

    @on(Input.Changed, "#mig-confirm")
    def _typed(self, event: Input.Changed) -> None:
        wf = self.workflow
        self.query_one("#mig-run", Button).disabled = wf is None or event.value.strip() != wf.confirm_word

    @on(Input.Submitted, "#mig-confirm")
    @on(Button.Pressed, "#mig-run")
    def _go(self) -> None:
        wf = self.workflow
        word = self.query_one("#mig-confirm", Input).value.strip()
        if wf is None or self.running or wf.done or word != wf.confirm_word:
            return
        self.running = True
        self.query_one("#mig-confirm", Input).disabled = True
        self.query_one("#mig-run", Button).disabled = True
        self.query_one("#mig-layouts", OptionList).disabled = True
        self._status("running… escape cancels until the apply step starts")
        self._run(word)

    @work(exclusive=True, group="mig", description="MIG wizard", exit_on_error=False)
    async def _run(self, word: str) -> None:
        assert self.workflow is not None
        wf = self.workflow
        try:
            ok = await wf.run(word)
        except Exception as exc:  # the workflow stops a failed step itself; this is the last guard
            ok = False
            for s in wf.steps:
                if s.status is Status.RUNNING:
                    s.status = Status.FAILED
                    s.detail.append(clean_text(f"stopped: {describe_error(exc)}"))
        finally:
            self.running = False
            self._draw_steps()
        self.runtime.refresh_now()
        if ok:
            self._status(f"done: {wf.layout_name} on {collect(self.nodes)} — escape closes")
        else:
            failed = next((s for s in wf.steps if s.status is Status.FAILED), None)
            self._status(f"stopped at '{failed.title if failed else '?'}': node(s) left drained, see the "
                         "reason — escape closes", error=True)
        for problem in self.runtime.executor.audit_errors:
            self.app.notify(clean_text(problem), title="Audit record not written", severity="error", timeout=30,
                            markup=False)

    def action_cancel(self) -> None:
        wf = self.workflow
        if self.running and wf is not None:
            if wf.applying:
                self.app.notify("the layout is being applied: it cannot be cancelled now", severity="warning")
                return
            self.workers.cancel_group(self, "mig")
            self._status("cancelled before apply: drained/cordoned nodes are put back")
            return
        self.app.pop_screen()

    def update_snapshot(self, snapshot: ClusterSnapshot) -> None:
        """Follows live data through the workflow's own reads; nothing to redo here."""
        if self.workflow is not None and self.running:
            self._draw_steps()
