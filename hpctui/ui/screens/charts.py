"""History charts of one node: per GPU utilisation, temperature, power and memory, and per
InfiniBand port throughput and link errors, one line per GPU/port, over 5 minutes or 1 hour.

Data: the store's per-GPU rings (:class:`hpctui.core.series_history.SeriesHistory`), or range queries
when a metrics source (Prometheus) offers ``history``. Drawn with plotext (textual-plotext):
real axes with units, a legend, the x axis in minutes before now.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static
from textual_plotext import PlotextPlot

from hpctui.core.runtime import Runtime
from hpctui.core.series_history import GPU_METRICS, GPU_TITLES, GPU_UNITS, IB_UNITS, Series
from hpctui.model import ClusterSnapshot
from hpctui.ui.widgets.footer import KeyBar

WINDOWS = (300.0, 3600.0)  # seconds: 5 min, 1 h
WINDOW_TEXT = {300.0: "5 min", 3600.0: "1 h"}
# One colour per line, the same in the plot and in the legend under it (Okabe–Ito first: they
# stay apart for colour-blind readers; shapes differ too: rx solid, tx dotted).
LINE_COLOURS = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#FFFFFF")
LIGHT_LINE_COLOURS = ("#B36B00", "#2A86C2", "#007A58", "#8A7D00", "#0072B2", "#D55E00", "#B0508A", "#222222")
IB_CHARTS = (("ib_rate", "IB throughput (rx solid, tx dotted)", IB_UNITS["rx"]),
             ("ib_err", "IB link errors per sample", IB_UNITS["err"]))


def legend_content(head: str, entries: list[tuple[str, str]], width: int) -> Content:
    """``now (%): ━━ GPU 0 70  ━━ GPU 1 66 …``, wrapped only between entries (never inside one)."""
    if not entries:
        return Content("no series")
    pieces: list[tuple[str, str] | str] = [head]
    used = len(head)
    for colour, text in entries:
        size = len(text) + 5  # "━━ " + text + "  "
        if used + size > width and used > len(head):
            pieces.append("\n")
            used = 0
        pieces += [("━━ ", colour), text + "  "]
        used += size
    return Content.assemble(*pieces)


STALE_POLLS = 2.0  # a legend's "now" older than this many poll intervals is N/A, not an old reading


def now_text(series: Series, now: float, max_age_s: float) -> str:
    """The legend's current value: the newest sample, or N/A when that sample was N/A (the
    series skips NaNs, so its last value may be older than the node's newest sample) or when
    the newest value is older than ``max_age_s``."""
    if not series.values:
        return "N/A"
    t, v = series.times[-1], series.values[-1]
    if series.newest is not None and series.newest > t:  # the newest sample had no value here
        return "N/A"
    if now - t > max_age_s or v is None or math.isnan(v):
        return "N/A"
    return f"{v:.1f}".removesuffix(".0")


def _rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


class ChartsScreen(Screen[None]):
    """``v`` on the heatmap or ``:charts``: the node's per-GPU and per-port history."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("w", "toggle_window", "5 min / 1 h"),
        Binding("left_square_bracket", "step_node(-1)", "Prev node", key_display="["),
        Binding("right_square_bracket", "step_node(1)", "Next node", key_display="]"),
    ]
    DEFAULT_CSS = """
    ChartsScreen #charts-head { height: 1; padding: 0 1; background: $panel; }
    ChartsScreen Grid { grid-size: 2; grid-rows: 16; height: auto; }
    ChartsScreen .chart { height: 16; border: round $panel; }
    ChartsScreen PlotextPlot { height: 1fr; }
    ChartsScreen .legend { height: auto; max-height: 3; padding: 0 1; }
    """

    def __init__(self, runtime: Runtime, node: str | None = None) -> None:
        super().__init__(id="charts")
        self.runtime = runtime
        self.node = node
        self.window_s = WINDOWS[0]
        self.snapshot: ClusterSnapshot | None = None
        self.plotted: dict[str, list[Series]] = {}  # chart id -> what was drawn (tests read it)
        self.source_text = "store"
        self._remote: dict[str, list[Series]] = {}  # range-query answers, by metric
        self._remote_key: tuple[str | None, float] | None = None
        self.plots: dict[str, PlotextPlot] = {m: PlotextPlot(id=f"chart-{m}") for m in GPU_METRICS}
        self.plots.update({c: PlotextPlot(id=f"chart-{c}") for c, _, _ in IB_CHARTS})

    def compose(self) -> ComposeResult:
        yield Static("", id="charts-head", markup=False)
        with VerticalScroll(), Grid():
            for key, plot in self.plots.items():
                with Vertical(classes="chart"):
                    yield plot
                    yield Static("", id=f"legend-{key}", classes="legend", markup=False)
        yield KeyBar()

    def on_mount(self) -> None:
        store = self.runtime.store
        snapshot = store.snapshot()
        if self.node is None:
            self.node = next(iter(snapshot.gpus), None) or next(iter(snapshot.nodes), None)
        if self.node is not None:
            store.series.watch(self.node)
        self.update_snapshot(snapshot)
        self.call_after_refresh(self.redraw)  # legends wrap to the laid-out width

    def on_resize(self) -> None:
        self.call_after_refresh(self.redraw)

    # -- data ---------------------------------------------------------------------------
    def update_snapshot(self, snapshot: ClusterSnapshot) -> None:
        self.snapshot = snapshot
        self._maybe_fetch()
        self.redraw()

    def _metrics_source(self) -> Any:
        return next((s for s in self.runtime.sources if inspect.iscoroutinefunction(getattr(s, "history", None))),
                    None)

    def _maybe_fetch(self) -> None:
        source = self._metrics_source()
        key = (self.node, self.window_s)
        if source is None or self.node is None or key == self._remote_key:
            return
        self._remote_key = key
        self.run_worker(self._fetch(source, self.node, self.window_s), group="charts-history", exclusive=True)

    async def _fetch(self, source: Any, node: str, window_s: float) -> None:
        """Range queries, one per GPU and metric; a failure keeps the store's rings."""
        gpus = [g.index for g in (self.snapshot.gpus.get(node, ()) if self.snapshot else ())]
        out: dict[str, list[Series]] = {}
        try:
            for metric in GPU_METRICS:
                series = []
                for index in gpus:
                    hist = await source.history(node, metric, gpu=index, window_s=window_s)
                    scale = 1 / 1024.0 if metric == "mem" else 1.0  # DCGM FB_USED is MiB
                    series.append(Series(f"GPU {index}", [t for t, _ in hist.points],
                                         [v * scale for _, v in hist.points]))
                if any(s.times for s in series):
                    out[metric] = series
        except Exception as exc:  # a failed range query costs the remote data, never the screen
            self.notify(f"history: {type(exc).__name__}: {exc}"[:100], severity="warning", timeout=3, markup=False)
            return
        if node == self.node and window_s == self.window_s:
            self._remote = out
            self.source_text = getattr(source, "name", "prometheus") if out else "store"
            self.redraw()

    def gpu_series(self, metric: str) -> list[Series]:
        if metric in self._remote:
            return self._remote[metric]
        if self.node is None:
            return []
        return self.runtime.store.series.gpu_series(self.node, metric, self.window_s, self._now())

    def _poll_interval(self) -> float:
        """The slowest source's poll interval (the one a chart's data may come from)."""
        return max((float(getattr(s, "interval_s", 0.0) or 0.0) for s in self.runtime.sources), default=0.0) or 2.0

    def _now(self) -> float:
        snap = self.snapshot
        return snap.time if snap is not None else self.runtime.clock()

    # -- drawing ---------------------------------------------------------------------------
    def redraw(self) -> None:
        if not self.is_attached:
            return
        now = self._now()
        series_store = self.runtime.store.series
        tracked = self.node is not None and series_store.node(self.node) is not None
        head = f"Charts · {self.node or 'no node'} · last {WINDOW_TEXT[self.window_s]} (w: switch) · from {self.source_text}"
        if self.node is not None and not tracked and not self._remote:
            head += " · no history yet: recording starts now"
        self.query_one("#charts-head", Static).update(head)
        for metric in GPU_METRICS:
            series = self.gpu_series(metric)
            self.plotted[metric] = series
            self._draw(self.plots[metric], f"{GPU_TITLES[metric]} ({GPU_UNITS[metric]})", GPU_UNITS[metric],
                       series, now, y_floor=0.0, y_ceiling=100.0 if metric == "util" else None)
        node = self.node
        rx = series_store.port_series(node, "rx", self.window_s, now) if node else []
        tx = series_store.port_series(node, "tx", self.window_s, now) if node else []
        err = series_store.port_series(node, "err", self.window_s, now) if node else []
        self.plotted["ib_rx"], self.plotted["ib_tx"], self.plotted["ib_err"] = rx, tx, err
        self._draw(self.plots["ib_rate"], IB_CHARTS[0][1], IB_CHARTS[0][2], rx, now, y_floor=0.0, dotted=tx)
        self._draw(self.plots["ib_err"], IB_CHARTS[1][1], IB_CHARTS[1][2], err, now, y_floor=0.0)

    def _draw(self, widget: PlotextPlot, title: str, unit: str, series: list[Series], now: float, *,
              y_floor: float | None = None, y_ceiling: float | None = None,
              dotted: list[Series] | None = None) -> None:
        plt = widget.plt
        plt.clear_data()
        plt.clear_figure()
        minutes = self.window_s / 60.0
        plt.title(title)
        plt.xlabel("minutes before now")
        plt.ylabel(unit)
        plt.xlim(-minutes, 0)
        top = y_ceiling
        drawn = 0
        entries: list[tuple[str, str]] = []  # (colour, "GPU 3 88")
        colours = LINE_COLOURS if self.app.current_theme.dark else LIGHT_LINE_COLOURS
        max_age = STALE_POLLS * self._poll_interval()
        for i, s in enumerate(series):
            colour = colours[i % len(colours)]
            last = now_text(s, now, max_age)
            entries.append((colour, f"{s.label.replace('GPU ', 'GPU')} {last}"))
            if not s.times:
                continue
            xs = [(t - now) / 60.0 for t in s.times]
            plt.plot(xs, s.values, marker="braille", color=_rgb(colour))
            drawn += 1
        for i, s in enumerate(dotted or ()):
            if s.times:
                colour = colours[i % len(colours)]
                plt.plot([(t - now) / 60.0 for t in s.times], s.values, marker="dot", color=_rgb(colour))
        legend_widget = widget.parent.query_one(".legend", Static) if widget.parent is not None else None
        if legend_widget is not None:
            head = f"now{' rx' if dotted else ''} ({unit}): "
            width = legend_widget.content_region.width or legend_widget.size.width or 76
            legend_widget.update(legend_content(head, entries, width))
        values = [v for s in [*series, *(dotted or [])] for v in s.values if not math.isnan(v)]
        if top is None:
            top = max(values, default=1.0) * 1.1 or 1.0
        plt.ylim(y_floor if y_floor is not None else min(values, default=0.0), top)
        ticks = [-minutes + i * minutes / 5 for i in range(6)]
        plt.xticks(ticks, [f"{t:g}" for t in ticks])
        if drawn == 0:
            plt.title(f"{title} — no data")
        widget.refresh()

    # -- keys ----------------------------------------------------------------------------
    def action_toggle_window(self) -> None:
        self.window_s = WINDOWS[(WINDOWS.index(self.window_s) + 1) % len(WINDOWS)]
        self._remote = {}
        self.source_text = "store"
        self._maybe_fetch()
        self.redraw()

    def action_step_node(self, step: int) -> None:
        snap = self.snapshot
        if snap is None or not snap.gpus:
            return
        names = list(snap.gpus)
        i = names.index(self.node) if self.node in names else -1
        self.node = names[(i + step) % len(names)]
        self.runtime.store.series.watch(self.node)
        self._remote = {}
        self.source_text = "store"
        self._maybe_fetch()
        self.redraw()
