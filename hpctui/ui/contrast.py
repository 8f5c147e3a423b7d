"""Text contrast (WCAG 2): the ratio of two colours' relative luminances, and the nearest colour
to a given one that reads on a background at a required ratio.

Themes are checked against it in the tests (every state colour on every background and cursor
tint it is drawn on); tables use :func:`readable` for the cursor row, whose tint would otherwise
put red text on a blue-green bar.
"""

from __future__ import annotations

from functools import lru_cache

from textual.color import Color

MIN_RATIO = 4.5  # WCAG AA for normal text
_WHITE = Color(255, 255, 255)
_BLACK = Color(0, 0, 0)


def _channel(v: int) -> float:
    x = v / 255
    return x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4


def luminance(c: Color) -> float:
    """WCAG relative luminance of an opaque colour (0 black … 1 white)."""
    return 0.2126 * _channel(c.r) + 0.7152 * _channel(c.g) + 0.0722 * _channel(c.b)


def contrast_ratio(a: Color, b: Color) -> float:
    """(L1 + 0.05) / (L2 + 0.05), the lighter over the darker: 1 (same) … 21 (black on white)."""
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


@lru_cache(maxsize=1024)
def readable(fg: Color, bg: Color, min_ratio: float = MIN_RATIO) -> Color:
    """``fg`` itself when it reads on ``bg``; else ``fg`` blended towards white (on a dark ``bg``)
    or black (on a light one) just far enough: the hue stays, the text becomes legible."""
    if contrast_ratio(fg, bg) >= min_ratio:
        return fg
    target = _WHITE if contrast_ratio(_WHITE, bg) >= contrast_ratio(_BLACK, bg) else _BLACK
    for step in range(1, 21):
        candidate = fg.blend(target, step / 20)
        if contrast_ratio(candidate, bg) >= min_ratio:
            return candidate
    return target
