"""Mark a set of nodes on the dashboard heatmap from a view (like ``clush -w`` / ``clush @group``):
the marks are the targets of the node actions and of custom fan-out commands."""

from __future__ import annotations

from collections.abc import Iterable

from textual.screen import Screen

from hpctui.model.hostlist import collect_cached
from hpctui.ui.messages import NodeRequested


def mark_nodes_on_dashboard(screen: Screen[None], nodes: Iterable[str], what: str) -> None:
    """Close ``screen``, mark exactly ``nodes`` (those the heatmap knows) and select the first one."""
    names = sorted(set(nodes))
    if not names:
        screen.notify(f"{what}: no nodes to mark", severity="warning", timeout=3, markup=False)
        return
    dashboard = getattr(screen.app, "dashboard", None)
    screen.app.pop_screen()
    if dashboard is None:
        return
    heatmap = dashboard.heatmap
    known = [n for n in names if heatmap.knows(n)]
    heatmap.clear_marks()  # marks are action targets: exactly these nodes
    for node in known:
        heatmap.select(node)
        heatmap.action_toggle_mark()
    if known:
        dashboard.post_message(NodeRequested(known[0]))
    screen.app.notify(f"{what}: marked {collect_cached(known) if known else 'nothing'} ({len(known)} node(s))",
                      timeout=3, markup=False)
