"""One Slurm job in full: why it waits (in plain words), where it runs and on which
GPU indices, its times and exit status, and — when accounting is there — the
fair-share and QoS limits of its user and account."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from hpctui.model import SlurmJob
from hpctui.model.accounting import AccountingInfo
from hpctui.model.pending_reasons import explain_pending_reason
from hpctui.ui.fmt import NA_TEXT, age, num, utc, yes_no
from hpctui.ui.keys import JOB_ACTION_KEYS, TRIAGE_KEYS, app_bindings, bindings
from hpctui.ui.screens.scrolling import SCROLL_BINDINGS, scroll_body

if TYPE_CHECKING:
    from hpctui.core.runtime import Runtime


def _when(t: float | None, now: float) -> str:
    if t is None:
        return NA_TEXT
    delta = now - t
    rel = f"{age(delta)} ago" if delta >= 0 else f"in {age(-delta)}"
    return f"{utc(t)} ({rel})"


def _limit(minutes: int | None) -> str:
    if minutes is None:
        return "none"
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    return (f"{days}-" if days else "") + f"{hours:02d}:{mins:02d}:00"


def _elapsed_left(job: SlurmJob, now: float) -> list[tuple[str, str, str]]:
    """A running job: how long it has run and how long its time limit leaves it."""
    if job.state != "RUNNING" or job.start_time is None:
        return []
    elapsed = max(0.0, now - job.start_time)
    if job.time_limit_min is None:
        return [("elapsed / left", f"{age(elapsed)} / no limit", "")]
    left = job.start_time + job.time_limit_min * 60 - now
    return [("elapsed / left", f"{age(elapsed)} / {age(left) if left > 0 else 'over its limit'}",
             "$warning" if left < 600 else "")]


def job_lines(job: SlurmJob, now: float) -> Content:
    rows: list[tuple[str, str, str]] = [
        ("job", job.display_id + (f"  (job id {job.job_id})" if job.display_id != str(job.job_id) else ""), "bold"),
        ("name", job.name or NA_TEXT, ""),
        ("user / account", f"{job.user or NA_TEXT} / {job.account or NA_TEXT}", ""),
        ("partition / QoS", f"{job.partition or NA_TEXT} / {job.qos or NA_TEXT}", ""),
        ("state", job.state, "$success" if job.state == "RUNNING" else "$warning" if job.state == "PENDING" else ""),
    ]
    if job.state == "PENDING" or job.reason:
        rows.append(("reason", f"{job.reason or NA_TEXT}: {explain_pending_reason(job.reason, job)}", "$warning"))
    rows += [
        ("nodes", f"{job.nodes or NA_TEXT}" + (f"  ({job.num_nodes} node(s))" if job.num_nodes else ""), ""),
        ("GPUs requested", num(job.gpus_requested), ""),
    ]
    for node, indices in sorted(job.gpus_alloc.items()):
        rows.append(("  GPU indices", f"{node}: {indices}", ""))
    rows += [
        ("submitted", _when(job.submit_time, now), ""),
        ("started", _when(job.start_time, now) if job.state != "PENDING" else
         ("expected " + _when(job.start_time, now) if job.start_time else NA_TEXT), ""),
        ("end / limit", f"{_when(job.end_time, now)}  /  {_limit(job.time_limit_min)}", ""),
        *_elapsed_left(job, now),
        ("exit", NA_TEXT if job.exit_code is None and job.exit_signal is None else
         f"code {num(job.exit_code)}" + (f", signal {job.exit_signal}" if job.exit_signal else ""), ""),
        ("restarts", num(job.restart_count), ""),
        ("batch / requeueable", f"{yes_no(job.batch)} / {yes_no(job.requeueable)}", ""),
        ("priority", num(job.priority), ""),
    ]
    width = max(len(k) for k, _, _ in rows) + 2
    return Content("\n").join(Content.assemble((k.ljust(width), "bold $primary"), (v, s)) for k, v, s in rows)


class JobDetailScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,enter,q", "dismiss_screen", "Close"), *app_bindings(TRIAGE_KEYS),
                *bindings(JOB_ACTION_KEYS), Binding("s", "select_nodes", "Select its nodes"), *SCROLL_BINDINGS]
    DEFAULT_CSS = """
    JobDetailScreen { align: center middle; }
    JobDetailScreen > Vertical {
        width: 90%; max-width: 110; height: auto; max-height: 90%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    JobDetailScreen #job-title { text-style: bold; }
    JobDetailScreen VerticalScroll { height: auto; max-height: 40; }
    """

    def __init__(self, runtime: Runtime, job: SlurmJob) -> None:
        super().__init__()
        self.runtime = runtime
        self.job = job

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Slurm job {self.job.display_id}  (esc: close · j/k: scroll · s: select its nodes · R H z Z x: act)",
                        id="job-title", markup=False)  # the id holds Slurm's array task string: a cluster string
            with VerticalScroll():
                yield Static(job_lines(self.job, self.runtime.clock()), id="job-body", markup=False)
                yield Static("", id="job-accounting", markup=False)

    def on_mount(self) -> None:
        self.query_one("#job-accounting", Static).update(Content("fair-share / QoS: loading…"))
        self._load_accounting()

    @work(exclusive=True, group="accounting", description="accounting")
    async def _load_accounting(self) -> None:
        target = self.query_one("#job-accounting", Static)
        try:
            info = await self.runtime.accounting(self.job.user, self.job.account)
        except Exception as exc:  # a failed lookup is shown, never raised into the UI
            target.update(Content(f"fair-share / QoS: {type(exc).__name__}: {exc}"))
            return
        target.update(accounting_lines(info, self.job))

    def action_dismiss_screen(self) -> None:
        self.dismiss(None)

    def action_scroll_body(self, dx: int, dy: int) -> None:
        scroll_body(self, dx, dy)

    def action_select_nodes(self) -> None:
        """Close and select the job's nodes everywhere (several: marked, the first selected)."""
        nodes = self.job.nodes
        self.dismiss(None)
        dashboard = getattr(self.app, "dashboard", None)
        if nodes and dashboard is not None:
            self.app.call_later(dashboard.go_to, nodes)

    def action_request_action(self, kind: str) -> None:
        """Job actions from the detail view: the same dialog (preview, confirmation, audit)."""
        from hpctui.model.action import ActionKind
        from hpctui.ui.messages import ActionRequested

        self.app.post_message(ActionRequested(ActionKind(kind), (self.job.display_id,)))


def accounting_lines(info: AccountingInfo | None, job: SlurmJob) -> Content:
    """Fair-share rows for the job's user/account and the QoS limits that apply to it."""
    if info is None:
        return Content("fair-share / QoS: no source provides accounting")
    if not info.available:
        return Content(f"fair-share / QoS: not available ({info.detail or 'no accounting'})")
    lines = [Content.assemble(("Fair-share", "bold underline"), f"  (sshare for {job.user} / {job.account})")]
    for row in info.fairshare[:10]:
        lines.append(Content(
            f"  {'  ' * row.depth}{row.account:<12} {row.user or '-':<10} shares {num(row.norm_shares, '{:.3f}')}"
            f"  usage {num(row.effective_usage, '{:.3f}')}  fairshare {num(row.fairshare, '{:.3f}')}"))
    qos = info.qos_named(job.qos) if job.qos else None
    lines.append(Content.assemble(("QoS", "bold underline"), f"  {job.qos or NA_TEXT}"))
    if qos is not None:
        limits = {name: getattr(qos, name) for name in qos.__struct_fields__ if name != "name"}
        shown = ", ".join(f"{k}={v}" for k, v in limits.items() if v is not None)
        lines.append(Content(f"  {shown or 'no limits'}"))
    if info.detail:
        lines.append(Content.assemble(("  " + info.detail, "$warning")))
    return Content("\n").join(lines)
