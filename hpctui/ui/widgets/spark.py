"""A one-line sparkline that is cheap on the wire.

Textual's ``Sparkline`` blends a colour per bar, so every cell carries its own escape
sequence (~45 bytes a cell): two 50-cell sparklines cost ~4.5 KB per refresh. Here bars
take one of five theme colours (``$heat-0`` … ``$heat-4``) by height, so neighbouring bars
share a run and a redraw is a few hundred bytes. Shows the newest samples that fit.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content
from textual.widget import Widget

BARS = "▁▂▃▄▅▆▇█"


def spark_content(values: Sequence[float], width: int) -> Content:
    """The newest ``width`` values as bars, coloured by height in five runs of theme colours."""
    shown = list(values)[-width:] if width > 0 else []
    if not shown:
        return Content("")
    low, high = min(shown), max(shown)
    span = high - low
    pieces: list[tuple[str, str]] = []
    run, run_level = "", -1
    for v in shown:
        frac = (v - low) / span if span else 0.5
        bar = BARS[min(len(BARS) - 1, int(frac * len(BARS)))]
        level = min(4, int(frac * 5))
        if level != run_level and run:
            pieces.append((run, f"$heat-{run_level}"))
            run = ""
        run += bar
        run_level = level
    if run:
        pieces.append((run, f"$heat-{run_level}"))
    return Content.assemble(*pieces)


class MiniSpark(Widget):
    DEFAULT_CSS = """
    MiniSpark { height: 1; }
    """

    def __init__(self, data: Sequence[float] = (), *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._data: list[float] = list(data)

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
        return spark_content(self._data, self.size.width)
