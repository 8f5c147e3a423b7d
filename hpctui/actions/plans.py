"""Plans that span backends, and the preview warnings every entry point shows.

A node known to both Slurm and Kubernetes (the store merged the two views, with ``node_map``
for differing names) is drained in both with ONE confirmed action: the executor turns
``drain`` into a Slurm ``drain`` step and a Kubernetes ``cordon`` (or ``k8s_drain``, evicting
pods) step, each planned by its own backend with its own commands and affected items. ``resume``
reverses both (uncordon, then resume). Where a node is drained is the config's
``[actions] drain_in`` ("slurm", "k8s" or "both", default "both"), overridable per action
with the parameter ``drain_in=...`` (``hpctui act drain --param drain_in=slurm``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from hpctui.model.action import JOB_ACTIONS, NODE_ACTIONS, REASON_MODES, ActionKind, ActionPlan, PriorState
from hpctui.model.common import age_text
from hpctui.model.hostlist import HostlistError, expand
from hpctui.model.jobs import jobs_by_id

if TYPE_CHECKING:
    from hpctui.findings.index import FindingsIndex
    from hpctui.model import ClusterSnapshot
    from hpctui.sources.base import ActionBackend

DRAIN_IN = ("slurm", "k8s", "both")
K8S_DRAIN = ("cordon", "evict")


class ActionSettings(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """``[actions]`` in the config."""

    drain_in: Literal["slurm", "k8s", "both"] = "both"
    """Where ``drain``/``resume`` act on a node known to both schedulers: "slurm", "k8s" or "both"."""
    k8s_drain: Literal["cordon", "evict"] = "cordon"
    """What the Kubernetes side of ``drain`` does: "cordon" (running pods keep running, like Slurm's
    DRAIN lets jobs finish) or "evict" (kubectl drain: cordon, then evict the pods)."""
    silence_with: list[Literal["drain", "reboot", "reserve_maint"]] = msgspec.field(
        default_factory=lambda: ["drain", "reboot", "reserve_maint"])
    """With an Alertmanager source: these actions first silence the node's alerts (a step of the plan, shown in
    the preview; the MIG wizard's drain is a drain), and ``resume`` expires the silences they set. ``[]``: never."""
    silence_hours: Annotated[float, msgspec.Meta(gt=0, le=720)] = 8.0
    """How long such a silence lasts when the action does not say (a reservation: its duration)."""


HYBRID_KINDS = frozenset({ActionKind.DRAIN_NODES, ActionKind.RESUME_NODES})


def hybrid_plan(kind: ActionKind, targets: Sequence[str], params: dict[str, str], snapshot: ClusterSnapshot,
                settings: ActionSettings, backend_for: Callable[[ActionKind], ActionBackend | None],
                errors: list[str], notes: list[str], existing: Existing | None = None) -> ActionPlan | None:
    """The plan of a drain/resume across Slurm and Kubernetes; None when it is not one (the
    executor then plans it with one backend, as before). ``params`` loses ``drain_in``/``k8s_drain``;
    problems and notes are appended to ``errors``/``notes``. With ``existing``, each step's targets
    that already are drained/cordoned are kept, appended to or replaced as its ``reason_mode`` says."""
    if kind not in HYBRID_KINDS:
        return None
    where = params.pop("drain_in", "").strip() or settings.drain_in
    mode = params.pop("k8s_drain", "").strip() or settings.k8s_drain
    if where not in DRAIN_IN:
        errors.append(f"drain_in must be one of {', '.join(DRAIN_IN)}, got {where!r}")
        where = settings.drain_in
    if mode not in K8S_DRAIN:
        errors.append(f"k8s_drain must be one of {', '.join(K8S_DRAIN)}, got {mode!r}")
        mode = settings.k8s_drain
    k8s_kind = (ActionKind.UNCORDON_NODES if kind is ActionKind.RESUME_NODES
                else ActionKind.CORDON_NODES if mode == "cordon" else ActionKind.K8S_DRAIN_NODES)
    slurm_be = backend_for(kind) if where != "k8s" else None
    k8s_be = backend_for(k8s_kind) if where != "slurm" else None
    if slurm_be is None and k8s_be is None:
        if where != "k8s":
            return None  # nothing can do it: the executor says so
        errors.append(f"drain_in=k8s but no configured source can {k8s_kind.value}")
        return ActionPlan(kind=kind, source="-", targets=tuple(targets), params=params)
    if k8s_be is not None and k8s_be is not slurm_be:
        health = snapshot.sources.get(k8s_be.name)
        if health is not None and (health.last_success is None or "k8s_nodes" in health.part_errors):
            why = health.part_errors.get("k8s_nodes") or health.last_error or "no successful read yet"
            errors.append(f"the {k8s_be.name} source has no node list ({why}): cannot tell which targets are "
                          f"Kubernetes nodes; retry, or pass drain_in=slurm")
    slurm_t: list[str] = []
    k8s_t: list[str] = []
    primary = slurm_t if slurm_be is not None else k8s_t
    for token in targets:
        try:
            names = expand(token)
        except HostlistError:
            primary.append(token)  # the backend rejects it with its own words
            continue
        for name in names:
            node = snapshot.nodes.get(name)
            in_slurm = node is not None and node.slurm is not None
            in_k8s = node is not None and node.k8s is not None
            placed = False
            if in_slurm and slurm_be is not None:
                slurm_t.append(name)
                placed = True
            if in_k8s and k8s_be is not None:
                k8s_t.append(name)
                placed = True
            if in_k8s and where != "slurm" and k8s_be is None:
                notes.append(f"{name}: no configured source can {k8s_kind.value}: Kubernetes left as it is")
            if placed:
                continue
            if node is None or not (in_slurm or in_k8s):
                primary.append(name)  # unknown: the backend rejects it with its own words
            elif in_slurm:
                errors.append(f"{name} is only a Slurm node and drain_in={where}")
            else:
                errors.append(f"{name} is only a Kubernetes node and drain_in={where}")
    steps: list[ActionPlan] = []
    for be, k, names in ((slurm_be, kind, slurm_t), (k8s_be, k8s_kind, k8s_t)):
        if be is not None and names:
            step_params = dict(params) if k is kind else {x: v for x, v in params.items() if x != "reason"}
            groups = existing.split(k, tuple(dict.fromkeys(names)), step_params) if existing is not None \
                else [(tuple(dict.fromkeys(names)), step_params)]
            steps.extend(be.plan(k, group, group_params, snapshot) for group, group_params in groups)
    if not steps:
        if existing is not None and existing.kept:
            return ActionPlan(kind=kind, source=slurm_be.name if slurm_be is not None else "-", targets=(),
                              params=params)  # every target kept as it is: the executor says so
        return None
    if kind is ActionKind.RESUME_NODES:
        steps.reverse()  # undo in the opposite order: uncordon, then resume
    if len(steps) == 1 and steps[0].kind is kind:
        return steps[0]  # one backend, as before: no steps
    return compose(kind, params, steps, continue_on_failure=kind is ActionKind.RESUME_NODES)


def compose(kind: ActionKind, params: dict[str, str], steps: Sequence[ActionPlan], *,
            continue_on_failure: bool = False) -> ActionPlan:
    """One plan of ``steps``: its flat fields are the union of theirs (older readers see it all)."""

    def union(field: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(x for s in steps for x in getattr(s, field)))

    return ActionPlan(
        kind=kind, source="+".join(dict.fromkeys(s.source for s in steps)), targets=union("targets"),
        params=params, commands=tuple(c for s in steps for c in s.commands), affected=union("affected"),
        warnings=union("warnings"), errors=tuple(f"{s.label}: {e}" for s in steps for e in s.errors),
        rejected_targets=union("rejected_targets"), notes=union("notes"), steps=tuple(steps),
        continue_on_failure=continue_on_failure)


# -- warnings when an action will fail or surprise ---------------------------------------------

def preview_warnings(kind: ActionKind, targets: Sequence[str], snapshot: ClusterSnapshot,
                     findings: FindingsIndex | None, *, advice: Callable[[str], str | None] | None = None) -> list[str]:
    """What the preview must say before the user confirms, whatever backend runs it. ``advice``: what
    a node's history says against releasing it (``gpu01: resumed twice this week after Xid 79 —
    consider RMA``; hpctui.core.nodehistory), asked for each node of a resume or uncordon."""
    out: list[str] = []
    if kind in (ActionKind.RESUME_NODES, ActionKind.UNCORDON_NODES) and advice is not None:
        for name in _node_names(targets):
            said = advice(name)
            if said:
                out.append(said)
    if kind is ActionKind.HOLD_JOBS:
        by_id = jobs_by_id(snapshot.jobs)
        for t in targets:
            found = by_id.get(t)
            if found is not None and found.state != "PENDING":
                keeps = " (it keeps running)" if found.state == "RUNNING" else ""
                out.append(f"job {t} is {found.state}: hold only affects pending jobs; Slurm will refuse it{keeps}")
    if kind in (ActionKind.RESUME_NODES, ActionKind.UNCORDON_NODES) and findings is not None:
        for name in _node_names(targets):
            from hpctui.model import Severity

            bad = [f for f in findings.node(name)
                   if f.object.startswith(("gpu/", "nvswitch/")) and f.severity >= Severity.ERROR]
            if bad:
                more = f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""
                out.append(f"{name} has an active GPU error: {bad[0].message}{more}; resuming puts work back on it")
    if kind is ActionKind.REBOOT_NODES:
        for name in _node_names(targets):
            node = snapshot.nodes.get(name)
            info = node.slurm if node is not None else None
            if info is not None and "DRAIN" in info.flags and info.reason:
                out.append(f"{name} is {info.display_state} ({info.reason!r}): after the reboot "
                           "(nextstate=RESUME) it takes jobs again, and the reboot's reason replaces this one")
    if kind in _BLAST_KINDS and snapshot.fabric is not None:
        out.extend(blast_radius_lines(targets, snapshot))
    return out


_BLAST_KINDS = frozenset({ActionKind.DRAIN_NODES, ActionKind.REBOOT_NODES, ActionKind.K8S_DRAIN_NODES,
                          ActionKind.CORDON_NODES})
_BLAST_JOBS_SHOWN = 5


def blast_radius_lines(targets: Sequence[str], snapshot: ClusterSnapshot) -> list[str]:
    """One line per leaf switch of the targets: the other nodes on it and the jobs running on them — what a
    switch fault (often the real cause when several nodes under one leaf misbehave) also takes down."""
    from hpctui.findings.correlate import workload_index
    from hpctui.findings.fabric import blast_radius
    from hpctui.model.hostlist import collect_cached as collect

    out: list[str] = []
    index = workload_index(snapshot) if snapshot.jobs else None
    for leaf, others in blast_radius(snapshot, _node_names(targets)).items():
        if not others:
            out.append(f"blast radius: leaf switch {leaf} carries no other node")
            continue
        found = sorted(index.jobs_on_any(set(others)), key=lambda j: j.job_id) if index is not None else []
        jobs = [j.display_id for j in found]
        shown = ", ".join(jobs[:_BLAST_JOBS_SHOWN]) + (f" (+{len(jobs) - _BLAST_JOBS_SHOWN} more)"
                                                      if len(jobs) > _BLAST_JOBS_SHOWN else "")
        running = f"; jobs running there: {shown}" if jobs else "; no jobs running there"
        out.append(f"blast radius: leaf switch {leaf} also carries {len(others)} node(s) "
                   f"{collect(others)}{running}")
    return out


def drain_reason(targets: Sequence[str], snapshot: ClusterSnapshot) -> str | None:
    """The drain reason the targets share (to prefill a reboot's reason), or None."""
    reasons = set()
    for name in _node_names(targets):
        node = snapshot.nodes.get(name)
        info = node.slurm if node is not None else None
        if info is None or "DRAIN" not in info.flags or not info.reason:
            return None
        reasons.add(info.reason)
    return reasons.pop() if len(reasons) == 1 else None


def _node_names(targets: Sequence[str]) -> list[str]:
    out: list[str] = []
    for t in targets:
        try:
            out.extend(expand(t))
        except HostlistError:
            continue
    return list(dict.fromkeys(out))


# -- what is already true: a drained node, a cordoned node, a held job ---------------------------

HELD_REASONS = frozenset({"JobHeldUser", "JobHeldAdmin"})
# Kinds whose targets can already be what they make them, and in which scheduler.
SET_IN: dict[ActionKind, str] = {
    ActionKind.DRAIN_NODES: "slurm", ActionKind.CORDON_NODES: "k8s", ActionKind.K8S_DRAIN_NODES: "k8s",
    ActionKind.HOLD_JOBS: "slurm",
}
REASON_KINDS = frozenset({ActionKind.DRAIN_NODES})  # kinds with a reason to append to
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


def ago(seconds: float) -> str:
    """``42 s``, ``30 min``, ``2 h``, ``3 d``: how long ago, for a sentence."""
    return age_text(seconds, words=True)


def prior_states(kind: ActionKind, targets: Sequence[str], snapshot: ClusterSnapshot) -> list[PriorState]:
    """Each target as the last read saw it: per node its Slurm and Kubernetes state (reason, who,
    when), per job its state and pending reason; ``set`` marks the ones ``kind`` (or a hybrid drain's
    cordon step) would only set again. Unknown targets have no entry."""
    out: list[PriorState] = []
    if kind in JOB_ACTIONS:
        by_id = jobs_by_id(snapshot.jobs)
        for t in dict.fromkeys(targets):
            job = by_id.get(t)
            if job is None:
                continue
            held = job.reason in HELD_REASONS
            who = job.user if job.reason == "JobHeldUser" else None
            out.append(PriorState(target=t, scheduler="slurm", state=job.state, reason=job.reason, user=who,
                                  set=held and kind is ActionKind.HOLD_JOBS))
        return out
    if kind not in NODE_ACTIONS:
        return out
    for name in _node_names(targets):
        node = snapshot.nodes.get(name)
        if node is None:
            continue
        if node.slurm is not None:
            s = node.slurm
            out.append(PriorState(target=name, scheduler="slurm", state=s.display_state, reason=s.reason,
                                  user=s.reason_user, time=s.reason_time,
                                  set=kind is ActionKind.DRAIN_NODES and "DRAIN" in s.flags))
        if node.k8s is not None:
            k = node.k8s
            since = next((t.time_added for t in k.taints if t.key == UNSCHEDULABLE_TAINT), None)
            out.append(PriorState(target=name, scheduler="k8s", state="cordoned" if k.unschedulable else "schedulable",
                                  time=since if k.unschedulable else None,
                                  set=k.unschedulable and kind in (ActionKind.DRAIN_NODES, ActionKind.CORDON_NODES,
                                                                   ActionKind.K8S_DRAIN_NODES)))
    return out


def describe_prior(p: PriorState, now: float) -> str:
    """``gpu0007 is already drained by root 2 h ago: “xid 79 …”`` (what the preview says first)."""
    when = f" {ago(now - p.time)} ago" if p.time is not None else ""
    if p.scheduler == "k8s":
        return f"{p.target} is already cordoned in Kubernetes" + (f" (since{when})" if when else "")
    if p.reason in HELD_REASONS:
        who = f"by its user {p.user}" if p.user else "by an admin"
        return f"job {p.target} is already held {who} ({p.reason})"
    state = p.state.split("+")[0].lower()
    by = f" by {p.user}" if p.user else ""
    reason = f": “{p.reason}”" if p.reason else " (no reason)"
    return f"{p.target} is already {state}{by}{when}{reason}"


MODE_MEANING = {
    "keep": "left as it is (nothing is sent for it)",
    "append": "the new reason is appended to the current one",
    "replace": "set again: the current reason and its user are replaced (the audit record keeps them)",
}


class Existing:
    """The request's targets as they were, and what ``reason_mode`` does with those that already
    are what the action makes them. Built once per plan; each step's targets go through
    :meth:`split`; :meth:`problems` then says what stops the plan (no mode chosen, a bad mode)."""

    def __init__(self, kind: ActionKind, mode: str, previous: Sequence[PriorState]) -> None:
        self.kind = kind
        self.mode = mode.strip().lower()
        self.previous = tuple(previous)
        self.met: list[PriorState] = []  # set targets a planned step included
        self.kept: list[str] = []  # targets left out of a step by reason_mode=keep

    def split(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str]
              ) -> list[tuple[tuple[str, ...], dict[str, str]]]:
        """``targets`` as (targets, params) groups to plan: kept ones left out, appended ones with
        their own reason (one group per resulting reason); no group when nothing is left."""
        scheduler = SET_IN.get(kind)
        already = {p.target: p for p in self.previous if p.set and p.scheduler == scheduler}
        if not already:
            return [(targets, params)]
        names = list(targets)
        if kind in NODE_ACTIONS:  # a hostlist holding an already-drained node: per name
            names = [n for t in targets for n in (_node_names([t]) if any(x in already for x in _node_names([t]))
                                                  else [t])]
        hit = [already[n] for n in names if n in already]
        self.met.extend(hit)
        if self.mode == "keep":
            self.kept.extend(p.target for p in hit)
            rest = tuple(n for n in names if n not in already)
            return [(rest, params)] if rest else []
        if self.mode == "append" and kind in REASON_KINDS:
            new = params.get("reason", "").strip()
            groups: dict[str, list[str]] = {}
            for n in names:
                old = already[n].reason if n in already else None
                groups.setdefault(f"{old}; {new}" if old and new else (old or new), []).append(n)
            return [(tuple(ns), {**params, "reason": r}) for r, ns in groups.items()]
        return [(targets, params)]

    def problems(self) -> list[str]:
        """Why the plan must not run as it is (errors); empty when it may."""
        if not self.met:
            return []
        modes = "keep|replace" if self.kind not in REASON_KINDS else "|".join(REASON_MODES)
        if not self.mode:
            first = self.met[0]
            what = {"k8s": "cordon"}.get(first.scheduler, "hold" if first.reason in HELD_REASONS else "drain reason")
            more = f" (and {len(self.met) - 1} more)" if len(self.met) > 1 else ""
            return [f"{first.target}{more}: an existing {what} is not overwritten without a choice: "
                    f"pass reason_mode={modes} (--param reason_mode=...)"]
        if self.mode not in REASON_MODES:
            return [f"reason_mode must be one of {', '.join(REASON_MODES)}, got {self.mode!r}"]
        if self.mode == "append" and self.kind not in REASON_KINDS:
            return [f"reason_mode=append: {self.kind.value} has no reason to append to; use keep or replace"]
        return []

    def messages(self, now: float) -> tuple[list[str], list[str]]:
        """(warnings, notes) for the preview: what is already true, then what the mode does with it."""
        warnings = [describe_prior(p, now) for p in dict.fromkeys(self.met)]
        notes: list[str] = []
        if self.met and self.mode in MODE_MEANING:
            notes.append(f"reason_mode={self.mode}: {MODE_MEANING[self.mode]}")
        return warnings, notes
