"""Exceptions as the one line an admin reads in a status bar, a log or an audit record."""

from __future__ import annotations


def describe_error(exc: BaseException) -> str:
    """``Type: first line of the message`` (or just ``Type`` when the message is empty)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
