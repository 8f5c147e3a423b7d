"""Column priorities of the dashboard tables: which columns shrink, drop or grow with the width.

Higher priority survives longer. A pane narrower than its columns first shrinks the
lowest-priority columns to their ``min_width``, then drops them (see
:func:`hpctui.ui.widgets.vtable.fit_columns`); a wider pane gives the spare cells to the
``grow`` columns, so a long node list or reason is not cut next to blank space.
Keys not listed keep their width at the default priority (50).
"""

from __future__ import annotations

from hpctui.ui.widgets.vtable import Fit

# A REASON is worth more than a PARTITION; the job id and state are never dropped.
JOB_FIT: dict[str, Fit] = {
    "id": Fit(100, 8), "state": Fit(95, 7), "reason": Fit(85, 12, grow=2), "gpus": Fit(80),
    "nodes": Fit(75, 10, grow=3), "user": Fit(60, 6), "time": Fit(55), "time_left": Fit(52),
    "name": Fit(40, 8, grow=1), "priority": Fit(35), "partition": Fit(30, 4),
}
# Pod reasons are the point of the pane: never cut to "Crash"/"Unsch" (CrashLoopBackOff: 16).
POD_FIT: dict[str, Fit] = {
    "name": Fit(100, 16, grow=3), "reason": Fit(90, 16, grow=1), "phase": Fit(85, 7), "node": Fit(70, 7),
    "restarts": Fit(50), "gpus": Fit(45), "queue": Fit(30, 5, grow=1),
}
# The PROBLEM column of the IB pane must stay; the physical state goes first.
LINK_FIT: dict[str, Fit] = {
    "severity": Fit(100), "problem": Fit(98, 16, grow=3), "node": Fit(95, 7), "port": Fit(90, 8),
    "state": Fit(70), "rate": Fit(60, 10, grow=1), "errors": Fit(55, 8, grow=1), "phys": Fit(40, 6),
}
MOUNT_FIT: dict[str, Fit] = {
    "severity": Fit(100), "node": Fit(95, 7), "target": Fit(90, 10, grow=1), "state": Fit(88),
    "detail": Fit(80, 12, grow=3), "latency": Fit(60), "fstype": Fit(40),
}
PROBLEM_FIT: dict[str, Fit] = {
    "number": Fit(100), "severity": Fit(95), "node": Fit(96, 7), "what": Fit(90, 20, grow=1),
    "gpu": Fit(70), "since": Fit(60), "source": Fit(30, 6),
}
EVENT_FIT: dict[str, Fit] = {
    "message": Fit(100, 20, grow=3), "time": Fit(90, 8), "severity": Fit(80), "object": Fit(70, 12, grow=1),
    "source": Fit(40),
}

# By the dashboard tables' ids (the dashboard applies them; a table built elsewhere keeps
# every column at its own width and scrolls sideways).
TABLE_FITS: dict[str, dict[str, Fit]] = {
    "queue": JOB_FIT, "pods": POD_FIT, "ib": LINK_FIT, "mounts": MOUNT_FIT,
    "problems": PROBLEM_FIT, "events": EVENT_FIT,
}
