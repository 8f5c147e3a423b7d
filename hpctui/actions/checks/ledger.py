"""The per-node record of health checks and critical findings, kept in the state directory, and the gate.

Promises:

- Bounded: at most ``keep_per_node`` results per node (newest kept) and :data:`MAX_NODES` nodes; a
  mark older than :data:`MARK_MAX_AGE_S` is forgotten.
- Survives restarts: one JSON file per cluster, written atomically (0600, temp file + rename) when
  results arrive or a new critical finding is first seen; never on every refresh.
- Never takes the app down: an unreadable or corrupt file is set aside (``.corrupt``) and said once
  (:attr:`CheckLedger.warnings`); a write that fails (full disk, read-only state dir) comes back as a
  line for the caller to show, and the results stay in memory.
- Thread-safe: the poller's thread records findings while the event loop adds results.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from hpctui.base.private_files import private_dir, write_private
from hpctui.base.sanitize import clean_text
from hpctui.model.checks import CheckResult, CriticalMark, Domain

if TYPE_CHECKING:
    from hpctui.actions.checks.settings import HealthCheckSettings
    from hpctui.findings.health import Finding

MAX_NODES = 50_000
MARK_MAX_AGE_S = 90 * 86_400.0
MAX_MARKS_PER_NODE = 32
REAPPEAR_S = 300.0  # a finding unseen this long that comes back is a new occurrence: the gate closes again
MAX_FILE_BYTES = 64 << 20


class _Doc(msgspec.Struct, kw_only=True):
    version: int = 1
    checks: dict[str, list[CheckResult]] = msgspec.field(default_factory=dict)
    marks: dict[str, list[CriticalMark]] = msgspec.field(default_factory=dict)


def _node_of(obj: str) -> str:
    """``gpu/gpu01/3`` → ``gpu01``; ``ib/gpu01/mlx5_0:1`` → ``gpu01``; ``nvswitch/gpu01/sw0`` → ``gpu01``."""
    return obj.split("/", 2)[1] if obj.count("/") >= 1 else obj


class CheckLedger:
    """Check results and critical-finding marks per node; ``path`` None keeps them in memory only.
    ``read_only`` (a read-only session, a wall display) reads the file but never writes it: what it sees
    is remembered in memory, for its own gate and history."""

    def __init__(self, path: Path | None, *, keep_per_node: int = 20, clock: Callable[[], float] = time.time,
                 read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self.keep_per_node = keep_per_node
        self.clock = clock
        self.warnings: list[str] = []  # problems met reading the file (said once by whoever shows them)
        self._lock = threading.Lock()
        self._doc: _Doc | None = None

    # -- the file ------------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        """Whether the file has been read (a reader on the UI thread asks first: no file I/O there)."""
        return self._doc is not None

    def _loaded(self) -> _Doc:
        if self._doc is not None:
            return self._doc
        doc = _Doc()
        if self.path is not None:
            try:
                raw = self.path.read_bytes() if self.path.stat().st_size <= MAX_FILE_BYTES else None
                if raw is None:
                    raise ValueError(f"larger than {MAX_FILE_BYTES >> 20} MiB")
                doc = msgspec.json.decode(raw, type=_Doc)
            except FileNotFoundError:
                pass
            except (OSError, ValueError, msgspec.DecodeError) as exc:
                why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                self.warnings.append(clean_text(f"health-check records {self.path}: unreadable ({why}); "
                                                "starting empty, the old file kept as .corrupt"))
                try:
                    self.path.replace(self.path.with_name(self.path.name + ".corrupt"))
                except OSError:
                    pass
        self._doc = doc
        return doc

    def _save(self) -> str | None:
        """Write the whole record; None when written, else why not (for the caller to show)."""
        if self.path is None or self._doc is None or self.read_only:
            return None
        try:
            private_dir(self.path.parent)
            write_private(self.path, msgspec.json.encode(self._doc))
        except OSError as exc:
            return clean_text(f"health-check records {self.path} not written ({exc.strerror or exc})")
        return None

    # -- results ---------------------------------------------------------------------------------
    def add(self, results: Sequence[CheckResult]) -> str | None:
        """Keep ``results`` (newest first per node, bounded) and write the file; the write's problem or None."""
        with self._lock:
            doc = self._loaded()
            for r in results:
                if r.node not in doc.checks and len(doc.checks) >= MAX_NODES:
                    oldest = min(doc.checks, key=lambda n: doc.checks[n][0].time if doc.checks[n] else 0.0)
                    del doc.checks[oldest]
                kept = [r, *doc.checks.get(r.node, ())]
                kept.sort(key=lambda x: x.time, reverse=True)
                doc.checks[r.node] = kept[:self.keep_per_node]
            return self._save()

    def results(self, node: str) -> list[CheckResult]:
        """The node's check results, newest first."""
        with self._lock:
            return list(self._loaded().checks.get(node, ()))

    def nodes(self) -> list[str]:
        """Every node with kept results."""
        with self._lock:
            return list(self._loaded().checks)

    def latest(self, node: str) -> list[CheckResult]:
        """The newest result of each check that ran on ``node``, newest first."""
        seen: dict[str, CheckResult] = {}
        for r in self.results(node):
            seen.setdefault(r.check, r)
        return list(seen.values())

    def marks(self, node: str) -> list[CriticalMark]:
        """The critical findings remembered for ``node``, oldest first."""
        with self._lock:
            return sorted(self._loaded().marks.get(node, ()), key=lambda m: m.first_seen)

    # -- critical findings -------------------------------------------------------------------------
    def observe(self, findings: Iterable[Finding], settings: HealthCheckSettings) -> str | None:
        """Remember each gating finding from when it is first seen; writes only when one is new. Returns
        the write's problem, or None."""
        now = self.clock()
        seen: dict[tuple[str, str], tuple[Domain, str]] = {}
        for f in findings:
            domain = settings.gates(f.object, f.code, f.severity)
            if domain is not None:
                seen[(_node_of(f.object), f"{f.object}#{f.code}")] = (domain, f.message)
        if not seen and self._doc is not None and not self._doc.marks:
            return None
        with self._lock:
            doc = self._loaded()
            new = False
            for (node, key), (domain, message) in seen.items():
                marks = doc.marks.setdefault(node, [])
                old = next((i for i, m in enumerate(marks) if m.key == key), None)
                if old is None:
                    marks.append(CriticalMark(node=node, key=key, domain=domain, message=clean_text(message)[:300],
                                              first_seen=now, last_seen=now))
                    del marks[:-MAX_MARKS_PER_NODE]
                    new = True
                elif now - marks[old].last_seen > REAPPEAR_S:  # gone a while and back: a new occurrence
                    marks[old] = msgspec.structs.replace(marks[old], first_seen=now, last_seen=now,
                                                         message=clean_text(message)[:300])
                    new = True
                else:
                    marks[old] = msgspec.structs.replace(marks[old], last_seen=now)
            for node in list(doc.marks):
                doc.marks[node] = [m for m in doc.marks[node] if now - m.last_seen < MARK_MAX_AGE_S]
                if not doc.marks[node]:
                    del doc.marks[node]
            return self._save() if new else None

    # -- the gate ----------------------------------------------------------------------------------
    def blocking(self, node: str, settings: HealthCheckSettings) -> list[CriticalMark]:
        """The node's critical findings that no passing check of their domain followed."""
        results = self.results(node)
        out: list[CriticalMark] = []
        for mark in self.marks(node):
            cleared = any(r.passed and r.time > mark.first_seen and mark.domain in settings.clears(r.check)
                          for r in results)
            if not cleared:
                out.append(mark)
        return out
