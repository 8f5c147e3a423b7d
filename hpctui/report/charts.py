"""The charts of an incident report: one line per GPU (and per IB port), the failing one highlighted.

:func:`node_charts` turns the store's per-GPU/per-port rings (:class:`hpctui.core.series_history.SeriesHistory`)
into chart *specs*: plain JSON data (title, unit, axes with round ticks, series with their points and
whether a finding marks them) that ``report.json`` carries as it is. Two renderings read a spec:

- :func:`svg_chart`: an inline SVG drawn by pygal (no script, no comment, no namespace URL, so the
  HTML stays self-contained and links nothing); cluster strings reach it as element text and
  attribute values, which the XML serialiser escapes;
- :func:`text_chart`: a plotext text chart for the Markdown, each series drawn with its own mark
  (the GPU's index digit), the healthy ones faint when one is highlighted.

Axes: utilisation 0–100 %, everything else a padded range with round ticks (:func:`value_axis`),
time as minutes (or hours) before the report time with round ticks (:func:`time_axis`).
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hpctui.base.sanitize import clean_text
from hpctui.core.series_history import SeriesHistory
from hpctui.findings.index import FindingsIndex
from hpctui.model import Severity

CHARTS_MISSING = ("charts need the pygal package (a dependency of hpctui): pip install pygal, or reinstall "
                  "hpctui; the data is in report.json and the text charts in report.md")
HIGHLIGHT_COLOUR = "#d62728"
# Okabe–Ito (colour-blind safe) for series when none is highlighted; muted tones beside a highlight.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#8C6D00", "#000000", "#999999")
MUTED = ("#7f9bb3", "#a9a9a9", "#8fb39b", "#b39bb0", "#9fb9cc", "#b3a27a", "#8c8c8c", "#c0c0c0")
TEXT_MARKS = "0123456789abcdefghijklmnopqrstuvwxyz"
HistoryGet = Callable[[str], list[tuple[float, float]]]


@dataclass(frozen=True)
class Metric:
    """One chart kind: ``kind`` gpu or ib, the SeriesHistory metric, title, unit and axis rules."""

    kind: str
    key: str
    title: str
    unit: str
    fixed: tuple[float, float] | None = None  # a fixed range (utilisation 0–100 %)
    min_span: float = 10.0  # the y range is at least this wide (a flat 31 °C is not drawn as 30.9–31.1)
    integer: bool = False  # ticks at whole numbers only (counts)


METRICS = (
    Metric("gpu", "util", "GPU utilization", "%", fixed=(0.0, 100.0)),
    Metric("gpu", "temp", "GPU temperature", "°C", min_span=10.0),
    Metric("gpu", "power", "GPU power", "W", min_span=100.0),
    Metric("ib", "rx", "IB receive", "Gb/s", min_span=10.0),
    Metric("ib", "tx", "IB transmit", "Gb/s", min_span=10.0),
    Metric("ib", "err", "IB link errors per sample", "errors", min_span=5.0, integer=True),
)
_NICE = (1.0, 2.0, 5.0, 10.0)
_MINUTE_STEPS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 20.0, 30.0, 60.0)
_HOUR_STEPS = (1.0, 2.0, 3.0, 6.0, 12.0, 24.0, 48.0, 168.0)


# -- axes ---------------------------------------------------------------------------------------


def nice_step(raw: float, *, integer: bool = False) -> float:
    """The smallest of 1, 2, 5 × 10ⁿ that is ≥ ``raw`` (at least 1 with ``integer``)."""
    if raw <= 0 or not math.isfinite(raw):
        return 1.0
    base = 10.0 ** math.floor(math.log10(raw))
    for m in _NICE:
        step = m * base
        if step >= raw * (1 - 1e-9) and not (integer and step < 1):
            return step
    return 10.0 * base


def ticks(lo: float, hi: float, step: float) -> list[float]:
    """lo, lo+step, … hi, each rounded so that 0.1+0.2 prints as 0.3."""
    n = round((hi - lo) / step)
    return [round(lo + i * step, 6) for i in range(n + 1)]


def value_axis(values: Iterable[float], metric: Metric, target: int = 5) -> dict[str, Any]:
    """``{"min", "max", "ticks"}`` for the y axis: the metric's fixed range, or the data's range padded
    by 5 % (at least ``min_span`` wide, never below 0) with round bounds at about ``target`` ticks."""
    if metric.fixed is not None:
        lo, hi = metric.fixed
        return {"min": lo, "max": hi, "ticks": ticks(lo, hi, (hi - lo) / 4)}
    finite = [v for v in values if math.isfinite(v)]
    vmin, vmax = (min(finite), max(finite)) if finite else (0.0, 0.0)
    pad = (vmax - vmin) * 0.05
    lo, hi = vmin - pad, vmax + pad
    if hi - lo < metric.min_span:
        mid = (vmin + vmax) / 2
        lo, hi = mid - metric.min_span / 2, mid + metric.min_span / 2
    if lo < 0 <= vmin:  # counts, watts, degrees: the axis does not go below zero for data that cannot
        lo, hi = 0.0, max(hi - lo, vmax)
    step = nice_step((hi - lo) / (target - 1), integer=metric.integer)
    lo, hi = math.floor(lo / step + 1e-9) * step, math.ceil(hi / step - 1e-9) * step
    if hi <= lo:
        hi = lo + step
    return {"min": round(lo, 6), "max": round(hi, 6), "ticks": ticks(lo, hi, step)}


def time_axis(first: float, now: float, window_s: float, target: int = 6) -> dict[str, Any]:
    """The x axis: from the oldest sample (not before the window) to 0 = the report time, in minutes
    (hours past 3 h), from a round tick to 0 with round steps: ``−60 … 0 min``, ``−2 … 0 min``."""
    span_s = min(max(now - first, 1.0), window_s)
    unit, scale, steps = ("min", 60.0, _MINUTE_STEPS) if span_s <= 3 * 3600 else ("h", 3600.0, _HOUR_STEPS)
    span = span_s / scale
    step = next((s for s in steps if span / s <= target - 1), steps[-1])
    lo = -math.ceil(span / step - 1e-9) * step
    return {"unit": unit, "scale": scale, "min": lo, "max": 0.0, "ticks": ticks(lo, 0.0, step), "origin": now}


def tick_label(v: float) -> str:
    """A tick as short text with a real minus sign: ``−1.5``, ``40``, ``0``."""
    text = f"{v:.2f}".rstrip("0").rstrip(".")
    if text in ("-0", ""):
        text = "0"
    return text.replace("-", "−")


# -- specs ----------------------------------------------------------------------------------------


def _failing(findings: FindingsIndex, node: str, obj: str) -> str | None:
    """What a WARNING-or-worse finding of ``node`` says about ``obj`` (worst first), else None. (The
    node's findings matched whole: a hostile name with a ``/`` in it still finds its own.)"""
    bad = sorted((f for f in findings.node(node) if f.object == obj and f.severity >= Severity.WARNING),
                 key=lambda f: f.severity, reverse=True)
    return "; ".join(dict.fromkeys(f.message for f in bad)) or None


def _series_rows(node: str, labels: Sequence[tuple[str, str]],
                 data: Mapping[str, tuple[list[float], list[float]]], findings: FindingsIndex) -> list[dict[str, Any]]:
    """A row per series: label, the object it is (``gpu/NODE/3``), whether a finding highlights it and
    why, its range and last value, and (until :func:`_spec` aligns them) its points by time."""
    rows = []
    for label, obj in labels:
        times, values = data.get(label, ([], []))
        why = _failing(findings, node, obj)
        points = {t: round(v, 2) for t, v in zip(times, values, strict=True)}
        vals = list(points.values())
        rows.append({"label": label, "object": obj, "highlight": why is not None, "why": why, "points": points,
                     "min": min(vals) if vals else None, "max": max(vals) if vals else None,
                     "last": vals[-1] if vals else None})
    rows.sort(key=lambda r: bool(r["highlight"]))  # a highlighted line is drawn last: on top of the others
    return rows


def _spec(node: str, metric: Metric, rows: list[dict[str, Any]], now: float, window_s: float,
          note: str | None = None) -> dict[str, Any] | None:
    """The chart, or None when no series has two points. One ``times`` list for the chart, each
    series' ``values`` aligned to it (None: no reading then), which keeps report.json small."""
    if not any(len(r["points"]) >= 2 for r in rows):
        return None
    times = sorted({t for r in rows for t in r["points"]})
    for r in rows:
        points = r.pop("points")
        r["values"] = [points.get(t) for t in times]
    return {"node": node, "kind": metric.kind, "metric": metric.key, "title": metric.title, "unit": metric.unit,
            "x": time_axis(times[0], now, window_s),
            "y": value_axis((v for r in rows for v in r["values"] if v is not None), metric),
            "times": times, "series": rows, "note": note}


def points(chart: Mapping[str, Any], series: Mapping[str, Any]) -> list[tuple[float, float | None]]:
    """(minutes or hours before the report time, value or None) of one series of ``chart``."""
    x = chart["x"]
    origin, scale = x["origin"], x["scale"]
    return [((t - origin) / scale, v) for t, v in zip(chart["times"], series["values"], strict=False)]


def node_charts(node: str, *, series: SeriesHistory | None, history: HistoryGet | None, findings: FindingsIndex,
                now: float, window_s: float) -> list[dict[str, Any]]:
    """The charts of one node: per GPU and per IB port from ``series``; where the rings do not keep
    this node (a cluster past ``max_nodes``, nobody looked at it) the node mean from ``history``."""
    rings = series.node(node) if series is not None else None
    out: list[dict[str, Any]] = []
    for metric in METRICS:
        if rings is not None:
            if metric.kind == "gpu":
                got = series.gpu_series(node, metric.key, window_s, now) if series else []
                labels = [(f"GPU {g}", f"gpu/{node}/{g}") for g in rings.gpus]
            else:
                got = series.port_series(node, metric.key, window_s, now) if series else []
                labels = [(p, f"ib/{node}/{p}") for p in rings.ports]
            data = {s.label: (s.times, s.values) for s in got}
            spec = _spec(node, metric, _series_rows(node, labels, data, findings), now, window_s)
        elif history is not None and metric.kind == "gpu":
            pts = [(t, v) for t, v in history(f"node:{node}:{metric.key}") if t >= now - window_s]
            rows = _series_rows(node, [("node mean", f"node/{node}")],
                                {"node mean": ([t for t, _ in pts], [v for _, v in pts])}, findings)
            rows[0].update(highlight=False, why=None)
            spec = _spec(node, metric, rows, now, window_s,
                         note="node mean only: per-GPU history is kept for the nodes on screen or looked at")
        else:
            spec = None
        if spec is not None:
            out.append(spec)
    return out


# -- captions -------------------------------------------------------------------------------------


def _num(v: Any) -> str:
    return "N/A" if not isinstance(v, int | float) else f"{v:.1f}".removesuffix(".0")


def _span(lo: Any, hi: Any, unit: str) -> str:
    """``60–77 °C``, or ``0 %`` where the range is one value."""
    return f"{_num(lo)} {unit}" if _num(lo) == _num(hi) else f"{_num(lo)}–{_num(hi)} {unit}"


def _one(value: Any) -> str:
    """A string for a chart: one line, no control characters (the document is clean already; a
    renderer does not rely on it)."""
    return clean_text(str(value))


def chart_title(chart: Mapping[str, Any]) -> str:
    return _one(f"{chart['node']}: {chart['title']} ({chart['unit']})")


def x_label(chart: Mapping[str, Any]) -> str:
    x = chart["x"]
    clock = time.strftime("%H:%M UTC", time.gmtime(x["origin"])) if isinstance(x.get("origin"), int | float) else "N/A"
    return f"{'minutes' if x['unit'] == 'min' else 'hours'} before {clock}"


def caption(chart: Mapping[str, Any]) -> str:
    """One line under a chart: the highlighted series with why and their range, beside the others'."""
    unit = _one(chart["unit"])
    hot = [s for s in chart["series"] if s["highlight"]]
    rest = [s for s in chart["series"] if not s["highlight"]]
    parts = []
    for s in hot:
        seen = f"{_span(s['min'], s['max'], unit)}, last {_num(s['last'])}" if s["last"] is not None else "no readings"
        parts.append(f"highlighted {_one(s['label'])} ({_one(s['why'])}): {seen}")
    maxes = [s["max"] for s in rest if isinstance(s["max"], int | float)]
    mins = [s["min"] for s in rest if isinstance(s["min"], int | float)]
    if maxes:
        who = "the others" if hot else ("all" if len(rest) > 1 else _one(rest[0]["label"]))
        parts.append(f"{who}: {_span(min(mins), max(maxes), unit)}")
    if chart.get("note"):
        parts.append(_one(chart["note"]))
    return "; ".join(parts)


# -- SVG (pygal) ----------------------------------------------------------------------------------


def _for_inline(highlighted: set[int]) -> Callable[[Any], Any]:
    """An XML filter for pygal's tree: drops what an inline, self-contained chart must not carry (its
    script: config JSON and a tooltip loader; its comments, with URLs; the namespace attribute, a URL
    that inline SVG in HTML does not need) and draws the ``highlighted`` series thick (an inline style:
    pygal's per-series stroke CSS loses to its own line class)."""

    def apply(root: Any) -> Any:
        from pygal.etree import etree

        root.attrib.pop("xmlns", None)
        for parent in list(root.iter()):
            for child in list(parent):
                if child.tag is etree.Comment or child.tag == "script":
                    parent.remove(child)
        for g in root.iter("g"):
            classes = g.get("class", "").split()
            if "series" in classes and any(f"serie-{i}" in classes for i in highlighted):
                for path in g.iter("path"):
                    path.set("style", "stroke-width:4px;stroke-opacity:1")
        return root

    return apply


def _legend(s: Mapping[str, Any]) -> str:
    return f"{_one(s['label'])} (failing)" if s["highlight"] else _one(s["label"])


def svg_chart(chart: Mapping[str, Any], width: int = 760, height: int = 300) -> str:
    """``chart`` as an inline ``<svg>`` element. Raises ImportError without pygal."""
    import pygal
    from pygal.etree import etree
    from pygal.style import Style

    etree.to_etree()  # the standard library's serialiser: a namespace it can drop, the same output everywhere
    hot = any(s["highlight"] for s in chart["series"])
    colours = [HIGHLIGHT_COLOUR if s["highlight"] else (MUTED if hot else PALETTE)[i % len(PALETTE)]
               for i, s in enumerate(chart["series"])]
    style = Style(background="white", plot_background="white", foreground="#333", foreground_strong="#111",
                  foreground_subtle="#ddd", colors=tuple(colours), font_family="sans-serif", stroke_width="1.5",
                  guide_stroke_color="#e4e4e4", major_guide_stroke_color="#c8c8c8", guide_stroke_dasharray="none",
                  major_guide_stroke_dasharray="none",
                  title_font_size=15, legend_font_size=12, label_font_size=11, major_label_font_size=11)
    x, y = chart["x"], chart["y"]
    plot = pygal.XY(width=width, height=height, explicit_size=True, style=style, js=[], disable_xml_declaration=True,
                    title=chart_title(chart), x_title=x_label(chart), show_dots=False, stroke=True, fill=False,
                    range=(y["min"], y["max"]), xrange=(x["min"], x["max"]), y_labels=y["ticks"],
                    x_labels=x["ticks"], x_value_formatter=tick_label, value_formatter=tick_label,
                    show_x_guides=True, show_y_guides=True, truncate_legend=-1, legend_box_size=10,
                    print_values=False, allow_interruptions=True)
    for s in chart["series"]:
        plot.add(_legend(s), points(chart, s))  # a None value: a gap in the line
    plot.add_xml_filter(_for_inline({i for i, s in enumerate(chart["series"]) if s["highlight"]}))
    svg: str = plot.render(is_unicode=True)
    return svg


# -- text (plotext) -------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_PLOTEXT = threading.Lock()  # plotext's module-level figure: one chart at a time (reports are written in threads)


def _mark(label: str, i: int) -> str:
    m = re.fullmatch(r"GPU (\d)", label)
    return m.group(1) if m else TEXT_MARKS[(10 + i) % len(TEXT_MARKS)]


def text_chart(chart: Mapping[str, Any], width: int = 72, height: int = 16) -> str:
    """``chart`` as plain text (no colour): each series drawn with its mark (a GPU's index digit),
    the others as ``·`` when one is highlighted; a legend of the marks under it."""
    import plotext as plt

    with _PLOTEXT:
        return _text_chart(plt, chart, width, height)


def _text_chart(plt: Any, chart: Mapping[str, Any], width: int, height: int) -> str:
    x, y = chart["x"], chart["y"]
    hot = any(s["highlight"] for s in chart["series"])
    plt.clear_figure()
    plt.theme("clear")
    plt.plot_size(width, height)
    legend = []
    for i, s in enumerate(chart["series"]):
        mark = _mark(str(s["label"]), i)
        shown = mark if s["highlight"] or not hot else "·"
        legend.append(f"{shown} {_legend(s)}")
        known = [(t, v) for t, v in points(chart, s) if v is not None]
        if known:
            plt.plot([t for t, _ in known], [v for _, v in known], marker=shown)
    plt.xlim(x["min"], x["max"])
    plt.ylim(y["min"], y["max"])
    plt.xticks(x["ticks"], [tick_label(v) for v in x["ticks"]])
    plt.yticks(y["ticks"], [tick_label(v) for v in y["ticks"]])
    plt.title(chart_title(chart))
    plt.xlabel(x_label(chart))
    text = _ANSI.sub("", plt.build())
    plt.clear_figure()
    lines = [line.rstrip() for line in text.splitlines()]
    marks = sorted(set(legend), key=legend.index)
    if hot:
        marks = [m for m in marks if not m.startswith("·")] + ["· the others"]
    return "\n".join([*lines, "   " + "  ".join(marks)])
