"""Actions are data: what to do, to which targets, with which exact commands.

The UI and the CLI build an :class:`ActionPlan` through the executor, show its
preview, ask for confirmation, then hand it back to be run. Nothing else runs
commands against the cluster.
"""

from __future__ import annotations

import enum

import msgspec


class ActionKind(enum.StrEnum):
    DRAIN_NODES = "drain"
    RESUME_NODES = "resume"
    REBOOT_NODES = "reboot"
    CANCEL_REBOOT = "cancel_reboot"
    REQUEUE_JOBS = "requeue"
    REQUEUE_HOLD_JOBS = "requeuehold"
    HOLD_JOBS = "hold"
    RELEASE_JOBS = "release"
    CANCEL_JOBS = "cancel"
    CORDON_NODES = "cordon"
    UNCORDON_NODES = "uncordon"
    K8S_DRAIN_NODES = "k8s_drain"
    MIG_RECONFIGURE = "mig_reconfigure"
    DELETE_PODS = "delete_pod"  # targets are "namespace/name"
    RESERVE_MAINT = "reserve_maint"  # Slurm maintenance reservation on nodes (flags=maint,ignore_jobs)
    DELETE_RESERVATION = "delete_reservation"  # targets: reservation names
    PARTITION_STATE = "partition_state"  # targets: partition names; param state=UP|DOWN|DRAIN|INACTIVE
    CUSTOM = "custom"  # a [[custom_actions]] command (hpctui.actions.custom); param name=NAME


NODE_ACTIONS = frozenset({
    ActionKind.DRAIN_NODES, ActionKind.RESUME_NODES, ActionKind.REBOOT_NODES,
    ActionKind.CANCEL_REBOOT, ActionKind.CORDON_NODES, ActionKind.UNCORDON_NODES,
    ActionKind.K8S_DRAIN_NODES, ActionKind.MIG_RECONFIGURE, ActionKind.RESERVE_MAINT,
})
# Actions whose targets are names of other things (partitions, reservations): comma lists, not hostlists.
NAME_ACTIONS = frozenset({ActionKind.DELETE_RESERVATION, ActionKind.PARTITION_STATE})
POD_ACTIONS = frozenset({ActionKind.DELETE_PODS})  # targets: namespace/name (comma or space separated)
JOB_ACTIONS = frozenset({
    ActionKind.REQUEUE_JOBS, ActionKind.REQUEUE_HOLD_JOBS, ActionKind.HOLD_JOBS,
    ActionKind.RELEASE_JOBS, ActionKind.CANCEL_JOBS,
})
# Actions that stop or kill running work: need a typed confirmation in bulk.
DESTRUCTIVE = frozenset({
    ActionKind.DRAIN_NODES, ActionKind.REBOOT_NODES, ActionKind.REQUEUE_JOBS,
    ActionKind.REQUEUE_HOLD_JOBS, ActionKind.CANCEL_JOBS, ActionKind.K8S_DRAIN_NODES,
    ActionKind.MIG_RECONFIGURE, ActionKind.DELETE_PODS, ActionKind.RESERVE_MAINT, ActionKind.PARTITION_STATE,
})
# Parameters an action cannot run without.
REQUIRED_PARAMS: dict[ActionKind, tuple[str, ...]] = {
    ActionKind.DRAIN_NODES: ("reason",),
    ActionKind.REBOOT_NODES: ("reason",),
    ActionKind.PARTITION_STATE: ("state",),
}
# What to do with a target that already is what the action makes it (a drained node, a cordoned
# node, a held job): ``reason_mode`` — keep it as it is, append the new reason to its reason, or
# replace it. Required (the plan does not run without it) whenever such a target is in the plan.
REASON_MODES = ("keep", "append", "replace")
BULK_THRESHOLD = 2  # this many targets or more: the user types the confirmation word
MAX_REASON_LEN = 1024


def stored_reason(raw: str) -> str:
    """The reason exactly as Slurm will store it: scontrol drops one leading and one trailing
    double quote (``Reason="PSU failure"`` → ``PSU failure``). Applied until nothing changes, so
    what every backend sends is already in its stored form (and scontrol leaves it alone)."""
    reason = raw.strip()
    while True:
        before = reason
        reason = reason.removeprefix('"').removesuffix('"').strip()
        if reason == before:
            return reason


def reason_problem(reason: str) -> str | None:
    """Why ``reason`` cannot be used, or None. One rule for every backend (Slurm CLI/REST/pyslurm,
    the demo): one line of printable text, no control, bidi or zero-width format characters."""
    from hpctui.base.sanitize import is_clean

    if not is_clean(reason):
        return "reason must be a single line of printable text"  # no control, bidi or zero-width characters
    if len(reason) > MAX_REASON_LEN:
        return f"reason too long ({len(reason)} characters; at most {MAX_REASON_LEN})"
    return None


class PriorState(msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True):
    """What one target was before the action, as the last read saw it (the audit record keeps it)."""

    target: str
    scheduler: str  # "slurm" or "k8s"
    state: str  # as an admin reads it: DRAINED, MIXED, cordoned, schedulable, PENDING (JobHeldUser)
    reason: str | None = None
    user: str | None = None  # who set the reason / the hold, when the scheduler says
    time: float | None = None  # when (epoch seconds), when the scheduler says
    set: bool = False  # already what the action makes it: drained, cordoned, held


class ActionPlan(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """Everything a confirmation dialog needs, and everything the executor runs."""

    kind: ActionKind
    source: str  # name of the backend that will run it
    targets: tuple[str, ...]  # node names or job ids, validated
    params: dict[str, str] = msgspec.field(default_factory=dict)
    commands: tuple[str, ...] = ()  # exact commands / requests, for display and audit
    affected: tuple[str, ...] = ()  # what it hits: "job 123 (alice) on gpu01", pods
    warnings: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()  # validation failures: the plan must not run
    rejected_targets: tuple[str, ...] = ()  # targets dropped by validation
    notes: tuple[str, ...] = ()  # e.g. "REST v0.0.38 has no node update: using scontrol"
    # A plan that spans backends (hybrid drain: Slurm drain + K8s cordon) is a sequence of steps, each a
    # plan of its own backend with its own exact commands, affected items and per-target results. The
    # fields above then hold the union of the steps (targets, commands, ...) for older readers.
    steps: tuple[ActionPlan, ...] = ()
    # With steps: False = a target an earlier step failed on is not touched by later steps (drain);
    # True = every step runs on all its targets (resume/uncordon release each scheduler on its own).
    continue_on_failure: bool = False
    # Each requested target as it was before (hpctui.actions.plans.prior_states): shown in the
    # preview ("already drained by root 2h ago: ...") and kept in the audit record.
    previous: tuple[PriorState, ...] = ()

    @property
    def already(self) -> tuple[PriorState, ...]:
        """The targets that already are what the action makes them."""
        return tuple(p for p in self.previous if p.set)

    @property
    def destructive(self) -> bool:
        return self.kind in DESTRUCTIVE or any(s.destructive for s in self.steps)

    @property
    def label(self) -> str:
        """``"slurm drain"``: which backend does what (a step's name in previews and results)."""
        return f"{self.source} {self.kind.value}"

    @property
    def runnable(self) -> bool:
        return not self.errors and bool(self.targets)

    @property
    def confirm_word(self) -> str | None:
        """The word to type for bulk destructive actions, else None (y/n is enough)."""
        if self.destructive and len(self.targets) >= BULK_THRESHOLD:
            return f"{self.kind.value}-{len(self.targets)}"
        return None


class TargetResult(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    target: str
    ok: bool
    message: str = ""


class StepResult(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """What one step of a multi-backend plan did, per target (``not run: ...`` when skipped)."""

    kind: ActionKind
    source: str
    started: float
    finished: float
    results: tuple[TargetResult, ...]

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)


class ActionResult(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    plan: ActionPlan
    user: str
    started: float
    finished: float
    results: tuple[TargetResult, ...]  # one per target (with steps: merged over the steps)
    refused: str | None = None  # why the executor did not run it at all
    steps: tuple[StepResult, ...] = ()  # per step, when the plan has steps

    @property
    def ok(self) -> bool:
        return self.refused is None and all(r.ok for r in self.results)


def split_targets(kind: ActionKind, expr: str) -> list[str]:
    """Job actions: a comma/space list of ids (array ranges ``12_[1,3]`` kept whole).
    Pod actions: ``namespace/name`` items, comma or space separated.
    Node actions: hostlist expressions (``gpu[01-04],cpu7``), split only between expressions."""
    out: list[str] = []
    depth = 0
    cur = ""
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        if depth == 0 and (ch.isspace() or (ch == "," and kind in JOB_ACTIONS | NAME_ACTIONS | POD_ACTIONS)):
            if cur:
                out.append(cur)
            cur = ""
            continue
        cur += ch
    if cur:
        out.append(cur)
    return out
