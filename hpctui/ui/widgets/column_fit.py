"""Column priorities of the dashboard tables: which columns shrink, drop or grow with the width.

Higher priority survives longer. A pane narrower than its columns first shrinks the
lowest-priority columns to their ``min_width``, then drops them (see
:func:`hpctui.ui.widgets.vtable.fit_columns`); a wider pane gives the spare cells to the
``grow`` columns, so a long node list or reason is not cut next to blank space.
Keys not listed keep their width at the default priority (50).
"""

from __future__ import annotations

from hpctui.ui.widgets.vtable import Fit

# Widths follow the content (VirtualTable.natural). A Fit without a min_width is never cut:
# identifiers, states, times, hostlists and units are shown whole or left out whole. Free text
# (NAME, REASON, PROBLEM, DETAIL, MESSAGE) shrinks to its min_width, lowest priority first; a
# column below priority 50 (vtable.LOW_VALUE) also makes way for a cut column above it.

# A REASON is worth more than a PARTITION; the job id and state are never dropped.
# NODES is a hostlist: whole whenever the pane has room; in a narrow pane it is cut only after
# a whole range (``gpu[0057-0060,…]``, tables.JOB_COLUMNS elide="list"), never inside one.
JOB_FIT: dict[str, Fit] = {
    "id": Fit(100), "state": Fit(95), "nodes": Fit(88, 16, grow=1), "reason": Fit(85, 10, grow=3), "gpus": Fit(80),
    "user": Fit(60), "time_left": Fit(56), "time": Fit(45), "name": Fit(50, 8, grow=1), "priority": Fit(35),
    "partition": Fit(30),
}
# Pod reasons are the point of the pane: never cut to "Crash"/"Unsch" (CrashLoopBackOff: 16).
# A long pod name loses its middle, never its unique tail (tables.POD_COLUMNS elide="middle").
POD_FIT: dict[str, Fit] = {
    "name": Fit(100, 24, grow=3), "reason": Fit(90, grow=1), "phase": Fit(85), "node": Fit(70),
    "restarts": Fit(50), "gpus": Fit(45), "queue": Fit(30, 5, grow=1),
}
# The PROBLEM column of the IB pane must stay; the physical state and the error deltas go first.
LINK_FIT: dict[str, Fit] = {
    "severity": Fit(100), "problem": Fit(98, 16, grow=3), "node": Fit(95), "port": Fit(90),
    "state": Fit(70), "rate": Fit(60), "errors": Fit(45, 6, grow=1), "phys": Fit(40),
}
MOUNT_FIT: dict[str, Fit] = {
    "severity": Fit(100), "node": Fit(95), "target": Fit(90, 12, grow=1), "state": Fit(88),
    "detail": Fit(80, 12, grow=3), "latency": Fit(60), "fstype": Fit(40),
}
PROBLEM_FIT: dict[str, Fit] = {
    "number": Fit(100), "severity": Fit(95), "node": Fit(96), "what": Fit(90, 20, grow=1),
    "gpu": Fit(70), "since": Fit(60), "source": Fit(30),
}
EVENT_FIT: dict[str, Fit] = {
    "message": Fit(100, 20, grow=3), "time": Fit(90), "severity": Fit(80), "object": Fit(70, grow=1),
    "source": Fit(40),
}

# By the dashboard tables' ids (the dashboard applies them; a table built elsewhere keeps
# every column at its own width and scrolls sideways).
TABLE_FITS: dict[str, dict[str, Fit]] = {
    "queue": JOB_FIT, "pods": POD_FIT, "ib": LINK_FIT, "mounts": MOUNT_FIT,
    "problems": PROBLEM_FIT, "events": EVENT_FIT,
}
