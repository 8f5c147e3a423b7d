"""Navigation of the app, kept out of app.py: `:` commands, the breadcrumb, the command
palette's entries, and switching to another configured cluster at run time."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING

from textual.app import SystemCommand
from textual.screen import Screen

from hpctui.ui.breadcrumb import Breadcrumb, crumbs, screen_crumb
from hpctui.ui.commands import COMMANDS, Command, parse
from hpctui.ui.registry import BY_ID, PALETTE_KEYS, display_key, in_palette

if TYPE_CHECKING:
    from hpctui.ui.app import HpcApp


def _dashboard_screens(app: HpcApp) -> list[Screen[object]]:
    """Screens stacked over the dashboard, bottom first."""
    stack = list(app.screen_stack)
    if app.dashboard in stack:
        return stack[stack.index(app.dashboard) + 1:]
    return []


def update_breadcrumb(app: HpcApp) -> None:
    dashboard = app.dashboard
    if not dashboard.is_attached or app.shutting_down:
        return
    try:
        crumb = dashboard.query_one(Breadcrumb)
    except Exception:  # the layout may have been recomposed without it
        return
    screens = _dashboard_screens(app)
    parts = crumbs(app.runtime.cluster, dashboard.stack_levels(), screens)
    root = not dashboard.drill and not any(screen_crumb(s) for s in screens)
    crumb.show_parts(parts, root)


def open_screen(app: HpcApp, command: Command, arg: str = "") -> None:
    """Push a full-screen view by its contract name; a view not built yet is a notice. A view
    taking ``query`` gets the command's argument (``:sacct user=alice state=FAILED since=2d``)."""
    assert command.screen is not None
    module_name, class_name = command.screen
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError):
        app.notify(f":{command.name}: this view is not available yet", severity="warning", timeout=3)
        return
    if app.back_to_dashboard():
        kwargs = subject_args(app, cls)
        if arg and "query" in inspect.signature(cls).parameters:
            kwargs["query"] = arg
        app.push_screen(cls(app.runtime, **kwargs))


def subject_args(app: HpcApp, cls: type) -> dict[str, object]:
    """A view about one node opens on the subject's (hpctui.ui.subject): ``:charts`` charts the
    selected node (``:mig`` reads the heatmap's marks itself); others take only the runtime."""
    nodes = app.dashboard.subject().nodes
    return {"node": nodes[0]} if nodes and "node" in inspect.signature(cls).parameters else {}


async def run_command(app: HpcApp, text: str) -> None:
    command, word, arg = parse(text)
    if command is None:
        if word:
            app.notify(f"unknown command :{word} (try :help, or tab to complete)", severity="warning", timeout=3,
                       markup=False)
        return
    if command.pane is not None:
        app.action_show_view(command.pane)
    elif command.screen is not None:
        open_screen(app, command, arg)
    elif command.name == "cluster":
        if not arg:
            names = app.clusters.names if app.clusters is not None else [app.runtime.cluster]
            app.notify(f"cluster {app.runtime.cluster}; configured: {', '.join(names)}", timeout=4)
        else:
            await app.switch_cluster(arg)
    elif command.name == "mute":
        notifier = app.runtime.notifier
        notifier.muted = not notifier.muted
        app.notify("notifications muted for this session (:mute again to unmute)" if notifier.muted
                   else "notifications on", timeout=3)
    elif command.name == "help":
        app.action_help()
    elif command.name == "quit":
        await app.action_quit()


async def switch_cluster(app: HpcApp, name: str) -> bool:
    """Stop this cluster's runtime (its pollers), build and start the other one's (its own
    sources, store, health), and show it on a fresh dashboard (HpcApp.adopt_runtime). False
    (and a notice) if not."""

    if name == app.runtime.cluster:
        app.notify(f"already on cluster {name}", timeout=2)
        return False
    if app.clusters is None or name not in app.clusters.names:
        known = ", ".join(app.clusters.names) if app.clusters is not None else app.runtime.cluster
        app.notify(f"no cluster named {name!r} (configured: {known})", severity="warning", timeout=4, markup=False)
        return False
    if app.runtime.actions_running:
        app.notify(f"an action is running on {app.runtime.cluster}: switch when it has finished",
                   severity="warning", timeout=4)
        return False
    try:
        runtime = app.clusters.build(name)
    except Exception as exc:  # a source that cannot be built is a notice, the old cluster stays
        app.notify(f"cluster {name}: {type(exc).__name__}: {exc}", severity="error", timeout=6, markup=False)
        return False
    while app.screen is not app.dashboard and len(app.screen_stack) > 2:
        await app.pop_screen()
    await app.adopt_runtime(runtime)
    app.notify(f"cluster {name}", timeout=2)
    app.update_breadcrumb()
    return True


def palette_commands(app: HpcApp, screen: Screen[object]) -> Iterable[SystemCommand]:
    """hpctui's own entries for ctrl+p, all from the action registry but the themes: the `:`
    commands, the app-wide keys of PALETTE_KEYS, our themes, the focused pane's keys."""
    for command in COMMANDS:
        if command.arg == "cluster":
            names = app.clusters.names if app.clusters is not None else []
            for name in names:
                if name != app.runtime.cluster:
                    yield SystemCommand(f":cluster {name}", f"Switch to cluster {name}",
                                        lambda n=name: app.call_later(app.switch_cluster, n))
            continue
        yield SystemCommand(f":{command.name}", command.description,
                            lambda c=command.name: app.call_later(app.run_command, c))
    for binding_id, title, what in PALETTE_KEYS:  # app-wide keys by name, with their key
        spec = BY_ID[binding_id]
        yield SystemCommand(title, f"{what} ({display_key(spec, app.keymap)})",
                            partial(app.run_action, spec.action))
    for name in app.theme_names:
        yield SystemCommand(f"Theme: {name}", "Switch to this hpctui theme (t cycles)",
                            lambda n=name: setattr(app, "theme", n))
    # The focused pane's own keys (drain, hold, logs, …): what its footer offers, by description.
    seen: set[str] = set()
    for key, active in screen.active_bindings.items():
        binding = active.binding
        if not active.enabled or not binding.description or not in_palette(binding.id):
            continue
        if binding.description in seen:
            continue
        seen.add(binding.description)
        node = active.node

        def run(action: str = binding.action, target: object = node) -> None:
            app.call_later(app.run_action, action, target)

        yield SystemCommand(binding.description, f"{binding.id} · key {key}", run)
