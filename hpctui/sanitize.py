"""One sanitiser for every string that comes from a cluster.

Job names, reasons, pod names, event messages and probe output are written by
whoever submits a job or owns a node: hostile until cleaned. Control characters
(C0, DEL, C1), whole ESC/CSI/OSC/DCS sequences and bidi/zero-width format
characters are replaced by a visible placeholder, so nothing from a cluster can
move the cursor, retitle the window, write the clipboard or reorder text.
Rich markup is *not* interpreted here: widgets render cluster text as plain Text.
"""

from __future__ import annotations

import re

PLACEHOLDER = "\ufffd"  # �: visible, one cell, never a control

# ESC-introduced sequences first (so "\x1b]0;title\x07" becomes one placeholder, not
# a placeholder followed by "]0;title"), then any single remaining control or format char.
_SEQUENCE = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]?            # CSI ... final
    | \x1b[\]PX^_].*?(?:\x07|\x1b\\|\x9c|$)   # OSC / DCS / SOS / PM / APC ... terminator
    | \x9b[0-?]*[ -/]*[@-~]?            # 8-bit CSI
    | [\x90\x9d\x98\x9e\x9f].*?(?:\x07|\x1b\\|\x9c|$)  # 8-bit DCS/OSC/SOS/PM/APC
    | \x1b[ -/]*[0-~]?                  # other ESC sequences (ESC c, ESC ( B, ...)
    """,
    re.VERBOSE | re.DOTALL,
)
_SINGLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")
_SINGLE_NO_NEWLINE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")


def clean_text(value: str, *, keep_newlines: bool = False) -> str:
    """``value`` with every control/format character or escape sequence replaced by ``�``.

    Fast path: the vast majority of strings are clean and returned as they are (same
    object), so sanitising 100k job names costs one regex scan each.
    """
    if not _UNSAFE.search(value):
        return value
    value = _SEQUENCE.sub(PLACEHOLDER, value)
    return (_SINGLE if keep_newlines else _SINGLE_NO_NEWLINE).sub(PLACEHOLDER, value)


def clean_optional(value: str | None) -> str | None:
    return None if value is None else clean_text(value)


def is_clean(value: str) -> bool:
    """True when ``value`` holds no control, format or surrogate character."""
    return not _UNSAFE.search(value)
