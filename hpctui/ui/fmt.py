"""Display formatting shared by the panes: N/A for missing values, ages, UTC times."""

from __future__ import annotations

import time
from collections.abc import Sequence

from hpctui.model import Severity
from hpctui.model.common import age_text
from hpctui.model.jobs import K8sQueueItem

NA_TEXT = "N/A"
# Text styles for severities (the sev-* variables are tuned as cell backgrounds).
SEVERITY_STYLE = {
    Severity.OK: "$success", Severity.INFO: "$primary", Severity.WARNING: "$warning",
    Severity.ERROR: "$error", Severity.CRITICAL: "$sev-critical-text",
}
SEVERITY_LABEL = {
    Severity.OK: "ok", Severity.INFO: "info", Severity.WARNING: "warn",
    Severity.ERROR: "ERROR", Severity.CRITICAL: "CRIT",
}


def num(value: float | int | None, fmt: str = "{:.0f}") -> str:
    return NA_TEXT if value is None else fmt.format(value)


def pair(a: float | int | None, b: float | int | None, fmt: str = "{:.0f}") -> str:
    """``a/b`` with N/A for either side; "N/A" alone when both are missing."""
    if a is None and b is None:
        return NA_TEXT
    return f"{num(a, fmt)}/{num(b, fmt)}"


def yes_no(value: bool | None) -> str:
    return NA_TEXT if value is None else ("yes" if value else "no")


def age(seconds: float | None) -> str:
    """Compact age: 42s, 5m, 3h, 2d."""
    return NA_TEXT if seconds is None else age_text(seconds)


def utc(t: float | None, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """UTC wall time: the same on every operator's screen and in every screenshot."""
    return NA_TEXT if t is None else time.strftime(fmt, time.gmtime(t)) + "Z"


_QUEUE_KINDS = ("ClusterQueue", "LocalQueue", "Queue")  # Kueue's and Volcano's queue objects


def k8s_queue_summary(items: Sequence[K8sQueueItem], limit: int = 4) -> str:
    """One line for the pods pane: the batch queues (Kueue ClusterQueues/LocalQueues, Volcano
    Queues) with their pending/admitted counts, busiest first, plus workloads waiting."""
    queues = [q for q in items if q.kind in _QUEUE_KINDS]
    if not queues and not items:
        return ""
    queues.sort(key=lambda q: (-(q.pending or 0), q.name))
    parts = [f"{q.kind} {q.name}: {num(q.pending)} pending/{num(q.admitted)} admitted"
             + (f", {q.gpu_text}" if q.gpus else "") for q in queues[:limit]]
    if len(queues) > limit:
        parts.append(f"+{len(queues) - limit} queues")
    waiting = sum(1 for q in items if q.kind not in _QUEUE_KINDS and q.state.lower() in ("pending", "inqueue"))
    if waiting:
        parts.append(f"{waiting} workload(s) waiting")
    return " · ".join(parts)


# -- squeue-style job times (views: TIME, TIME_LEFT) ---------------------------------------
def squeue_duration(seconds: float | None) -> str:
    """squeue's ``%M``/``%L`` format: ``M:SS``, ``H:MM:SS``, ``D-HH:MM:SS``; N/A when unknown."""
    if seconds is None:
        return NA_TEXT
    s = max(0, int(seconds))
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    mins, secs = divmod(s, 60)
    if days:
        return f"{days}-{hours:02d}:{mins:02d}:{secs:02d}"
    if hours:
        return f"{hours}:{mins:02d}:{secs:02d}"
    return f"{mins}:{secs:02d}"


_RUNNING = frozenset({"RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "CONFIGURING", "SIGNALING"})


def job_elapsed(start_time: float | None, state: str, now: float, end_time: float | None = None) -> float | None:
    """Seconds a job has run (squeue TIME); None when it has not started (PENDING)."""
    if start_time is None or state == "PENDING":
        return None
    if state in _RUNNING or end_time is None:
        return max(0.0, now - start_time)
    return max(0.0, end_time - start_time)  # finished: from start to end


def job_time_text(start_time: float | None, state: str, now: float, end_time: float | None = None) -> str:
    """squeue TIME: ``0:00`` for a job that has not started, as squeue prints it."""
    elapsed = job_elapsed(start_time, state, now, end_time)
    return "0:00" if elapsed is None else squeue_duration(elapsed)


def job_time_left(start_time: float | None, state: str, limit_min: int | None, now: float) -> float | None:
    """Seconds left of a running job's limit (limit − elapsed, never below 0). None: not started
    or no finite limit (Slurm reports UNLIMITED and "not set" alike: the model holds None)."""
    elapsed = job_elapsed(start_time, state, now)
    if limit_min is None or elapsed is None:
        return None
    return max(0.0, limit_min * 60 - elapsed)


def job_time_left_text(start_time: float | None, state: str, limit_min: int | None, now: float) -> str:
    """squeue TIME_LEFT: N/A for a job that has not started, ``UNLIMITED`` without a finite limit."""
    if job_elapsed(start_time, state, now) is None:
        return NA_TEXT
    if limit_min is None:
        return "UNLIMITED"
    return squeue_duration(job_time_left(start_time, state, limit_min, now))


# -- cells that do not fit ----------------------------------------------------------------------
ELLIPSIS = "…"


def elide(text: str, width: int, how: str = "end") -> str:
    """``text`` in at most ``width`` cells, an ellipsis marking what was left out.

    ``end``: the head kept (free text); ``middle``: head and tail kept, the tail longer (a pod
    name's unique suffix, ``inference/vl…7f9c6d-abcde``); ``list``: cut after the last whole
    comma-separated item that fits (a hostlist reads ``gpu[0057-0060,…]``, never a half range)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    if how == "middle" and width >= 5:
        head = (width - 1) // 3
        tail = width - 1 - head
        return text[:head] + ELLIPSIS + text[-tail:]
    if how == "list":
        close = "]" if "[" in text else ""
        room = width - 1 - len(close)
        cut = text.rfind(",", 0, room)
        if cut > 0 and (not close or text.find("[") < cut):
            return text[: cut + 1] + ELLIPSIS + close
    return text[: width - 1] + ELLIPSIS


_IB_GENERATIONS = ("SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR")


def binary_bytes(value: float | None) -> str:
    """Bytes in binary units as quota tools print them: ``982.2 GiB``, ``5.0 TiB``; N/A for None."""
    if value is None:
        return NA_TEXT
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(value) < 1024 or unit == "PiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return NA_TEXT  # not reached


def ib_rate(gbps: float | None, text: str | None = None) -> str:
    """A link rate in the compact unit every pane uses: ``400G``, with the generation when the
    port's rate text names one (``200G HDR`` from ``200 Gb/sec (4X HDR)``); N/A when unknown."""
    if gbps is None:
        if not text:
            return NA_TEXT
        head = text.split(" ", 1)[0]
        try:
            gbps = float(head)
        except ValueError:
            return text
    value = f"{gbps:.0f}G" if gbps == int(gbps) else f"{gbps:g}G"
    words = (text or "").replace("(", " ").replace(")", " ").split()
    gen = next((w for w in words if w in _IB_GENERATIONS), None)
    return f"{value} {gen}" if gen else value
