"""The selected node in detail: Slurm/K8s state, findings, one row per GPU, history.

Built as theme-variable ``Content`` (``$sev-error`` …) so a theme switch recolours
it without rebuilding, and "not available" always reads N/A, never 0.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.timer import Timer
from textual.widgets import Label, Static

from hpctui.core.frame import Frame
from hpctui.findings.correlate import workload_index
from hpctui.findings.health import Thresholds
from hpctui.findings.index import FindingsIndex, findings_for
from hpctui.model import ClusterSnapshot, Gpu, Node
from hpctui.model.checks import CheckResult, CheckStatus, CriticalMark
from hpctui.model.gpu import XID_MEANING
from hpctui.ui.fmt import NA_TEXT, SEVERITY_LABEL, SEVERITY_STYLE, age, num, pair, utc, yes_no
from hpctui.ui.widgets.borders import set_border_text
from hpctui.ui.widgets.provenance import resource_lines, source_lines
from hpctui.ui.widgets.spark import MiniSpark

Piece = tuple[str, str] | str
HistoryGetter = Callable[[str], list[tuple[float, float]]]
CheckView = tuple[Sequence[CheckResult], Sequence[CriticalMark]]  # UiPort.check_view of one node
CHECK_STYLE = {CheckStatus.PASSED: "$success", CheckStatus.WARNING: "$warning", CheckStatus.FAILED: "$error bold",
               CheckStatus.ERROR: "$warning"}
MAX_CHECK_LINES = 6

_GPU_COLUMNS = (("GPU", 3), ("MODEL", 10), ("UTIL", 5), ("MEM GiB", 11), ("TEMP/HBM", 9),
                ("POWER W", 9), ("ECC c/u", 8), ("REMAP", 5), ("PCIe g/w", 11), ("MIG", 3))


# Dropped first when the panel is narrow (the GPU index, utilization and memory always stay).
_GPU_DROP_ORDER = ("MIG", "PCIe g/w", "MODEL", "REMAP", "ECC c/u", "POWER W")


def gpu_columns_for(width: int | None) -> frozenset[str]:
    """Titles of the GPU columns that fit in ``width`` cells (all when None)."""
    keep = [title for title, _ in _GPU_COLUMNS]
    if width is None:
        return frozenset(keep)
    widths = dict(_GPU_COLUMNS)
    for title in _GPU_DROP_ORDER:
        if sum(widths[t] + 1 for t in keep) <= width:
            break
        keep.remove(title)
    return frozenset(keep)


def _cell(text: str, width: int, style: str = "") -> Piece:
    text = text[:width].ljust(width) + " "
    return (text, style) if style else text


def _temp_style(gpu: Gpu, t: Thresholds) -> str:
    if gpu.temp_c is not None and gpu.temp_c >= t.gpu_temp_crit_c:
        return "$error"
    if (gpu.temp_c is not None and gpu.temp_c >= t.gpu_temp_warn_c) or (
            gpu.hbm_temp_c is not None and gpu.hbm_temp_c >= t.hbm_temp_warn_c):
        return "$warning"
    return ""


def _gib(mib: float | None) -> float | None:
    return None if mib is None else mib / 1024.0


def _pcie(gpu: Gpu) -> str:
    if gpu.pcie_gen_current is None and gpu.pcie_width_current is None:
        return NA_TEXT
    cur = f"{num(gpu.pcie_gen_current)}x{num(gpu.pcie_width_current)}"
    top = f"{num(gpu.pcie_gen_max)}x{num(gpu.pcie_width_max)}"
    return f"{cur}/{top}"


def gpu_lines(gpu: Gpu, t: Thresholds, columns: frozenset[str] | None = None) -> list[Content]:
    """One summary row per GPU plus detail rows for Xid, MIG, throttling, loss (``columns``:
    the titles to show, see :func:`gpu_columns_for`)."""
    if gpu.lost:
        return [Content.assemble(_cell(str(gpu.index), 3), ("GPU lost: not answering (fallen off the bus?)", "$sev-critical-text bold"))]
    ecc_style = "$sev-critical-text" if gpu.ecc_uncorrected_volatile else (
        "$warning" if (gpu.ecc_corrected_volatile or 0) >= t.ecc_corrected_warn else "")
    remap_style = "$sev-critical-text" if gpu.remap_failure else ("$error" if gpu.remap_pending else "")
    remap = "FAIL" if gpu.remap_failure else yes_no(gpu.remap_pending)
    power_style = "$warning" if (gpu.power_w is not None and gpu.power_limit_w
                                     and 100 * gpu.power_w / gpu.power_limit_w >= t.gpu_power_warn_pct) else ""
    pcie_style = "$primary" if (gpu.pcie_width_current is not None and gpu.pcie_width_max
                                 and gpu.pcie_width_current < gpu.pcie_width_max) else ""
    cells = (
        _cell(str(gpu.index), 3),
        _cell((gpu.model or NA_TEXT).removeprefix("NVIDIA "), 10),
        _cell(num(gpu.util_pct, "{:.0f}%"), 5),
        _cell(pair(_gib(gpu.memory_used_mib), _gib(gpu.memory_total_mib), "{:.1f}"), 11),
        _cell(pair(gpu.temp_c, gpu.hbm_temp_c), 9, _temp_style(gpu, t)),
        _cell(pair(gpu.power_w, gpu.power_limit_w), 9, power_style),
        _cell(pair(gpu.ecc_corrected_volatile, gpu.ecc_uncorrected_volatile, "{}"), 8, ecc_style),
        _cell(remap, 5, remap_style),
        _cell(_pcie(gpu), 11, pcie_style),
        _cell("on" if gpu.mig_mode_current else yes_no(gpu.mig_mode_current).replace("no", "off"), 3),
    )
    row = Content.assemble(*(cell for cell, (title, _) in zip(cells, _GPU_COLUMNS, strict=True)
                             if columns is None or title in columns))
    lines = [row]
    pad = "    "
    if gpu.last_xid is not None:
        meaning = XID_MEANING.get(gpu.last_xid, "see NVIDIA Xid catalog")
        lines.append(Content.assemble(pad, (f"Xid {gpu.last_xid}: {meaning}", "$error")))
    if gpu.mig_mode_pending is not None and gpu.mig_mode_pending != gpu.mig_mode_current:
        lines.append(Content.assemble(pad, (f"MIG mode change pending ({'on' if gpu.mig_mode_pending else 'off'}): reset needed", "$warning")))
    if gpu.mig_instances:
        insts = " ".join(f"{m.profile}(gi{m.gi_id})" for m in gpu.mig_instances)
        lines.append(Content.assemble(pad, ("MIG ", "bold"), insts))
    names = gpu.throttle_names()
    if names and names != ["GPU_IDLE"]:
        style = "$warning" if gpu.thermal_throttled else ""
        lines.append(Content.assemble(pad, ("throttle ", "bold"), (", ".join(names), style)))
    return lines


def node_header(node: Node | None, name: str, now: float) -> list[Content]:
    if node is None:
        return [Content.assemble((name, "bold"), "  not known to Slurm or Kubernetes")]
    lines: list[Content] = []
    s = node.slurm
    if s is not None:
        state = s.display_state
        style = "$error" if ("DOWN" in state or "FAIL" in state or "NOT_RESPONDING" in state) else (
            "$warning" if "DRAIN" in state else "$success")
        lines.append(Content.assemble(
            (name, "bold"), "  Slurm ", (state, style),
            f"  part {','.join(s.partitions) or NA_TEXT}  CPU {pair(s.cpus_alloc, s.cpus_total)}"
            f"  GPU {pair(s.gpus_alloc, s.gpus_total)}"))
        if s.reason:
            who = s.reason_user or NA_TEXT
            when = f"{utc(s.reason_time)} ({age(now - s.reason_time)} ago)" if s.reason_time is not None else NA_TEXT
            lines.append(Content.assemble("  reason ", (s.reason, "$warning"), f"  by {who}  at {when}"))
    else:
        lines.append(Content.assemble((name, "bold"), "  Slurm N/A"))
    k = node.k8s
    if k is not None:
        ready = k.ready
        pieces: list[Piece] = ["  K8s Ready=", (ready, "$success" if ready == "True" else "$error")]
        bad = [f"{c}={v}" for c, v in sorted(k.conditions.items()) if c != "Ready" and v != "False"]
        if bad:
            pieces.append(("  " + " ".join(bad), "$warning"))
        if k.unschedulable:
            pieces.append(("  cordoned", "$primary"))
        if k.taints:
            pieces.append("  taints " + ", ".join(f"{t.key}{'=' + t.value if t.value else ''}:{t.effect}" for t in k.taints))
        lines.append(Content.assemble(*pieces))
        if ready != "True" and k.condition_messages.get("Ready"):
            lines.append(Content("    " + k.condition_messages["Ready"]))
    else:
        lines.append(Content("  K8s N/A"))
    return lines


MAX_WORKLOAD_LINES = 6


def workload_lines(snapshot: ClusterSnapshot, name: str) -> list[Content]:
    """Slurm jobs (with their GPU indices here) and pods on the node: who is hit by an action."""
    index = workload_index(snapshot)
    jobs, pods = index.jobs_on(name), index.pods_on(name)
    if not jobs and not pods:
        return [Content.assemble(("Workload", "bold underline"), "  none")]
    lines = [Content.assemble(("Workload", "bold underline"), f"  {len(jobs)} job(s), {len(pods)} pod(s)")]
    for job in jobs[:MAX_WORKLOAD_LINES]:
        gpus = job.gpus_alloc.get(name)
        lines.append(Content.assemble(
            "  job ", (job.display_id, "bold"), f"  {job.user or NA_TEXT}  {job.name or ''}",
            f"  GPUs {gpus}" if gpus else ""))
    for pod in pods[:MAX_WORKLOAD_LINES]:
        style = "$error" if pod.reason else ""
        lines.append(Content.assemble("  pod ", (f"{pod.namespace}/{pod.name}", "bold"), f"  {pod.phase}",
                                      (f"  {pod.reason}" if pod.reason else "", style),
                                      f"  {pod.gpu_text}" if pod.gpus_requested else ""))
    hidden = max(0, len(jobs) - MAX_WORKLOAD_LINES) + max(0, len(pods) - MAX_WORKLOAD_LINES)
    if hidden:
        lines.append(Content(f"  … {hidden} more"))
    return lines


def alert_lines(snapshot: ClusterSnapshot, name: str) -> list[Content]:
    """The site's Alertmanager on this node: every alert (firing ones are findings too; silenced ones say by
    whom, until when and why) and the silences that name the node."""
    alerts = snapshot.alerts.get(name, ()) if snapshot.alerts else ()
    silences = [s for s in snapshot.silences if name in s.nodes]
    if not alerts and not silences:
        return []
    out = [Content.assemble(("Alertmanager", "bold underline"))]
    by_id = {s.id: s for s in snapshot.silences}
    for a in alerts:
        what = f"{a.name}" + (f" GPU {a.gpu}" if a.gpu is not None else "") + (f": {a.summary}" if a.summary else "")
        if a.firing:
            out.append(Content.assemble((f" {SEVERITY_LABEL[a.severity]:<5} ", SEVERITY_STYLE[a.severity] + " bold"),
                                        what))
        else:
            why = "inhibited" if a.inhibited_by and not a.silenced_by else "silenced"
            out.append(Content.assemble((" quiet ", "dim"), what, (f" ({why})", "dim")))
    for s in silences or [by_id[i] for a in alerts for i in a.silenced_by if i in by_id][:4]:
        until = time.strftime("%H:%M", time.localtime(s.ends_at)) if s.ends_at else "?"
        out.append(Content.assemble(("  silence ", "dim"), f"{s.matcher_text} by {s.created_by or '?'} until {until}",
                                    (f" “{s.comment}”" if s.comment else "", "dim")))
    return out


def check_lines(view: CheckView | None, now: float) -> list[Content]:
    """The node's newest result per health check ("diag r2 passed  3 h ago") and, when the resume gate
    holds the node, for which finding and what would clear it."""
    if view is None or not (view[0] or view[1]):
        return []
    results, held = view
    out = [Content.assemble(("Health checks", "bold underline"))]
    for r in list(results)[:MAX_CHECK_LINES]:
        when = age(max(0.0, now - r.time))
        out.append(Content.assemble((f" {r.status.value:<7} ", CHECK_STYLE[r.status]), r.summary, (f"  {when} ago", "dim")))
    by_domain: dict[str, list[CriticalMark]] = {}
    for m in held:
        by_domain.setdefault(m.domain.value, []).append(m)
    for domain, marks in by_domain.items():
        first = min(marks, key=lambda m: m.first_seen)
        what = first.message if len(marks) == 1 else f"{len(marks)} critical findings"
        out.append(Content.assemble((" gate    ", "$error bold"), f"resume needs a passing {domain} check",
                                    (f"  {what}, since {age(max(0.0, now - first.first_seen))}", "dim")))
    return out


def node_detail(snapshot: ClusterSnapshot, name: str | None, t: Thresholds, *, width: int | None = None,
                gpus_first: bool = False, findings: FindingsIndex | None = None,
                checks: CheckView | None = None) -> Content:
    """Everything the panel shows for one node, as one Content. ``width``: GPU columns that do
    not fit are left out; ``gpus_first``: the GPU table right under the node's state (a short
    panel shows every GPU before the workload and findings). ``findings``: the snapshot's (the
    frame's); without them (a caller with a bare snapshot) the rules run here. ``checks``: the node's
    health-check view (results, what the resume gate holds it for)."""
    from hpctui.ui.widgets.probe_detail import probe_gpu_lines, service_lines  # (keeps the import block as it was)

    if name is None:
        return Content("No node selected.")
    lines = node_header(snapshot.nodes.get(name), name, snapshot.time)
    head = len(lines)
    lines.extend(source_lines(snapshot, name, snapshot.time))
    lines.extend(resource_lines(snapshot.resources.get(name)))
    node_findings = (findings if findings is not None else findings_for(snapshot, t)).node(name)
    if node_findings:
        lines.append(Content.assemble(("Findings", "bold underline")))
        for f in node_findings[:12]:
            lines.append(Content.assemble((f" {SEVERITY_LABEL[f.severity]:<5} ", SEVERITY_STYLE[f.severity] + " bold"),
                                          f.message))
        if len(node_findings) > 12:
            lines.append(Content(f"  … {len(node_findings) - 12} more"))
    lines.extend(check_lines(checks, snapshot.time))
    lines.extend(alert_lines(snapshot, name))
    lines.extend(workload_lines(snapshot, name))
    gpus = snapshot.gpus.get(name)
    table: list[Content] = []
    if gpus is None:
        table.append(Content("GPUs: N/A (no GPU data for this node)"))
    elif not gpus:
        table.append(Content("GPUs: none"))
    else:
        columns = gpu_columns_for(width)
        table.append(Content.assemble(*(_cell(title, w, "bold $primary") for title, w in _GPU_COLUMNS
                                        if title in columns)))
        for gpu in gpus:
            table.extend(gpu_lines(gpu, t, columns))
            table.extend(probe_gpu_lines(gpu))
    if gpus_first:
        lines[head:head] = table
    else:
        lines.extend(table)
    lines.extend(service_lines(snapshot, name))
    return Content("\n").join(lines)


# The node panel's sparklines are on fixed scales, the same for every node: utilisation 0-100 %
# in the load colours; temperature from TEMP_SCALE_LOW_C to 10 °C over the critical threshold,
# cool colours below the warning threshold, warning and error colours above.
TEMP_SCALE_LOW_C = 20.0


def util_bar(value: float, fraction: float) -> str:
    """Utilisation is load, not health: the util ramp, never the error red."""
    return f"$util-{min(4, int(fraction * 5))}"


def temp_bar(t: Thresholds, value: float, fraction: float) -> str:
    """A temperature bar's colour: by the node panel's thresholds, not by the series' own range."""
    if value >= t.gpu_temp_crit_c:
        return "$heat-4"
    if value >= t.gpu_temp_warn_c:
        return "$heat-3"
    return f"$heat-{min(2, int(fraction * 3))}"


def node_series(history: HistoryGetter, name: str, metric: str) -> list[float]:
    """The node's GPU-mean series of one metric (the store keeps one per node, not per GPU)."""
    return [v for _, v in history(f"node:{name}:{metric}")]


class LineStack(Vertical):
    """Text as one Static per line: an update repaints only the lines whose text or style
    changed (a GPU's utilisation moving repaints that GPU's line, not the node's header,
    workload and table header: ~1 KB less to the terminal on every poll).

    The stack's height changing costs a layout pass of the whole screen (~10–20 ms), so
    arrowing across nodes must not change it on every key: fewer lines than before are blanked
    at once, and the blank tail is hidden only once the node has stayed (SHRINK_AFTER_S); more
    lines than before reuse hidden ones before mounting new ones."""

    SHRINK_AFTER_S = 0.4
    DEFAULT_CSS = """
    LineStack { height: auto; }
    LineStack > Static { height: 1; width: 1fr; text-wrap: nowrap; }
    """

    def __init__(self, text: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._first = text
        self._lines: list[Content] = []  # the lines shown, then blanks up to the visible count
        self._pool: list[Static] = []     # every line widget, in order; the first `_visible` are shown
        self._visible = 0
        self._shrink: Timer | None = None

    def compose(self) -> ComposeResult:
        first = Static(self._first, markup=False)
        self._pool = [first]
        self._visible = 1
        yield first

    def set_lines(self, lines: list[Content], *, shrink: bool = False) -> None:
        """Show ``lines``. Fewer lines than before blank the rest; with ``shrink`` (another
        node) the blank rest is hidden once no other node has followed for SHRINK_AFTER_S."""
        if self._shrink is not None:
            self._shrink.stop()
            self._shrink = None
        need = len(lines)
        if need > self._visible:
            for widget in self._pool[self._visible:need]:  # hidden ones first: no new widgets
                widget.display = True
            missing = need - len(self._pool)
            if missing > 0:
                new = [Static(markup=False) for _ in range(missing)]
                self._pool.extend(new)
                self.mount_all(new)
            self._visible = need
        shown = lines + [Content("")] * (self._visible - need)
        old_lines = self._lines
        for i, (widget, line) in enumerate(zip(self._pool, shown, strict=False)):
            before = old_lines[i] if i < len(old_lines) else None
            if before is None or before.plain != line.plain or before.spans != line.spans:
                widget.update(line, layout=False)  # a fixed-size line: no layout pass
        self._lines = shown
        if shrink and need < self._visible:
            if self.SHRINK_AFTER_S <= 0:  # (screenshots: the settled panel at once)
                self._hide_tail(need)
            else:
                self._shrink = self.set_timer(self.SHRINK_AFTER_S, partial(self._hide_tail, need))

    def _hide_tail(self, keep: int) -> None:
        self._shrink = None
        for widget in self._pool[keep:self._visible]:
            widget.display = False
        self._visible = keep
        self._lines = self._lines[:keep]

    @property
    def text(self) -> str:
        """The lines as plain text (what tests and reports read)."""
        return "\n".join(line.plain for line in self._lines).rstrip("\n") if self._lines else self._first


class GpuPanel(VerticalScroll):
    """Attributes down: the screen calls :meth:`show` with the snapshot and node."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.node: str | None = None
        self.border_title = "Node / GPUs"
        self.remote: tuple[str, list[float], str] | None = None  # (node, util series, window) of a range query
        self._title = "Node / GPUs"
        self._subtitle = ""
        self._body: Content | None = None
        self._body_node: str | None = None
        self.gpus_first = False  # set by the screen: the narrow layout's node tab shows every GPU first
        self._last: tuple[Frame, str | None, Thresholds, HistoryGetter | None] | None = None
        self._temp_limits: tuple[float, float] | None = None  # (warn, crit) the temperature spark is drawn for
        self._spark_labels: dict[str, str] = {}
        self.checks_for: Callable[[str], CheckView] | None = None  # set by the screen: UiPort.check_view

    def compose(self) -> ComposeResult:
        yield LineStack("Waiting for data…", id="gpu-body")
        with Horizontal(id="gpu-history"):
            yield Label("util", id="spark-util-label", classes="spark-label")
            yield MiniSpark(id="spark-util", low=0.0, high=100.0, colour=util_bar)
            yield Label("temp", id="spark-temp-label", classes="spark-label")
            yield MiniSpark(id="spark-temp", low=TEMP_SCALE_LOW_C, high=TEMP_SCALE_LOW_C + 80.0)

    def watch_has_focus(self, _has_focus: bool) -> None:
        """Restyle the panel alone when it gains or loses focus, not its ~30 line widgets (Textual
        restyles the whole subtree: ~3 ms a ``tab`` at any size). No rule styles them by the
        panel's focus; the focused-pane border is the panel's own (borders.move_focus_frame)."""
        self.app.stylesheet.update_nodes([self], animate=True)

    def show(self, frame: Frame, node: str | None, thresholds: Thresholds,
             history: HistoryGetter | None = None) -> None:
        """Draw ``node`` of ``frame``; parts whose text, styles or series are unchanged are not redrawn."""
        self.node = node
        self._last = (frame, node, thresholds, history)
        title = f"Node {node}" if node else "Node / GPUs"
        if title != self._title:  # setting a border title repaints the whole panel
            self._title = title
            set_border_text(self, Content(title))
        width = self.size.width - 3 if self.size.width else None  # border and scrollbar
        checks = self.checks_for(node) if self.checks_for is not None and node else None
        body = node_detail(frame.snapshot, node, thresholds, width=width, gpus_first=self.gpus_first,
                           findings=frame.findings, checks=checks)
        drawn = self._body
        if drawn is None or body.plain != drawn.plain or body.spans != drawn.spans:
            self._body = body
            self.query_one("#gpu-body", LineStack).set_lines(body.split("\n"), shrink=node != self._body_node)
            self._body_node = node
        util = node_series(history, node, "util") if history and node else []
        temp = node_series(history, node, "temp") if history and node else []
        remote = self.remote is not None and self.remote[0] == node
        if remote and self.remote is not None:  # a metrics source's own history wins
            util = self.remote[1]
        subtitle = self.remote[2] if remote and self.remote is not None else ""
        if self._subtitle != subtitle:  # (not border_subtitle: Textual returns it as escaped markup)
            self._subtitle = subtitle
            set_border_text(self, subtitle, subtitle=True)
        temp_spark = self.query_one("#spark-temp", MiniSpark)
        if self._temp_limits != (thresholds.gpu_temp_warn_c, thresholds.gpu_temp_crit_c):
            self._temp_limits = (thresholds.gpu_temp_warn_c, thresholds.gpu_temp_crit_c)
            temp_spark.high = max(TEMP_SCALE_LOW_C + 10.0, thresholds.gpu_temp_crit_c + 10.0)
            temp_spark.colour = partial(temp_bar, thresholds)
            temp_spark.refresh()
        for spark_id, data, unit in (("spark-util", util, "%"), ("spark-temp", temp, "°C")):
            self.query_one(f"#{spark_id}", MiniSpark).data = data  # redraws only when the series moved
            self._set_spark_label(spark_id, data, unit)
        shown = len(util) > 1 or len(temp) > 1
        box = self.query_one("#gpu-history")
        if box.display != shown:
            box.display = shown

    def _set_spark_label(self, spark_id: str, data: list[float], unit: str) -> None:
        """``util 89%`` / ``temp 31°C``: the newest value beside its fixed-scale sparkline."""
        name = spark_id.removeprefix("spark-")
        text = f"{name} {data[-1]:.0f}{unit}" if data else name
        if self._spark_labels.get(spark_id) != text:
            self._spark_labels[spark_id] = text
            self.query_one(f"#{spark_id}-label", Label).update(text, layout=False)  # fixed width: no layout pass

    def on_resize(self) -> None:
        self.redraw()

    @property
    def body_text(self) -> str:
        """The node's text as drawn (plain)."""
        return self.query_one("#gpu-body", LineStack).text

    def redraw(self) -> None:
        """Draw the last node again (the width or ``gpus_first`` changed)."""
        if self._last is not None:
            self.show(*self._last)

    def show_history(self, node: str, util: list[float], window: str) -> None:
        """A range-query answer for ``node`` (from a metrics source), with the window it covers."""
        self.remote = (node, util, window)
        if node == self.node:
            self.query_one("#spark-util", MiniSpark).data = util
            self._set_spark_label("spark-util", util, "%")
            self._subtitle = window
            set_border_text(self, window, subtitle=True)
            self.query_one("#gpu-history").display = len(util) > 1
