"""Shared pieces of the parser fuzz tests: seeds, mutation strategies and the three properties.

Every fuzz test starts from a real recorded output (tests/fixtures, tests/fuzz/seeds) and mutates
it: byte flips, insertions of hostile tokens (terminal escapes, bidi controls, invalid UTF-8, huge
numbers, JSON/record syntax), deletions, truncation and splices; JSON documents are also mutated
after decoding (a value replaced by another type, a huge number, a hostile string; a key dropped).

The properties, checked by :func:`check`:

* the parser raises nothing but its declared error (``raises``);
* no string anywhere in what it returns holds a control, format or bidi character
  (:func:`hpctui.base.sanitize.is_clean`; LF and TAB are allowed: multi-line probe output keeps them);
* it returns within ``HANG_S`` seconds (a SIGALRM timer interrupts a loop that never ends).
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import json
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from hypothesis import strategies as st

from hpctui.base.sanitize import is_clean

TESTS = Path(__file__).resolve().parents[1]
FIXTURES = TESTS / "fixtures"
SEEDS = Path(__file__).resolve().parent / "seeds"
HANG_S = 10.0  # far above any real parse of these small documents (milliseconds)

T = TypeVar("T")

# Text a hostile cluster can put into a name, a reason, a label or a probe's output.
HOSTILE_TEXT = (
    "\x1b]0;owned\x07", "\x1b]52;c;aGk=\x07", "\x1b[2J", "\x1b[31m", "\x1b", "\x9b31m", "\x9d0;t\x9c", "\x85",
    "\x07", "\x00", "\x7f", "\r", "\n", "\t", "\x0b", "\x1f", "\u202e", "\u2066", "\u200b", "\ufeff", "\u2028",
    "\u00ad", "\ud800", "[/x]", "[@click=app.quit]x[/]", "\ufffd",
)
# Numbers and words that look like numbers: huge, negative, unusual digits, sentinels, specials.
HOSTILE_NUMBERS = (
    "-1", "0", "4294967294", "4294967295", "18446744073709551615", "9223372036854775807", "9" * 30, "9" * 5000,
    "1e308", "-1e308", "1e400", "NaN", "nan", "inf", "-inf", "0x1F", "²", "١٢", "𝟗", "1_000", " 7 ", "+3", "-0",
    "3.5", ".", "", "N/A", "[N/A]", "(null)", "None", "Unknown", "n/s",
)
# Structure: JSON syntax, deep nesting, the probe's record lines, the separators the text formats split on.
HOSTILE_SYNTAX = (
    '"', "\\", "\\u001b", "\\ud800", "\\u0000", "{", "}", "[", "]", ",", ":", "null", "true", '"x":1,',
    "[" * 3000, "{\"a\":" * 1500, "\n", "\n\n", " ", "=", "|", "\x1f", "/", "*", "(", ")",
    "@@hpctui begin 7 1796156747713185747 1\n", "@@hpctui end 7\n", "\n@@hpctui section gpu 0 0 \n",
    "\n@@hpctui section gpu-fields 0 0 \n", "\n@@hpctui section x 99999999999999999999999 ² \n",
)
HOSTILE = HOSTILE_TEXT + HOSTILE_NUMBERS + HOSTILE_SYNTAX
HOSTILE_BYTES = (b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x00", b"\r\n", b"\xc2\x9b")


def seed_bytes(rel: str) -> bytes:
    """A recorded fixture (path relative to tests/fixtures) or seed (``seeds/...``)."""
    path = SEEDS / rel[len("seeds/"):] if rel.startswith("seeds/") else FIXTURES / rel
    return path.read_bytes()


def seed_json(rel: str) -> Any:
    return json.loads(seed_bytes(rel))


# -- strategies -----------------------------------------------------------------------------

def hostile_bytes() -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.sampled_from(HOSTILE).map(lambda s: s.encode("utf-8", "surrogatepass")),
        st.sampled_from(HOSTILE_BYTES),
        st.binary(min_size=1, max_size=8),
    )


def hostile_text() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(HOSTILE), st.text(min_size=1, max_size=8))


@st.composite
def _edit(draw: st.DrawFn, data: Any, piece: st.SearchStrategy[Any], empty: Any) -> Any:
    """One edit of a str/bytes ``data``: flip, insert, delete, truncate, or splice a range elsewhere."""
    n = len(data)
    kind = draw(st.sampled_from(("flip", "insert", "insert", "delete", "truncate", "splice")))
    i = draw(st.integers(0, n))
    if kind == "truncate":
        return data[:i]
    if kind == "insert":
        return data[:i] + draw(piece) + data[i:]
    j = draw(st.integers(i, min(n, i + 64)))
    if kind == "flip":
        return data[:i] + draw(piece) + data[j:] if j > i else data[:i] + draw(piece) + data[i + 1:]
    if kind == "delete":
        return data[:i] + data[j:]
    k = draw(st.integers(0, n))  # splice: the range [i, j) copied to position k
    return data[:k] + data[i:j] + data[k:] if j > i else data + empty


@st.composite
def mutated_bytes(draw: st.DrawFn, seeds: list[bytes], max_edits: int = 6) -> bytes:
    """One of ``seeds`` with up to ``max_edits`` byte-level edits (none: the seed itself must pass too)."""
    data = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(0, max_edits))):
        data = draw(_edit(data, hostile_bytes(), b""))
    return data


@st.composite
def mutated_text(draw: st.DrawFn, seeds: list[str], max_edits: int = 6) -> str:
    """One of ``seeds`` with up to ``max_edits`` character-level edits (lone surrogates included)."""
    data = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(0, max_edits))):
        data = draw(_edit(data, hostile_text(), ""))
    return data


def json_values() -> st.SearchStrategy[Any]:
    """Any JSON value, weighted to the ones parsers trip on: huge and odd numbers, hostile strings."""
    scalars = st.one_of(
        st.none(), st.booleans(), st.sampled_from(HOSTILE), st.text(max_size=12),
        st.sampled_from((-1, 0, 2**31, 2**32 - 2, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), 10**30, 10**400)),
        st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.sampled_from((1e308, -1e308, 5e-324)),
    )
    return st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(("number", "set", "infinite", "name", "x")),
                                                     inner, max_size=3)), max_leaves=6)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*prefix, i))


def _swap(value: Any, draw: st.DrawFn) -> Any:
    """``value`` as another JSON type (the kind of change a new Slurm/K8s version makes)."""
    if isinstance(value, str):
        return draw(st.one_of(st.just(None), st.just([value]), st.just({"x": value}), json_values(),
                              hostile_text().map(lambda h: value + h), hostile_text().map(lambda h: h + value)))
    if isinstance(value, bool) or value is None:
        return draw(json_values())
    if isinstance(value, int | float):
        return draw(st.one_of(st.just(str(value)), st.just(-value), st.just({"set": True, "infinite": False,
                                                                            "number": value}), json_values()))
    if isinstance(value, list):
        return draw(st.one_of(st.just({}), st.just(value[:1] * 3), st.just(value[::-1]), json_values()))
    return draw(st.one_of(st.just([]), st.just(list(value.values())), json_values()))


@st.composite
def mutated_json(draw: st.DrawFn, docs: list[Any], max_edits: int = 4) -> Any:
    """A decoded document with up to ``max_edits`` edits at random places: a value swapped for
    another type or a hostile value, a key dropped, a list item duplicated."""
    doc = json.loads(json.dumps(draw(st.sampled_from(docs))))
    for _ in range(draw(st.integers(0, max_edits))):
        paths = list(_paths(doc))
        path = draw(st.sampled_from(paths))
        if not path:
            continue
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        action = draw(st.sampled_from(("swap", "swap", "swap", "drop", "dup")))
        if action == "drop":
            del parent[key]
        elif action == "dup" and isinstance(parent, list):
            parent.insert(key, json.loads(json.dumps(parent[key])))
        else:
            parent[key] = _swap(parent[key], draw)
    return doc


def dump_json(doc: Any, indent: int | None = 2) -> bytes:
    """``doc`` as bytes the way Slurm pretty-prints (indent 2); non-ASCII escaped like many encoders do."""
    return json.dumps(doc, indent=indent).encode()


@st.composite
def chunked(draw: st.DrawFn, data: bytes, max_chunks: int = 8) -> list[bytes]:
    """``data`` cut at random places (a pipe delivers any split)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=max_chunks - 1)))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


# -- the properties -------------------------------------------------------------------------

class Hang(Exception):
    """The parser did not return within HANG_S."""


@contextmanager
def time_bound(seconds: float = HANG_S) -> Iterator[None]:
    """Raise :class:`Hang` inside the body if it runs longer than ``seconds`` (main thread only)."""
    def alarm(_sig: int, _frame: object) -> None:
        raise Hang(f"no answer within {seconds} s: a parser loop that never ends?")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def strings(obj: Any) -> Iterator[tuple[str, str]]:
    """(where, string) for every str reachable from ``obj``: model structs, dataclasses, plain
    objects' ``__dict__``/``__slots__``, mappings (keys too), sequences and sets."""
    seen: set[int] = set()

    def walk(x: Any, where: str) -> Iterator[tuple[str, str]]:
        if isinstance(x, str):
            yield where, x
            return
        if x is None or isinstance(x, bool | int | float | bytes | enum.Enum) or id(x) in seen:
            return
        seen.add(id(x))
        if isinstance(x, dict):
            for k, v in x.items():
                yield from walk(k, f"{where}.<key>")
                yield from walk(v, f"{where}[{k!r}]")
        elif isinstance(x, list | tuple | set | frozenset):
            for i, v in enumerate(x):
                yield from walk(v, f"{where}[{i}]")
        elif isinstance(x, msgspec.Struct):
            for name in x.__struct_fields__:
                yield from walk(getattr(x, name), f"{where}.{name}")
        elif dataclasses.is_dataclass(x):
            for f in dataclasses.fields(x):
                yield from walk(getattr(x, f.name), f"{where}.{f.name}")
        else:
            for name in getattr(type(x), "__slots__", ()):
                yield from walk(getattr(x, name, None), f"{where}.{name}")
            for name, v in getattr(x, "__dict__", {}).items():
                yield from walk(v, f"{where}.{name}")

    yield from walk(obj, "$")


def assert_clean(obj: Any) -> None:
    """No string in ``obj`` holds a control, format or bidi character (LF/TAB allowed)."""
    for where, s in strings(obj):
        assert is_clean(s.replace("\n", "").replace("\t", "")), f"unclean string at {where}: {s!r}"


def check(parse: Callable[[], T], raises: type[BaseException] | tuple[type[BaseException], ...] = ()) -> T | None:
    """Run ``parse`` under the time bound: its declared error (``raises``) is fine, anything else
    propagates and fails the example; what it returns must be clean. None when it raised."""
    with time_bound():
        try:
            out = parse()
        except raises:
            return None
    assert_clean(out)
    return out


def clean_message(exc: BaseException) -> None:
    """A declared error's message is shown in the status bar: it must be clean too."""
    assert is_clean(str(exc).replace("\n", "")), f"unclean error message: {exc!r}"
