"""GRES strings → GPU counts, types and indices.

Formats (gres.shtml, samples): configured ``gpu:h100:8``, ``gpu:8``, ``gpu:h100:8(S:0-1)``,
``gpu:h100:4(S:0),gpu:h100:4(S:1)``, ``gpu:h100:no_consume:8``, ``(null)``/``""``; used
``gpu:h100:2(IDX:0-1)``, ``gpu:h100:0(IDX:N/A)``, ``gpu:0``; job TRES ``gres:gpu:h100:2``,
``gres/gpu=2``, ``gres/gpu:h100=2``. Indices may contain commas (``IDX:0,2-3``), so lists
are split only on commas outside parentheses. Only ``gpu`` GRES count.
"""

from __future__ import annotations

import re

from hpctui.base.sanitize import clean_text


def split_top(value: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    out: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in value:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [s.strip() for s in out if s.strip()]


_COUNT = re.compile(r"^(\d+)([KMGTP]?)$")
_MULT = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}


def _gpu_item(item: str) -> tuple[str | None, int | None, str | None] | None:
    """One GRES item → (type, count, extra-in-parens) if it is a GPU, else None."""
    body, _, paren = item.partition("(")
    extra = paren.rstrip(")") if paren else None
    parts = [p for p in body.split(":") if p]
    if parts and parts[0] == "gres":
        parts = parts[1:]
    if not parts or parts[0] != "gpu":
        return None
    rest = [p for p in parts[1:] if p != "no_consume"]
    count: int | None = 1 if not rest else None  # bare "gpu" means one
    gtype: str | None = None
    if rest:
        m = _COUNT.match(rest[-1])
        if m:
            count = int(m.group(1)) * _MULT[m.group(2)]
            rest = rest[:-1]
        if rest:
            gtype = rest[0]
    return gtype, count, extra


def _join_types(types: list[str]) -> str | None:
    seen: list[str] = []
    for t in types:
        if t not in seen:
            seen.append(t)
    return clean_text(",".join(seen)) if seen else None


def parse_gres(gres: str | None) -> tuple[str | None, int | None]:
    """Configured GRES → (gpu type, gpu count).

    ``"gpu:h100:8(S:0-1)"`` → ``("h100", 8)``. A node with no GPU GRES configured
    (``""``, ``"(null)"``, only other GRES) has a *known* zero → ``(None, 0)``; a field
    that is absent (None) is unknown → ``(None, None)``. Several types → "h100,a100".
    """
    if gres is None:
        return None, None
    g = gres.strip()
    if g in ("", "(null)", "N/A", "none"):
        return None, 0
    total = 0
    types: list[str] = []
    found = False
    for item in split_top(g):
        parsed = _gpu_item(item)
        if parsed is None:
            continue
        found = True
        gtype, count, _ = parsed
        if count is None:
            return _join_types(types + ([gtype] if gtype else [])), None
        total += count
        if gtype:
            types.append(gtype)
    return (_join_types(types), total) if found else (None, 0)


def parse_gres_used(gres_used: str | None) -> tuple[int | None, dict[str, str]]:
    """GRES in use → (gpus in use, {gpu type or "gpu": indices}).

    ``"gpu:h100:2(IDX:0-1)"`` → ``(2, {"h100": "0-1"})``; ``"gpu:h100:0(IDX:N/A)"`` and
    ``"gpu:0"`` → ``(0, {})``; ``""``/``"(null)"`` → ``(0, {})``; None → ``(None, {})``.
    """
    if gres_used is None:
        return None, {}
    g = gres_used.strip()
    if g in ("", "(null)", "N/A"):
        return 0, {}
    total = 0
    idx: dict[str, str] = {}
    for item in split_top(g):
        parsed = _gpu_item(item)
        if parsed is None:
            continue
        gtype, count, extra = parsed
        total += count or 0
        ind = _indices(extra)
        if ind:
            key = gtype or "gpu"
            idx[key] = f"{idx[key]},{ind}" if key in idx else ind
    return total, idx


def _indices(extra: str | None) -> str | None:
    if not extra or "IDX:" not in extra:
        return None
    val = extra.split("IDX:", 1)[1].split(")")[0].strip()
    return None if val in ("", "N/A") else clean_text(val)


def gpu_indices(gres_detail_item: str) -> str | None:
    """A job's per-node ``gres_detail`` entry → GPU indices, e.g. ``"0-1"`` (types merged)."""
    _, idx = parse_gres_used(gres_detail_item)
    return ",".join(idx.values()) if idx else None


_TRES_GPU = re.compile(r"(?:^|,)gres/gpu(?::([^=,]+))?=(\d+)")


def gpus_from_tres_str(tres: str | None) -> int | None:
    """``cpu=8,...,gres/gpu=2`` → 2 (untyped total preferred, else sum of typed)."""
    if not tres:
        return None
    untyped: int | None = None
    typed = 0
    any_typed = False
    for m in _TRES_GPU.finditer(tres):
        if m.group(1) is None:
            untyped = int(m.group(2))
        else:
            typed += int(m.group(2))
            any_typed = True
    if untyped is not None:
        return untyped
    return typed if any_typed else None


def gpus_from_gres_request(spec: str | None) -> int | None:
    """``gres:gpu:h100:2`` / ``gpu:2`` / ``gres/gpu:2`` (tres_per_*) → GPU count, else None."""
    if not spec:
        return None
    total: int | None = None
    for item in split_top(spec.replace("gres/", "gres:").replace("=", ":")):
        parsed = _gpu_item(item)
        if parsed is None or parsed[1] is None:
            continue
        total = (total or 0) + parsed[1]
    return total
