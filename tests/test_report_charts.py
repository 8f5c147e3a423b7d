"""Incident-report charts (issue #22 §6): one line per GPU and per IB port with the failing one
highlighted, round axes with units, inline SVG (pygal) in the HTML that links and runs nothing, text
charts only in the Markdown, one timeline row per action."""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from test_report import T0, StepClock

from hpctui.core.runtime import Runtime, demo_runtime
from hpctui.core.series_history import SeriesHistory
from hpctui.model import ClusterSnapshot, Gpu, IbPort
from hpctui.report import charts as report_charts
from hpctui.report.charts import METRICS, time_axis, value_axis
from hpctui.report.incident import build_report, render_html, render_markdown

METRIC = {m.key: m for m in METRICS}


@pytest.fixture(scope="module")
def demo_rt() -> Runtime:
    """The demo (seed 1, as the TUI starts it) after 12 samples: gpu0052's GPU 6 runs hot, gpu0007's
    GPU 3 fell off the bus (Xid 79) and the node is drained, gpu0025's mlx5_2 port is down."""
    import asyncio

    async def make() -> Runtime:
        clock = StepClock()
        rt = demo_runtime(seed=1, clock=clock, start_time=T0)
        for _ in range(12):
            await rt.collect_once()
            clock.t += 2.0
        await rt.stop()
        return rt

    return asyncio.run(make())


def demo_report(rt: Runtime, since_s: float = 3600) -> dict[str, Any]:
    return build_report(rt.store.snapshot(), nodes=["gpu0052", "gpu0007", "gpu0025"], jobs=[], since_s=since_s,
                        thresholds=rt.thresholds, history=rt.store.history.get, series=rt.store.series,
                        user="alice", host="ops1")


@pytest.fixture(scope="module")
def demo_doc(demo_rt: Runtime) -> dict[str, Any]:
    return demo_report(demo_rt)


def chart(doc: dict[str, Any], node: str, metric: str) -> dict[str, Any]:
    [found] = [c for c in doc["charts"][node] if c["metric"] == metric]
    return found


def highlighted(c: dict[str, Any]) -> list[str]:
    return [s["label"] for s in c["series"] if s["highlight"]]


def test_one_line_per_gpu_and_the_hot_one_highlighted(demo_doc: dict[str, Any]) -> None:
    temp = chart(demo_doc, "gpu0052", "temp")
    assert sorted(s["label"] for s in temp["series"]) == [f"GPU {i}" for i in range(8)]
    assert highlighted(temp) == ["GPU 6"] and "°C" in temp["series"][-1]["why"]
    hot = temp["series"][-1]  # drawn last: on top
    others = [s for s in temp["series"] if not s["highlight"]]
    assert hot["max"] >= 85 > max(s["max"] for s in others)  # the node mean (~71 °C) would hide it
    assert temp["y"]["min"] <= min(s["min"] for s in temp["series"]) and temp["y"]["max"] >= hot["max"]
    assert temp["unit"] == "°C" and chart(demo_doc, "gpu0052", "util")["unit"] == "%"
    # every chart of the node marks the same GPU; the Xid node its lost GPU; the IB node its down ports
    assert all(highlighted(c) == ["GPU 6"] for c in demo_doc["charts"]["gpu0052"] if c["kind"] == "gpu")
    assert highlighted(chart(demo_doc, "gpu0007", "temp")) == ["GPU 3"]
    # the flapping node's own down port, and its first port, which flaps with the demo's faulty leaf switch
    assert highlighted(chart(demo_doc, "gpu0025", "err")) == ["mlx5_0:1", "mlx5_2:1"]
    assert sorted(s["label"] for s in chart(demo_doc, "gpu0025", "rx")["series"]) == [f"mlx5_{i}:1" for i in range(8)]
    assert "highlighted GPU 6 (GPU 6 at " in report_charts.caption(temp)


def test_value_axes_are_fixed_or_padded_and_round() -> None:
    # utilisation: 0–100 % whatever the data, also an idle node at 0 % (was −1…1)
    assert value_axis([0.0, 0.0], METRIC["util"]) == {"min": 0.0, "max": 100.0, "ticks": [0, 25, 50, 75, 100]}
    # a flat idle temperature (was 30.857–31.143): a 10 °C-wide range with round ticks
    assert value_axis([30.857, 31.143], METRIC["temp"]) == {"min": 25, "max": 40, "ticks": [25, 30, 35, 40]}
    assert value_axis([59, 89], METRIC["temp"]) == {"min": 50, "max": 100, "ticks": [50, 60, 70, 80, 90, 100]}
    assert value_axis([0, 0], METRIC["err"]) == {"min": 0, "max": 6, "ticks": [0, 2, 4, 6]}
    assert value_axis([480, 678], METRIC["power"])["ticks"] == [400, 500, 600, 700]
    for values, metric in (([3.2, 3.9], "rx"), ([0, 2], "err"), ([20.5, 99.5], "temp"), ([700, 700], "power")):
        ax = value_axis(values, METRIC[metric])
        step = ax["ticks"][1] - ax["ticks"][0]
        assert ax["min"] <= min(values) and ax["max"] >= max(values) and ax["min"] >= 0
        assert ax["ticks"][0] == ax["min"] and ax["ticks"][-1] == ax["max"] and 3 <= len(ax["ticks"]) <= 8
        assert step in (1, 2, 5, 10, 20, 50, 100, 200), (metric, ax)
        assert all(t == round(t) for t in ax["ticks"]), ax


def test_time_axis_runs_to_zero_in_round_steps() -> None:
    now = T0
    two = time_axis(now - 118.8, now, 3600)  # the demo's two minutes (was "-1.98 min")
    assert (two["unit"], two["min"], two["max"], two["ticks"]) == ("min", -2, 0, [-2, -1.5, -1, -0.5, 0])
    hour = time_axis(now - 3600, now, 3600)
    assert (hour["unit"], hour["ticks"]) == ("min", [-60, -45, -30, -15, 0])
    beyond = time_axis(now - 90_000, now, 3600)  # older samples than the window: the window bounds it
    assert beyond["min"] == -60
    days = time_axis(now - 2 * 86400, now, 2 * 86400)
    assert days["unit"] == "h" and days["ticks"][0] == -48 and days["ticks"][-1] == 0
    assert [report_charts.tick_label(v) for v in two["ticks"]] == ["−2", "−1.5", "−1", "−0.5", "0"]


def _svgs(page: str) -> list[str]:
    return re.findall(r"<svg\b.*?</svg>", page, flags=re.S)


def test_html_has_inline_svg_charts_and_links_or_runs_nothing(demo_doc: dict[str, Any]) -> None:
    page = render_html(demo_doc)
    svgs = _svgs(page)
    assert len(svgs) == sum(len(c) for c in demo_doc["charts"].values()) >= 15
    assert not re.search(r"https?://|<script|javascript:|<link|@import|url\(|\bsrc=|href=|<pre\b", page, re.I)
    for svg in svgs:
        root = ET.fromstring(svg)  # well-formed XML
        assert root.tag == "svg" and root.get("viewBox")
    # the highlighted line is drawn thick, in the highlight colour
    assert "stroke-width:4px" in page and report_charts.HIGHLIGHT_COLOUR in page
    assert "GPU 6 (failing)" in page


def test_markdown_has_the_text_charts_with_marks_and_axes(demo_doc: dict[str, Any]) -> None:
    md = render_markdown(demo_doc)
    block = md.split("gpu0052: GPU temperature (°C)", 1)[1].split("```", 1)[0]
    assert "6666" in block and "·" in block  # GPU 6 drawn with its digit, the others faint
    assert "6 GPU 6 (failing)  · the others" in block
    assert re.search(r"^\s*100┤", block, re.M) and re.search(r"^\s*50┤", block, re.M)
    x = chart(demo_doc, "gpu0052", "temp")["x"]
    assert x["ticks"] == [-0.5, -0.25, 0] and "−0.5" in block and "−0.25" in block  # 22 s of samples
    assert "minutes before 00:53 UTC" in block


def hostile_input() -> tuple[ClusterSnapshot, SeriesHistory, str]:
    """A node, a GPU model and an IB device named to break out of SVG text and attributes."""
    node = 'gpu01"><script>alert(1)</script><a href="http://evil.example/n">'
    device = "mlx5_0</text><image href='https://evil.example/p.png'/><text>"
    gpus = [Gpu(node=node, index=i, model="<b>H100</b>", util_pct=50.0, temp_c=40.0 + 50 * (i == 1),
                power_w=300.0) for i in range(2)]
    series = SeriesHistory()
    for k in range(5):
        ports = [IbPort(node=node, device=device, port=1, state="ACTIVE",
                        counters={"port_rcv_data": 10**9 * k, "port_xmit_data": 10**9 * k})]
        series.add_gpus(T0 - 60 + 10 * k, {node: gpus}, {node: ports})
    snap = ClusterSnapshot(cluster="c", time=T0, gpus={node: tuple(gpus)}, ib={node: tuple(ports)})
    return snap, series, node


def test_hostile_names_stay_text_in_the_svg() -> None:
    snap, series, node = hostile_input()
    doc = build_report(snap, nodes=[node], jobs=[], since_s=3600, series=series, user="u", host="h")
    assert {c["metric"] for c in doc["charts"][node]} >= {"util", "temp", "rx"}
    assert highlighted(chart(doc, node, "temp")) == ["GPU 1"]  # at 90 °C
    page = render_html(doc)
    assert "<script" not in page and "<image" not in page and "<a " not in page and "<b>" not in page
    for svg in _svgs(page):
        root = ET.fromstring(svg)
        for el in root.iter():
            assert el.tag in {"svg", "defs", "style", "title", "desc", "g", "path", "rect", "text", "tspan",
                              "circle", "line"}, el.tag
            assert not any("http" in v or k in ("href", "onload", "src") for k, v in el.attrib.items()), el.attrib
    texts = " ".join(t for svg in _svgs(page) for t in ET.fromstring(svg).itertext())
    assert "mlx5_0</text><image href='https://evil.example/p.png'/><text>:1" in texts  # shown, as text
    assert 'gpu01"><script>alert(1)</script>' in texts


def test_html_without_pygal_says_how_to_get_charts(demo_doc: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pygal", None)  # `import pygal` raises ImportError
    page = render_html(demo_doc)
    assert "<svg" not in page and page.count(report_charts.CHARTS_MISSING) == 1
    assert "gpu0052: GPU temperature (°C): highlighted GPU 6" in page  # the captions stay
    assert "<pre" not in page  # still no text chart in the HTML
    assert "6666" in render_markdown(demo_doc)  # the Markdown does not need pygal


def test_node_mean_where_the_rings_do_not_keep_the_node() -> None:
    snap = ClusterSnapshot(cluster="c", time=T0)
    hist = {"node:n1:temp": [(T0 - 60, 40.0), (T0, 42.0)]}
    doc = build_report(snap, nodes=["n1"], jobs=[], since_s=3600, series=SeriesHistory(),
                       history=lambda key: hist.get(key, []), user="u", host="h")
    [c] = doc["charts"]["n1"]
    assert c["metric"] == "temp" and [s["label"] for s in c["series"]] == ["node mean"]
    assert "node mean only" in c["note"]


def _audit(action_id: str, t: float, target: str, *, outcome: bool = True) -> list[dict[str, Any]]:
    common = {"id": action_id, "time": t, "user": "root", "action": "drain", "targets": [target],
              "commands": [f"scontrol update NodeName={target} State=DRAIN"]}
    recs = [{**common, "phase": "intent"},
            {**common, "phase": "step", "step": 0, "results": [{"target": target, "ok": True}]},
            {**common, "phase": "step", "step": 1, "results": [{"target": target, "ok": True}]}]
    if outcome:
        recs.append({**common, "phase": "outcome", "refused": None, "results": [{"target": target, "ok": True}]})
    return recs


def test_timeline_has_one_row_per_action_id(demo_doc: dict[str, Any]) -> None:
    snap = ClusterSnapshot(cluster="c", time=T0)
    audit = [*_audit("a1", T0 - 100, "n1"), *_audit("a2", T0 - 50, "n1", outcome=False),
             {"time": T0 - 10, "user": "bob", "action": "drain", "targets": ["n1"], "refused": "read-only"}]
    doc = build_report(snap, nodes=["n1"], jobs=[], since_s=3600, audit=audit, user="u", host="h")
    rows = [e for e in doc["timeline"] if e["source"] == "action"]
    assert [r["message"] for r in rows] == ["drain by root: 1/1 ok",
                                            "drain by root: no outcome recorded after 2 step(s) (interrupted?)",
                                            "drain by bob: refused: read-only"]
    assert [a["id"] for a in doc["actions"]] == ["a1", "a2", None]


def test_a_drain_is_told_once(demo_doc: dict[str, Any]) -> None:
    """gpu0007 drained by root (Xid 79, RMA ticket): the node's reason and the drain event were two rows."""
    rows = [e for e in demo_doc["timeline"] if "RMA ticket 4411" in e["message"]]
    assert len(rows) == 1, rows


def test_a_drain_older_than_the_window_is_still_told(demo_rt: Runtime) -> None:
    """The drain event is older than a 10-minute window: the node's reason stands in for it."""
    rows = [e for e in demo_report(demo_rt, since_s=600)["timeline"] if "RMA ticket 4411" in e["message"]]
    assert [r["message"] for r in rows] == ["drain reason: xid 79 gpu3 - RMA ticket 4411 (by root)"]


def test_report_charts_png_script(tmp_path: Path) -> None:
    """The example PNG's maker (scripts/report_charts_png.py) builds its page without a browser."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    try:
        import report_charts_png
    finally:
        sys.path.pop(0)
    page = report_charts_png.charts_page(tmp_path)
    assert page.count("<svg") >= 6 and "GPU 6 (failing)" in page


CHROMIUM = Path("/usr/bin/chromium")


# Chromium's own background requests (time, updates, accounts, dictionaries): not the page's.
BROWSER_HOSTS = re.compile(r"^https?://([a-z0-9-]+\.)*(google\.com|googleapis\.com|gvt1\.com|gstatic\.com)[/:]")


@pytest.mark.live
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium")
def test_chromium_draws_the_report_and_fetches_nothing(demo_doc: dict[str, Any], tmp_path: Path) -> None:
    """A real browser renders the whole report (charts inline) to a PNG, and its network log shows the
    page asked for nothing but itself (a proxy on a closed port stops any fetch that is tried)."""
    import json
    import subprocess

    page = tmp_path / "report.html"
    page.write_text(render_html(demo_doc))
    png, netlog = tmp_path / "report.png", tmp_path / "net.json"
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1000,3000",
                           "--proxy-server=127.0.0.1:9", f"--log-net-log={netlog}", f"--screenshot={png}",
                           page.as_uri()], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 50_000
    urls = set(re.findall(r'"url":\s*("(?:[^"\\]|\\.)*")', netlog.read_text()))
    fetched = {json.loads(u) for u in urls}
    assert not {u for u in fetched if not u.startswith("file:") and not BROWSER_HOSTS.match(u)}, fetched
