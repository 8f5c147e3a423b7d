"""Short node labels for heatmap cells that stay unique whatever the naming scheme.

``gpu0001`` → ``g0001`` (the classic rule) only while that keeps every label distinct;
otherwise drop the longest prefix and suffix all visible names share
(``hgx-h100-01``/``hgx-h200-01`` → ``100-01``/``200-01``, ``dgx-b200-017.cluster.local`` → ``17``)
and shorten what is left to the cell. A label that would still collide is left empty: a
cell never claims to be a node it is not (the node panel names the selected node in full).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence


def classic_label(name: str) -> str:
    """``gpu0007`` → ``g0007``, ``cpu01`` → ``c01`` (prefix initial + number)."""
    stripped = name.rstrip("0123456789")
    digits = name[len(stripped):]
    if not digits or not stripped:
        return name
    return stripped[0] + digits


def _common_prefix(names: Sequence[str]) -> int:
    first, last = min(names), max(names)  # the sorted extremes share what all share
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return n


def _common_affixes(names: Sequence[str]) -> tuple[int, int]:
    if len(names) < 2:
        return 0, 0
    prefix = _common_prefix(names)
    suffix = _common_prefix([n[::-1] for n in names])
    shortest = min(len(n) for n in names)
    prefix = min(prefix, shortest - 1)  # always keep at least one character
    suffix = min(suffix, shortest - prefix - 1)
    return prefix, max(0, suffix)


def unique_labels(names: Sequence[str], width: int) -> list[str]:
    """One label of at most ``width`` characters per name, unique among ``names``."""
    if width <= 0 or not names:
        return ["" for _ in names]
    prefix, suffix = _common_affixes(names)

    def core(n: str) -> str:
        return n[prefix:len(n) - suffix]

    def squeezed(label: str) -> str:  # first character + the tail: g0007 -> g007 at width 4
        return label if len(label) <= width else label[:1] + label[len(label) - (width - 1):] if width > 1 else label[:1]

    strategies: list[Callable[[str], str]] = [
        classic_label,
        lambda n: squeezed(classic_label(n)),
        core,
        lambda n: core(n)[-width:],
        lambda n: core(n)[:1] + core(n)[-(width - 1):] if width > 1 else core(n)[:1],
        lambda n: core(n)[:width],
    ]
    best: list[str] | None = None
    best_unique = -1
    for strategy in strategies:
        labels = [strategy(n) for n in names]
        if any(len(label) > width for label in labels):
            continue
        counts = Counter(labels)
        unique = sum(1 for label in labels if counts[label] == 1)
        if unique == len(labels):
            return labels
        if unique > best_unique:
            best, best_unique = labels, unique
    if best is None:
        best = [core(n)[-width:] for n in names]
    counts = Counter(best)
    return [label if counts[label] == 1 else "" for label in best]
