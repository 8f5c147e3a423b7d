"""Slurm hostlist expressions (``gpu[01-04,07]``), via python-hostlist.

Never hand-parse hostlists: Slurm's syntax has nested ranges, zero padding and
multiple bracket groups; python-hostlist implements it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

import hostlist as _hostlist

# RFC 1123 host label(s); Slurm node names are plain hostnames.
_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")


class HostlistError(ValueError):
    """A hostlist expression that cannot be expanded, or a name that is not a hostname."""


def expand(expr: str) -> list[str]:
    """``"gpu[01-03]"`` → ``["gpu01", "gpu02", "gpu03"]``; raises HostlistError."""
    expr = expr.strip()
    if not expr or expr in ("(null)", "None"):
        return []
    try:
        names: list[str] = _hostlist.expand_hostlist(expr)
    except _hostlist.BadHostlist as exc:
        raise HostlistError(f"bad hostlist {expr!r}: {exc}") from exc
    for name in names:
        if not is_valid_hostname(name):
            raise HostlistError(f"not a valid host name: {name!r}")
    return names


def expand_each(exprs: Iterable[str]) -> tuple[list[str], list[str]]:
    """Every name of every hostlist, in order, and one error line per hostlist that does not expand
    (it costs only its own names)."""
    names: list[str] = []
    errors: list[str] = []
    for expr in exprs:
        try:
            names.extend(expand(expr))
        except HostlistError as exc:
            errors.append(str(exc))
    return names, errors


def collect(names: Iterable[str]) -> str:
    """``["gpu01", "gpu02"]`` → ``"gpu[01-02]"``; names python-hostlist refuses (a ``[`` in a name
    from a cluster) are listed comma-separated as they are, rather than raising."""
    names = list(names)
    try:
        return str(_hostlist.collect_hostlist(names))
    except _hostlist.BadHostlist:
        return ",".join(names)


def collect_cached(names: Iterable[str]) -> str:
    """:func:`collect`, remembered by the exact names: views that fold the same node sets on
    every snapshot (a mass drain of 16k nodes: ~0.8 s of folding) fold each set once."""
    return _collect_tuple(tuple(names))


@lru_cache(maxsize=64)
def _collect_tuple(names: tuple[str, ...]) -> str:
    return collect(names)


def is_valid_hostname(name: str) -> bool:
    return bool(_HOSTNAME.match(name))
