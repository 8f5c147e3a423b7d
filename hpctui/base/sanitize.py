"""One sanitiser for every string that comes from a cluster.

Job names, reasons, pod names, event messages and probe output are written by
whoever submits a job or owns a node: hostile until cleaned. Control characters
(C0, DEL, C1), whole ESC/CSI/OSC/DCS sequences, line/paragraph separators, lone
surrogates (undecodable bytes) and bidi/zero-width/other format characters (Unicode
categories Cc, Cf, Cs, Zl, Zp) are replaced by a visible placeholder, so nothing from
a cluster can move the cursor, retitle the window, write the clipboard or reorder text.
Rich markup is *not* interpreted here: widgets render cluster text as plain Text.

The parsers call :func:`clean_text` at their field boundary (``values.text`` and
friends), so every string is cleaned once, on its way into the model.
"""

from __future__ import annotations

import re

PLACEHOLDER = "\ufffd"  # �: visible, one cell, never a control

# Every code point of Unicode categories Cc, Cf, Cs, Zl and Zp (tests/test_sanitize.py checks
# this list against unicodedata), except TAB and LF, which are added per mode below.
_FORMAT_AND_CONTROL = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f"
)

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
_SINGLE = re.compile(f"[{_FORMAT_AND_CONTROL}]")  # keeps TAB and LF
_SINGLE_NO_NEWLINE = re.compile(f"[{_FORMAT_AND_CONTROL}\t\n]")
_UNSAFE = _SINGLE_NO_NEWLINE


def clean_text(value: str, *, keep_newlines: bool = False) -> str:
    """``value`` with every control/format character or escape sequence replaced by ``�``.

    ``keep_newlines`` keeps LF and TAB (multi-line probe output); everything else that
    a terminal could act on is replaced. Fast path: the vast majority of strings are
    clean and returned as they are (same object), so sanitising 100k job names costs
    one regex scan each.
    """
    if not _UNSAFE.search(value):
        return value
    value = _SEQUENCE.sub(PLACEHOLDER, value)
    return (_SINGLE if keep_newlines else _SINGLE_NO_NEWLINE).sub(PLACEHOLDER, value)


def clean_optional(value: str | None) -> str | None:
    return None if value is None else clean_text(value)


def is_clean(value: str) -> bool:
    """True when ``value`` holds no control, format or surrogate character (nor TAB/LF)."""
    return not _UNSAFE.search(value)


def decode_output(data: bytes) -> str:
    """Bytes from a cluster tool → str: invalid UTF-8 costs one ``�``, never the document."""
    return data.decode("utf-8", errors="replace")


# "scheme://" then the userinfo ("user:password@", which may itself hold a raw "@") up to the
# last "@" before the host; the host, path and query are kept.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#\s]*@")


def redact_url(text: str) -> str:
    """``text`` with the userinfo of every URL in it replaced by ``***``.

    ``http://admin:S3cretPW@prom:9090/x`` → ``http://***@prom:9090/x``. Works on a bare URL and
    on any message that embeds one (a library's exception text), so every place a URL is shown
    (status line, tables, snapshot JSON, errors) passes it through this one function.
    """
    if "@" not in text:
        return text
    return _USERINFO.sub(r"\1***@", text)
