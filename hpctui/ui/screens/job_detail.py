"""One Slurm job in full: why it waits (in plain words), where it runs and on which
GPU indices, its times and exit status, and — when accounting is there — the
fair-share and QoS limits of its user and account."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import msgspec
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from hpctui.model import Part, SlurmJob
from hpctui.model.accounting import AccountingInfo
from hpctui.model.mount import QuotaUsage
from hpctui.model.pending_reasons import explain_pending_reason
from hpctui.model.scheduler import JobOutlook
from hpctui.ui.fmt import NA_TEXT, age, binary_bytes, num, utc, yes_no
from hpctui.ui.keys import JOB_ACTION_KEYS, TRIAGE_KEYS, app_bindings, bindings
from hpctui.ui.screens.scrolling import SCROLL_BINDINGS, scroll_body

if TYPE_CHECKING:
    from hpctui.core.ports import UiPort


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


def work_filesystem(work_dir: str | None, filesystems: Iterable[str]) -> str | None:
    """The one of ``filesystems`` (mount points) that holds ``work_dir``: the longest that is it or a parent."""
    if not work_dir:
        return None
    inside = [f for f in filesystems if f.startswith("/") and
              (work_dir == f or work_dir.startswith(f.rstrip("/") + "/"))]
    return max(inside, key=len) if inside else None


def quota_lines(user: str | None, quotas: tuple[QuotaUsage, ...], work_dir: str | None = None) -> Content:
    """The job owner's usage against their quota on each file system the last sweep asked (SSH source,
    ``lfs quota`` / ``beegfs-ctl --getquota``): over quota in red (checkpoints will fail), 90 %+ in amber.
    With the job's ``work_dir`` known, the file system holding it comes first, marked: that is where the job
    writes by default."""
    title = ("file system quotas of " + (user or NA_TEXT), "bold $primary")
    mine = [q for q in quotas if q.user == user]
    home = work_filesystem(work_dir, (q.filesystem for q in mine))
    mine.sort(key=lambda q: (q.filesystem != home, q.filesystem))
    where = [] if not work_dir else [Content.assemble(
        "  working directory ", (work_dir, "bold"),
        "" if home else ": no quota known for its file system")]
    if not mine:
        return Content("\n").join([Content.assemble(
            title, ": none known (no Lustre/BeeGFS quota for this user in the last sweep)"), *where])
    width = max(len(q.filesystem) for q in mine) + 2
    out = [Content.assemble(title), *where]
    for q in mine:
        pct = q.used_pct  # of the soft limit where there is one (the one that starts the grace timer)
        limits = [f"{binary_bytes(v)} {name}" for v, name in ((q.soft_bytes, "soft"), (q.hard_bytes, "hard")) if v]
        text = f"{binary_bytes(q.used_bytes)} of " + (" / ".join(limits) if limits else "no limit")
        if pct is not None:
            text += f" ({pct:.0f}%)"
        style = "$error" if q.over else "$warning" if pct is not None and pct >= 90 else ""
        out.append(Content.assemble(("  " + q.filesystem.ljust(width), "bold"),
                                    (text + ("  OVER QUOTA" if q.over else ""), style),
                                    "  ← the working directory's" if q.filesystem == home else ""))
        more = []
        if q.files is not None:
            files_limit = q.files_hard or q.files_soft
            more.append(f"{q.files:,} files" + (f" of {files_limit:,}" if files_limit else ""))
        if q.grace:
            more.append(f"grace {q.grace}")
        if more:
            out.append(Content("  " + " " * width + ", ".join(more)))
    return Content("\n").join(out)


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

    def __init__(self, port: UiPort, job: SlurmJob) -> None:
        super().__init__()
        self.port = port
        self.job = job

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Slurm job {self.job.display_id}  (esc: close · j/k: scroll · s: select its nodes · R H z Z x: act)",
                        id="job-title", markup=False)  # the id holds Slurm's array task string: a cluster string
            with VerticalScroll():
                yield Static(job_lines(self.job, self.port.clock()), id="job-body", markup=False)
                snap = self.port.current_snapshot()
                if Part.QUOTAS.value in snap.collected_at:  # a cluster whose sources ask no quotas: no line
                    yield Static(quota_lines(self.job.user, snap.quotas), id="job-quotas", markup=False)
                yield Static("", id="job-outlook", markup=False)
                yield Static("", id="job-accounting", markup=False)

    def on_mount(self) -> None:
        self.query_one("#job-accounting", Static).update(Content("fair-share / QoS: loading…"))
        self._load_accounting()
        if self.query("#job-quotas") and self.port.logs.can_resolve_job_output:
            self._load_work_dir()
        if self.job.state == "PENDING":
            self.query_one("#job-outlook", Static).update(Content("priority / expected start: loading…"))
            self._load_outlook()

    @work(exclusive=True, group="outlook", description="sprio / squeue --start")
    async def _load_outlook(self) -> None:
        target = self.query_one("#job-outlook", Static)
        job_id = self.job.display_id if "[" not in self.job.display_id else str(self.job.job_id)
        try:
            outlook = await self.port.job_outlook(job_id)
        except Exception as exc:  # a failed lookup is shown, never raised into the UI
            target.update(Content(f"priority / expected start: {type(exc).__name__}: {exc}"))
            return
        target.update(outlook_lines(outlook, self.port.clock()))
        fuller = filled(self.job, outlook.job if outlook is not None else None)
        if fuller is not self.job:
            self.job = fuller
            self.query_one("#job-body", Static).update(job_lines(fuller, self.port.clock()))

    @work(exclusive=True, group="workdir", description="job working directory")
    async def _load_work_dir(self) -> None:
        """The job's working directory (its record, as the log viewer reads it), to mark the quota it writes
        against; a failed lookup leaves the quota lines as they are."""
        job_id = self.job.display_id if "[" not in self.job.display_id else str(self.job.job_id)
        try:
            paths = await self.port.logs.job_output_paths(job_id)
        except Exception:  # a failed lookup: the quota lines stand without the working directory
            return
        if paths is not None and paths.work_dir:
            self.query_one("#job-quotas", Static).update(
                quota_lines(self.job.user, self.port.current_snapshot().quotas, paths.work_dir))

    @work(exclusive=True, group="accounting", description="accounting")
    async def _load_accounting(self) -> None:
        target = self.query_one("#job-accounting", Static)
        try:
            info = await self.port.accounting(self.job.user, self.job.account)
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


PRIORITY_FACTORS = ("age", "fairshare", "qos", "partition", "jobsize", "assoc", "site", "nice")


FILLED_FIELDS = ("exit_code", "exit_signal", "restart_count", "batch", "requeueable", "end_time", "gpus_requested")
"""What a pending job read from ``squeue`` text lacks (the hybrid queue read) and its outlook's job carries."""


def filled(job: SlurmJob, whole: SlurmJob | None) -> SlurmJob:
    """``job`` with the fields it lacks taken from ``whole`` (the same job read on demand); ``job``
    itself when there is nothing to fill."""
    if whole is None or whole.job_id != job.job_id:
        return job
    fill = {f: getattr(whole, f) for f in FILLED_FIELDS if getattr(job, f) is None and getattr(whole, f) is not None}
    return msgspec.structs.replace(job, **fill) if fill else job


def outlook_lines(outlook: JobOutlook | None, now: float) -> Content:
    """sprio's weighted factors (largest first, with their share of the priority) and squeue --start."""
    if outlook is None:
        return Content("priority / expected start: no source provides them")
    lines = [Content.assemble(("Priority", "bold underline"), f"  (sprio -j {outlook.job_id})")]
    f = outlook.factors
    if f is not None:
        parts = [(name, getattr(f, name)) for name in PRIORITY_FACTORS if getattr(f, name)]
        parts.sort(key=lambda p: -abs(p[1]))
        total = f.priority or sum(v for _, v in parts) or 0
        lines.append(Content(f"  priority {num(f.priority)} = " + (" + ".join(
            f"{name} {value}" + (f" ({100 * value / total:.0f}%)" if total else "") for name, value in parts)
            or "no weighted factor")))
        if f.tres:
            lines.append(Content(f"  TRES factors: {f.tres}"))
    start = outlook.start
    if start is not None:
        when = _when(start.start_time, now) if start.start_time is not None else "not estimated yet (N/A)"
        where = f" on {start.sched_nodes}" if start.sched_nodes else ""
        lines.append(Content.assemble(("Expected start", "bold underline"), f"  {when}{where}  (squeue --start)"))
    if outlook.detail:
        lines.append(Content.assemble(("  " + outlook.detail, "$warning")))
    return Content("\n").join(lines)


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
