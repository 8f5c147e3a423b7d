"""Scale behaviour of the Line-API widgets: only visible lines are rendered, caches
invalidate on data change, and 100k-row tables sort and filter correctly."""

from __future__ import annotations

from synth import jobs, snapshot
from textual.app import App, ComposeResult

from hpctui.findings.health import Thresholds
from hpctui.model import Severity
from hpctui.ui.heat import NA_LEVEL, Metric, compute_levels, node_names
from hpctui.ui.themes import DEFAULT_VARIABLES
from hpctui.ui.widgets.heatmap import NodeHeatmap
from hpctui.ui.widgets.tables import QueueTable


class HeatmapApp(App[None]):
    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(DEFAULT_VARIABLES)

    def compose(self) -> ComposeResult:
        yield NodeHeatmap(Thresholds(), id="hm")


async def test_heatmap_16k_renders_only_visible_lines() -> None:
    app = HeatmapApp()
    async with app.run_test(size=(100, 30)) as pilot:
        hm = app.query_one(NodeHeatmap)
        hm.update_snapshot(snapshot(16384, gpus_per_node=1))
        await app.workers.wait_for_complete()  # levels of big clusters come from a worker thread
        await pilot.pause()
        assert len(hm.levels) == 16384
        assert hm.columns == 49  # 99 usable columns (1 scrollbar) / 2-wide cells
        assert hm.virtual_size.height == -(-16384 // 49)
        assert 0 < len(hm._lines) <= 30, "only visible rows were built"
        await pilot.press("end")
        await pilot.pause()
        assert hm.cursor_node == "n16383"
        assert hm.scroll_offset.y > 300
        assert len(hm._lines) <= 60


async def test_heatmap_cache_invalidated_on_new_data() -> None:
    app = HeatmapApp()
    async with app.run_test(size=(60, 20)) as pilot:
        hm = app.query_one(NodeHeatmap)
        hm.set_metric(Metric.UTIL)
        hm.update_snapshot(snapshot(500, gpus_per_node=1))
        await pilot.pause()
        before = hm.render_line(1).text
        hm.update_snapshot(snapshot(500, gpus_per_node=1, bump=50))
        assert not hm._lines, "cache dropped on data change"
        await pilot.pause()
        styles_before = [s.style for s in hm._build_row(1)]
        hm.update_snapshot(snapshot(500, gpus_per_node=1, bump=0))
        assert [s.style for s in hm._build_row(1)] != styles_before
        assert hm.render_line(1).text == before  # glyphs unchanged, colours changed


def test_levels_use_health_and_na() -> None:
    snap = snapshot(300, gpus_per_node=2)
    names = node_names(snap)
    levels, glyphs = compute_levels(snap, names, Metric.HEALTH, Thresholds())
    assert levels[0] >= Severity.WARNING  # n00000 is drained
    assert levels[211] >= Severity.ERROR  # DOWN
    assert glyphs[97] != 0 and glyphs[1] == 0
    bare = snapshot(3, gpus_per_node=0)
    levels, _ = compute_levels(bare, node_names(bare), Metric.UTIL, Thresholds())
    assert levels == bytes([NA_LEVEL] * 3), "no GPU data is N/A, not 0"


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield QueueTable(id="q")


async def test_table_100k_sort_filter_visible_only() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.query_one(QueueTable)
        rows = jobs(100_000)
        table.set_rows(rows)
        await pilot.pause()
        assert len(table.view) == 100_000
        assert len(table._lines) <= 30, "only visible rows formatted"
        table.sort_by("gpus", reverse=True)
        assert table.view[0].gpus_requested == 8
        table.sort_by("id")
        # array tasks sort under their array's id, by task number; plain jobs by their own id
        order = [(j.array_job_id if j.array_job_id is not None else j.job_id,
                  j.array_task_id if j.array_task_id is not None else -1) for j in table.view]
        assert order == sorted(order)
        assert [j.display_id for j in table.view[:3]] == ["100000_0", "100000_4", "100000_8"]
        table.set_filter("user7 ")
        assert table.view and all("user7" in (j.user or "") for j in table.view)
        table.set_filter("")
        assert len(table.view) == 100_000
        await pilot.press("end")
        assert table.cursor == 99_999


def test_cell_width_fits_the_cluster_to_the_screen() -> None:
    from hpctui.ui.labels import classic_label as node_label
    from hpctui.ui.widgets.heatmap import MAX_CELL_WIDTH, NodeHeatmap

    hm = NodeHeatmap(cell_width=2)
    hm.names = [f"gpu{i:04d}" for i in range(80)]
    assert hm._fit_cell_width(width=50, height=20) == 7  # 7 per row x 12 rows fit
    hm.names = [f"gpu{i:05d}" for i in range(16384)]
    assert hm._fit_cell_width(width=50, height=20) == 2  # never below the minimum
    hm.names = []
    assert hm._fit_cell_width(width=50, height=20) == 2
    hm.names = [f"gpu{i:04d}" for i in range(4)]
    assert MAX_CELL_WIDTH == 7
    assert hm._fit_cell_width(width=500, height=200) == 7, "a roomy screen stops growing at the cap"
    assert hm._fit_cell_width(width=13, height=1) == 3  # 4 cells of 3 fit a 13-wide row, 4 of 4 do not
    assert node_label("gpu0007") == "g0007" and node_label("cpu01") == "c01" and node_label("login") == "login"


def test_status_marks_a_fresh_source_with_warnings() -> None:
    from hpctui.model import SourceHealth
    from hpctui.ui.widgets.status import source_text

    ok = SourceHealth(name="slurm", kind="slurm", last_success=100.0)
    assert source_text(ok, 101.0, 5.0, 3.0) == ("slurm ✓ 1s", "$success")
    warned = SourceHealth(name="slurm", kind="slurm", last_success=100.0, warnings=("2 unreadable job record(s) dropped",))
    assert source_text(warned, 101.0, 5.0, 3.0) == ("slurm ⚠ 1s: 2 unreadable job record(s) dropped", "$warning")


async def test_job_id_sort_is_numeric_and_keeps_array_tasks_together() -> None:
    """Sorted by job id as squeue orders them, not by the text shown (where "10" < "9")."""
    from hpctui.model import SlurmJob

    rows = [SlurmJob(job_id=10), SlurmJob(job_id=100), SlurmJob(job_id=9),
            SlurmJob(job_id=60, array_job_id=5, array_task_id=10), SlurmJob(job_id=59, array_job_id=5, array_task_id=9),
            SlurmJob(job_id=5, array_job_id=5, array_task_str="11-20")]
    app = TableApp()
    async with app.run_test(size=(120, 20)) as pilot:
        table = app.query_one(QueueTable)
        table.set_rows(rows)
        table.sort_by("id")
        await pilot.pause()
        assert [j.display_id for j in table.view] == ["5_9", "5_10", "5_[11-20]", "9", "10", "100"]
        table.sort_by("id")  # the same column again: descending
        assert [j.display_id for j in table.view] == ["100", "10", "9", "5_[11-20]", "5_10", "5_9"]
        table.sort_by("gpus", reverse=False)
        assert table.sort_column == "gpus" and not table.sort_reverse
