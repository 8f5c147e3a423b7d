"""Custom action keys (``[[custom_actions]]`` with a ``key``), bound through Textual's public API.

Textual merges a class's ``BINDINGS`` when the class is defined and offers no public way to add
a binding to one widget instance, so the keys become the ``BINDINGS`` of a
:class:`~hpctui.ui.screens.dashboard.DashboardScreen` subclass built at start for this set of keys
(:func:`dashboard_class`). What it promises:

- each key is a hidden binding under its registry id ``custom.<name>`` (a ``[keymap]`` line or
  ``App.update_keymap`` remaps it) running ``run_custom_key('<name>')`` on the dashboard;
- the screen's ``check_action`` enables it only while focus is within its scope's pane (nodes: the
  heatmap, jobs: the queue table, pods: the pods table); elsewhere it is not an active binding, and
  the key falls through to the app's keys exactly as a key that pane does not bind;
- the dashboard's own bindings are kept whole (a key both bind keeps both, the dashboard's first);
- no keys, no subclass: the plain DashboardScreen.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, ClassVar, cast

from textual.binding import Binding, BindingType
from textual.widget import Widget

from hpctui.ui.registry import ActionSpec, custom_key_specs
from hpctui.ui.screens.dashboard import DashboardScreen

if TYPE_CHECKING:
    from hpctui.actions.custom import CustomActionSettings
    from hpctui.ui.app import HpcApp

RUN = "run_custom_key"


def custom_name(spec: ActionSpec) -> str:
    """The custom action an entry of :func:`custom_key_specs` runs (its id is ``custom.<name>``)."""
    return spec.id.removeprefix("custom.")


def custom_bindings(specs: Sequence[ActionSpec]) -> list[BindingType]:
    """The hidden bindings of the custom keys, under their ids, as actions of the dashboard."""
    return [Binding(spec.key, f"{RUN}({custom_name(spec)!r})", spec.description, show=False, id=spec.id)
            for spec in specs]


class CustomKeysDashboard(DashboardScreen):
    """The dashboard with the custom keys of :attr:`CUSTOM_SCOPES` (built by :func:`dashboard_class`)."""

    CUSTOM_SCOPES: ClassVar[dict[str, str]] = {}  # custom action name -> key scope ("heatmap", "queue", "pods")

    def custom_pane(self, scope: str) -> Widget | None:
        """The widget a custom key of ``scope`` works in (focus on it or within it)."""
        panes: dict[str, Widget] = {"heatmap": self.heatmap, "queue": self.queue_pane.table,
                                    "pods": self.pods_pane.table}
        return panes.get(scope)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == RUN:
            scope = self.CUSTOM_SCOPES.get(str(parameters[0])) if parameters else None
            pane = self.custom_pane(scope) if scope is not None else None
            focused = self.focused
            return pane is not None and focused is not None and pane in focused.ancestors_with_self
        return super().check_action(action, parameters)

    def action_run_custom_key(self, name: str) -> None:
        """A custom action's key on its pane: preview it on the pane's selection (HpcApp.run_custom_action)."""
        cast("HpcApp", self.app).run_custom_action(name)


@lru_cache(maxsize=8)
def _subclass(specs: tuple[ActionSpec, ...]) -> type[DashboardScreen]:
    own = list(DashboardScreen.BINDINGS)
    # A subclass's bindings of a key replace its base's for that key: keep the dashboard's first.
    attrs = {"BINDINGS": own + custom_bindings(specs),
             "CUSTOM_SCOPES": {custom_name(s): s.scope for s in specs},
             "__module__": __name__, "__doc__": CustomKeysDashboard.__doc__}
    # The name stays DashboardScreen: Textual's CSS type selectors match on it.
    return type("DashboardScreen", (CustomKeysDashboard,), attrs)


def dashboard_class(actions: Sequence[CustomActionSettings]) -> type[DashboardScreen]:
    """The dashboard class that binds the custom keys of ``actions``.

    Raises :class:`~hpctui.ui.registry.CustomKeyError` (before anything is bound) if a key is taken."""
    specs = custom_key_specs(actions)
    return _subclass(specs) if specs else DashboardScreen
