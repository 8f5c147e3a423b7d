"""The action registry (hpctui.ui.registry) is the one source of keys, footer, help, palette,
``:`` commands and the key reference; custom keys are bindings declared through public Textual API."""

from __future__ import annotations

import re
from collections.abc import Callable

import msgspec
from uikit import load

from hpctui.actions.custom import CustomActionSettings
from hpctui.core.runtime import Runtime
from hpctui.ui import registry
from hpctui.ui.app import HpcApp
from hpctui.ui.keymap import known_ids
from hpctui.ui.registry import (
    ALL_KEYS,
    BY_ID,
    COMMANDS,
    FOOTER_PINNED,
    PALETTE_KEYS,
    SCOPE_TITLES,
    help_groups,
    in_palette,
    key_reference_markdown,
)
from hpctui.ui.screens.action_dialog import ActionDialog
from hpctui.ui.screens.custom_result import CustomPreviewScreen
from hpctui.ui.screens.help import help_content
from hpctui.ui.widgets.footer import PINNED


def test_ids_are_unique_and_every_entry_has_a_group() -> None:
    ids = [spec.id for spec in ALL_KEYS]
    assert len(ids) == len(set(ids))
    assert {spec.scope for spec in ALL_KEYS} <= set(SCOPE_TITLES)
    assert known_ids() == ids  # [keymap] accepts exactly the registry's ids


def test_footer_and_palette_name_registry_entries() -> None:
    assert set(FOOTER_PINNED) <= set(BY_ID) and {i for i, _t, _h in PALETTE_KEYS} <= set(BY_ID)
    # the footer's order as it has always been: help, the triage walk, quit
    assert PINNED == ("help", "next_problem(1)", "show_view('problems')", "go_to", "quit")


def test_palette_lists_pane_keys_not_app_or_cursor_keys() -> None:
    for spec in ALL_KEYS:  # the rule the palette used before: by id prefix
        assert in_palette(spec.id) == (not spec.id.startswith(("app.", "move.", "stack."))), spec.id
    assert not in_palette(None) and not in_palette("custom.x") and not in_palette("modal.app.quit")


def test_cluster_actions_are_flagged_and_hidden_in_read_only() -> None:
    drain = BY_ID["node.drain"]
    assert drain.refused_read_only and drain.destructive
    assert BY_ID["node.resume"].refused_read_only and not BY_ID["node.resume"].destructive
    assert not BY_ID["app.quit"].refused_read_only
    read_only = [s for _t, specs in help_groups(actions_enabled=False) for s in specs]
    assert read_only and not any(s.refused_read_only for s in read_only)
    assert [s for _t, specs in help_groups() for s in specs] == sorted(
        ALL_KEYS, key=lambda s: list(SCOPE_TITLES).index(s.scope))  # groups in order, entries in registry order


def _ids_in(text: str) -> list[str]:
    return re.findall(r"[\[`]((?:app|heatmap|node|table|queue|job|pod|links|move|stack|idle|logs|users|resv|sched)\.[a-z0-9_]+)[\]`]", text)


def test_key_reference_is_the_help_in_markdown() -> None:
    markdown = key_reference_markdown()
    help_text = help_content(actions_enabled=True).plain
    assert _ids_in(markdown) == _ids_in(help_text) == [s.id for _t, specs in help_groups() for s in specs]
    for title, _specs in help_groups():
        assert f"\n## {title}\n" in markdown
    for command in COMMANDS:
        assert f"`{command.usage}`" in markdown and command.usage in help_text
    assert "| `?` | Help | `app.help` |" in markdown and "| `/` | Filter | `table.filter` |" in markdown
    assert "| `d` | Drain (confirms first) | `node.drain` |" in markdown
    remapped = key_reference_markdown({"node.drain": "ctrl+d"})
    assert "| `ctrl+d` | Drain (confirms first) | `node.drain` |" in remapped


def test_md_cells_escape_pipes() -> None:
    assert registry._md("a|b") == "a\\|b"
    assert registry._md_key("`") == "`` ` ``"


def _peek(**kw: object) -> CustomActionSettings:
    return msgspec.convert({"name": "peek", "key": "d", "scope": "jobs", "command": ["echo", "{job}"], **kw},
                           CustomActionSettings)


async def test_a_custom_key_works_on_its_pane_and_falls_through_elsewhere(
        make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime(size=8, seed=1)
    rt.custom_actions = (_peek(),)  # d on the queue; d drains everywhere else
    app = HpcApp(rt, autostart=False)
    assert app.custom_key_error is None
    declared = [b for b in type(app.dashboard).BINDINGS if getattr(b, "id", None) == "custom.peek"]
    assert len(declared) == 1  # a class's BINDINGS: Textual's public way, not a widget's private map
    async with app.run_test(size=(160, 50)) as pilot:
        await load(app, pilot)
        app.dashboard.heatmap.focus()
        await pilot.pause()
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, ActionDialog)  # the heatmap's own drain
        await pilot.press("escape")
        await pilot.pause()
        app.dashboard.queue_pane.table.focus()
        await pilot.pause()
        assert "d" in app.screen.active_bindings and app.screen.active_bindings["d"].binding.id == "custom.peek"
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, CustomPreviewScreen) and app.screen.plan.action.name == "peek"


async def test_custom_keys_survive_a_cluster_switch_class(make_runtime: Callable[..., Runtime]) -> None:
    rt = make_runtime(size=8, seed=1)
    rt.custom_actions = (_peek(),)
    app = HpcApp(rt, autostart=False)
    again = app.dashboard_class(make_runtime(size=8, seed=2))
    assert type(again) is type(app.dashboard)  # the :cluster switch builds the same class
    assert type(app.dashboard).__name__ == "DashboardScreen"  # CSS type selectors still match
