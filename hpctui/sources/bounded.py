"""Bounded answers: every HTTP client reads its answer streamed, up to a cap.

A server (or anything in between) can send an answer of any size, or a watch line that
never ends. Each client reads in chunks and gives up as soon as the cap is passed, so
memory stays bounded by the cap and not by the server; the error says what happened
("answer over 64 MiB"), never "unreachable". The caps live in each source's settings
(``max_answer_mib``, and ``max_watch_line_mib`` for Kubernetes watches).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterable, Iterator

import msgspec

MIB = 1024 * 1024
CHUNK = 64 * 1024  # one read: small enough to keep the event loop and memory smooth
_LEADING_SPACE = re.compile(rb"[ \t\r\n]*")  # JSON's whitespace


class AnswerTooLarge(Exception):
    """The answer passed ``limit`` bytes; reading stopped there (the connection is dropped)."""

    def __init__(self, limit: int, announced: int | None = None) -> None:
        self.limit = limit
        self.announced = announced
        said = f" ({size_text(announced)} announced)" if announced is not None else ""
        super().__init__(f"answer over {size_text(limit)}{said}")


def size_text(n: int) -> str:
    """Bytes for a person: ``64 MiB``, ``1.5 MiB``, ``512 KiB``, ``17 B``."""
    if n >= MIB:
        return f"{n / MIB:.4g} MiB"
    if n >= 1024:
        return f"{n / 1024:.4g} KiB"
    return f"{n} B"


def check_announced(length: int | None, limit: int) -> None:
    """Refuse before reading when the Content-Length already says the answer is too big."""
    if length is not None and length > limit:
        raise AnswerTooLarge(limit, length)


def gather_capped(chunks: Iterable[bytes], limit: int) -> bytes:
    """The chunks joined, or :class:`AnswerTooLarge` as soon as they pass ``limit`` bytes."""
    parts: list[bytes] = []
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise AnswerTooLarge(limit)
        parts.append(chunk)
    return b"".join(parts)


class NotJson(Exception):
    """The answer's first non-blank byte cannot start a JSON document: reading stopped there."""

    def __init__(self, position: int) -> None:
        self.position = position
        super().__init__(f"invalid JSON at byte {position} (not a JSON answer)")


def first_byte_check(chunk: bytes, seen: int) -> bool:
    """True once the answer's first non-blank byte is known and can start a JSON object or array.

    ``seen``: bytes of the answer before ``chunk``, all blank. Raises :class:`NotJson` when
    that byte is anything else, so garbage costs one chunk to refuse, not the whole answer.
    """
    start = _LEADING_SPACE.match(chunk).end()  # type: ignore[union-attr]  # always matches
    if start == len(chunk):
        return False
    if chunk[start] not in b"{[":
        raise NotJson(seen + start)
    return True


async def read_json_capped(chunks: AsyncIterator[bytes], limit: int, *, json_only: bool = True) -> bytes:
    """The chunks of an async stream (``aiohttp``'s ``content.iter_chunked``) joined, or
    :class:`AnswerTooLarge` as soon as they pass ``limit`` bytes; with ``json_only`` it also stops
    at once (:class:`NotJson`) when the answer is not JSON."""
    parts: list[bytes] = []
    total = 0
    checked = not json_only
    async for chunk in chunks:
        if not checked:
            checked = first_byte_check(chunk, total)
        total += len(chunk)
        if total > limit:
            raise AnswerTooLarge(limit)
        parts.append(chunk)
    return b"".join(parts)


async def read_prefix(chunks: AsyncIterator[bytes], limit: int) -> bytes:
    """The first ``limit`` bytes of a stream; the rest is never read (the caller drops the connection)."""
    parts: list[bytes] = []
    total = 0
    async for chunk in chunks:
        parts.append(chunk[: limit - total])
        total += len(parts[-1])
        if total >= limit:
            break
    return b"".join(parts)


class LineTooLong(Exception):
    """A stream sent more than ``limit`` bytes without a newline."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"a line over {size_text(limit)} without a newline")


def split_lines(chunks: Iterable[bytes], limit: int) -> Iterator[bytes]:
    """The newline-separated lines of a byte stream (without the newline), each at most ``limit``.

    Linear in the bytes received: each chunk is scanned once (no re-scan of a growing buffer,
    no ``bytes + bytes`` copies). A line still open past ``limit`` raises :class:`LineTooLong`
    at once, so a stream that never sends a newline costs ``limit`` bytes, not all of memory.
    A partial last line (no newline before the end) is not yielded.
    """
    pending = bytearray()
    for chunk in chunks:
        start = 0
        while (nl := chunk.find(b"\n", start)) != -1:
            if pending:
                pending += chunk[start:nl]
                if len(pending) > limit:
                    raise LineTooLong(limit)
                yield bytes(pending)
                pending.clear()
            else:
                if nl - start > limit:
                    raise LineTooLong(limit)
                yield chunk[start:nl]
            start = nl + 1
        if start < len(chunk):
            pending += chunk[start:]
            if len(pending) > limit:
                raise LineTooLong(limit)


_BYTE = re.compile(r"\(byte (\d+)\)")


class _Anything(msgspec.Struct):
    """Decodes any JSON object by skipping every field: a syntax check at msgspec's speed."""


_SYNTAX = msgspec.json.Decoder(_Anything)
# Bytes that JSON never allows raw (C0 controls but TAB/LF/CR) → space, for the second check.
_CONTROLS_TO_SPACE = bytes(b if b >= 0x20 or b in (0x09, 0x0A, 0x0D) else 0x20 for b in range(256))
_LONE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _space_escape(_m: re.Match[bytes]) -> bytes:
    return b"\\u0020"


def _repair_may_help(message: str, body: bytes) -> bool:
    """Whether msgspec's first fault is one a byte-level repair removes: a raw control byte
    where it stopped, or a surrogate escape. Anything else (a printable byte where structure
    was expected, a cut answer) stays after any repair: the first bad byte is the first fault."""
    if "surrogate" in message:
        return True
    m = _BYTE.search(message)
    if m is None or "truncated" in message:
        return False
    at = int(m.group(1))
    return at < len(body) and body[at] < 0x20


def json_fault(body: bytes) -> str | None:
    """Why ``body`` can never be decoded as a JSON object even after a byte-level repair, or None.

    The Slurm parsers repair documents whose only fault is bytes (invalid UTF-8, raw control
    characters, lone surrogate escapes: a job name copied byte for byte); that repair works on
    the whole text and costs ~0.5 s per MB. Garbage is refused here first, in two passes of
    msgspec's C skipper (~1 GB/s): as sent, then with those bytes neutralised; still malformed
    means the structure is broken and no repair can help. None: decodable, or repairable, or a
    type problem (the parser then says which field).
    """
    start = _LEADING_SPACE.match(body).end()  # type: ignore[union-attr]  # always matches
    if start == len(body):
        return "an empty answer"
    if body[start] not in b"{[":  # not even the start of an object: no repair helps
        return f"invalid JSON at byte {start}"
    try:
        _SYNTAX.decode(body)
        return None
    except msgspec.ValidationError:
        return None
    except msgspec.DecodeError as exc:
        if not _repair_may_help(str(exc), body):
            return json_error(exc)
    neutral = _LONE_SURROGATE.sub(_space_escape, body.translate(_CONTROLS_TO_SPACE))
    try:
        _SYNTAX.decode(neutral)
    except msgspec.ValidationError:
        return None
    except msgspec.DecodeError as exc:
        return json_error(exc)
    return None


def json_error(exc: msgspec.DecodeError) -> str:
    """msgspec's decode error as a status-line phrase: ``invalid JSON at byte 17``.

    msgspec reports "JSON is malformed: … (byte N)" for syntax errors and "Input data was
    truncated" for a cut answer; anything else (a wrong type) is passed on, shortened.
    """
    text = str(exc)
    m = _BYTE.search(text)
    if m and "malformed" in text:
        return f"invalid JSON at byte {m.group(1)}"
    if "truncated" in text:
        return "invalid JSON: the answer ends in the middle of a value"
    return f"unexpected JSON: {text[:160]}"
