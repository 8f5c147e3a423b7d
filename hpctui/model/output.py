"""What one command printed on one node (or here): the unit a command action reports per target.

Shared by the runners (local runs in :mod:`hpctui.actions.custom`, SSH runs in
:mod:`hpctui.sources.ssh.commands`) and the folding of many nodes' output (:mod:`hpctui.actions.fold`).
"""

from __future__ import annotations

from typing import Any

import msgspec

from hpctui.base.sanitize import clean_text

MAX_OUTPUT_BYTES = 1 << 20  # per node: a runaway command cannot fill the memory


class NodeOutput(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """What one run printed (stdout and stderr merged), its exit code, or why it did not run."""

    label: str  # node name (ssh, per-node local runs), job id, "ns/pod", or "local"
    output: str = ""
    rc: int | None = None  # None: it did not run to completion (see error)
    error: str | None = None  # unreachable, timed out, could not start
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and self.rc == 0


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


async def read_capped(stream: Any, limit: int) -> bytes:
    """Everything up to ``limit`` bytes; the rest is read and dropped (the writer never blocks)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            break
        if size <= limit:
            chunks.append(chunk)
        size += len(chunk)
    data = b"".join(chunks)
    return data[:limit + 1]  # one byte over the limit: clean_output notes the cut
