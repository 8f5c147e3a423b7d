"""The subject: the node (and job, pod) the last selection named, whatever pane has focus.

Every node and job key works from anywhere: the focused pane answers its own keys first (the
heatmap its marks or cursor, the queue its jobs); a key it does not bind falls through to the
app-level bindings here, which act on the subject: after ``g gpu0007`` with the problem list
focused, ``d`` drains gpu0007, ``v`` charts it, ``M`` opens the MIG wizard on it. A key that
cannot act (read-only, nothing selected) says why; none is silent. The status line shows the
subject (``▸ gpu0007 · job 1054``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.binding import Binding, BindingType

from hpctui.model.action import JOB_ACTIONS, ActionKind
from hpctui.model.hostlist import HostlistError, collect, expand
from hpctui.ui.keys import ACTION_KEYS, HEATMAP_VIEW_KEYS, JOB_ACTION_KEYS, MIG_KEYS, KeySpec

if TYPE_CHECKING:
    from hpctui.model import Pod, SlurmJob
    from hpctui.ui.app import HpcApp

# Keys that act on the subject from any pane: the node and job action keys, the MIG wizard, charts.
# A key two scopes share (R: requeue the job / the node's jobs) is bound once, to the first spec.
SUBJECT_KEYS: tuple[KeySpec, ...] = tuple(
    {s.key: s for s in reversed((*ACTION_KEYS, *MIG_KEYS, *(s for s in HEATMAP_VIEW_KEYS
                                                           if s.id == "heatmap.charts")))}.values())
JOB_ONLY = frozenset(s.id for s in JOB_ACTION_KEYS)


def subject_bindings() -> list[BindingType]:
    """Hidden app-level bindings, ids ``subject.<id>`` (a keymap remaps them with their pane's key)."""
    return [Binding(spec.key, f"subject_key('{spec.id}')", spec.description, show=False, id=f"subject.{spec.id}")
            for spec in SUBJECT_KEYS]


@dataclass(frozen=True, slots=True)
class Subject:
    """What node and job keys act on: marked nodes, else the selected node; the last job and pod named.
    ``last`` is what the last selection named: "node", "job" or "pod"."""

    nodes: tuple[str, ...] = ()
    marked: bool = False
    job: SlurmJob | None = None
    pod: Pod | None = None
    last: str = "node"

    def text(self) -> str:
        """``▸ gpu0007 · job 1054``: the status line's piece ('' when nothing is selected)."""
        parts: list[str] = []
        if self.nodes:
            parts.append(f"{len(self.nodes)} marked" if self.marked and len(self.nodes) > 1 else self.nodes[0])
        if self.job is not None:
            parts.append(f"job {self.job.display_id}")
        if self.pod is not None:
            parts.append(f"pod {self.pod.namespace}/{self.pod.name}")
        return ("▸ " + " · ".join(parts)) if parts else ""


def job_nodes(job: SlurmJob) -> set[str]:
    try:
        return set(expand(job.nodes)) if job.nodes else set()
    except HostlistError:
        return set()


def act_on_subject(app: HpcApp, spec_id: str) -> None:
    """Run the key ``spec_id`` on the app's subject, or say why it cannot."""
    spec = next(s for s in SUBJECT_KEYS if s.id == spec_id)
    subject = app.dashboard.subject()
    if spec.id == "heatmap.charts":
        _charts(app, subject)
        return
    if app.read_only:
        app.action_read_only_notice(spec.description)
        return
    if spec.kind is ActionKind.MIG_RECONFIGURE:
        if not subject.nodes:
            app.notify(f"{spec.description}: no node selected (g NODE, or the heatmap cursor)", severity="warning",
                       timeout=3)
            return
        from hpctui.ui.screens.mig_wizard import MigWizardScreen

        app.push_screen(MigWizardScreen(app.runtime, list(subject.nodes)))
        return
    kind = spec.kind
    assert kind is not None
    from hpctui.ui.messages import ActionRequested

    on_job = spec.id in JOB_ONLY or (kind in JOB_ACTIONS and subject.last == "job" and spec.key == "R")
    if on_job:
        if subject.job is None:
            app.notify(f"{spec.description}: no job selected (g JOBID, or the queue cursor)", severity="warning",
                       timeout=3)
            return
        app.post_message(ActionRequested(kind, (subject.job.display_id,)))
        return
    if not subject.nodes:
        app.notify(f"{spec.description}: no node selected (g NODE, or the heatmap cursor)", severity="warning",
                   timeout=3)
        return
    if kind in JOB_ACTIONS:  # requeue / cancel the jobs on the subject nodes
        app.post_message(ActionRequested(kind, (), {"on_nodes": collect(list(subject.nodes))}))
    else:
        app.post_message(ActionRequested(kind, subject.nodes))


def _charts(app: HpcApp, subject: Subject) -> None:
    if not subject.nodes:
        app.notify("Charts: no node selected (g NODE, or the heatmap cursor)", severity="warning", timeout=3)
        return
    from hpctui.ui.screens.charts import ChartsScreen

    app.push_screen(ChartsScreen(app.runtime, node=subject.nodes[0]))
