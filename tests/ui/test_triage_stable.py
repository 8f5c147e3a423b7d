"""Issue #22 §2: triage that holds still — a stable problem order while a port flaps, an ``n``
round that visits every problem node once, findings that name their part and say what to do,
the explain view, and coalesced event repeats."""

from __future__ import annotations

from collections.abc import Callable

from uikit import load

from hpctui.core.runtime import Runtime
from hpctui.model import Severity
from hpctui.sim.incidents import Placement
from hpctui.ui.app import HpcApp
from hpctui.ui.widgets.problems import ProblemsPane


def placement(runtime: Runtime) -> Placement:
    return runtime.sources[0].sim.place  # type: ignore[attr-defined, no-any-return]


async def test_problem_order_and_numbers_hold_still_while_a_port_flaps(make_runtime: Callable[..., Runtime],
                                                                       clock: object) -> None:
    app = HpcApp(make_runtime(seed=1), autostart=False)
    async with app.run_test(size=(200, 60)) as pilot:
        pane = app.screen.query_one(ProblemsPane)
        orders = []
        fifth = []
        for tick in range(8):
            clock.t += 2.0  # type: ignore[attr-defined]
            await load(app, pilot)
            if tick >= 1:  # from the second tick on the flapping port has been down once
                orders.append(list(pane.nodes))
                await pilot.press("p", "5")
                await pilot.pause()
                fifth.append(app.dashboard.selected)
                app.dashboard.heatmap.focus()
        assert placement(app.runtime).flap_node in orders[0]
        assert all(o == orders[0] for o in orders), f"the order reshuffled: {orders}"
        assert len(set(fifth)) == 1, f"p 5 went to {fifth}"


async def test_n_visits_every_problem_node_exactly_once_per_round(make_runtime: Callable[..., Runtime],
                                                                  clock: object) -> None:
    app = HpcApp(make_runtime(seed=1), autostart=False)
    async with app.run_test(size=(200, 60)) as pilot:
        pane = app.screen.query_one(ProblemsPane)
        await load(app, pilot)
        visited = []
        def walked() -> list[str]:  # problem nodes; a file system's group (the demo's full OST) is not walked
            return [n for n in pane.nodes if app.dashboard.heatmap.knows(n)]

        assert walked() == pane.nodes, "only nodes are stops of the walk"
        listed = {r.node for r in pane.problems.rows}  # type: ignore[attr-defined]
        assert "scratch" in listed and any(n.startswith("user/") for n in listed), " ".join(sorted(listed))
        for _ in range(2 * len(walked())):  # two rounds, a tick (a flap) between key presses
            clock.t += 2.0  # type: ignore[attr-defined]
            await load(app, pilot)
            await pilot.press("n")
            await pilot.pause()
            visited.append(app.dashboard.selected)
        nodes = walked()
        first, second = visited[:len(nodes)], visited[len(nodes):]
        assert sorted(first) == sorted(nodes) and sorted(second) == sorted(nodes), visited
        assert placement(app.runtime).notready_node in first, "the NotReady node is in the round"
        assert first == nodes and second == nodes, "in the problem order"


def test_walk_keeps_its_round_when_the_order_changes() -> None:
    from hpctui.ui.widgets.problems import ProblemWalk

    walk = ProblemWalk()
    assert walk.next(["a", "b", "c"], None, 1) == "a"
    assert walk.next(["b", "a", "c"], "a", 1) == "c", "b moved before a: not skipped, c then b"
    assert walk.next(["b", "a", "c"], "c", 1) == "b"
    assert walk.next(["b", "a", "c"], "b", 1) == "a", "a new round"
    assert walk.next(["x"], "x", 1) == "x" and walk.next([], None, 1) is None


def test_peak_severity_keeps_a_flapping_node_in_its_band() -> None:
    from hpctui.findings.health import Finding
    from hpctui.model import ClusterSnapshot
    from hpctui.ui.widgets.problems import ProblemMemory

    memory = ProblemMemory(window_s=100)
    down = Finding(severity=Severity.ERROR, object="ib/n2/mlx5_0:1", code="ib_down", message="port DOWN")
    flapped = Finding(severity=Severity.WARNING, object="ib/n2/mlx5_0:1", code="ib_flapped", message="flapped")
    other = Finding(severity=Severity.ERROR, object="mount/n1:/x", code="mount_missing", message="missing")
    memory.update(ClusterSnapshot(cluster="c", time=10.0), [other, down])
    assert memory.order(["n2", "n1"]) == ["n1", "n2"]
    memory.update(ClusterSnapshot(cluster="c", time=20.0), [other, flapped])
    assert memory.peak_severity("n2") == Severity.ERROR and memory.order(["n1", "n2"]) == ["n1", "n2"]
    memory.update(ClusterSnapshot(cluster="c", time=200.0), [other, flapped])
    assert memory.peak_severity("n2") == Severity.WARNING, "after the window it ranks by what it is now"


async def test_ecc_increments_and_link_flaps_coalesce_into_one_row_each(make_runtime: Callable[..., Runtime],
                                                                          clock: object) -> None:
    from hpctui.ui.widgets.events import EventsPane

    app = HpcApp(make_runtime(seed=1), autostart=False)
    async with app.run_test(size=(200, 60)) as pilot:
        for _ in range(10):
            clock.t += 2.0  # type: ignore[attr-defined]
            await load(app, pilot)
        await pilot.press("e")
        await pilot.pause()
        table = app.screen.query_one(EventsPane).table
        p = placement(app.runtime)
        ecc = [r for r in table.view if r.object == f"gpu/{p.ecc_node}/{p.ecc_gpu}"]
        flap_down = [r for r in table.view if r.object.startswith(f"ib/{p.flap_node}/") and "link down" in r.message]
        assert len(ecc) == 1, [r.message for r in ecc]  # the climbing count: the first reading and ten more
        climbing = ecc[0]
        assert climbing.count == 11 and climbing.first < climbing.time  # type: ignore[attr-defined]
        assert len(flap_down) == 1 and flap_down[0].count >= 5  # type: ignore[attr-defined]
        text = table.render_line(0).text + "".join(table.render_line(y).text for y in range(1, 12))
        assert f"×{climbing.count} " in text, "the count and time span are on screen"  # type: ignore[attr-defined]


def test_coalesce_keeps_actions_and_splits_on_a_long_gap() -> None:
    from hpctui.model import Event
    from hpctui.ui.widgets.events import EventRun, coalesce

    def ev(t: float, msg: str, source: str = "gpu", obj: str = "gpu/n1/0") -> Event:
        return Event(time=t, source=source, object=obj, severity=Severity.ERROR, message=msg)

    events = [ev(9000, "ECC 9"), ev(8990, "ECC 8"), ev(8980, "ECC 7"), ev(10, "ECC 1"),
              ev(8985, "drain", source="action", obj="node/n1"), ev(8984, "drain", source="action", obj="node/n1")]
    rows = coalesce(sorted(events, key=lambda e: e.time, reverse=True))
    assert isinstance(rows[0], EventRun) and rows[0].count == 3 and rows[0].first == 8980
    assert rows[0].message == "ECC 9", "the newest message"
    assert sum(1 for r in rows if r.source == "action") == 2, "admin actions keep a row each"
    assert rows[-1].message == "ECC 1" and not isinstance(rows[-1], EventRun), "hours later: a row of its own"


def test_every_finding_code_has_a_recommended_action() -> None:
    import re
    from pathlib import Path

    import hpctui.findings.health as health
    from hpctui.model.gpu import XID_MEANING

    source = Path(health.__file__).read_text()
    codes = set(re.findall(r'code="([A-Za-z0-9_]+)"', source))
    codes |= {f"mount_{state.value}" for state in health._MOUNT_SEVERITY}
    codes |= {"MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"}
    codes |= {f"xid{x}" for x in XID_MEANING} | {"ib_flap_recovered", "sxid12028"}
    fallback = health.recommended_action("no_such_code")
    missing = sorted(c for c in codes if health.recommended_action(c) == fallback)
    assert not missing, f"codes without a recommended action: {missing}"


async def test_findings_name_their_component(make_runtime: Callable[..., Runtime]) -> None:
    from hpctui.findings.index import findings_for

    runtime = make_runtime(seed=1)
    await runtime.collect_once()
    await runtime.collect_once()
    found = list(findings_for(runtime.store.snapshot(), runtime.thresholds))
    assert {f.object.split("/", 1)[0] for f in found} >= {"gpu", "ib", "mount", "node"}
    for f in found:
        kind, _, rest = f.object.partition("/")
        if kind == "gpu":
            assert f"GPU {rest.rsplit('/', 1)[1]}" in f.message, f
        elif kind == "ib":
            device, port = rest.split("/", 1)[1].split(":")
            assert f"{device} port {port}" in f.message, f
        elif kind in ("mount", "service"):
            assert rest.split(":", 1)[1] in f.message, f
        assert f.action and "see the evidence" not in f.action, f


async def test_enter_on_a_problem_explains_it(make_runtime: Callable[..., Runtime], clock: object) -> None:
    from hpctui.ui.screens.explain import ExplainScreen

    app = HpcApp(make_runtime(seed=1), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        for _ in range(3):
            clock.t += 2.0  # type: ignore[attr-defined]
            await load(app, pilot)
        p = placement(app.runtime)
        pane = app.screen.query_one(ProblemsPane)
        await pilot.press("p", str(pane.nodes.index(p.flap_node) + 1), "enter")
        await pilot.pause()
        assert isinstance(app.screen, ExplainScreen)
        assert app.dashboard.selected == p.flap_node
        text = app.screen.explained.text()
        for part in ("Evidence", "History", "Related events", "Next", f"{p.flap_dev} port 1", "link_downed",
                     "went bad", "link down", "reseat or replace"):
            assert part in text, part
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.dashboard
        await pilot.press("p", str(pane.nodes.index(p.thermal_node) + 1), "enter")
        await pilot.pause()
        text = app.screen.explained.text()  # type: ignore[attr-defined]
        assert "warn ≥ 83, error ≥ 88" in text and "UUID" in text and "check cooling" in text
