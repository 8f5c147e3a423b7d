"""Log text read on demand: a job's output file, a pod's container log, a node's journal, a Loki query.

Every string here is sanitised (one line per element, no control or escape character) and bounded
by the reader that made it: these structs are what a log viewer draws and a report quotes.
"""

from __future__ import annotations

import msgspec

MAX_LOG_BYTES = 256 * 1024  # one read of a file's tail, a pod's log or a journal window
MAX_LOG_LINES = 2000  # lines a viewer keeps (older ones drop off the top while following)


class LogChunk(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """What one read of a log returned.

    ``offset``: where the next read of the same file continues (a byte offset, for follow);
    ``error``: why nothing could be read ("no such file", "permission denied", a transport error),
    said plainly; ``cut``: older text was left out to stay within the read's bounds."""

    where: str  # "gpu01:/home/alice/slurm-42.out", "ns/pod (container)", "gpu[01-04] journal"
    lines: tuple[str, ...] = ()
    offset: int | None = None
    error: str | None = None
    cut: bool = False
    restarted: bool = False  # the file shrank (truncated or rotated): read again from its start


class LogLine(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One journal (or Loki) line with its time and host, for the event timeline."""

    time: float
    host: str
    ident: str  # "kernel", "nvidia-fabricmanager", a Loki stream's labels
    message: str


class JobOutputPaths(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """Where a Slurm job writes its output, patterns filled in, and the node that can read them."""

    job: str  # the display id ("1234_7")
    stdout: str | None
    stderr: str | None  # None when it goes to stdout (no --error)
    host: str | None  # the batch host (the first node of the allocation), None while pending
    work_dir: str | None = None  # the job's working directory (WorkDir / current_working_directory)
