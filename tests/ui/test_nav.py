"""Navigation (issue #12): `:` commands with completion, the view stack and its breadcrumb,
j/k/h/l in every pane, q asking while an action runs, r saying it refreshed, the palette,
[keymap] remapping, and switching between two configured clusters at run time."""

from __future__ import annotations

import asyncio
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.containers import ScrollableContainer
from textual.screen import Screen
from textual.widgets import Input, Static
from uikit import load

from hpctui.core.clusters import ClusterSet
from hpctui.core.config import ConfigError, parse_config
from hpctui.core.runtime import Runtime
from hpctui.ui.app import HpcApp
from hpctui.ui.breadcrumb import Breadcrumb
from hpctui.ui.commands import completions, parse
from hpctui.ui.keymap import check_keymap
from hpctui.ui.screens.action_dialog import ActionDialog
from hpctui.ui.screens.command import CommandScreen
from hpctui.ui.screens.confirm_quit import ConfirmQuitScreen
from hpctui.ui.screens.help import HelpScreen, help_content
from hpctui.ui.screens.job_detail import JobDetailScreen
from hpctui.ui.widgets.heatmap import NodeHeatmap

SIZE = (160, 50)


def crumb(app: HpcApp) -> Breadcrumb:
    return app.dashboard.query_one(Breadcrumb)


def notices(app: HpcApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


# -- completion --------------------------------------------------------------------------------
def test_completions_and_parse() -> None:
    assert completions("no") == ["nodes"]
    assert completions(":p") == ["pods", "problems", "partitions"]
    assert completions("q") == ["quit", "queue"]  # an alias only when its command is not listed
    assert completions("cluster ", ["alpha", "beta"]) == ["cluster alpha", "cluster beta"]
    assert completions("cluster b", ["alpha", "beta"]) == ["cluster beta"]
    assert completions("nodes x") == []
    command, word, arg = parse(":cluster  beta ")
    assert command is not None and command.name == "cluster" and word == "cluster" and arg == "beta"
    assert parse("bogus")[0] is None


# -- `:` command mode ---------------------------------------------------------------------------
async def test_colon_keys_typed_at_once_complete_and_run(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=SIZE) as pilot:
        await load(app, pilot)
        # typed together: the keys after ':' go into the input, never to the heatmap (d = drain)
        await pilot.press("colon", "d", "r")
        await pilot.pause()
        assert isinstance(app.screen, CommandScreen)
        box = app.screen.query_one(Input)
        assert box.value == "dr"
        assert ":drained" in str(app.screen.query_one("#command-matches", Static).render())
        await pilot.press("backspace", "backspace", "j", "o")
        await pilot.pause()
        assert "Slurm queue" in str(app.screen.query_one("#command-matches", Static).render())
        await pilot.press("tab")
        assert box.value == "jobs"
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is app.dashboard
        assert app.focused is app.dashboard.queue_pane.table
        assert not app.runtime.executor.audit.read()


@pytest.mark.parametrize(("command", "pane"), [("nodes", "heatmap-pane"), ("queue", "queue-pane"),
                                               ("pods", "pods-pane"), ("ib", "ib-pane"), ("mounts", "mounts-pane"),
                                               ("events", "events-pane"), ("problems", "problems-pane")])
async def test_pane_commands_focus_their_pane(make_runtime: Callable[..., Runtime], command: str, pane: str) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=SIZE) as pilot:
        await load(app, pilot)
        if command != "nodes":
            app.dashboard.show_view("ib")
        await pilot.press("colon", *command, "enter")
        await pilot.pause()
        focused = app.focused
        assert focused is not None and any(a.id == pane for a in focused.ancestors_with_self)


async def test_screen_commands_push_a_view_or_say_not_available(make_runtime: Callable[..., Runtime],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    class FakeGpus(Screen[None]):
        def __init__(self, runtime: Runtime) -> None:
            super().__init__()
            self.runtime = runtime

    fake = types.ModuleType("hpctui.ui.screens.gpus")
    fake.GpusScreen = FakeGpus  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "hpctui.ui.screens.gpus", fake)
    monkeypatch.setitem(sys.modules, "hpctui.ui.screens.audit", None)  # import fails: not merged yet
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=SIZE) as pilot:
        await load(app, pilot)
        await pilot.press("colon", *"audit", "enter")
        await pilot.pause()
        assert app.screen is app.dashboard
        assert any(":audit: this view is not available yet" in n for n in notices(app))
        await pilot.press("colon", *"gpus", "enter")
        await pilot.pause()
        assert isinstance(app.screen, FakeGpus) and app.screen.runtime is app.runtime
        assert crumb(app).parts == ["demo", "nodes", "fakegpus"]
        await pilot.press("colon")  # from a pushed view: back to the dashboard, then the prompt
        await pilot.pause()
        assert isinstance(app.screen, CommandScreen)
        await pilot.press("escape")


async def test_unknown_command_is_a_notice(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=SIZE) as pilot:
        await load(app, pilot)
        await pilot.press("colon", *"frobnicate", "enter")
        await pilot.pause()
        assert app.screen is app.dashboard
        assert any("unknown command :frobnicate" in n for n in notices(app))
        await pilot.press("colon", *"help", "enter")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


# -- the view stack and its breadcrumb --------------------------------------------------------
async def test_enter_drills_down_and_esc_goes_back(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=SIZE) as pilot:
        await load(app, pilot)
        dash = app.dashboard
        assert crumb(app).has_class("-root") and crumb(app).parts == ["demo", "nodes"]
        snap = app.runtime.store.snapshot()
        busy = next(n for n in sorted(snap.nodes) if any(n in (j.nodes or "") for j in snap.jobs))
        dash.select_node(busy)
        dash.heatmap.focus()
        await pilot.press("enter")  # a node: its jobs and pods
        await pilot.pause()
        queue = dash.queue_pane.table
        assert app.focused is queue and queue.view and crumb(app).parts == ["demo", "nodes", busy, "jobs"]
        assert not crumb(app).has_class("-root")
        await pilot.press("enter")  # a job: its detail
        await pilot.pause()
        assert isinstance(app.screen, JobDetailScreen)
        job = app.screen.job
        assert crumb(app).parts == ["demo", "nodes", busy, "jobs", f"job {job.display_id}"]
        assert str(crumb(app).render()) == f"demo › nodes › {busy} › jobs › job {job.display_id}"
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is dash and crumb(app).parts == ["demo", "nodes", busy, "jobs"]
        await pilot.press("escape")  # back to the heatmap: the node filters go
        await pilot.pause()
        assert app.focused is dash.heatmap and dash.selected == busy
        assert len(queue.view) == len(queue.rows)
        assert crumb(app).parts == ["demo", "nodes"] and crumb(app).has_class("-root")
        await pilot.press("escape")  # at the top: nothing happens
        await pilot.pause()
        assert app.screen is dash


async def test_two_drills_go_back_one_at_a_time(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=SIZE) as pilot:
        await load(app, pilot)
        dash = app.dashboard
        first, second = dash.heatmap.names[2], dash.heatmap.names[5]
        for node in (first, second):
            dash.select_node(node)
            dash.heatmap.focus()
            await pilot.press("enter")
            await pilot.pause()
        assert crumb(app).parts == ["demo", "nodes", first, "nodes", second, "jobs"]
        assert dash.queue_pane.table.filter_text == second  # type: ignore[attr-defined]
        await pilot.press("escape")
        await pilot.pause()
        assert dash.queue_pane.table.filter_text == first  # type: ignore[attr-defined]
        assert crumb(app).parts == ["demo", "nodes", first, "nodes"] and dash.selected == second
        await pilot.press("escape")
        await pilot.pause()
        assert not dash.queue_pane.table.filter_text and crumb(app).has_class("-root")  # type: ignore[attr-defined]


async def test_esc_unmarks_first_then_goes_back(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=SIZE) as pilot:
        await load(app, pilot)
        dash = app.dashboard
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("space")
        assert dash.queue_pane.table.marked
        await pilot.press("escape")
        assert not dash.queue_pane.table.marked and dash.drill  # marks went, the level stayed
        await pilot.press("escape")
        await pilot.pause()
        assert not dash.drill and app.focused is dash.heatmap


# -- j/k everywhere ------------------------------------------------------------------------------
async def test_vi_keys_move_in_every_pane(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=SIZE) as pilot:
        await load(app, pilot)
        dash = app.dashboard
        heat: NodeHeatmap = dash.heatmap
        heat.focus()
        await pilot.press("l")
        assert heat.cursor == 1
        await pilot.press("h", "j")
        assert heat.cursor == heat._cols
        await pilot.press("k")
        assert heat.cursor == 0
        dash.ib_pane.scope_all = True
        dash.ib_pane.show(app.runtime.store.snapshot(), dash.selected)
        dash.mounts_pane.scope_all = True
        dash.mounts_pane.show(app.runtime.store.snapshot(), dash.selected)
        await pilot.pause()
        for view in ("queue", "problems", "events", "pods", "ib", "mounts"):
            dash.show_view(view)
            await pilot.pause()
            table = app.focused
            assert table is not None and len(table.view) >= 2, view  # type: ignore[attr-defined]
            table._move_cursor(0)  # type: ignore[attr-defined]
            await pilot.press("j", "j")
            assert table.cursor == 2, view  # type: ignore[attr-defined]
            await pilot.press("k")
            assert table.cursor == 1, view  # type: ignore[attr-defined]
        assert app.screen is dash and not app.runtime.executor.audit.read()


async def test_vi_keys_scroll_detail_screens(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(80, 16)) as pilot:
        await load(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        box = app.screen.query_one(ScrollableContainer)
        assert box.max_scroll_y > 0
        await pilot.press("j", "j", "j")
        await pilot.pause()
        assert box.scroll_y == 3
        await pilot.press("k")
        await pilot.pause()
        assert box.scroll_y == 2
        await pilot.press("escape")
        app.dashboard.show_view("queue")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, JobDetailScreen)
        body = app.screen.query_one(ScrollableContainer)
        before = body.scroll_y
        await pilot.press("j")
        await pilot.pause()
        assert body.scroll_y == min(before + 1, body.max_scroll_y)
        assert isinstance(app.screen, JobDetailScreen)  # j no longer opens the queue
        await pilot.press("colon", *"pods", "enter")  # `:` from a detail view too
        await pilot.pause()
        assert app.screen is app.dashboard and app.focused is app.dashboard.pods_pane.table


async def test_space_marks_the_same_way_in_heatmap_and_queue(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=SIZE) as pilot:
        await load(app, pilot)
        dash = app.dashboard
        for widget in (dash.heatmap, dash.queue_pane.table):
            widget.focus()
            await pilot.press("space", "l", "space")
            assert len(widget.targets()) == 2
            await pilot.press("escape")  # unmarks; a second esc would go back
            assert not widget.marked
        assert app.screen is dash


# -- q, r, palette ---------------------------------------------------------------------------
async def test_q_asks_while_an_action_runs(make_runtime: Callable[..., Runtime], monkeypatch: pytest.MonkeyPatch) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    exits: list[bool] = []
    monkeypatch.setattr(app, "exit", lambda *a, **k: exits.append(True))
    async with app.run_test(size=SIZE) as pilot:
        await load(app, pilot)
        gate = asyncio.Event()
        task = asyncio.create_task(gate.wait())
        app.runtime._actions.add(task)  # type: ignore[arg-type]  # an action in flight
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmQuitScreen) and not exits
        assert "an action is still running" in str(app.screen.query_one("#confirm-quit-text", Static).render())
        await pilot.press("n")
        await pilot.pause()
        assert app.screen is app.dashboard and not exits
        await pilot.press("q", "y")
        await pilot.pause()
        assert exits == [True]
        gate.set()
        await task
        app.runtime._actions.discard(task)  # type: ignore[arg-type]
        await pilot.press("q")  # nothing running: at once
        await pilot.pause()
        assert exits == [True, True] and app.screen is app.dashboard


async def test_r_says_the_refresh_happened(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=SIZE) as pilot:
        await load(app, pilot)
        await pilot.press("r")
        await app.workers.wait_for_complete()
        await pilot.pause()
        said = notices(app)
        assert "refresh requested…" in said
        assert any(n.startswith("refreshed: data of ") for n in said)


async def test_palette_lists_our_commands_only(make_runtime: Callable[..., Runtime]) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=SIZE) as pilot:
        await load(app, pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert len(titles) == len(set(titles)), "no entry twice"
        assert titles.count("Keys") == 1 and "Theme" not in titles and "Quit" not in titles
        for name in ("nodes", "jobs", "pods", "gpus", "audit", "partitions", "drained", "mig", "charts", "quit"):
            assert f":{name}" in titles
        assert {f"Theme: {t}" for t in app.theme_names} <= set(titles)
        assert "Drain" in titles and "Metric" in titles  # the focused heatmap's own keys
        app.dashboard.show_view("queue")
        await pilot.pause()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Hold" in titles and "Drain" not in titles
        command = next(c for c in app.get_system_commands(app.screen) if c.title == ":events")
        command.callback()
        await pilot.pause()
        assert app.dashboard.view == "events"


# -- keymap ----------------------------------------------------------------------------------
def test_keymap_is_checked() -> None:
    assert check_keymap({"node.drain": "ctrl+d"})["node.drain"] == "ctrl+d"
    assert check_keymap({"app.problems": "P"})["modal.app.problems"] == "P"
    with pytest.raises(ConfigError, match=r"^cfg: keymap\.node\.dran: unknown binding id"):
        check_keymap({"node.dran": "x"}, "cfg")
    with pytest.raises(ConfigError, match=r"^cfg: keymap\.node\.drain: not a key: 'ctl\+d'"):
        check_keymap({"node.drain": "ctl+d"}, "cfg")
    with pytest.raises(ConfigError, match=r"keymap\.node\.drain: not a key"):
        check_keymap({"node.drain": ""}, "cfg")
    with pytest.raises(ConfigError, match=r"^cfg: keymap\[\.\.\.\]: expected `str`, got `int`"):
        parse_config({"keymap": {"node.drain": 5}}, "cfg")


async def test_keymap_remaps_keys_footer_and_help(make_runtime: Callable[..., Runtime]) -> None:
    keymap = check_keymap({"node.drain": "ctrl+t", "move.down": "ctrl+n", "app.problems": "f4"})
    app = HpcApp(make_runtime(), autostart=False, keymap=keymap)
    async with app.run_test(size=SIZE) as pilot:
        await load(app, pilot)
        shown = {key: b.binding.id for key, b in app.screen.active_bindings.items()}
        assert shown.get("ctrl+t") == "node.drain" and "d" not in shown  # what the footer shows
        assert "ctrl+t" in str(help_content(True, keymap))
        heat = app.dashboard.heatmap
        await pilot.press("d")
        await pilot.pause()
        assert app.screen is app.dashboard
        await pilot.press("ctrl+n")
        assert heat.cursor == heat._cols
        await pilot.press("f4")
        await pilot.pause()
        assert app.dashboard.view == "problems"
        heat.focus()
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert isinstance(app.screen, ActionDialog)


def test_cli_bad_keymap_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hpctui.cli.main import main

    path = tmp_path / "c.toml"
    path.write_text('[clusters.a]\nsources = [{kind = "demo", size = 4}]\n[keymap]\n"node.drian" = "x"\n')
    assert main(["--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "keymap.node.drian: unknown binding id" in err


# -- several clusters ------------------------------------------------------------------------
TWO_CLUSTERS = {
    "default_cluster": "alpha",
    "clusters": {
        "alpha": {"sources": [{"kind": "demo", "size": 8, "seed": 1, "interval_s": 60}]},
        "beta": {"sources": [{"kind": "demo", "name": "sim-b", "size": 24, "seed": 2, "interval_s": 60}]},
    },
}


async def test_switch_cluster_at_run_time(tmp_path: Path) -> None:
    data: dict[str, Any] = {**TWO_CLUSTERS, "audit_log": str(tmp_path / "audit.jsonl")}
    config = parse_config(data)
    clusters = ClusterSet.from_config(config)
    first = clusters.build("alpha")
    app = HpcApp(first, autostart=True, clusters=clusters)
    async with app.run_test(size=SIZE) as pilot:
        while not app.dashboard.heatmap.names:  # the first poll runs in the background
            await pilot.pause(0.05)
        alpha_nodes = len(app.dashboard.heatmap.names)
        assert alpha_nodes == len(first.store.snapshot().nodes)
        await pilot.press("colon", *"cluster b", "tab")
        await pilot.pause()
        assert app.screen.query_one(Input).value == "cluster beta"
        await pilot.press("enter")
        await pilot.pause()
        while app.runtime is first or not app.dashboard.heatmap.names:
            await pilot.pause(0.05)
        assert app.runtime.cluster == "beta" and app.screen is app.dashboard
        beta_nodes = app.runtime.store.snapshot().nodes
        assert len(app.dashboard.heatmap.names) == len(beta_nodes) > alpha_nodes  # the other cluster's nodes
        assert [s.name for s in app.runtime.sources] == ["sim-b"]
        assert not first.poller._tasks  # the old cluster's pollers are stopped ...
        polls = sorted(t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith("poll:"))
        assert polls == ["poll:sim-b"]  # ... and no leftover poller task runs
        await pilot.pause()
        assert "beta" in str(app.dashboard.query_one("#status").render())
        assert crumb(app).parts[0] == "beta"
        assert not await app.switch_cluster("gamma")
        await pilot.pause()
        assert any("no cluster named 'gamma'" in n for n in notices(app))
