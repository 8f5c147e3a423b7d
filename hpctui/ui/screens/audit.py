"""The audit trail in the app: every action run from here or ``hpctui act``, newest first.

Columns time, user, action, targets, result (ok / failed / interrupted / refused), reason.
``/`` filters with ``user:alice action:drain target:gpu0012 since:1h result:failed`` and free
words; ``enter`` shows the full record (commands, per-target results, output truncated).
New records appear live: the file is re-read when its size or mtime changes (checked on every
snapshot and every 2 s), in a worker thread, and only its newest 4 MB (a hung NFS mount or a
big file never stalls the UI).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from hpctui.actions.audit_view import TAIL_BYTES, AuditEntry, AuditFilter, load_tail, truncate
from hpctui.model.action import NODE_ACTIONS
from hpctui.model.hostlist import collect
from hpctui.ui.fmt import NA_TEXT, utc
from hpctui.ui.screens.tableview import TableViewScreen
from hpctui.ui.widgets.vtable import Column, VirtualTable

if TYPE_CHECKING:
    from hpctui.actions.audit import AuditLog
    from hpctui.core.runtime import Runtime

_NODE_ACTIONS = frozenset(k.value for k in NODE_ACTIONS)
RESULT_VAR = {"ok": "success", "failed": "error", "interrupted": "warning", "refused": "warning"}
POLL_S = 2.0


def targets_text(entry: AuditEntry) -> str:
    """Node targets folded into a hostlist (as ``sinfo`` would); job ids, pods, partitions listed."""
    if not entry.targets:  # a refused plan keeps no targets (none passed its checks)
        return NA_TEXT
    if entry.action in _NODE_ACTIONS:
        try:
            return collect(entry.targets)
        except Exception:  # python-hostlist rejects odd names: list them as they are
            pass
    return ",".join(entry.targets)


AUDIT_COLUMNS: list[Column[AuditEntry]] = [
    Column("time", "TIME", 20, lambda e: utc(e.time, "%Y-%m-%d %H:%M:%S"), lambda e: e.time),
    Column("user", "USER", 10, lambda e: e.user, lambda e: e.user),
    Column("action", "ACTION", 16, lambda e: e.action, lambda e: e.action),
    Column("targets", "TARGETS", 24, targets_text, targets_text),
    Column("result", "RESULT", 11, lambda e: e.result, lambda e: e.result, style=lambda e: RESULT_VAR.get(e.result)),
    Column("reason", "REASON", 40, lambda e: e.reason or e.refused or "", lambda e: e.reason or ""),
]


def record_text(entry: AuditEntry) -> str:
    """The full record, as the detail screen shows it."""
    lines = [
        f"id:        {entry.id or NA_TEXT}",
        f"time:      {utc(entry.time, '%Y-%m-%d %H:%M:%S')}"
        + (f"  → finished {utc(entry.finished, '%H:%M:%S')}" if entry.finished else ""),
        f"cluster:   {entry.cluster or NA_TEXT}",
        f"user:      {entry.user}" + "".join(f"  {k}={v}" for k, v in sorted(entry.extra.items())),
        f"action:    {entry.action}  (via {entry.source or NA_TEXT})",
        f"result:    {entry.result}" + (f": {entry.refused}" if entry.refused else ""),
        f"targets:   {targets_text(entry)}  ({len(entry.targets)})",
    ]
    for key, value in sorted(entry.params.items()):
        lines.append(f"{key + ':':<11}{value}")
    lines.append("")
    lines.append("commands:" if entry.commands else "commands:  none recorded")
    lines += [f"  $ {c}" for c in entry.commands]
    if entry.outcomes:
        ok = sum(1 for o in entry.outcomes if o.ok)
        lines += ["", f"per-target results ({ok} ok, {len(entry.outcomes) - ok} failed):"]
        for o in entry.outcomes:
            lines.append(f"  {'ok  ' if o.ok else 'FAIL'} {o.target}: {truncate(o.message) if o.message else ''}")
    elif entry.result == "interrupted":
        lines += ["", "no outcome recorded: the process ended (or is still running) after the intent was written"]
    for key, value in entry.details.items():
        lines.append("")
        lines += steps_lines(value) if key == "steps" and isinstance(value, list) else detail_lines(key, value)
    return "\n".join(lines)


def _yes_no(value: object) -> str:
    return "ok" if value is True else ("FAIL" if value is False else str(value))


def steps_lines(steps: list[object]) -> list[str]:
    """A hybrid action's steps, one block each: ``1. drain via slurm: ok``, then its targets,
    commands and per-target results, indented (never a Python dict)."""
    lines = [f"steps ({len(steps)}):"]
    for number, step in enumerate(steps, start=1):
        if not isinstance(step, dict):
            lines.append(f"  {number}. {step}")
            continue
        what = str(step.get("action") or step.get("title") or step.get("key") or "step")
        via = f" via {step['source']}" if step.get("source") else ""
        status = step.get("status", step.get("ok"))
        lines.append(f"  {number}. {what}{via}" + (f": {_yes_no(status)}" if status is not None else ""))
        if step.get("targets"):
            lines.append(f"       targets: {', '.join(map(str, step['targets']))}")
        lines += [f"       $ {c}" for c in step.get("commands") or ()]
        if step.get("detail"):
            lines.append(f"       {step['detail']}")
        for r in step.get("results") or ():
            if isinstance(r, dict):
                message = truncate(str(r.get("message") or ""))
                lines.append(f"       {_yes_no(r.get('ok')):<4} {r.get('target', '?')}" + (f": {message}" if message else ""))
        rest = {k: v for k, v in step.items()
                if k not in ("action", "title", "key", "source", "status", "ok", "targets", "commands", "detail",
                             "results")}
        for k, v in rest.items():
            lines += ["       " + line for line in detail_lines(k, v)]
    return lines


def detail_lines(key: str, value: object, indent: int = 0) -> list[str]:
    """Any other structured part of a record (a previous state, …) as indented ``key: value``
    lines: dicts nest, lists become ``-`` items, scalars print as they are."""
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            return [f"{pad}{key}: none"]
        out = [f"{pad}{key}:"]
        for k, v in value.items():
            out += detail_lines(str(k), v, indent + 1)
        return out
    if isinstance(value, list):
        if not value:
            return [f"{pad}{key}: none"]
        if all(not isinstance(v, (dict, list)) for v in value):
            return [f"{pad}{key}: {', '.join(map(str, value))}"]
        out = [f"{pad}{key}:"]
        for v in value:
            sub = detail_lines("-", v, indent + 1)
            out += sub
        return out
    return [f"{pad}{key}: {_yes_no(value) if isinstance(value, bool) else value}"]


class AuditRecordScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape", "dismiss_screen", "Close"), Binding("q", "dismiss_screen", "Close", show=False)]
    DEFAULT_CSS = """
    AuditRecordScreen { align: center middle; }
    AuditRecordScreen > Vertical { width: 95%; height: 90%; border: thick $primary; background: $surface; }
    AuditRecordScreen #audit-record-title { text-style: bold; width: 100%; }
    """

    def __init__(self, entry: AuditEntry) -> None:
        super().__init__()
        self.entry = entry
        self.text = record_text(entry)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"audit record: {self.entry.action} by {self.entry.user}  (esc to close)",
                        id="audit-record-title", markup=False)
            with VerticalScroll():
                yield Static(self.text, id="audit-record-body", markup=False)

    def action_dismiss_screen(self) -> None:
        self.dismiss(None)


class AuditTable(VirtualTable[AuditEntry]):
    def __init__(self) -> None:
        super().__init__(AUDIT_COLUMNS, row_key=lambda e: e.key, id="audit")


class AuditScreen(TableViewScreen):
    """``:audit``."""

    BINDINGS = [Binding("enter", "show_record", "Record")]
    title_text = "Audit trail  (newest first)"
    filter_placeholder = "user:alice action:drain target:gpu0012 since:1h result:failed  + free words"

    def __init__(self, runtime: Runtime) -> None:
        super().__init__(runtime, AuditTable())
        self.entries: list[AuditEntry] = []
        self.filter = AuditFilter()
        self.read_error: str | None = None
        self._stamp: tuple[int, int] | None = None
        self.cut = False  # older records left out (only the file's tail is read)
        self.skipped = 0  # lines of the tail that were not a record (torn by a crash, edited)
        self._reading = False
        self._again = self._force = False

    def on_mount(self) -> None:
        super().on_mount()
        self.set_interval(POLL_S, self.reload)

    @property
    def path(self) -> str | None:
        audit = self.runtime.executor.audit
        return None if audit is None else str(audit.path)

    def refresh_rows(self) -> None:
        self.reload()

    def reload(self, force: bool = False) -> None:
        """Re-read the audit file when it changed (size, mtime), in a worker thread: the file may
        be big or on NFS (a hung mount must not freeze the UI). Only its newest records are read
        (``TAIL_BYTES``); one read at a time, and a change seen meanwhile reads again after it."""
        audit = self.runtime.executor.audit
        if audit is None:
            self.read_error = "no audit log configured"
            self._show()
            return
        if self._reading:
            self._again = True
            self._force = self._force or force
            return
        self._reading = True
        self.run_worker(self._read(audit, force), group="audit-read", exit_on_error=False)

    async def _read(self, audit: AuditLog, force: bool) -> None:
        path = str(audit.path)
        try:
            while True:
                self._again = self._force = False
                stamp = None if force else self._stamp
                try:
                    got = await asyncio.to_thread(load_tail, path, self.runtime.cluster, stamp,
                                                  tail_bytes=audit.tail_bytes, max_records=audit.tail_records)
                except OSError as exc:
                    self._stamp = None  # try again on the next check
                    self.read_error = f"{path}: {exc.strerror or exc}"
                    self._show()
                else:
                    if got is not None:  # applied here, on the UI's event loop
                        self._stamp = got.stamp
                        self.entries = got.entries
                        self.cut = got.cut
                        self.skipped = got.skipped
                        self.read_error = None
                        self._show()
                if not self._again:
                    break
                force = self._force
        finally:
            self._reading = False

    def _show(self) -> None:
        now = self.runtime.clock()
        rows = [e for e in self.entries if self.filter.match(e, now)]
        self.table.set_rows(rows)
        parts = [f"{len(rows)} of {len(self.entries)} actions"]
        if self.path:
            parts.append(self.path)
        if self.cut:
            tail_mb = (audit.tail_bytes if (audit := self.runtime.executor.audit) else TAIL_BYTES) >> 20
            parts.append(f"newest {len(self.entries)} only (the last {tail_mb} MB of the file)")
        if self.skipped:
            parts.append(f"audit log: {self.skipped} unreadable line(s) skipped")
        if self.filter.errors:
            parts.append("filter: " + "; ".join(self.filter.errors))
        if self.read_error:
            parts.append(self.read_error)
        self.set_info(" · ".join(parts))

    def apply_filter(self, text: str) -> None:
        self.filter = AuditFilter.parse(text)
        self._show()

    def action_show_record(self) -> None:
        entry = self.table.cursor_row
        if entry is not None:
            self.app.push_screen(AuditRecordScreen(entry))

