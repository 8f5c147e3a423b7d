"""A one-line sparkline that is cheap on the wire.

Textual's ``Sparkline`` blends a colour per bar, so every cell carries its own escape
sequence (~45 bytes a cell): two 50-cell sparklines cost ~4.5 KB per refresh. Here bars
take one of five theme colours (``$heat-0`` … ``$heat-4``, or the caller's) by height, so
neighbouring bars share a run and a redraw is a few hundred bytes. Shows the newest samples
that fit, on a fixed scale when the caller gives one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from textual.content import Content
from textual.widget import Widget

BARS = "▁▂▃▄▅▆▇█"


def spark_content(values: Sequence[float], width: int, *, low: float | None = None, high: float | None = None,
                  colour: Callable[[float, float], str] | None = None) -> Content:
    """The newest ``width`` values as bars in runs of theme colours.

    With ``low``/``high`` the bars are on that fixed scale (utilisation 0–100 %, a temperature
    range): an idle GPU at 31 °C draws low bars, never full ones. Without, on the shown values'
    own min..max. ``colour(value, fraction)`` names the theme variable of a bar (default: the heat
    ramp by height, ``$heat-0`` … ``$heat-4``)."""
    shown = list(values)[-width:] if width > 0 else []
    if not shown:
        return Content("")
    lo = min(shown) if low is None else low
    hi = max(shown) if high is None else high
    span = hi - lo
    pieces: list[tuple[str, str]] = []
    run, run_style = "", ""
    for v in shown:
        frac = min(1.0, max(0.0, (v - lo) / span)) if span > 0 else 0.5
        bar = BARS[min(len(BARS) - 1, int(frac * len(BARS)))]
        style = colour(v, frac) if colour is not None else f"$heat-{min(4, int(frac * 5))}"
        if style != run_style and run:
            pieces.append((run, run_style))
            run = ""
        run += bar
        run_style = style
    if run:
        pieces.append((run, run_style))
    return Content.assemble(*pieces)


class MiniSpark(Widget):
    DEFAULT_CSS = """
    MiniSpark { height: 1; }
    """

    def __init__(self, data: Sequence[float] = (), *, low: float | None = None, high: float | None = None,
                 colour: Callable[[float, float], str] | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._data: list[float] = list(data)
        self.low, self.high, self.colour = low, high, colour  # the fixed scale (see spark_content)

    @property
    def data(self) -> list[float]:
        return self._data

    @data.setter
    def data(self, values: Sequence[float]) -> None:
        values = list(values)
        if values != self._data:
            self._data = values
            self.refresh()

    def render(self) -> Content:
        return spark_content(self._data, self.size.width, low=self.low, high=self.high, colour=self.colour)
