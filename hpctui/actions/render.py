"""One preview of a plan for every front end: the TUI's confirmation dialog styles these lines
(:func:`hpctui.ui.screens.action_dialog.render_plan`), ``hpctui act`` prints them
(:func:`hpctui.cli.act.render_plan`). What a preview says, in which order, and how lists are
cut is decided here once; the front ends only choose labels and styles.

Order: what it acts on, what is already wrong or surprising (warnings first: they decide the
rest), what runs (per step for a plan spanning backends, with only what that step affects),
notes, errors, the word to type. Every text is sanitised (cluster strings are hostile).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hpctui.base.sanitize import clean_text
from hpctui.model.action import JOB_ACTIONS, NAME_ACTIONS, POD_ACTIONS, ActionPlan
from hpctui.model.hostlist import collect

Kind = Literal["targets", "rejected", "warning", "step", "commands", "command", "affects", "affected", "more",
               "rule", "note", "error", "confirm"]
STEP_RULES = {False: "a node a step fails on is left alone by the later steps",
              True: "each step runs on all its nodes, whatever the others did"}


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a preview: ``kind`` says what it is (the front end's label and style),
    ``count`` how many things it stands for (targets, affected items), ``step`` the 1-based step
    it belongs to (0: the plan itself)."""

    kind: Kind
    text: str
    count: int | None = None
    step: int = 0


def targets_text(plan: ActionPlan, limit: int | None = None) -> str:
    """Node targets as a hostlist (``gpu[01-04]``); job ids, names and pods as a list (``limit``: at most)."""
    if plan.kind not in JOB_ACTIONS | NAME_ACTIONS | POD_ACTIONS:  # pods: namespace/name, never a hostlist
        try:
            return clean_text(collect(list(plan.targets)))
        except Exception:  # odd names: a plain list then
            pass
    shown = plan.targets if limit is None else plan.targets[:limit]
    more = len(plan.targets) - len(shown)
    return clean_text(",".join(shown)) + (f" … and {more} more" if more > 0 else "")


def _listed(kind: Kind, items: tuple[str, ...], limit: int | None, step: int) -> list[Line]:
    shown = items if limit is None else items[:limit]
    out = [Line(kind, clean_text(i), step=step) for i in shown]
    if len(items) > len(shown):
        out.append(Line("more", f"… {len(items) - len(shown)} more", step=step))
    return out


def plan_lines(plan: ActionPlan, *, limit: int | None = None, hide: frozenset[str] = frozenset()) -> list[Line]:
    """The preview of ``plan`` as lines. ``limit``: at most this many commands, affected items and
    job targets per list (a "more" line counts the rest); ``hide``: warnings the front end says
    elsewhere (the dialog's "already drained" above its choice)."""
    out = [Line("targets", targets_text(plan, limit), len(plan.targets))]
    if plan.rejected_targets:
        out.append(Line("rejected", clean_text(", ".join(plan.rejected_targets)), len(plan.rejected_targets)))
    out += [Line("warning", clean_text(w)) for w in plan.warnings if w not in hide]
    if plan.steps:
        for i, step in enumerate(plan.steps, 1):
            out.append(Line("step", f"{clean_text(step.label)} on {targets_text(step, limit) or '(none)'}",
                            len(step.targets), i))
            out += _listed("command", step.commands, limit, i)
            out += _listed("affected", step.affected, limit, i)
        out.append(Line("rule", STEP_RULES[plan.continue_on_failure]))
    else:
        if plan.commands:
            out.append(Line("commands", "", len(plan.commands)))
            out += _listed("command", plan.commands, limit, 0)
        if plan.affected:
            out.append(Line("affects", "", len(plan.affected)))
            out += _listed("affected", plan.affected, limit, 0)
    out += [Line("note", clean_text(n)) for n in plan.notes]
    out += [Line("error", clean_text(e)) for e in plan.errors]
    if plan.runnable and plan.confirm_word:
        out.append(Line("confirm", clean_text(plan.confirm_word)))
    return out
