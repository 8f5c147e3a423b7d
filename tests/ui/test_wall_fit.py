"""Issue #22 §5: the wall's heatmap scales to the node count and the screen, every problem node is
listed (or "+N more" by kind), the worst node's reason is never cut, and on the dashboard the
problem nodes are on screen at any size."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from uikit import load

from hpctui.core.runtime import Runtime
from hpctui.findings.health import Finding
from hpctui.findings.index import findings_for
from hpctui.model import Severity
from hpctui.ui.app import HpcApp
from hpctui.ui.screens.wall import WallScreen


def visible_nodes(hm: object) -> int:
    """How many nodes the heatmap shows without scrolling."""
    region = hm.scrollable_content_region  # type: ignore[attr-defined]
    rows = region.height // getattr(hm, "cell_height", 1)
    return min(len(hm.names), rows * hm.columns)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("demo_size", "size"), [(64, (200, 60)), (4096, (200, 60)), (64, (120, 40))])
async def test_wall_heatmap_fits_every_node_and_lists_every_problem(make_runtime: Callable[..., Runtime],
                                                                     demo_size: int, size: tuple[int, int]) -> None:
    app = HpcApp(make_runtime(size=demo_size, seed=1), wall=True, autostart=False)
    async with app.run_test(size=size) as pilot:
        await load(app, pilot)
        await load(app, pilot)
        wall = app.screen
        assert isinstance(wall, WallScreen)
        hm = wall.heatmap
        assert visible_nodes(hm) == len(hm.names), "every node on screen, no scrolling"
        view = wall.query_one("#wall-heatmap-view")
        pane = wall.query_one("#wall-heatmap-pane")
        if demo_size == 64 and size == (200, 60):
            assert hm.cell_width >= 10 and hm.cell_height >= 2, "few nodes on a big screen: big cells"
            # the demo's many incidents (idle GPUs, a flapping leaf switch, slurmctld, the file system, quota,
            # Ceph, S3 and storage-class groups) take half the column: wall_heat_layout's promise is a third
            assert pane.outer_size.height >= view.size.height // 3, "the heatmap keeps a third at least"
            assert len(wall.top_problems.problems.view) >= 20, "and the list has room for every group"
            lines = hm.scrollable_content_region.height
            assert hm._total_rows * hm.cell_height >= lines - hm.cell_height, "no empty band under the cells"
        assert wall.frame is not None
        index = wall.frame.findings  # the frame the wall drew: the rules' and the idle tracker's (hpctui.findings.idle)
        problem_nodes = {n for n in index.by_node if index.severity(n) >= Severity.WARNING}
        if any(f.severity >= Severity.WARNING for f in index.cluster):
            problem_nodes.add("slurmctld")  # slurmctld's own findings: one group of their own, last
        problem_nodes |= {f.object for f in index.leading if f.severity >= Severity.WARNING}  # suspect switches
        table = wall.top_problems.problems
        listed = {r.node for r in table.view if r.node}
        more = [r for r in table.view if r.finding.code == "more"]  # the rows that do not fit: "+N more nodes"
        hidden = int(more[0].finding.message.split()[0].lstrip("+")) if more else 0
        assert listed <= problem_nodes and len(listed) + hidden == len(problem_nodes), \
            "every problem node has a row, or is counted in the last one"
        assert table.size.height - 1 >= len(table.view), "every row on screen"
        worst = wall.worst
        assert worst is not None
        reason = index.node(worst)[0].message
        line = wall.query_one("#wall-worst")
        text = "".join(line.render_line(y).text for y in range(line.size.height))
        assert " ".join(reason.split()) in " ".join(text.split()), "the worst node's reason is never cut"


def test_more_row_counts_the_hidden_nodes_by_kind() -> None:
    from hpctui.ui.screens.wall import fit_problem_rows, node_rows
    from hpctui.ui.widgets.problems import ProblemRow

    def row(n: int, node: str, obj: str, first: bool, sev: Severity = Severity.ERROR) -> ProblemRow:
        f = Finding(severity=sev, object=obj, code="x", message=f"{obj} bad")
        return ProblemRow(number=n, first=first, node=node, gpu=None, finding=f, since=0.0, source="demo")

    rows = [row(1, "a", "gpu/a/0", True), row(1, "a", "gpu/a/1", False), row(2, "b", "ib/b/mlx5_0:1", True),
            row(3, "c", "ib/c/mlx5_0:1", True, Severity.CRITICAL), row(4, "d", "mount/d:/x", True)]
    per_node = node_rows(rows)
    assert [r.node for r in per_node] == ["a", "b", "c", "d"] and per_node[0].finding.message.endswith("(+1 more)")
    assert fit_problem_rows(per_node, rows, 4) == per_node
    fitted = fit_problem_rows(per_node, rows, 2)
    assert [r.node for r in fitted] == ["a", ""]
    assert fitted[-1].finding.message == "+3 more nodes: 2 ib, 1 mount"
    assert fitted[-1].severity == Severity.CRITICAL, "the +N row is as bad as the worst it hides"


def test_fit_cells_scales_with_nodes_and_screen() -> None:
    from hpctui.ui.widgets.node_heatmap import fit_cells

    def rows(n: int) -> Callable[[int], int]:
        return lambda cols: -(-n // cols)

    assert fit_cells(80, rows(80), 130, 36, max_width=16, max_height=5) == (14, 4)
    assert fit_cells(5120, rows(5120), 157, 33, max_width=16, max_height=5) == (1, 1)
    assert fit_cells(80, rows(80), 50, 20, min_width=2) == (7, 1), "the dashboard's cells: one line"
    w, h = fit_cells(16, rows(16), 300, 80, max_width=16, max_height=5)
    assert (w, h) == (16, 5) and w >= 2 * h - 1


@pytest.mark.parametrize(("demo_size", "size"), [(4096, (160, 50)), (4096, (300, 80)), (64, (80, 24))])
async def test_dashboard_problem_nodes_always_on_screen(make_runtime: Callable[..., Runtime], demo_size: int,
                                                        size: tuple[int, int]) -> None:
    app = HpcApp(make_runtime(size=demo_size, seed=1), autostart=False)
    async with app.run_test(size=size) as pilot:
        await load(app, pilot)
        await load(app, pilot)
        hm = app.dashboard.heatmap
        index = findings_for(app.runtime.store.snapshot(), app.runtime.thresholds)
        bad = [n for n in hm.names if index.severity(n) >= Severity.WARNING]
        assert bad
        shown = visible_nodes(hm)
        top = int(hm.scroll_offset.y) // getattr(hm, "cell_height", 1) * hm.columns
        on_screen = set(hm.names[top:top + shown])
        assert set(bad) <= on_screen, f"{len(set(bad) - on_screen)} problem nodes off screen"
        if shown < len(hm.names):
            assert hm.problems_first, "not every node fits: problem nodes first"
        await pilot.press("P")  # the key still decides, and then it sticks
        await pilot.pause()
        assert hm.problems_first is (shown == len(hm.names))
