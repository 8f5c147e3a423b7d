"""Readable at a glance (issue #22 §4): sparklines on fixed scales with their value, the help
screen's legend/glossary/commands, the key bar's triage keys, the audit record formatted."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from uikit import Clock, load

from hpctui.health import Thresholds
from hpctui.runtime import Runtime
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
