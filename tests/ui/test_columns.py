"""Nothing cut that matters (issue #22 §3): every table of every pane, at every terminal size,
draws its identifier cells (ids, names, nodes, ports, states, times, hostlists, units) whole.

Only free text (a job's name, a reason, a problem, a message) may end in "…"; a pod name may
lose its middle but keeps its unique tail; a hostlist may be cut only after a whole range, and
only when its pane has no cell to spare. A cut cell never sits next to unused width."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from uikit import load

from hpctui.core.runtime import Runtime
from hpctui.ui.app import HpcApp
from hpctui.ui.fmt import elide, ib_rate
from hpctui.ui.widgets.vtable import Column, Fit, VirtualTable, fit_columns

MakeRuntime = Callable[..., Runtime]
SIZES = ((80, 24), (120, 40), (160, 50), (200, 60), (300, 80))

# Free text, by table id: the only cells that may be cut at the end.
FREE = {
    "queue": {"name", "reason"}, "pods": {"reason", "queue"}, "ib": {"problem", "errors"},
    "mounts": {"detail"}, "problems": {"what"}, "events": {"message"},
    "gpu-table": {"work", "problem"}, "audit": {"reason"}, "drained": {"reason", "states"},
}


def cells(table: VirtualTable[Any], y: int) -> list[tuple[Column[Any], int, str]]:
    """(column, width, drawn text) of line ``y`` as the table draws it."""
    line = table.render_line(y).text
    out, x = [], table._gutter
    for column, width in table.col_layout:
        out.append((column, width, line[x:x + width].strip()))
        x += width + 1
    return out


def cut_cells(table: VirtualTable[Any], size: tuple[int, int]) -> list[str]:
    """What is wrong with the visible rows of ``table``: identifier cells drawn other than whole."""
    bad: list[str] = []
    free = FREE.get(table.id or "", set())
    wide = size[0] >= 200
    top = int(table.scroll_offset.y)
    rows = table.view[top:top + max(0, table.size.height - 1)]
    any_cut = False
    for y, row in enumerate(rows, start=1):
        for column, _width, drawn in cells(table, y):
            full = column.text(row).strip()
            if drawn == full:
                continue
            any_cut = True
            where = f"{table.id} {size} {column.key}: {drawn!r} for {full!r}"
            if column.key in free:
                if not drawn.endswith("…") or not full.startswith(drawn[:-1]):
                    bad.append(where + " (free text not cut at its end)")
            elif column.elide == "middle" and not wide:
                head, _, tail = drawn.partition("…")
                unique = full.rsplit("-", 1)[-1]
                if not (full.startswith(head) and full.endswith(tail) and unique in tail):
                    bad.append(where + " (lost its unique tail)")
            elif column.elide == "list" and not wide:
                if not (drawn.rstrip("]").endswith(",…") and full.startswith(drawn.rstrip("]")[:-1])):
                    bad.append(where + " (hostlist cut inside a range)")
            else:
                bad.append(where)
    if any_cut and table.column_fit is not None and table.size.width:
        used = table._gutter + sum(w + 1 for _, w in table.col_layout)
        free_cells = table.size.width - 1 - used  # (one column is the scrollbar's)
        if free_cells > 1:
            bad.append(f"{table.id} {size}: cells cut beside {free_cells} unused columns")
    return bad


async def _dashboard_tables(app: HpcApp, pilot: Any, size: tuple[int, int]) -> list[str]:
    screen = app.dashboard
    bad: list[str] = []
    for view in ("queue", "problems", "events", "pods", "ib", "mounts"):
        screen.show_view(view)
        await pilot.pause()
        await pilot.pause()
        panes = {"queue": screen.queue_pane, "problems": screen.problems_pane, "events": screen.events_pane,
                 "pods": screen.pods_pane, "ib": screen.ib_pane, "mounts": screen.mounts_pane}
        for name, pane in panes.items():
            table = pane.table
            if table.region.area and (screen.narrow is False or name == view):
                assert table.view, f"{name} has no rows at {size}"
                bad += cut_cells(table, size)
    return bad


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_no_identifier_cut_on_the_dashboard(make_runtime: MakeRuntime, size: tuple[int, int]) -> None:
    app = HpcApp(make_runtime(seed=1), autostart=False)
    async with app.run_test(size=size) as pilot:
        await load(app, pilot)
        await app.runtime.collect_once()  # a second tick: flapped ports, ECC increments
        app.refresh_from_store()
        await pilot.pause()
        bad = await _dashboard_tables(app, pilot, size)
        assert not bad, "\n".join(bad)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("view", ["gpus", "partitions", "drained", "audit"])
async def test_no_identifier_cut_in_the_views(make_runtime: MakeRuntime, size: tuple[int, int], view: str) -> None:
    from hpctui.ui.screens.audit import AuditScreen
    from hpctui.ui.screens.drained import DrainedScreen
    from hpctui.ui.screens.gpus import GpusScreen
    from hpctui.ui.screens.partitions import PartitionsScreen

    screen_cls = {"gpus": GpusScreen, "partitions": PartitionsScreen, "drained": DrainedScreen,
                  "audit": AuditScreen}[view]
    runtime = make_runtime(seed=1)
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=size) as pilot:
        await load(app, pilot)
        if view == "audit":
            from hpctui.model.action import ActionKind
            plan = runtime.executor.plan(ActionKind.DRAIN_NODES, ("gpu[0010-0012,0014]",),
                                         {"reason": "IB link flapping on mlx5_1"}, runtime.store.snapshot())
            await runtime.executor.execute(plan, confirmation=plan.confirm_word or True)
        screen = screen_cls(runtime)
        await app.push_screen(screen)
        await pilot.pause()
        await pilot.pause()
        table = screen.table
        assert table.view, f"{view} has no rows"
        # A view scrolls sideways: every cell is drawn whole, the ones right of the screen included.
        bad = []
        for row in table.view[:40]:
            strip = table._format_row(row).text
            x = table._gutter
            for column, width in table.col_layout:
                drawn, full = strip[x:x + width].strip(), column.text(row).strip()
                if drawn != full and column.key not in FREE.get(table.id or "", set()):
                    bad.append(f"{view} {size} {column.key}: {drawn!r} for {full!r}")
                x += width + 1
        assert not bad, "\n".join(bad)


async def test_queue_nodes_and_event_times_whole_at_300(make_runtime: MakeRuntime) -> None:
    """The walk's examples: NODES and TIME whole, RATE in the compact unit, pod names whole."""
    app = HpcApp(make_runtime(seed=1), autostart=False)
    async with app.run_test(size=(300, 80)) as pilot:
        await load(app, pilot)
        screen = app.dashboard
        queue = screen.queue_pane.table
        longest = max((j.nodes or "" for j in queue.rows), key=len)
        assert {c.key: w for c, w in queue.col_layout}["nodes"] >= len(longest) > 16
        ib = screen.ib_pane.table
        assert any(c[2] == "400G NDR" for c in cells(ib, 1) if c[0].key == "rate"), cells(ib, 1)
        screen.show_view("events")
        await pilot.pause()
        await pilot.pause()
        events = screen.events_pane.table
        time_cell = next(c for c in cells(events, 1) if c[0].key == "time")
        assert len(time_cell[2]) == len("06-15 15:06:40"), time_cell


def test_fit_gives_columns_their_content_width() -> None:
    """Natural (content) widths: a short column shrinks to its content, a never-cut one is
    dropped whole rather than cut, a low-value column makes way for a cut one that matters."""
    cols = [Column(k, k.upper(), 10, str) for k in ("id", "when", "src", "msg")]
    fit = {"id": Fit(100), "when": Fit(90), "src": Fit(30), "msg": Fit(95, 10, grow=1)}
    natural = {"id": 4, "when": 14, "src": 6, "msg": 40}
    assert [(c.key, w) for c, w in fit_columns(cols, fit, 100, natural=natural)] == [
        ("id", 4), ("when", 14), ("src", 6), ("msg", 72)]
    # 61 cells: msg would be cut, so the low-value SOURCE goes first
    assert [(c.key, w) for c, w in fit_columns(cols, fit, 61, natural=natural)] == [
        ("id", 4), ("when", 14), ("msg", 40)]
    # 25 cells: WHEN cannot be cut, so it is left out whole
    assert [(c.key, w) for c, w in fit_columns(cols, fit, 25, natural=natural)] == [("id", 4), ("msg", 19)]


def test_elide_keeps_what_identifies() -> None:
    pod = "inference/vllm-llama3-70b-g74b5xt64p-fkgwf"
    short = elide(pod, 24, "middle")
    assert len(short) == 24 and short.startswith("infer") and short.endswith("g74b5xt64p-fkgwf")
    assert elide("gpu[0057-0060,0062-0063]", 20, "list") == "gpu[0057-0060,…]"
    assert elide("gpu[0057-0060]", 8, "list") == "gpu[005…"  # no whole range fits: cut, marked
    assert elide("free text here", 8) == "free te…"
    assert elide("short", 8, "middle") == "short"


def test_ib_rate_is_compact_everywhere() -> None:
    assert ib_rate(400.0, "400 Gb/sec (4X NDR)") == "400G NDR"
    assert ib_rate(200.0, None) == "200G"
    assert ib_rate(None, "100 Gb/sec (4X EDR)") == "100G EDR"
    assert ib_rate(None, None) == "N/A"


def test_snapshot_table_keeps_ready_unknown_and_long_states(tmp_path: Any) -> None:
    """`hpctui snapshot` sizes its node table to the cells: ``Ready=Unknown`` is not ``Ready=Unkn``."""
    from hpctui.cli.snapshot import render_table
    from hpctui.model import K8sNodeInfo, SlurmNodeInfo, SourceResult

    runtime = Runtime("t", [], clock=lambda: 100.0, audit_path=tmp_path / "audit.jsonl")
    runtime.store.apply(SourceResult(
        source="s", time=100.0,
        slurm_nodes={"a-very-long-node-name-01": SlurmNodeInfo(base_state="IDLE", flags=frozenset({"DRAIN", "NOT_RESPONDING"}))},
        k8s_nodes={"a-very-long-node-name-01": K8sNodeInfo(name="a-very-long-node-name-01", conditions={"Ready": "Unknown"},
                                                         unschedulable=True)}))
    lines = render_table(runtime.store.snapshot(), runtime.thresholds, now=100.0).splitlines()
    header = next(line for line in lines if line.startswith("NODE"))
    row = next(line for line in lines if line.startswith("a-very-long-node-name-01 "))
    assert "Ready=Unknown,cordon" in row.split()
    slurm = runtime.store.snapshot().nodes["a-very-long-node-name-01"].slurm
    assert slurm is not None and slurm.display_state in row.split()
    assert row.index("Ready=Unknown") == header.index("K8S")  # columns line up under their titles
