"""The view stack as a breadcrumb (k9s): ``demo › nodes › gpu0012 › jobs › job 4711``.

Levels: the cluster; inside the dashboard, the drill-downs taken with ``enter`` (a node's
jobs and pods) and the focused pane; then every screen pushed over the dashboard (a job's
detail, a pod, a full-screen view). ``esc`` goes back one level.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.screen import Screen
from textual.widgets import Static

SEP = " › "
# Prompts and dialogs are not levels: they close on enter or esc, and go nowhere.
NOT_LEVELS = frozenset({"CommandScreen", "GoToScreen", "ConfirmQuitScreen", "ActionDialog"})


def screen_crumb(screen: Screen[object]) -> str | None:
    """A pushed screen's level: its ``crumb`` attribute, or what it shows (job, pod, help)."""
    name = type(screen).__name__
    if name in NOT_LEVELS:
        return None
    crumb = getattr(screen, "crumb", None)
    if isinstance(crumb, str):
        return crumb
    job = getattr(screen, "job", None)
    if job is not None and hasattr(job, "display_id"):
        return f"job {job.display_id}"
    pod = getattr(screen, "pod", None)
    if pod is not None and hasattr(pod, "namespace"):
        return f"pod {pod.namespace}/{pod.name}"
    return name.removesuffix("Screen").lower() or None


def crumbs(cluster: str, dashboard_levels: Sequence[str], screens: Sequence[Screen[object]]) -> list[str]:
    parts = [cluster, *dashboard_levels]
    parts += [c for c in (screen_crumb(s) for s in screens) if c]
    return parts


class Breadcrumb(Static):
    """One line under the status line; hidden while the dashboard is at its top level
    (the status line already names the cluster), shown once you drill down or open a view."""

    DEFAULT_CSS = """
    Breadcrumb { height: 1; width: 100%; color: $text-muted; padding: 0 1; }
    Breadcrumb.-root { display: none; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False, classes="-root")
        self.parts: list[str] = []

    def show_parts(self, parts: list[str], root: bool) -> None:
        if parts == self.parts and root == self.has_class("-root"):
            return  # focus moved within a level: nothing to redraw
        self.parts = parts
        self.set_class(root, "-root")  # shown or hidden: this relayouts, when it changes
        self.update(SEP.join(parts), layout=False)  # one line, as wide as the screen
