"""The status line: cluster, per-source health with data age, read-only marker, clock.

It exists so the screen never lies: data older than ``stale_factor`` × the source's
interval is marked stale, with the last error, instead of looking current.
"""

from __future__ import annotations

from collections.abc import Mapping

from textual.content import Content
from textual.widgets import Static

from hpctui.findings.health import Thresholds
from hpctui.model import ClusterSnapshot, ControllerHealth, Part, SourceHealth
from hpctui.ui.fmt import age, utc

Piece = tuple[str, str] | str


def source_text(health: SourceHealth, now: float, interval_s: float, stale_factor: float) -> tuple[str, str]:
    """(text, style) for one source, e.g. ("slurm ✓ 2s", "$success")."""
    seconds = health.age(now)
    stale = seconds is None or seconds > stale_factor * interval_s
    if health.last_success is None:
        detail = f": {health.last_error}" if health.last_error else ""
        return f"{health.name} ✗ no data{detail}", "$error" if health.last_error else "$warning"
    if health.last_error is not None or stale:
        head = f"{health.name} ✗ {'stale ' if stale else ''}{age(seconds)}"
        text = f"{head}: {health.last_error}" if health.last_error else head
        return text, "$error" if stale else "$warning"
    if health.warnings:  # fresh, but the source had to work around something: say what
        return f"{health.name} ⚠ {age(seconds)}: {health.warnings[0]}", "$warning"
    return f"{health.name} ✓ {age(seconds)}", "$success"


def status_content(cluster: str, sources: Mapping[str, SourceHealth], now: float,
                   intervals: Mapping[str, float], thresholds: Thresholds, *, read_only: bool,
                   wall: bool = False, subject: str = "") -> Content:
    """The line: cluster, each source's health, WALL / READ-ONLY, what node/job keys act on
    (``subject``, e.g. ``▸ gpu0007 · job 1054``), the clock."""
    pieces: list[Piece] = [(f" {cluster} ", "bold reverse $primary"), " "]
    for name, health in sources.items():
        text, style = source_text(health, now, intervals.get(name, 2.0), thresholds.stale_factor)
        pieces += [(text, style), "  "]
    if subject:
        pieces += [(subject, "bold $accent"), "  "]
    if wall:
        pieces.append(("WALL ", "bold $accent"))
    if read_only:
        pieces.append(("READ-ONLY ", "bold reverse $warning"))
    pieces.append((" " + utc(now, "%H:%M:%S"), "bold"))
    return Content.assemble(*pieces)


class StatusLine(Static):
    """One fixed-height line, as wide as its text: an update repaints this text only, and
    lays out again only when the text's width changed (an age going from 9s to 10s)."""

    _shown: Content | None = None

    def show(self, content: Content) -> None:
        old = self._shown
        if old is not None and old.plain == content.plain and old.spans == content.spans:
            return
        self._shown = content
        self.update(content, layout=old is None or old.cell_length != content.cell_length)


def part_status(snapshot: ClusterSnapshot, part: Part, now: float) -> str:
    """Pane-title marker for a part whose source is failing: error plus the data's age."""
    errors = snapshot.part_errors(part)
    if not errors:
        return ""
    return f"✗ data {age(snapshot.part_age(part, now))} old · {errors[0]}"


def controller_summary(ctl: ControllerHealth | None) -> str:
    """sdiag in one line for the queue pane's bottom border: is slurmctld keeping up?"""
    if ctl is None:
        return ""
    if not ctl.reachable:
        return f"slurmctld unreachable{': ' + ctl.detail if ctl.detail else ''}"
    parts = ["slurmctld ok"]
    if ctl.server_thread_count is not None:
        parts.append(f"{ctl.server_thread_count} threads")
    if ctl.agent_queue_size is not None:
        parts.append(f"agent queue {ctl.agent_queue_size}")
    if ctl.mean_schedule_cycle_us is not None:
        parts.append(f"sched cycle {ctl.mean_schedule_cycle_us / 1000:.1f} ms")
    if ctl.last_backfill_cycle_s is not None:
        parts.append(f"backfill {ctl.last_backfill_cycle_s:.2f} s")
    return " · ".join(parts)
