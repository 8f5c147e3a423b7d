"""Integers read from cluster text, without the two ways ``str.isdigit()`` + ``int()`` can raise.

``"²".isdigit()`` is True but ``int("²")`` raises ValueError (superscripts, circled digits, ...),
and ``int()`` refuses strings of more than 4,300 digits (Python's guard against quadratic
conversion). A probe record, a label or a node's output holding either would crash the parser
that trusted ``isdigit()``; parsers test with :func:`is_uint` instead (else: not a number).
"""

from __future__ import annotations

MAX_DIGITS = 4300  # sys.get_int_max_str_digits()' default: int() refuses longer strings


def is_uint(text: str) -> bool:
    """True when ``int(text)`` is a non-negative integer: ASCII digits only, at most MAX_DIGITS."""
    return text.isascii() and text.isdigit() and len(text) <= MAX_DIGITS
