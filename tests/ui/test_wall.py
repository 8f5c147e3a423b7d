"""The wall display (``--wall``): its own screen, the wall theme, rotation on the (fake) clock,
nothing actionable, counts that match the snapshot, the worst node shown, memory flat for hours."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from textual.color import Color
from textual.widgets import ContentSwitcher, Digits
from uikit import Clock, load
from wallsoak import growth_after_warmup, soak

from hpctui.core.config import ConfigError, parse_config
from hpctui.core.runtime import Runtime
from hpctui.core.wall_settings import WallSettings
from hpctui.findings.index import findings_for
from hpctui.model import Severity
from hpctui.ui.app import HpcApp
from hpctui.ui.messages import ActionRequested
from hpctui.ui.screens.wall import WallScreen, wall_counts
from hpctui.ui.widgets.footer import KeyBar
from hpctui.ui.widgets.heatmap import NodeHeatmap
from hpctui.ui.widgets.status import StatusLine

SWITCHER_CHILD = {"heatmap": "wall-heatmap-view", "problems": "wall-problems", "queue": "wall-queue",
                  "events": "wall-events", "pods": "wall-pods"}


def wall_of(app: HpcApp) -> WallScreen:
    screen = app.screen
    assert isinstance(screen, WallScreen), f"on top: {type(screen).__name__}"
    return screen


async def test_wall_is_its_own_screen_in_the_wall_theme(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), wall=True, autostart=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await load(app, pilot)
        wall = wall_of(app)
        assert app.theme == "wall"
        assert wall.styles.background == Color.parse("#000000")  # themes/wall.toml's background, really applied
        assert not wall.query(KeyBar), "no footer: nothing actionable to show"
        heatmap = wall.query_one(NodeHeatmap)
        assert heatmap.cell_width >= 4 and heatmap.names
        assert "WALL" in str(wall.query_one(StatusLine).render())


async def test_the_cli_wall_uses_the_wall_theme_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    """`hpctui --wall` used to come up in the config's (dark) theme."""
    from hpctui.cli import main as cli

    seen: dict[str, object] = {}

    def fake_run(self: HpcApp) -> None:
        seen["theme"], seen["wall"] = self._initial_theme, self.wall

    monkeypatch.setattr(HpcApp, "run", fake_run)
    assert cli.main(["--demo", "--wall"]) == 0
    assert seen == {"theme": "wall", "wall": True}
    assert cli.main(["--demo", "--wall", "--theme", "light"]) == 0
    assert seen["theme"] == "light"


async def test_views_rotate_on_the_clock(make_runtime: Callable[..., Runtime], clock: Clock) -> None:
    runtime = make_runtime()
    runtime.wall_settings = WallSettings(rotate_s=15, views=["heatmap", "problems", "queue", "events"])
    app = HpcApp(runtime, wall=True, autostart=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await load(app, pilot)
        wall = wall_of(app)
        switcher = wall.query_one("#wall-views", ContentSwitcher)
        seen = [wall.view]
        for _ in range(4):
            clock.t += 14
            wall.tick()
            assert wall.view == seen[-1], "not before rotate_s"
            clock.t += 1
            wall.tick()
            await pilot.pause()
            seen.append(wall.view)
            assert switcher.current == SWITCHER_CHILD[wall.view]
            assert switcher.get_child_by_id(SWITCHER_CHILD[wall.view]).display
        assert seen == ["heatmap", "problems", "queue", "events", "heatmap"]
        status = str(wall.query_one(StatusLine).render())
        assert "Nodes (1/4)" in status and "next in 15s" in status


async def test_one_view_does_not_rotate_and_config_orders_them(make_runtime: Callable[..., Runtime],
                                                                clock: Clock) -> None:
    runtime = make_runtime()
    runtime.wall_settings = WallSettings(rotate_s=5, views=["events"])
    app = HpcApp(runtime, wall=True, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        wall = wall_of(app)
        clock.t += 3600
        wall.tick()
        assert wall.view == "events" and wall.query_one("#wall-events").display
        assert wall.events_pane.table.rows, "the event view follows live data"


async def test_counts_match_the_snapshot(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(seed=1), wall=True, autostart=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await load(app, pilot)
        await load(app, pilot)
        wall = wall_of(app)
        snap = app.runtime.store.snapshot()
        slurm = [n.slurm for n in snap.nodes.values() if n.slurm is not None]
        findings = findings_for(snap, app.runtime.thresholds)
        expected = {
            "nodes_down": sum(s.base_state.upper().startswith("DOWN") for s in slurm),
            "nodes_drained": sum("DRAIN" in s.flags for s in slurm),
            "gpus_error": len({f.object for f in findings if f.object.startswith("gpu/") and f.severity >= Severity.ERROR}
                              | {f"gpu/{g.node}/{g.index}" for gs in snap.gpus.values() for g in gs if g.lost}),
            "jobs_pending": sum(j.state == "PENDING" for j in snap.jobs),
        }
        assert expected["jobs_pending"] > 0 and expected["gpus_error"] > 0 and expected["nodes_drained"] > 0
        counts = wall_counts(snap, findings)
        for name, value in expected.items():
            assert getattr(counts, name) == value, name
            digits = wall.query_one(f"#wall-{name.replace('_', '-')} Digits", Digits)
            assert digits.value == str(value), name


async def test_node_panel_shows_the_worst_node(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), wall=True, autostart=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await load(app, pilot)
        wall = wall_of(app)
        findings = findings_for(app.runtime.store.snapshot(), app.runtime.thresholds)
        worst = max((Severity.OK, *(f.severity for f in findings)))
        assert worst >= Severity.ERROR
        assert wall.worst is not None and findings.severity(wall.worst) == worst
        assert wall.gpu_panel.node == wall.worst and wall.heatmap.cursor_node == wall.worst
        assert wall.gpu_panel.border_title is not None and wall.worst in str(wall.gpu_panel.border_title)


KEYS = ("d", "u", "b", "B", "c", "C", "D", "R", "X", "x", "h", "l", "H", "space", "m", "enter", "escape", "p", "e",
        "j", "n", "N", "g", "w", "t", "r", "question_mark", "E", "slash", "ctrl+d", "ctrl+p", "a", "1", "tab", "down")


async def test_no_action_key_is_reachable(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), wall=True, autostart=False)  # a writable runtime: --wall alone must lock it
    requested: list[ActionRequested] = []
    async with app.run_test(size=(200, 60)) as pilot:
        await load(app, pilot)
        wall = wall_of(app)
        app.on_action_requested = requested.append  # type: ignore[method-assign]
        enabled = {b.binding.action for b in wall.active_bindings.values() if b.enabled}
        # quit (q, ctrl+q) and Textual's copy of selected text (ctrl+c) read nothing and change nothing
        assert enabled <= {"quit", "screen.copy_text"}, f"keys still live on the wall: {sorted(enabled)}"
        assert not [b for b in wall.active_bindings.values() if b.enabled and b.binding.show and b.binding.action != "quit"], \
            "no key is shown but quit"
        stack = list(app.screen_stack)
        for key in KEYS:
            await pilot.press(key)
            await pilot.pause()
            assert app.screen is wall, f"{key!r} opened {type(app.screen).__name__}"
            assert list(app.screen_stack) == stack and app.theme == "wall", key
        assert app.focused is None, "nothing on the wall takes focus"
        assert not requested, "no action was requested"
        assert not app._notifications, "and nothing had to be refused"
        assert not app.runtime.executor.audit.read(), "nothing reached the executor"
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0  # q still quits: the one key a person at the keyboard needs


def test_wall_and_serve_config() -> None:
    config = parse_config({"wall": {"rotate_s": 30, "views": ["problems", "heatmap"]},
                           "serve": {"host": "127.0.0.2", "port": 9000}})
    assert config.wall.rotate_s == 30 and config.wall.views == ["problems", "heatmap"]
    assert config.serve.port == 9000 and not config.serve.allow_actions and not config.serve.allow_remote
    assert parse_config({}).wall.views == ["heatmap", "problems", "queue", "events"]


@pytest.mark.parametrize(("data", "message"), [
    ({"wall": {"rotate_s": 1}}, "<config>: wall.rotate_s: expected `float` >= 2"),
    ({"wall": {"views": ["bogus"]}}, "<config>: wall.views[0]: invalid enum value 'bogus'"),
    ({"wall": {"views": []}}, "<config>: wall: views: at least one view"),
    ({"wall": {"speed": 3}}, "<config>: wall.speed: unknown key"),
    ({"serve": {"port": 0}}, "<config>: serve.port: expected `int` >= 1"),
    ({"serve": {"allow_actions": "yes"}}, "<config>: serve.allow_actions: expected `bool`, got `str`"),
])
def test_wall_and_serve_config_errors_are_one_line(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


async def test_two_hours_on_the_wall_memory_stays_flat(tmp_path: Path) -> None:
    """3,600 polls 2 s apart (two hours, on a fake clock) through the wall screen: after a 15-minute
    warm-up, Python's allocated blocks grow by at most 5 % (the curve: bench/bench_wall_memory.py).
    A small cluster keeps the run short; the benchmark runs the 64-node demo."""
    samples, views = await soak(tmp_path, ticks=3600, size=8, every=150, draw_every=10)
    assert samples[-1].sim_s == 7200
    assert views == {"heatmap", "problems", "queue", "events"}, "the views rotated all along"
    blocks, _rss = growth_after_warmup(samples, 15 * 60)
    assert blocks <= 0.05, [(s.sim_s, s.blocks) for s in samples]
