"""Charts, the GPU table and the grouped heatmap, driven through the app (Pilot)."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.color import Color
from uikit import FIXED, Clock

from hpctui.core.heatmap_settings import HeatmapSettings
from hpctui.core.runtime import demo_runtime
from hpctui.model import Severity
from hpctui.ui.app import HpcApp
from hpctui.ui.heat import CIVIDIS, GLYPH_NONE, Metric
from hpctui.ui.screens.charts import ChartsScreen
from hpctui.ui.screens.gpus import GpusScreen, gpu_indexes
from hpctui.ui.widgets.heatmap import NodeHeatmap

RACKS = {"r01": "gpu[0001-0016]", "r02": "gpu[0017-0032]", "r03": "gpu[0033-0064]"}


def make_app(tmp_path: Path, settings: HeatmapSettings | None = None) -> tuple[HpcApp, Clock]:
    clock = Clock()
    runtime = demo_runtime(size=64, seed=1, clock=clock, start_time=FIXED, audit_path=tmp_path / "audit.jsonl")
    if settings is not None:
        runtime.heatmap = settings
    return HpcApp(runtime, autostart=False), clock


async def polls(app: HpcApp, clock: Clock, pilot: object, n: int, step: float = 5.0) -> None:
    for _ in range(n):
        await app.runtime.collect_once()
        clock.t += step
    app.refresh_from_store()
    await pilot.pause()  # type: ignore[attr-defined]


def plot_text(screen: ChartsScreen, chart: str) -> str:
    return Text.from_ansi(screen.plots[chart].plt.build()).plain


async def test_charts_one_series_per_gpu_with_last_values_and_window(tmp_path: Path) -> None:
    app, clock = make_app(tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await polls(app, clock, pilot, 12)
        node = app.dashboard.heatmap.cursor_node
        await pilot.press("v")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ChartsScreen) and screen.node == node
        gpus = app.runtime.store.snapshot().gpus[node]
        assert [s.label for s in screen.plotted["util"]] == [f"GPU {g.index}" for g in gpus]
        for metric, value in (("util", lambda g: g.util_pct), ("temp", lambda g: g.temp_c),
                              ("power", lambda g: g.power_w), ("mem", lambda g: g.memory_used_mib / 1024)):
            series = screen.plotted[metric]
            assert len(series) == len(gpus)
            for s, g in zip(series, gpus, strict=True):
                assert len(s.values) == 12
                assert abs(s.values[-1] - value(g)) < 0.01, (metric, s.label)
        text = plot_text(screen, "util")
        assert "GPU utilization (%)" in text and "minutes before now" in text
        assert "-5" in text and "100" in text  # x axis in minutes, y axis in %
        legend = str(screen.query_one("#legend-util").render())
        assert f"━━ GPU0 {gpus[0].util_pct:.0f} " in legend
        assert len(screen.plotted["ib_rx"]) == len(app.runtime.store.snapshot().ib[node])
        assert all(v >= 0 for s in screen.plotted["ib_rx"] for v in s.values)

        await pilot.press("w")  # 5 min -> 1 h: the x range follows
        await pilot.pause()
        assert screen.window_s == 3600
        assert "-60" in plot_text(screen, "util") and "-60" not in text

        await polls(app, clock, pilot, 1)  # live: the stacked screen follows new snapshots
        assert screen.plotted["util"][0].values[-1] == app.runtime.store.snapshot().gpus[node][0].util_pct
        assert len(screen.plotted["util"][0].values) == 13
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.dashboard


async def test_gpus_table_problems_first_sort_filter_and_enter(tmp_path: Path) -> None:
    app, clock = make_app(tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await polls(app, clock, pilot, 2)
        await app.push_screen(GpusScreen(app.runtime))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, GpusScreen)
        table = screen.table
        snap = app.runtime.store.snapshot()
        assert len(table.rows) == sum(len(g) for g in snap.gpus.values())
        assert table.view[0].severity >= Severity.ERROR  # problems first
        severities = [r.severity for r in table.view]
        assert severities == sorted(severities, reverse=True)
        table.sort_by("util", reverse=True)
        utils = [r.gpu.util_pct for r in table.view if r.gpu.util_pct is not None]
        assert utils == sorted(utils, reverse=True)
        by_key = {f"{r.gpu.node}/{r.gpu.index}": r for r in table.rows}
        jobs = {j.display_id: j for j in snap.jobs}
        placed = 0
        for key, row in by_key.items():
            for job_id in row.work.split():
                if job_id in jobs and (alloc := gpu_indexes(jobs[job_id].gpus_alloc.get(row.gpu.node))) is not None:
                    assert row.gpu.index in alloc, key  # a job shows on its own GPUs only
                    placed += 1
        assert placed
        await pilot.press("slash", *"gpu0017", "enter")
        await pilot.pause()
        assert table.view and {r.gpu.node for r in table.view} == {"gpu0017"}
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ChartsScreen) and app.screen.node == "gpu0017"


async def test_heatmap_groups_by_rack_with_labels_and_zoom(tmp_path: Path) -> None:
    app, clock = make_app(tmp_path, HeatmapSettings(group_by="rack", racks=RACKS))
    async with app.run_test(size=(120, 40)) as pilot:
        await polls(app, clock, pilot, 1)
        hm = app.dashboard.heatmap
        labels = [g[0] for g in hm.groups]
        assert labels == ["r01", "r02", "r03", "(no rack)"]
        members = {label: hm.names[a:b] for label, a, b in hm.groups}
        assert members["r01"] == [f"gpu{i:04d}" for i in range(1, 17)]
        assert members["r03"][0] == "gpu0033" and len(members["r03"]) == 32
        assert all(n.startswith("c") for n in members["(no rack)"])
        rows = [hm.render_line(y).text for y in range(hm.size.height)]
        assert any(r.startswith("▾ r01 · 16 nodes") for r in rows)
        assert any(r.startswith("▾ r02") for r in rows)
        hm.select("gpu0016")  # last node of r01: down skips r02's label row and lands in r02
        await pilot.press("down")
        assert hm.cursor_node in members["r02"]
        await pilot.press("up")
        assert hm.cursor_node in members["r01"]
        small = hm.cell_width
        hm.select("gpu0020")
        await pilot.press("z")
        await pilot.pause()
        assert hm.zoom == "r02" and hm.names == members["r02"]
        assert hm.cell_width > small  # larger cells when one group fills the pane
        assert "zoom r02" in str(app.dashboard.query_one("#heatmap-pane").border_title)
        assert hm.select("gpu0001")  # a node outside the zoomed group: zoom ends, cursor moves
        await pilot.pause()
        assert hm.zoom is None and len(hm.names) == 80 and hm.cursor_node == "gpu0001"
        hm.select("gpu0040")
        await pilot.press("z")
        await pilot.pause()
        assert hm.zoom == "r03"
        await pilot.press("z")
        await pilot.pause()
        assert hm.zoom is None and len(hm.names) == 80
        await pilot.press("o")  # rack -> model
        await pilot.pause()
        assert hm.group_by == "model"
        assert {g[0] for g in hm.groups} >= {"H100 80GB HBM3", "(no GPU)"}


async def test_problems_first_puts_worst_nodes_first(tmp_path: Path) -> None:
    app, clock = make_app(tmp_path, HeatmapSettings(group_by="partition", problems_first=True))
    async with app.run_test(size=(160, 50)) as pilot:
        await polls(app, clock, pilot, 1)
        hm = app.dashboard.heatmap
        findings = app.runtime.findings()
        for _, a, b in hm.groups:
            sev = [int(findings.severity(n)) for n in hm.names[a:b]]
            assert sev == sorted(sev, reverse=True)
        assert any(int(findings.severity(hm.names[a])) >= Severity.ERROR for _, a, _ in hm.groups)


def _cell_style(hm: NodeHeatmap, node: str):  # the style a node's cell is drawn with
    i = hm.names.index(node)
    return hm._segment(hm.levels[i], hm.glyphs[i], False, False).style


async def test_busy_gpus_are_not_drawn_in_the_error_colour(tmp_path: Path) -> None:
    app, clock = make_app(tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await polls(app, clock, pilot, 1)
        hm = app.dashboard.heatmap
        hm.set_metric(Metric.UTIL)
        await pilot.pause()
        busy = [n for i, n in enumerate(hm.names) if hm.levels[i] == 4]
        assert busy, "the demo has GPUs at >= 80 %"
        variables = app.theme_variables
        red = {Color.parse(variables[v]).rich_color for v in ("sev-error", "heat-4", "error", "sev-critical")}
        util4 = Color.parse(variables["util-4"]).rich_color
        for node in busy:
            style = _cell_style(hm, node)
            assert style.bgcolor not in red
            assert style.bgcolor == util4


async def test_colorblind_palette_changes_colours_and_adds_severity_glyphs(tmp_path: Path) -> None:
    app, clock = make_app(tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await polls(app, clock, pilot, 1)
        hm = app.dashboard.heatmap
        sick = next(n for i, n in enumerate(hm.names) if hm.levels[i] >= 3 and hm.glyphs[i] == GLYPH_NONE)
        healthy = next(n for i, n in enumerate(hm.names) if hm.levels[i] == 0)
        before = (_cell_style(hm, sick).bgcolor, _cell_style(hm, healthy).bgcolor)
        hm.set_palette("colorblind")
        await pilot.pause()
        after = (_cell_style(hm, sick).bgcolor, _cell_style(hm, healthy).bgcolor)
        assert after != before and after[0] != after[1]
        i = hm.names.index(sick)
        assert hm._segment(hm.levels[i], hm.glyphs[i], False, False).text[0] in "▲◆"
        hm.set_metric(Metric.TEMP)
        await pilot.pause()
        assert hm._base[0].bgcolor == Color.parse(CIVIDIS[0]).rich_color


class FakeMetrics:
    """A metrics source answering range queries (what PrometheusSource.history returns)."""

    name = "prom"
    interval_s = 10.0

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, int | None, float | None]] = []

    async def history(self, node: str, metric: str = "util", gpu: int | None = None,
                      window_s: float | None = None, points: int = 120) -> object:
        from hpctui.model.history import MetricHistory

        self.asked.append((node, metric, gpu, window_s))
        value = {"util": 42.0, "temp": 60.0, "power": 500.0, "mem": 10240.0}[metric] + (gpu or 0)
        return MetricHistory(node=node, metric=metric, gpu=gpu, start=FIXED - 3600, end=FIXED, step_s=30,
                             points=[(FIXED - 60.0, value), (FIXED, value)])


async def test_charts_use_range_queries_when_a_metrics_source_has_them(tmp_path: Path) -> None:
    app, clock = make_app(tmp_path)
    fake = FakeMetrics()
    async with app.run_test(size=(160, 50)) as pilot:
        await polls(app, clock, pilot, 2)
        app.runtime.sources.append(fake)  # type: ignore[arg-type]
        await app.push_screen(ChartsScreen(app.runtime, node="gpu0001"))
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ChartsScreen)
        assert screen.source_text == "prom"
        assert {(m, g) for n, m, g, w in fake.asked if n == "gpu0001" and g is not None} == {
            (m, g) for m in ("util", "temp", "power", "mem") for g in range(8)}
        assert screen.plotted["util"][3].values == [45.0, 45.0]
        assert screen.plotted["mem"][0].values == [10.0, 10.0]  # MiB from DCGM -> GiB
        await pilot.press("w")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert any(w == 3600 for *_, w in fake.asked)


def test_gpu_indexes() -> None:
    assert gpu_indexes("0-1,4") == {0, 1, 4}
    assert gpu_indexes("3") == {3}
    assert gpu_indexes("") is None and gpu_indexes(None) is None and gpu_indexes("x-y") is None


async def test_config_palette_reaches_the_heatmap(tmp_path: Path) -> None:
    from hpctui.ui.heat import COLORBLIND_HEALTH

    app, clock = make_app(tmp_path, HeatmapSettings(palette="colorblind", group_by="partition"))
    async with app.run_test(size=(160, 50)) as pilot:
        await polls(app, clock, pilot, 1)
        hm = app.dashboard.heatmap
        assert hm.palette_name == "colorblind" and hm.group_by == "partition"
        assert [s.bgcolor for s in hm._base] == [Color.parse(c).rich_color for c in COLORBLIND_HEALTH]
        legend = str(app.dashboard.query_one("#legend").render())
        assert "▲" in legend and "◆" in legend  # severity by glyph in the legend too


async def test_charts_legend_now_is_na_when_the_gpu_reports_na_now(tmp_path: Path) -> None:
    """The legend's "now" is the newest sample: a GPU that stopped reporting shows N/A, not its
    last reading from before."""
    import msgspec

    from hpctui.model import SourceResult

    app, clock = make_app(tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await polls(app, clock, pilot, 3, step=2.0)
        node = "gpu0001"
        await app.push_screen(ChartsScreen(app.runtime, node=node))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ChartsScreen)
        store = app.runtime.store
        gpus = store.snapshot().gpus[node]
        blank = (msgspec.structs.replace(gpus[0], util_pct=None), *gpus[1:])
        store.apply(SourceResult(source="demo", time=clock.t, gpus={node: blank}))
        app.refresh_from_store()
        await pilot.pause()
        assert screen.plotted["util"][0].values[-1] == gpus[0].util_pct  # the line keeps its past
        legend = str(screen.query_one("#legend-util").render())
        assert "━━ GPU0 N/A " in legend
        assert f"━━ GPU1 {gpus[1].util_pct:.0f} " in legend


def test_legend_now_text_newest_sample_and_age() -> None:
    from hpctui.core.series_history import Series
    from hpctui.ui.screens.charts import now_text

    assert now_text(Series("GPU 0", [10.0, 12.0], [50.0, 61.5], newest=12.0), 12.0, 4.0) == "61.5"
    assert now_text(Series("GPU 0", [10.0, 12.0], [50.0, 61.0], newest=14.0), 14.0, 4.0) == "N/A"  # N/A now
    assert now_text(Series("GPU 0", [10.0], [50.0]), 10.0 + 3600, 4.0) == "N/A"  # an hour-old reading
    assert now_text(Series("GPU 0", [], []), 10.0, 4.0) == "N/A"


class FailingMetrics(FakeMetrics):
    async def history(self, node: str, metric: str = "util", gpu: int | None = None,
                      window_s: float | None = None, points: int = 120) -> object:
        raise RuntimeError("bad query [/] [@click=app.quit]")


async def test_charts_range_query_error_text_is_not_markup(tmp_path: Path) -> None:
    from textual.widgets._toast import Toast

    app, clock = make_app(tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await polls(app, clock, pilot, 2)
        app.runtime.sources.append(FailingMetrics())  # type: ignore[arg-type]
        await app.push_screen(ChartsScreen(app.runtime, node="gpu0001"))
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.is_running and isinstance(app.screen, ChartsScreen)
        toasts = [Toast(n).render().plain for n in app._notifications]  # rendered as the toast would
        assert any("RuntimeError: bad query [/] [@click=app.quit]" in t for t in toasts), toasts
