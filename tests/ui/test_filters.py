"""Issue #11: filters that know clusters — text, ``re:``, node names and hostlists, ``!``."""

from __future__ import annotations

from collections.abc import Callable

from uikit import load

from hpctui.core.runtime import Runtime
from hpctui.model.hostlist import expand
from hpctui.ui.app import HpcApp
from hpctui.ui.widgets.tables import QueueTable
from hpctui.ui.widgets.vtable import RowFilter, hostlist_set


def test_row_filter_parses_text_regex_hostlists_and_inversion() -> None:
    assert RowFilter.parse("Heidi") == RowFilter("heidi")
    f = RowFilter.parse("gpu[0002-0005]")
    assert f.nodes == frozenset({"gpu0002", "gpu0003", "gpu0004", "gpu0005"})
    assert f.match("1017 heidi", hostlist_set("gpu[0003,0010]"))
    assert not f.match("1018 judy", hostlist_set("gpu0006"))
    assert RowFilter.parse("gpu0003,gpu0010").nodes == frozenset({"gpu0003", "gpu0010"})
    assert RowFilter.parse("1017").nodes is None, "a job id is text, not a node"
    inv = RowFilter.parse("!running")
    assert inv.invert and not inv.match("1 running", None) and inv.match("2 pending", None)
    rx = RowFilter.parse("re:^10(17|18) ")
    assert rx.regex is not None and rx.match("1017 heidi", None) and not rx.match("1019 grace", None)
    bad = RowFilter.parse("re:(")
    assert bad.error and not bad.match("anything", None)
    assert hostlist_set("gpu[01-02]") == frozenset({"gpu01", "gpu02"}) and hostlist_set("") == frozenset()


async def test_queue_filter_by_a_node_inside_a_job_hostlist(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(seed=1), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        queue = app.screen.query_one(QueueTable)
        job = next(j for j in queue.rows if j.nodes and "[" in j.nodes and "-" in j.nodes)
        inner = expand(job.nodes or "")[1]
        assert inner not in (job.nodes or "")
        queue.focus()
        await pilot.press("slash", *inner, "enter")
        await pilot.pause()
        assert job.display_id in [j.display_id for j in queue.view]
        assert all(inner in expand(j.nodes or "") for j in queue.view)
        total = len(queue.rows)
        await pilot.press("slash", "escape")
        await pilot.press("slash", *"!running", "enter")
        await pilot.pause()
        assert 0 < len(queue.view) < total and all(j.state != "RUNNING" for j in queue.view)
        await pilot.press("slash", "escape")
        await pilot.press("slash", *"re:^10(17|18) ", "enter")
        await pilot.pause()
        assert {j.display_id for j in queue.view} <= {"1017", "1018"} and queue.view
        title = str(app.dashboard.queue_pane.border_title)
        assert "/re:^10(17|18)" in title
