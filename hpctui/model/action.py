"""Actions are data: what to do, to which targets, with which exact commands.

The UI and the CLI build an :class:`ActionPlan` through the executor, show its
preview, ask for confirmation, then hand it back to be run. Nothing else runs
commands against the cluster.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

import msgspec

from hpctui.model.output import NodeOutput


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
    SILENCE_NODES = "silence"  # an Alertmanager silence per node; params reason (its comment), hours
    EXPIRE_SILENCES = "expire_silence"  # targets: Alertmanager silence ids
    HEALTH_CHECK = "check"  # a health check on nodes (hpctui.actions.checks); param check=ID
    SHELL_NODE = "shell_node"  # an interactive ssh session on one node (hpctui.actions.shells)
    SHELL_POD = "shell_pod"  # a shell in one pod's container (kubectl exec -it); target namespace/name
    SHELL_JOB = "shell_job"  # a shell in one running Slurm job's allocation (srun --overlap --pty)


NODE_ACTIONS = frozenset({
    ActionKind.DRAIN_NODES, ActionKind.RESUME_NODES, ActionKind.REBOOT_NODES,
    ActionKind.CANCEL_REBOOT, ActionKind.CORDON_NODES, ActionKind.UNCORDON_NODES,
    ActionKind.K8S_DRAIN_NODES, ActionKind.MIG_RECONFIGURE, ActionKind.RESERVE_MAINT, ActionKind.SILENCE_NODES,
    ActionKind.HEALTH_CHECK,
})
# Actions whose targets are names of other things (partitions, reservations): comma lists, not hostlists.
NAME_ACTIONS = frozenset({ActionKind.DELETE_RESERVATION, ActionKind.PARTITION_STATE, ActionKind.EXPIRE_SILENCES})
POD_ACTIONS = frozenset({ActionKind.DELETE_PODS})
# Interactive sessions: one target, run on the real terminal while the app is suspended (hpctui.actions.shells).
SHELL_ACTIONS = frozenset({ActionKind.SHELL_NODE, ActionKind.SHELL_POD, ActionKind.SHELL_JOB})  # targets: namespace/name (comma or space separated)
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
    ActionKind.SILENCE_NODES: ("reason",),
    ActionKind.HEALTH_CHECK: ("check",),
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


class CommandRun(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One run of a command action: its exact argv, where (``host``: over SSH), under which label."""

    label: str  # node name (ssh; per-node local runs), job id, "ns/pod", or "local"
    argv: tuple[str, ...]
    host: str | None = None  # ssh: the node it runs on


class CommandSpec(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """What a command action (a ``[[custom_actions]]`` entry) runs: every run's argv and how."""

    runs: tuple[CommandRun, ...]
    remote: bool = False  # True: each run on its host over SSH; False: here, no shell
    timeout_s: float = 60.0  # per run
    max_parallel: int = 32  # runs in flight at once
    ssh_source: str | None = None  # whose connection settings (None: the first ssh source)
    output_limit: int = 1 << 20  # bytes of output kept per run


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
    # A step whose failure stops nothing after it (the Alertmanager silence before a drain: a drain must not
    # wait on the alerting system); its result is still shown and audited.
    advisory: bool = False
    # Each requested target as it was before (hpctui.actions.plans.prior_states): shown in the
    # preview ("already drained by root 2h ago: ...") and kept in the audit record.
    previous: tuple[PriorState, ...] = ()
    # The word to type instead of the bulk rule's (a dangerous custom action: "NAME-N"; the MIG plan: "mig-N").
    word: str | None = None
    # Why the plan may not run in read-only mode; None: it may (a custom action marked read_only_ok).
    read_only_refusal: str | None = "read-only mode"
    command: CommandSpec | None = None  # a command action's runs (hpctui.actions.custom)
    held: tuple[str, ...] = ()  # resume/uncordon: nodes the health-check gate holds (hpctui.actions.checks.gate)

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
        """The word to type (the plan's own ``word``, else one for bulk destructive actions); None: y/n."""
        if self.word is not None:
            return self.word
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
    audit_errors: tuple[str, ...] = ()  # records of this action not written (or written with a notice)

    @property
    def ok(self) -> bool:
        return self.refused is None and all(r.ok for r in self.results)


# What a backend says while a plan runs: a line of text ("gpu01: evicted ns/pod") or, from a command
# action, one run's output as it ends. Called from the event loop or a worker thread.
ProgressItem = str | NodeOutput
Progress = Callable[[ProgressItem], None]


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
