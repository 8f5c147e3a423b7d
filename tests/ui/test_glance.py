"""Readable at a glance (issue #22 §4): sparklines on fixed scales with their value, the help
screen's legend/glossary/commands, the key bar's triage keys, the audit record formatted."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from uikit import Clock, load

from hpctui.core.runtime import Runtime
from hpctui.findings.health import Thresholds
from hpctui.ui.app import HpcApp
from hpctui.ui.widgets.gpu_panel import TEMP_SCALE_LOW_C, temp_bar, util_bar
from hpctui.ui.widgets.spark import BARS, MiniSpark, spark_content

MakeRuntime = Callable[..., Runtime]


def test_an_idle_gpu_draws_low_cool_bars() -> None:
    """31 ± 1 °C on the fixed temperature scale: the lowest bars in a cool colour, not full red."""
    t = Thresholds()
    content = spark_content([30, 31, 32, 31, 30], 10, low=TEMP_SCALE_LOW_C, high=t.gpu_temp_crit_c + 10,
                            colour=partial(temp_bar, t))
    assert set(content.plain) <= set(BARS[:2]), content.plain
    assert {str(s.style) for s in content.spans} == {"$heat-0"}
    hot = spark_content([t.gpu_temp_crit_c + 1], 4, low=TEMP_SCALE_LOW_C, high=t.gpu_temp_crit_c + 10,
                        colour=partial(temp_bar, t))
    assert {str(s.style) for s in hot.spans} == {"$heat-4"}
    idle = spark_content([0, 1, 2, 1], 10, low=0, high=100, colour=util_bar)
    assert set(idle.plain) == {BARS[0]} and {str(s.style) for s in idle.spans} == {"$util-0"}


async def test_node_panel_sparks_are_scaled_and_labelled(make_runtime: MakeRuntime, clock: Clock) -> None:
    runtime = make_runtime(seed=1)
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        for _ in range(6):
            await runtime.collect_once()
            clock.t += 5.0
        await load(app, pilot)
        panel = app.dashboard.gpu_panel
        node = panel.node
        assert node is not None
        temp = panel.query_one("#spark-temp", MiniSpark)
        util = panel.query_one("#spark-util", MiniSpark)
        assert len(temp.data) > 1 and (temp.low, util.low, util.high) == (TEMP_SCALE_LOW_C, 0.0, 100.0)
        drawn = temp.render().plain
        top = max(BARS.index(c) for c in drawn)
        expect = int((max(temp.data) - TEMP_SCALE_LOW_C) / ((temp.high or 100.0) - TEMP_SCALE_LOW_C) * len(BARS))
        assert top <= min(len(BARS) - 1, expect + 1), (drawn, temp.data)  # not stretched to full height
        label = str(panel.query_one("#spark-temp-label").render())
        assert label == f"temp {temp.data[-1]:.0f}°C"


def _shown(app: HpcApp) -> list[str]:
    from hpctui.ui.widgets.footer import KeyBar

    bar = app.dashboard.query_one(KeyBar)
    return [e.display for e in bar.entries if e.end > e.start and not e.palette]


async def test_key_bar_starts_with_the_triage_keys_at_every_width(make_runtime: MakeRuntime) -> None:
    for size in ((80, 24), (120, 40), (300, 80)):
        app = HpcApp(make_runtime(), autostart=False)
        async with app.run_test(size=size) as pilot:
            await load(app, pilot)
            for focus in (app.dashboard.heatmap, app.dashboard.queue_pane.table):
                focus.focus()
                await pilot.pause()
                assert _shown(app)[:5] == ["?", "n", "p", "g", "q"], (size, _shown(app))


async def test_key_bar_shows_an_open_dialogs_keys_only_while_it_is_open(make_runtime: MakeRuntime) -> None:
    app = HpcApp(make_runtime(), autostart=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        before = _shown(app)
        await pilot.press("question_mark")
        await pilot.pause()
        assert _shown(app)[:1] == ["esc"] and "d" not in _shown(app), _shown(app)  # the help's keys
        await pilot.press("escape")
        await pilot.pause()
        assert _shown(app) == before
        app.dashboard.heatmap.focus()
        await pilot.press("d")  # the drain dialog
        await pilot.pause()
        assert "d" not in _shown(app) and "esc" in _shown(app), _shown(app)
        await pilot.press("escape")
        await pilot.pause()
        assert _shown(app) == before


def test_help_has_the_legend_the_glossary_commands_and_binding_ids() -> None:
    from hpctui.ui.screens.help import help_content

    text = help_content(True).plain
    for want in ("Colours", "critical", "no data", "idle → busy", "Columns", "ECC c/u", "PCIe g/w", "TEMP/HBM",
                 "REMAP", "ERR Δ", ":gpus", "[node.drain]", "[app.next_problem]", "[table.filter]"):
        assert want in text, want


async def test_audit_record_formats_steps_not_python_dicts(make_runtime: MakeRuntime) -> None:
    """A hybrid drain (Slurm drain + K8s cordon) recorded with its steps: the record view lists the
    steps and their per-target results, not ``steps=[{'action': 'drain', …}]``."""
    from hpctui.actions.audit_view import load_tail
    from hpctui.findings.correlate import workload_index
    from hpctui.model.action import ActionKind
    from hpctui.ui.screens.audit import AuditRecordScreen, AuditScreen, record_text

    runtime = make_runtime()
    app = HpcApp(runtime, autostart=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await load(app, pilot)
        snap = runtime.store.snapshot()
        index = workload_index(snap)
        node = next(n for n in snap.nodes if index.pods_on(n))  # a node Slurm and Kubernetes both run
        plan = runtime.executor.plan(ActionKind.DRAIN_NODES, (node,), {"reason": "PSU fault, RMA 5521"}, snap)
        await runtime.executor.execute(plan, confirmation=plan.confirm_word or True)
        tail = load_tail(runtime.executor.audit.path, None)
        assert tail is not None
        entry = next(e for e in tail.entries if e.action == "drain")
        assert isinstance(entry.details.get("steps"), list) and "steps" not in entry.extra
        text = record_text(entry)
        assert "{'" not in text and "[{" not in text and "True" not in text, text
        assert "steps (2):" in text and "1. drain via demo: ok" in text and "2. cordon via demo: ok" in text, text
        assert f"ok   {node}: " in text
        await app.push_screen(AuditScreen(runtime))
        await pilot.pause()
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, AuditRecordScreen)
        assert "{'" not in app.screen.text and "steps (2):" in app.screen.text
