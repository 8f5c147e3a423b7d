"""Issue #19 §3: markup from the cluster is never parsed, on any screen.

A demo cluster whose every kind of cluster string (job names, users, accounts, QoS, reasons,
array task strings, partitions, pod names and namespaces, event messages, mount paths, IB
devices, GPU models, Kueue/Volcano queues, source warnings, pod describe/log text, cluster
names, an action's reason in the audit trail, a custom action's output) holds a corpus of
markup is walked screen by screen, through the app's own keys and ``:`` commands (every
command of hpctui.ui.commands, every pane, every screen and widget class of hpctui.ui). On
each stop: no crash, the corpus shows character for character, and nothing on the screen
carries a link or a ``@click`` action. A screen or widget class the walk never met fails
the "not walked" check at the end, so a new one is covered or named here.
"""

from __future__ import annotations

import importlib
import inspect
import io
import pkgutil
from collections.abc import Callable, Iterable
from pathlib import Path

import msgspec
from rich.console import Console
from rich.segment import Segment
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input
from textual.widgets._toast import Toast
from uikit import FIXED, Clock, load

import hpctui.ui
from hpctui.actions.custom import CustomActionSettings
from hpctui.core.clusters import ClusterSet
from hpctui.core.runtime import Runtime
from hpctui.core.wall_settings import WallSettings
from hpctui.model import Event, K8sQueueItem, Severity, SourceResult
from hpctui.sources.demo.source import DemoSource
from hpctui.ui.app import HpcApp
from hpctui.ui.commands import COMMANDS
from hpctui.ui.screens.dashboard import PANES

CORPUS = (
    "[/x]",
    "[@click=app.quit]x[/]",
    "[link=https://evil.example]y[/link]",
    "[bold red]z",
    "[[",
    "]",
    "[/]",
    "[on red]",
    "\\[",
    "[$accent]v[/]",  # a style variable: rich.markup.escape leaves it to the parser
)
C = CORPUS
ARRAY_TASKS = "/x"  # the job: its id, `1071_[/x]`, holds a closing tag
HOSTILE_PARTITION = C[6]  # closes nothing: a MarkupError if parsed
CLICK_PARTITION = C[1]  # a live action if parsed
HISTORY_ERROR = f"server said {C[0]} {C[1]}"  # a failed range query, shown under the node panel
NODE = "gpu0001"  # node names stay valid (another layer validates them)


def _nth(i: int) -> str:
    return CORPUS[i % len(CORPUS)]


# -- a demo cluster whose strings are hostile ------------------------------------------------------
def hostile(result: SourceResult) -> SourceResult:
    """The demo's answer with corpus strings in every string field the UI shows."""
    rep = msgspec.structs.replace
    jobs = []
    for i, job in enumerate(result.slurm_jobs or ()):
        if job.array_task_str:  # the pending array remainder: the job the detail view opens
            job = rep(job, array_task_str=ARRAY_TASKS, name=C[1], user=C[2], account=C[3], qos=C[4],
                      reason=C[5], partition=C[7])
        else:
            job = rep(job, name=_nth(i), user=_nth(i + 3), account=_nth(i + 5))
        jobs.append(job)
    nodes = dict(result.slurm_nodes or {})
    first = nodes[NODE]
    nodes[NODE] = rep(first, reason=C[7], reason_user=C[8], reason_time=FIXED - 600,
                      flags=first.flags | {"DRAIN"}, partitions=(HOSTILE_PARTITION, *first.partitions))
    second = nodes["gpu0002"]
    nodes["gpu0002"] = rep(second, partitions=(CLICK_PARTITION, *second.partitions))
    k8s = dict(result.k8s_nodes or {})
    if NODE in k8s:
        k8s[NODE] = rep(k8s[NODE], conditions={**k8s[NODE].conditions, "Ready": "False"},
                        condition_messages={"Ready": C[9]})
    gpus = dict(result.gpus or {})
    gpus[NODE] = tuple(rep(g, model=C[2]) for g in gpus.get(NODE, ()))
    pods = tuple(rep(p, namespace=_nth(i), name=_nth(i + 1), reason=_nth(i + 2), message=_nth(i + 3),
                     queue=_nth(i + 4)) for i, p in enumerate(result.pods or ()))
    pods = tuple(rep(p, node=NODE) if i == 0 else p for i, p in enumerate(pods))
    events = tuple(rep(e, message=_nth(i)) for i, e in enumerate(result.events or ()))
    events += tuple(Event(time=FIXED - 60 - i, source="slurm", object=f"node/{NODE}", severity=Severity.WARNING,
                          message=c) for i, c in enumerate(CORPUS))
    mounts = dict(result.mounts or {})
    mounts[NODE] = tuple(rep(m, target=_nth(i), source=_nth(i + 1), detail=_nth(i + 2))
                         for i, m in enumerate(mounts.get(NODE, ())))
    ib = dict(result.ib or {})
    ib[NODE] = tuple(rep(p, device=_nth(i)) for i, p in enumerate(ib.get(NODE, ())))
    queues = tuple(K8sQueueItem(kind="ClusterQueue", api="kueue.x-k8s.io/v1beta1", name=c, queue=c, message=c,
                                pending=1, admitted=0) for c in CORPUS[:3])
    return rep(result, slurm_jobs=tuple(jobs), slurm_nodes=nodes, k8s_nodes=k8s, gpus=gpus, pods=pods,
               events=events, mounts=mounts, ib=ib, k8s_queues=queues, warnings=(C[3],))


class HostileDemo(DemoSource):
    """The demo source, with markup in its strings and in the pod describe/log text."""

    def _collect(self, t: float) -> SourceResult:
        return hostile(super()._collect(t))

    async def describe_pod(self, namespace: str, name: str) -> str:
        return "\n".join(CORPUS)

    async def pod_logs(self, namespace: str, name: str) -> str:
        return "\n".join(reversed(CORPUS))

    async def history(self, node: str, metric: str, gpu: int | None = None, window_s: float = 300.0) -> object:
        """A metrics source's range query that fails with the server's (hostile) words."""
        raise RuntimeError(HISTORY_ERROR)


def hostile_runtime(tmp_path: Path, clock: Clock) -> Runtime:
    source = HostileDemo(size=32, seed=7, interval_s=2.0, clock=clock, start_time=FIXED)
    rt = Runtime("demo", [source], audit_path=tmp_path / "audit.jsonl", clock=clock)
    rt.custom_actions = (msgspec.convert({"name": "corpus", "key": "ctrl+g", "description": C[3],
                                          "command": ["printf", "%s\\n", *CORPUS]}, CustomActionSettings),)
    return rt


# -- reading the screen --------------------------------------------------------------------------
def rendered(app: HpcApp) -> tuple[str, list[Segment]]:
    """The screen as the terminal gets it (what export_screenshot draws): plain text and segments."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      color_system="truecolor", record=True, legacy_windows=False, safe_box=False)
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    segments = list(console.render(update))
    console.print(update)
    return console.export_text(), segments


def toasts(app: HpcApp) -> str:
    return "\n".join(t.render().plain for t in app.screen.query(Toast))


class Walk:
    """Every stop of the walk: checks the screen, remembers which screens and widgets it met."""

    def __init__(self, app: HpcApp, pilot: object) -> None:
        self.app = app
        self.pilot = pilot
        self.screens: set[type[Screen[object]]] = set()
        self.widgets: set[type[Widget]] = set()
        self.stops: list[str] = []
        self.current = "start"  # the stop being checked (named in the error of a crash)

    async def check(self, stop: str, expect: Iterable[str] = ()) -> str:
        self.current = stop
        await self.pilot.pause()  # type: ignore[attr-defined]
        await self.pilot.pause()  # type: ignore[attr-defined]
        app = self.app
        assert app.is_running, f"{stop}: the app ended (a markup error?)"
        for screen in app.screen_stack:
            self.screens.add(type(screen))
            self.widgets.update(type(w) for w in screen.query("*"))
        text, segments = rendered(app)
        live = [s.text for s in segments if s.style is not None and (s.style.link or "@click" in s.style.meta)]
        assert not live, f"{stop}: live markup on screen: {live[:5]}"
        shown = text + "\n" + toasts(app)
        missing = [c for c in expect if c not in shown]
        assert not missing, f"{stop}: not shown literally: {missing}\n{shown}"
        self.stops.append(stop)
        return shown

    async def close_to_dashboard(self) -> None:
        while self.app.screen is not self.app.dashboard:
            self.app.pop_screen()
            await self.pilot.pause()  # type: ignore[attr-defined]
        self.app.clear_notifications()
        await self.pilot.pause()  # type: ignore[attr-defined]


# -- what has to be walked -----------------------------------------------------------------------
def _ui_classes(base: type) -> set[type]:
    found: set[type] = set()
    for info in pkgutil.walk_packages(hpctui.ui.__path__, "hpctui.ui."):
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, base) and obj.__module__ == module.__name__:
                found.add(obj)
    return found


def _not_walked(classes: set[type], seen: set[type]) -> list[str]:
    """Classes no walked object is an instance of (a base class is walked through its subclasses)."""
    return sorted(c.__qualname__ for c in classes if not any(issubclass(s, c) for s in seen))


# -- the walk -----------------------------------------------------------------------------------
async def _select(app: HpcApp, pilot: object, pane: str, pick: Callable[[object], bool]) -> None:
    app.dashboard.show_view(pane)
    table = app.dashboard.query_one(f"#{PANES[pane]}").table  # type: ignore[attr-defined]
    index = next(i for i, row in enumerate(table.view) if pick(row))
    table._move_cursor(index)
    await pilot.pause()  # type: ignore[attr-defined]


async def walk_app(walk: Walk) -> None:
    app, pilot = walk.app, walk.pilot
    dash = app.dashboard
    await walk.check("dashboard", expect=(C[3], C[7], C[8], C[9]))  # warning, reason, its user, K8s message
    assert dash.heatmap.select(NODE)

    commands = {c.name for c in COMMANDS}
    for command in COMMANDS:  # every `:` command
        if command.name == "quit":
            commands.discard("quit")  # ends the walk: `q` is its key, checked by test_app
            continue
        await app.run_command(f":{command.name}")
        expect: tuple[str, ...] = {
            "events": CORPUS, "jobs": (C[1], C[2]), "mounts": (C[0], C[1]), "problems": (),
            "partitions": (HOSTILE_PARTITION,), "drained": (C[7], C[8]), "gpus": (C[2][:10],),
            "cluster": (f"configured: demo, {', '.join(CORPUS)}",),
        }.get(command.name, ())
        await walk.check(f":{command.name}", expect)
        commands.discard(command.name)
        await walk.close_to_dashboard()
    assert not commands, f"commands not walked: {commands}"
    await app.run_command(":cluster [/x]]")  # not configured: a notice quoting what was typed
    await walk.check(":cluster NAME", expect=("[/x]]",))
    await walk.close_to_dashboard()

    for pane in [*PANES, "node"]:  # every pane of the dashboard (and the narrow layout's tabs)
        dash.show_view(pane)
        await walk.check(f"pane {pane}", expect=(C[3], f"history: RuntimeError: {HISTORY_ERROR}"[:60]))
    await pilot.resize_terminal(90, 50)  # type: ignore[attr-defined]
    for pane in [*PANES, "node"]:
        dash.show_view(pane)
        await walk.check(f"narrow {pane}", expect=(C[3][:8],))
    await pilot.resize_terminal(220, 60)  # type: ignore[attr-defined]

    # a node's jobs and pods (enter), then the heatmap grouped by partition and zoomed into the hostile one
    dash.show_view("heatmap")
    dash.select_node(NODE)
    await pilot.press("enter")  # type: ignore[attr-defined]
    await walk.check("drill into a node", expect=(NODE,))
    await pilot.press("escape")  # type: ignore[attr-defined]
    heatmap = dash.heatmap
    for partition in (CLICK_PARTITION, HOSTILE_PARTITION):
        heatmap.set_grouping("partition", zoom=partition)
        await walk.check(f"heatmap zoomed into partition {partition}", expect=(f"zoom {partition[:16]}",))  # (a narrow pane: its title is cut)
    heatmap.set_grouping("none", zoom=None)
    dash.show_view("heatmap")
    dash.select_node(NODE)

    # the job detail (enter on the job whose array task string is `[/x]`)
    await _select(app, pilot, "queue", lambda j: j.array_task_str == ARRAY_TASKS)  # type: ignore[attr-defined]
    await pilot.press("enter")  # type: ignore[attr-defined]
    await walk.check("job detail", expect=("Slurm job 1071_[/x]", *C[1:6], C[7]))
    await walk.close_to_dashboard()

    # a pod: describe (enter), logs (L)
    for key in ("enter", "L"):
        await _select(app, pilot, "pods", lambda p: p.namespace == C[0])  # type: ignore[attr-defined]
        await pilot.press(key)  # type: ignore[attr-defined]
        await pilot.pause(0.1)  # type: ignore[attr-defined]
        await walk.check(f"pod detail ({key})", expect=(f"pod {C[0]}/{C[1]}", *CORPUS))
        await walk.close_to_dashboard()

    # go to (g): a name that is nowhere, quoted back in a notice; a pod by its hostile name
    for typed, expect in (("[/x] [@click=app.quit]q[/]", "[/x] [@click=app.quit]q[/]: no such"),
                          (f"{C[0]}/{C[1]}", f"pod {C[0]}/{C[1]} on {NODE}")):
        dash.show_view("heatmap")
        await pilot.press("g")  # type: ignore[attr-defined]
        await pilot.pause()  # type: ignore[attr-defined]
        box = app.screen.query_one(Input)
        box.value = typed
        await walk.check("go to", expect=(typed,))
        await pilot.press("enter")  # type: ignore[attr-defined]
        await walk.check("go to: notice", expect=(expect,))
        await walk.close_to_dashboard()

    # `:` typed by hand, and the command palette (its entries name the hostile clusters)
    await pilot.press("colon")  # type: ignore[attr-defined]
    await pilot.pause()  # type: ignore[attr-defined]
    app.screen.query_one(Input).value = "cluster [/"
    await walk.check("command line", expect=(f":cluster {C[0]}",))
    await walk.close_to_dashboard()
    await pilot.press("ctrl+p")  # type: ignore[attr-defined]
    await pilot.pause(0.3)  # type: ignore[attr-defined]
    await walk.check("command palette", expect=(f":cluster {C[1]}", f"Switch to cluster {C[2]}"))
    app.screen.query_one(Input).value = "custom"
    await pilot.pause(0.3)  # type: ignore[attr-defined]
    await walk.check("command palette: search", expect=(C[3],))
    await walk.close_to_dashboard()

    # help (?), the node's charts (v), the quit question
    await pilot.press("question_mark")  # type: ignore[attr-defined]
    await walk.check("help")
    await walk.close_to_dashboard()
    dash.show_view("heatmap")
    dash.select_node(NODE)
    await pilot.press("v")  # type: ignore[attr-defined]
    await walk.check("charts (v)", expect=(f"Charts · {NODE}", f"{C[0]}"))
    await walk.close_to_dashboard()
    # the explain view of every problem row (enter on a problem: evidence, history, events, next step)
    from hpctui.ui.widgets.problems import ProblemsPane

    dash.show_view("problems")
    await pilot.pause()  # type: ignore[attr-defined]
    problems = app.screen.query_one(ProblemsPane)
    assert problems.problems.rows, "the hostile demo has problems to explain"
    for row in list(problems.problems.rows):
        problems.explain_row(row)
        await walk.check(f"explain {row.node}")
        await walk.close_to_dashboard()
    from hpctui.ui.screens.confirm_quit import ConfirmQuitScreen

    app.push_screen(ConfirmQuitScreen(1))  # (`q` asks this only while an action runs)
    await walk.check("confirm quit")
    await walk.close_to_dashboard()

    # an action: drain the node with a hostile reason; its result, notices, events and audit trail
    dash.show_view("heatmap")
    dash.select_node(NODE)
    await pilot.press("d")  # type: ignore[attr-defined]
    await pilot.pause()  # type: ignore[attr-defined]
    dialog = app.screen
    reason = " ".join(CORPUS)
    dialog.query_one("#param-reason", Input).value = reason
    await walk.check("action dialog", expect=(reason[:40],))
    dialog._start()  # type: ignore[attr-defined]
    for _ in range(100):
        await pilot.pause(0.05)  # type: ignore[attr-defined]
        if getattr(dialog, "result", None) is not None:
            break
    await walk.check("action dialog: result")
    await walk.close_to_dashboard()
    await app.run_command(":audit")
    await pilot.pause(0.3)  # type: ignore[attr-defined]
    await walk.check("audit trail", expect=(C[0],))
    await pilot.press("enter")  # type: ignore[attr-defined]
    await walk.check("audit record", expect=(f"reason:    {reason}",))
    await walk.close_to_dashboard()

    # MIG wizard on the marked node (M): its title names the hostile GPU model
    dash.show_view("heatmap")
    dash.select_node(NODE)
    await pilot.press("space", "M")  # type: ignore[attr-defined]
    await walk.check("MIG wizard (M)", expect=(f"{C[2]}: no MIG profile table",))
    await walk.close_to_dashboard()

    # the node's history (H): its title names the hostile node
    dash.show_view("heatmap")
    dash.select_node(NODE)
    await pilot.press("H")  # type: ignore[attr-defined]
    await pilot.pause(0.3)  # type: ignore[attr-defined]
    await walk.check("node history (H)", expect=(f"History of {NODE}",))
    await walk.close_to_dashboard()

    # a shell in a pod with several containers: the picker names the hostile pod and containers
    from hpctui.ui.shell import ContainerPicker

    app.push_screen(ContainerPicker(f"{C[0]}/{C[1]}", [C[2], C[3]]))
    await pilot.pause()  # type: ignore[attr-defined]
    await walk.check("container picker", expect=(C[2], C[3]))
    await walk.close_to_dashboard()

    # a custom action (its key): preview, then the output, which is the corpus
    await pilot.press("ctrl+g")  # type: ignore[attr-defined]
    await walk.check("custom action preview", expect=(C[3],))
    await pilot.press("enter")  # type: ignore[attr-defined]
    for _ in range(200):
        await pilot.pause(0.05)  # type: ignore[attr-defined]
        run = getattr(app.screen, "run", None)
        if run is not None and getattr(run, "result", None) is not None:
            break
    await pilot.pause(0.4)  # type: ignore[attr-defined]
    await walk.check("custom action result", expect=CORPUS)
    await walk.close_to_dashboard()


async def walk_wall(walk: Walk) -> None:
    from hpctui.ui.screens.wall import WallScreen

    wall = walk.app.screen
    assert isinstance(wall, WallScreen)
    for _ in wall.views:
        await walk.check(f"wall {wall.view}", expect=(C[3],))
        wall.rotate()


async def test_every_screen_shows_cluster_markup_literally(tmp_path: Path) -> None:
    clock = Clock()
    rt = hostile_runtime(tmp_path, clock)
    clusters = ClusterSet(["demo", *CORPUS], lambda name: hostile_runtime(tmp_path / "other", clock))
    app = HpcApp(rt, autostart=False, clusters=clusters)
    walk = Walk(app, None)
    try:
        async with app.run_test(size=(220, 60), notifications=True, tooltips=True) as pilot:
            walk.pilot = pilot
            await load(app, pilot)
            await walk_app(walk)
            assert app.is_running
    except BaseException as exc:
        exc.add_note(f"markup walk: at stop {walk.current!r}")
        raise
    wall_rt = hostile_runtime(tmp_path / "wall", clock)
    wall_rt.wall_settings = WallSettings(views=["heatmap", "problems", "queue", "events", "pods"])  # every view
    wall_app = HpcApp(wall_rt, wall=True, autostart=False)
    wall_walk = Walk(wall_app, None)
    try:
        async with wall_app.run_test(size=(200, 60), notifications=True, tooltips=True) as pilot:
            wall_walk.pilot = pilot
            await load(wall_app, pilot)
            await walk_wall(wall_walk)
            assert wall_app.is_running
    except BaseException as exc:
        exc.add_note(f"markup walk (wall): at stop {wall_walk.current!r}")
        raise

    screens = walk.screens | wall_walk.screens
    widgets = walk.widgets | wall_walk.widgets
    assert not _not_walked(_ui_classes(Screen), screens), "screens not walked (add them to the walk)"
    assert not _not_walked(_ui_classes(Widget) - _ui_classes(Screen), widgets), \
        "widgets not walked (add them to the walk)"
