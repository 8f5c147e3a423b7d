"""Files only their owner may read: reports and exports hold node names, users and drain reasons.

A directory made here is 0700 and a file 0600 from the moment it exists (created with those modes,
never chmod-ed down afterwards), whatever the umask lets through.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Make ``path`` and every missing parent, each 0700; an existing directory is left as it is
    (it is the user's, e.g. ``-o .``). Raises ``OSError`` as ``mkdir`` does."""
    missing: list[Path] = []
    p = path
    while not p.is_dir():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=DIR_MODE)
        except FileExistsError:
            if not d.is_dir():
                raise
    return path


def write_private(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` as a 0600 file: into a fresh temporary file next to it (``mkstemp``:
    ``os.open`` with ``O_EXCL`` and mode 0600), then renamed over ``path``. A reader never sees a half
    file, an older file's looser mode is not kept, and a symlink at ``path`` is replaced, not followed."""
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
