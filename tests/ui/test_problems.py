"""Issue #11: the Problems view, n/N, enter-to-select, the Events view, and every scripted
demo incident within two key presses of the first screen."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from uikit import FIXED, load

from hpctui.core.runtime import Runtime, demo_runtime
from hpctui.findings.health import Finding, Thresholds
from hpctui.findings.index import findings_for
from hpctui.model import ClusterSnapshot, Event, Severity
from hpctui.model.hostlist import expand
from hpctui.sim.incidents import Placement
from hpctui.ui.app import HpcApp
from hpctui.ui.screens.job_detail import JobDetailScreen
from hpctui.ui.widgets.events import EventsPane, event_nodes
from hpctui.ui.widgets.problems import ProblemMemory, ProblemsPane, next_problem_node, problem_groups
from hpctui.ui.widgets.tables import QueueTable


def placement(runtime: Runtime) -> Placement:
    return runtime.sources[0].sim.place  # type: ignore[attr-defined, no-any-return]


def incidents(p: Placement) -> dict[str, str]:
    return {"xid79": p.xid_node, "ecc": p.ecc_node, "thermal": p.thermal_node, "ib_flap": p.flap_node,
            "hung_mount": p.hung_node}


async def two_ticks(app: HpcApp, pilot: object) -> None:
    await load(app, pilot)
    await load(app, pilot)  # the flapping port has gone down and up once


async def test_problem_list_worst_first_grouped_by_node_with_gpu(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(seed=1), autostart=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await two_ticks(app, pilot)
        await pilot.press("p")
        await pilot.pause()
        pane = app.screen.query_one(ProblemsPane)
        assert app.focused is pane.problems
        rows = pane.problems.view
        snap = app.runtime.store.snapshot()
        # the rules' findings plus those that need memory across frames (idle GPUs: the frame's)
        index = findings_for(snap, app.runtime.thresholds).with_extra(app.runtime.frame().idle.findings)
        expected = [f for f in index if f.severity >= Severity.WARNING]
        current = [r for r in rows if not r.finding.code.endswith("_recovered")]
        missing = {(f.object, f.code) for f in expected} - {(r.finding.object, r.finding.code) for r in current}
        assert len(current) == len(expected), f"every finding of warning and worse, once: {missing}"
        assert all(r.severity >= Severity.WARNING for r in rows)
        # ranked by the worst within the flap window (a flapped port's node stays an error node while it shows
        # a warning now; ProblemMemory.order)
        worst = [max(pane.memory.peak_severity(n), *(r.severity for r in rows if r.node == n))
                 for n in pane.nodes]
        assert worst == sorted(worst, reverse=True), "worst node first"
        seen: list[str] = []
        for r in rows:  # grouped: a node's rows are contiguous, its number on the first
            if not seen or seen[-1] != r.node:
                assert r.node not in seen and r.first
                seen.append(r.node)
        p = placement(app.runtime)
        thermal = [r for r in rows if r.node == p.thermal_node and r.finding.code == "temp"]
        assert thermal and thermal[0].gpu == p.thermal_gpu
        assert f"GPU {p.thermal_gpu} at " in thermal[0].finding.message
        xid = next(r for r in rows if r.finding.code == "xid79")
        assert xid.since == FIXED - 1900, "since: the stored Xid event"
        assert xid.source == "demo"
        flap = [r for r in rows if r.node == p.flap_node]
        assert flap, "a flapping port that came back up is remembered"


async def test_enter_and_digits_select_the_node_everywhere(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(seed=1), autostart=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await two_ticks(app, pilot)
        await pilot.press("p", "3")
        await pilot.pause()
        pane = app.screen.query_one(ProblemsPane)
        third = pane.nodes[2]
        assert app.dashboard.selected == third and app.dashboard.heatmap.cursor_node == third
        assert app.dashboard.gpu_panel.border_title and third in str(app.dashboard.gpu_panel.border_title)
        await pilot.press("down", "down", "down", "down", "down", "down", "enter")
        await pilot.pause()
        row = pane.problems.cursor_row
        assert row is not None and app.dashboard.selected == row.node


async def test_n_and_shift_n_walk_problem_nodes_from_any_view(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(seed=1), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await two_ticks(app, pilot)
        nodes = app.screen.query_one(ProblemsPane).nodes
        assert len(nodes) >= 3
        await pilot.press("n")  # from the heatmap, the first screen
        await pilot.pause()
        assert app.dashboard.selected == nodes[0]
        await pilot.press("n")
        await pilot.pause()
        assert app.dashboard.selected == nodes[1]
        await pilot.press("N", "N")
        await pilot.pause()
        assert app.dashboard.selected == nodes[-1], "wraps around"
        queue = app.screen.query_one(QueueTable)  # from another pane, and from the job detail
        queue.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, JobDetailScreen)
        await pilot.press("n")
        await pilot.pause()
        assert app.screen is app.dashboard and app.dashboard.selected == nodes[0]


@pytest.mark.parametrize("incident", ["xid79", "ecc", "thermal", "ib_flap", "hung_mount"])
async def test_each_scripted_incident_within_two_keys(tmp_path: Path, incident: str) -> None:
    """``hpctui --demo --seed 1`` at 200×60: p, then the problem's number."""
    runtime = demo_runtime(size=64, seed=1, clock=lambda: FIXED, start_time=FIXED,
                           audit_path=tmp_path / "audit.jsonl")
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await two_ticks(app, pilot)
        node = incidents(placement(runtime))[incident]
        nodes = app.screen.query_one(ProblemsPane).nodes
        assert node in nodes[:9], f"{incident} on {node} is among the first nine problem nodes"
        keys = ("p", str(nodes.index(node) + 1))
        await pilot.press(*keys)
        await pilot.pause()
        assert len(keys) <= 2
        assert app.dashboard.selected == node and app.dashboard.heatmap.cursor_node == node


async def test_wall_starts_on_the_problem_list(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), wall=True, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        pane = app.screen.query_one("#wall-top-problems", ProblemsPane)  # under the wall's heatmap, the first view
        assert pane.display and pane.region.width > 0 and pane.problems.view


async def test_enter_on_ib_mount_and_pod_rows_selects_their_node(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        for table_id in ("#ib", "#mounts", "#pods"):
            table = app.screen.query_one(table_id)
            table.focus()
            await pilot.press("down", "down", "down")
            if table_id == "#pods":  # past the Pending pods (no node yet), onto a running one
                await pilot.press("down", "down")
            await pilot.press("enter")
            await pilot.pause()
            row = table.cursor_row  # type: ignore[attr-defined]
            node = getattr(getattr(row, "port", None) or getattr(row, "mount", None) or row, "node", None)
            assert node and app.dashboard.selected == node, table_id


def test_memory_counts_flaps_and_forgets_after_the_window() -> None:
    bad = Finding(severity=Severity.ERROR, object="ib/n1/mlx5_0:1", code="ib_down", message="port DOWN")
    memory = ProblemMemory(window_s=100)

    def snap(t: float, events: tuple[Event, ...] = ()) -> ClusterSnapshot:
        return ClusterSnapshot(cluster="c", time=t, events=events)

    ev = Event(time=5.0, source="ib", object="ib/n1/mlx5_0/1", severity=Severity.WARNING, message="link down")
    memory.update(snap(10, (ev,)), [bad])
    assert memory.first_seen[(bad.object, bad.code)] == 5.0, "event spelling of the object matches"
    memory.update(snap(20), [])
    assert (bad.object, bad.code) in memory.recovered
    memory.update(snap(30), [bad])
    assert memory.bad_count[(bad.object, bad.code)] == 2 and not memory.recovered
    memory.update(snap(40), [])
    memory.update(snap(200), [])
    assert not memory.recovered and not memory.bad_count, "forgotten after the window"


def test_problem_groups_and_walk_order() -> None:
    snap = ClusterSnapshot(cluster="c", time=0.0)
    assert problem_groups(findings_for(snap, Thresholds())) == []
    assert next_problem_node([], None, 1) is None
    assert next_problem_node(["a", "b", "c"], None, 1) == "a"
    assert next_problem_node(["a", "b", "c"], None, -1) == "c"
    assert next_problem_node(["a", "b", "c"], "c", 1) == "a"
    assert next_problem_node(["a", "b", "c"], "a", -1) == "c"


async def test_events_view_shows_incidents_and_actions_live(make_runtime: Callable[..., Runtime]) -> None:
    from test_triage import drive_dialog

    app = HpcApp(make_runtime(seed=1), autostart=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await load(app, pilot)
        await pilot.press("e")
        await pilot.pause()
        pane = app.screen.query_one(EventsPane)
        assert app.focused is pane.table
        events = pane.table.view
        assert events and [e.time for e in events] == sorted((e.time for e in events), reverse=True)
        p = placement(app.runtime)
        assert any("Xid" in e.message and p.xid_node in e.object for e in events)
        # per node: 'a' follows the selected node
        app.dashboard.select_node(p.hung_node)
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        assert pane.table.view and all(p.hung_node in event_nodes(e) for e in pane.table.view)
        await pilot.press("a")
        await pilot.pause()
        # per job / node by filter text
        await pilot.press("slash", *p.ecc_node, "enter")
        await pilot.pause()
        assert pane.table.view and all(p.ecc_node in e.object for e in pane.table.view)
        await pilot.press("slash", "escape")
        await pilot.pause()
        # an action shows up live
        app.dashboard.heatmap.select(p.slow_node)
        app.dashboard.heatmap.focus()
        await pilot.pause()
        await pilot.press("d")
        await pilot.pause()
        await drive_dialog(app, pilot, reason="slow nfs")
        await pilot.press("escape")
        await load(app, pilot)
        app.dashboard.show_view("events")
        await pilot.pause()
        action = [e for e in pane.table.view if e.source == "action"]
        assert action and "drain" in action[0].message and "slow nfs" in action[0].message
        assert p.slow_node in event_nodes(action[0])


async def test_events_view_reads_earlier_actions_from_the_audit_trail(make_runtime: Callable[..., Runtime],
                                                                      tmp_path: Path) -> None:
    import json

    (tmp_path / "audit.jsonl").write_text(json.dumps({
        "time": FIXED - 50, "finished": FIXED - 49, "cluster": "demo", "user": "alice", "action": "resume",
        "source": "demo", "targets": ["gpu0003", "gpu0004"], "params": {}, "commands": [], "refused": None,
        "results": [{"target": "gpu0003", "ok": True, "message": ""}, {"target": "gpu0004", "ok": True,
                                                                         "message": ""}]}) + "\n{torn")
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        await app.workers.wait_for_complete()  # the history is read in a worker thread
        pane = app.screen.query_one(EventsPane)
        # a torn last line costs that line (and says so), not the history before it
        assert [e.source for e in pane.history] == ["action", "audit"]
        (tmp_path / "audit.jsonl").write_text((tmp_path / "audit.jsonl").read_text().rsplit("\n", 1)[0] + "\n")
        history = app.runtime.audit_history()
        assert history and history[0].source == "action" and "alice resume: ok" in history[0].message
        assert event_nodes(history[0]) == ["gpu0003", "gpu0004"]


async def test_go_to_a_node_job_pod_or_hostlist(make_runtime: Callable[..., Runtime]) -> None:
    from test_safety import burst

    app = HpcApp(make_runtime(seed=1), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        snap = app.runtime.store.snapshot()
        # typed fast right after g: held until the input exists; "d" must not open a drain dialog
        await burst(app, pilot, "gdgpu0003\r".replace("\r", ""))
        await pilot.pause()
        box = app.screen.query_one("#goto-input")
        assert box.value == "dgpu0003", "every key after g reached the input"  # type: ignore[attr-defined]
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.dashboard
        await pilot.press("g", *"gpu0003", "enter")
        await pilot.pause()
        assert app.dashboard.selected == "gpu0003"
        job = next(j for j in snap.jobs if j.nodes and "[" in j.nodes and j.state == "RUNNING")
        await pilot.press("g", *job.display_id, "enter")
        await pilot.pause()
        assert isinstance(app.screen, JobDetailScreen) and app.screen.job.display_id == job.display_id
        await pilot.press("escape")
        await pilot.pause()
        assert app.dashboard.selected == expand(job.nodes or "")[0] and not app.dashboard.heatmap.marked_nodes
        pod = next(p for p in snap.pods if p.node)
        await pilot.press("g", *f"{pod.namespace}/{pod.name}", "enter")
        await pilot.pause()
        assert app.dashboard.selected == pod.node
        await pilot.press("g", *"gpu[0010-0012]", "enter")
        await pilot.pause()
        assert app.dashboard.selected == "gpu0010"
        assert app.dashboard.heatmap.marked_nodes == ("gpu0010", "gpu0011", "gpu0012")
        await pilot.press("g", *"nosuchthing", "enter")
        await pilot.pause()
        assert app.screen is app.dashboard and app.dashboard.selected == "gpu0010"


async def test_empty_panes_say_which_source_fills_them(tmp_path: Path) -> None:
    from hpctui.cli.snapshot import render_table
    from hpctui.model import SlurmNodeInfo, SourceResult

    runtime = Runtime("slurm-only", [], clock=lambda: FIXED, audit_path=tmp_path / "audit.jsonl")
    runtime.store.apply(SourceResult(source="slurm", time=FIXED, slurm_nodes={
        "hgx-h200-01": SlurmNodeInfo(base_state="IDLE", gpus_total=8)}, slurm_jobs=()))
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        app.refresh_from_store()
        await pilot.pause()
        ib = str(app.dashboard.ib_pane.border_title)
        assert "no source provides InfiniBand data — add an `ssh` or `prometheus` source" in ib
        assert "add a `k8s` source" in str(app.dashboard.pods_pane.border_title)
        assert "no source" not in str(app.dashboard.queue_pane.border_title), "slurm jobs came (none running)"
    table = render_table(runtime.store.snapshot(), runtime.thresholds, now=FIXED)
    row = next(line for line in table.splitlines() if line.startswith("hgx-h200-01"))
    assert row.split()[3] == "8", "GPU count from Slurm's GRES when nothing else reports GPUs"


def test_job_detail_shows_elapsed_and_time_left() -> None:
    from hpctui.model import SlurmJob
    from hpctui.ui.screens.job_detail import job_lines

    job = SlurmJob(job_id=9, state="RUNNING", nodes="gpu01", time_limit_min=60, start_time=1000.0, submit_time=900.0)
    text = str(job_lines(job, now=1000.0 + 1800))
    assert "elapsed / left" in text and "30m / 30m" in text
    assert "over its limit" in str(job_lines(job, now=1000.0 + 3700))


async def test_job_actions_from_the_job_detail(make_runtime: Callable[..., Runtime]) -> None:
    from hpctui.ui.screens.action_dialog import ActionDialog

    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        queue = app.screen.query_one(QueueTable)
        job = next(j for j in queue.view if j.state == "PENDING")
        queue.focus()
        queue.set_filter(job.display_id)
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, JobDetailScreen)
        await pilot.press("z")
        await pilot.pause()
        assert isinstance(app.screen, ActionDialog) and app.screen.plan.targets == (job.display_id,)
    ro = HpcApp(make_runtime(read_only=True), autostart=False)
    async with ro.run_test(size=(160, 50)) as pilot:
        await load(ro, pilot)
        ro.screen.query_one(QueueTable).focus()
        await pilot.press("enter", "x")
        await pilot.pause()
        assert isinstance(ro.screen, JobDetailScreen), "read-only: no dialog"


async def test_w_shows_the_selected_nodes_jobs_and_pods_as_rows(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(seed=1), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        snap = app.runtime.store.snapshot()
        job = next(j for j in snap.jobs if j.nodes and "[" in j.nodes and j.state == "RUNNING")
        inner = expand(job.nodes or "")[-1]
        app.dashboard.select_node(inner)
        await pilot.pause()
        await pilot.press("w")
        await pilot.pause()
        queue = app.screen.query_one(QueueTable)
        assert app.focused is queue and job.display_id in [j.display_id for j in queue.view]
        assert all(inner in expand(j.nodes or "") for j in queue.view)
        pods = app.dashboard.pods_pane.table.view
        assert all(p.node == inner for p in pods)


async def test_s_in_the_job_detail_selects_the_jobs_nodes(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(seed=1), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        job = next(j for j in app.runtime.store.snapshot().jobs if j.nodes and "[" in j.nodes and j.state == "RUNNING")
        await pilot.press("g", *job.display_id, "enter")
        await pilot.pause()
        assert isinstance(app.screen, JobDetailScreen)
        await pilot.press("s")
        await pilot.pause()
        assert app.screen is app.dashboard
        assert set(app.dashboard.heatmap.marked_nodes) == set(expand(job.nodes or ""))
        assert app.dashboard.selected == expand(job.nodes or "")[0]


async def test_storage_groups_follow_the_nodes(make_runtime: Callable[..., Runtime]) -> None:
    """The demo's Ceph (HEALTH_WARN, osd.17 down) and the S3 endpoint refusing its key: one group each, after
    every node and before slurmctld's, outside the n/N walk, named by the part's source (issue #27)."""
    app = HpcApp(make_runtime(seed=1), autostart=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await two_ticks(app, pilot)
        await pilot.press("p")
        await pilot.pause()
        pane = app.screen.query_one(ProblemsPane)
        groups = list(dict.fromkeys(r.node for r in pane.problems.view))
        storage = [g for g in groups if g.startswith(("ceph/", "s3/"))]
        assert storage == ["s3/datasets", "ceph/ceph"]  # the error group first
        nodes = [g for g in groups if g in pane.nodes]  # the other non-node groups (fs, quota, class) mix with storage
        assert groups.index(storage[0]) > max(groups.index(n) for n in nodes)
        assert groups[-1] == "slurmctld" and not set(storage) & set(pane.nodes)
        ceph = [r for r in pane.problems.view if r.node == "ceph/ceph"]
        # (and the slow node's CephFS mount of that cluster, counted in its group)
        assert [r.finding.code for r in ceph] == ["ceph_osd_down", "ceph_pg_degraded", "ceph_mounts"]
        assert ceph[0].first and ceph[0].source == "demo" and "osd.17" in ceph[0].finding.message
