"""Output of one command on many nodes, folded like ``clush -b``: nodes that printed exactly the
same text share one block under a header naming their node set (a hostlist), nodes that could
not run it (unreachable, timed out) are listed apart with their error, and non-zero exit codes
are listed per code.

Everything here is already sanitised text (``clean_text`` per line): the folds go to the
screen, the terminal and the audit log as they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import msgspec

from hpctui.base.sanitize import clean_text
from hpctui.model.hostlist import collect, is_valid_hostname

MAX_OUTPUT_BYTES = 1 << 20  # per node: a runaway command cannot fill the memory
RULE = "-" * 16
NO_OUTPUT = "(no output)"


class NodeOutput(msgspec.Struct, frozen=True, kw_only=True):
    """What one run printed (stdout and stderr merged), its exit code, or why it did not run."""

    label: str  # node name (ssh, per-node local runs), job id, "ns/pod", or "local"
    output: str = ""
    rc: int | None = None  # None: it did not run to completion (see error)
    error: str | None = None  # unreachable, timed out, could not start
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and self.rc == 0


class Fold(msgspec.Struct, frozen=True, kw_only=True):
    labels: tuple[str, ...]
    text: str

    @property
    def header(self) -> str:
        return header(self.labels)


def clean_output(raw: bytes, limit: int = MAX_OUTPUT_BYTES) -> str:
    """Bytes from a node → text safe for a terminal: decoded leniently, each line sanitised
    (no ESC, no control or bidi characters), line structure kept, cut at ``limit`` bytes.
    TABs become spaces to the next multiple of 8 (``ibstat`` indents with tabs)."""
    cut = len(raw) > limit
    text = raw[:limit].decode(errors="replace").replace("\r\n", "\n")
    lines = [clean_text(line.expandtabs(8)) for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    out = "\n".join(lines)
    return out + (f"\n… output cut at {limit:,} bytes" if cut else "")


_NUM = re.compile(r"(\d+)")


def natural_key(label: str) -> tuple[object, ...]:
    """``node2`` before ``node10``; names before other labels is not needed: one kind per run."""
    return tuple(int(p) if p.isdigit() else p for p in _NUM.split(label))


def label_set(labels: Iterable[str]) -> str:
    """Node names as a hostlist (``gpu[0001-0004,0007]``); other labels (job ids, pods) comma-joined."""
    names = set(labels)
    if names and all(is_valid_hostname(n) for n in names):
        try:
            return collect(names)  # sorts itself (numerically within a prefix)
        except Exception:  # python-hostlist refuses odd names: a plain list then
            pass
    return ",".join(sorted(names, key=natural_key))


def header(labels: Sequence[str]) -> str:
    return f"{RULE} {label_set(labels)} ({len(labels)}) {RULE}"


def fold(outputs: Iterable[NodeOutput]) -> list[Fold]:
    """Runs that completed, grouped by identical output; a group's labels in natural order,
    groups ordered by their first label (so the order never depends on who answered first)."""
    groups: dict[str, list[str]] = {}
    for o in outputs:
        if o.error is None:
            groups.setdefault(o.output, []).append(o.label)
    folds = [Fold(labels=tuple(sorted(labels, key=natural_key)), text=text) for text, labels in groups.items()]
    return sorted(folds, key=lambda f: natural_key(f.labels[0]))


def failures(outputs: Iterable[NodeOutput]) -> list[tuple[str, tuple[str, ...]]]:
    """Runs that did not complete, grouped by identical error: ``[(error, labels)]``."""
    groups: dict[str, list[str]] = {}
    for o in outputs:
        if o.error is not None:
            groups.setdefault(o.error, []).append(o.label)
    out = [(err, tuple(sorted(labels, key=natural_key))) for err, labels in groups.items()]
    return sorted(out, key=lambda e: natural_key(e[1][0]))


def exit_codes(outputs: Iterable[NodeOutput]) -> list[tuple[int, tuple[str, ...]]]:
    """Runs that completed with a non-zero exit code, grouped by code: ``[(rc, labels)]``."""
    groups: dict[int, list[str]] = {}
    for o in outputs:
        if o.error is None and o.rc not in (0, None):
            assert o.rc is not None
            groups.setdefault(o.rc, []).append(o.label)
    return sorted(((rc, tuple(sorted(labels, key=natural_key))) for rc, labels in groups.items()))


def render(outputs: Sequence[NodeOutput], *, pending: Sequence[str] = (), limit: int | None = None) -> str:
    """The whole folded report as text (``hpctui act custom``, the audit record, the result view).

    ``limit``: at most this many characters of each fold's text (the audit record keeps 4 KB a fold)."""
    lines: list[str] = []
    for f in fold(outputs):
        lines.append(f.header)
        text = f.text
        if limit is not None and len(text) > limit:
            text = text[:limit] + f"\n… {len(f.text) - limit:,} more characters"
        lines.append(text or NO_OUTPUT)
    for rc, labels in exit_codes(outputs):
        lines.append(f"exit code {rc}: {label_set(labels)} ({len(labels)})")
    for err, labels in failures(outputs):
        lines.append(f"FAILED {label_set(labels)} ({len(labels)}): {err}")
    if pending:
        lines.append(f"waiting for {label_set(pending)} ({len(pending)})")
    return "\n".join(lines) + ("\n" if lines else "")


def summary(outputs: Sequence[NodeOutput]) -> str:
    ok = sum(o.ok for o in outputs)
    failed = sum(o.error is not None for o in outputs)
    nonzero = len(outputs) - ok - failed
    parts = [f"{ok}/{len(outputs)} ok"]
    if nonzero:
        parts.append(f"{nonzero} exited non-zero")
    if failed:
        parts.append(f"{failed} did not run")
    return ", ".join(parts)
