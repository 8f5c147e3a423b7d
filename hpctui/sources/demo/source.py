"""The built-in demo cluster as a Source + ActionBackend, like the real backends.

Actions change the simulated cluster with Slurm/Kubernetes semantics (FACTS §3)
and show the real command they stand for; nothing real is touched.
"""

from __future__ import annotations

import asyncio
import shlex
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import msgspec

from hpctui.model import ClusterSnapshot, SlurmPartition, SourceResult
from hpctui.model.action import JOB_ACTIONS, ActionKind, ActionPlan, TargetResult, reason_problem, stored_reason
from hpctui.model.common import Severity
from hpctui.model.hostlist import HostlistError, collect, expand
from hpctui.model.scheduler import JobOutlook, Reservation
from hpctui.sim import SimCluster
from hpctui.sim.workload import SimJob
from hpctui.sources.slurm.actions import SLURM_ADMIN_KINDS, admin_argvs, admin_params, check, reservation_results
from hpctui.sources.slurm.parse.values import parse_cli_time, parse_duration_min

if TYPE_CHECKING:  # the accounting parsers are not needed for the first frame
    from hpctui.model.accounting import AccountingInfo
    from hpctui.model.nodehistory import AcctQuery, AcctResult

NOTE = "demo cluster: nothing real is touched"
SUPPORTED = frozenset({
    ActionKind.DRAIN_NODES, ActionKind.RESUME_NODES, ActionKind.REBOOT_NODES, ActionKind.CANCEL_REBOOT,
    ActionKind.REQUEUE_JOBS, ActionKind.REQUEUE_HOLD_JOBS, ActionKind.HOLD_JOBS, ActionKind.RELEASE_JOBS,
    ActionKind.CANCEL_JOBS, ActionKind.CORDON_NODES, ActionKind.UNCORDON_NODES,
    ActionKind.RESERVE_MAINT, ActionKind.DELETE_RESERVATION, ActionKind.PARTITION_STATE,
    ActionKind.MIG_RECONFIGURE,
})
# The demo's partition limits (minutes; absent = UNLIMITED) and its default partition.
DEMO_PARTITION_MAX_MIN = {"h100": 4320, "h200": 4320, "debug": 4320}  # the sim's longest job limit
DEMO_DEFAULT_PARTITION = "h100"
_JOB_VERB = {ActionKind.REQUEUE_JOBS: "requeue", ActionKind.REQUEUE_HOLD_JOBS: "requeuehold",
             ActionKind.HOLD_JOBS: "hold", ActionKind.RELEASE_JOBS: "release"}


def _demo_reservation(name: str, nodes: tuple[str, ...], params: dict[str, str], t: float) -> Reservation:
    """What ``scontrol show reservation`` would read back after the demo created one from ``params``."""
    start_text = params.get("start", "now")
    if start_text.startswith("now"):
        amount, _, unit = start_text.removeprefix("now").lstrip("+").partition(" ")
        digits = "".join(c for c in amount if c.isdigit())
        unit = amount[len(digits):] or unit or "minutes"
        scale = {"minutes": 60, "hours": 3600, "days": 86_400}.get(unit, 60)
        start = t + (int(digits) * scale if digits else 0)
    else:
        start = parse_cli_time(start_text) or t
    end = parse_cli_time(params["end"]) if params.get("end") else None
    if end is None:
        mins = parse_duration_min(params.get("duration"))
        end = None if mins is None else start + mins * 60
    return Reservation(name=name, start_time=start, end_time=end, nodes=collect(list(nodes)), node_count=len(nodes),
                       users=tuple(params.get("users", "root").split(",")), flags=("MAINT", "IGNORE_JOBS", "SPEC_NODES"))


def _quote(value: str) -> str:
    """Slurm-style ``"..."`` when safe for a shell, else shlex quoting."""
    if any(c in value for c in '"$`\\!\n'):
        return shlex.quote(value)
    return f'"{value}"'


T = TypeVar("T")


class DemoSource:
    """A simulated cluster behind the Source and ActionBackend protocols."""

    kind = "demo"

    def __init__(self, size: int = 64, seed: int = 0, interval_s: float = 2.0,
                 clock: Callable[[], float] = time.time, start_time: float | None = None,
                 name: str = "demo", user: str = "root") -> None:
        self.name = name
        self.interval_s = interval_s
        self.clock = clock
        self.user = user  # recorded as reason_user on drains from this UI
        self.size = size
        self._sim_args = (size, seed, clock() if start_time is None else start_time)
        self._sim: SimCluster | None = None  # built on first use: at 16k nodes that takes seconds,
        self._build_lock = threading.Lock()  # so the first collect builds it in its worker thread
        self._lock = threading.Lock()  # ticks may run in a worker thread; actions share the sim
        self.reservations: dict[str, Reservation] = {}  # maintenance reservations made by actions
        self.partition_state: dict[str, str] = {}  # partition -> UP/DOWN/DRAIN/INACTIVE set by an action
        self._partition_nodes: dict[str, str] | None = None
        self.mig_delay_s = 3.0  # a MIG layout shows this long after it was applied (like a real reset)
        self.mig_fail: dict[str, int] = {}  # tests: node -> GPU index whose `-cgi` fails

    @property
    def note(self) -> str:
        """Every plan's note: the demo names its seed and size, so a plan from ``hpctui act --demo``
        is seen to be of the same cluster as the app's (or not: pass the same ``--seed``)."""
        size, seed, _ = self._sim_args
        return f"{NOTE} (demo seed {seed}, {size} GPU nodes)"

    @property
    def sim(self) -> SimCluster:
        if self._sim is None:
            with self._build_lock:
                if self._sim is None:
                    size, seed, start = self._sim_args
                    self._sim = SimCluster(size=size, seed=seed, start_time=start)
        return self._sim

    # -- Source --------------------------------------------------------------------
    async def collect(self) -> SourceResult:
        return await self._off_loop(self._collect, self.clock())

    def _collect(self, t: float) -> SourceResult:
        with self._lock:
            self.sim.advance(t)
            result = self.sim.to_result(t, self.name)
            return msgspec.structs.replace(result, partitions=self._partitions(),
                                           reservations=self.sim.reservations() + tuple(self.reservations.values()))

    def _partitions(self) -> tuple[SlurmPartition, ...]:
        """What ``scontrol show partition`` would say: the topology's partitions, their limits,
        and the state a partition_state action set (UP until then)."""
        if self._partition_nodes is None:  # static: fold each partition's nodes into a hostlist once
            self._partition_nodes = {p: collect(names) for p, names in self.sim.topo.partitions.items()}
        out = []
        for name, names in self.sim.topo.partitions.items():
            max_min = DEMO_PARTITION_MAX_MIN.get(name)
            out.append(SlurmPartition(
                name=name, state=self.partition_state.get(name, "UP"), default=name == DEMO_DEFAULT_PARTITION,
                max_time_min=max_min, max_time_unlimited=max_min is None, default_time_min=60,
                nodes=self._partition_nodes[name], total_nodes=len(names),
            ))
        return tuple(out)

    async def close(self) -> None:
        return None

    async def accounting(self, user: str | None = None, account: str | None = None) -> AccountingInfo:
        """Simulated sshare/sacctmgr answers (usage = GPUs each user runs now)."""
        return await self._off_loop(self._accounting, user, account)

    def _accounting(self, user: str | None, account: str | None) -> AccountingInfo:
        with self._lock:
            usage: dict[str, int] = {}
            for job in self.sim.workload.jobs.values():
                if job.state == "RUNNING":
                    usage[job.user] = usage.get(job.user, 0) + job.gpus_per_node * job.num_nodes
        from hpctui.sim.accounting import demo_accounting

        return demo_accounting(user, account, usage)

    # -- what the demo's slurmdbd remembers (hpctui.sim.history) ---------------------------
    async def node_events(self, nodes: str | None, start: float, end: float, limit: int = 5000) -> AcctResult:
        """The demo's drain/down/resume history (the Xid node: drained 4× in 30 days for Xid 79)."""
        from hpctui.sim.history import events_answer

        sim = self.sim
        return events_answer(sim.place, sim.t0, nodes, start, end, limit)

    async def acct_jobs(self, query: AcctQuery) -> AcctResult:
        """The demo's jobs that died (most on the Xid node); filters checked as the Slurm source checks them."""
        from hpctui.sim.history import jobs_answer
        from hpctui.sources.slurm.accounting import check_name
        from hpctui.sources.slurm.history import check_nodes, check_states, check_window

        check_window(query.start, query.end)
        query = msgspec.structs.replace(query, nodes=check_nodes(query.nodes), user=check_name(query.user, "user"),
                                        account=check_name(query.account, "account"),
                                        states=check_states(query.states))
        sim = self.sim
        return jobs_answer(sim.place, sim.t0, sim.seed, query)

    async def gpu_usage(self, start: float, end: float, account: str | None = None,
                        user: str | None = None) -> AcctResult:
        """GPU-hours per account/user: the running jobs' GPUs × their run time inside the window."""
        from hpctui.sim.history import usage_answer

        with self._lock:
            hours: dict[str, float] = {}
            for job in self.sim.workload.jobs.values():
                if job.start_time is None:
                    continue
                ran = min(job.end_time or end, end) - max(job.start_time, start)
                if ran > 0:
                    hours[job.user] = hours.get(job.user, 0.0) + job.gpus_per_node * job.num_nodes * ran / 3600.0
        return usage_answer(hours, start, end, account, user)

    async def job_outlook(self, job_id: str) -> JobOutlook:
        """Simulated sprio / squeue --start for one demo job."""
        with self._lock:
            job = self.sim.job(job_id)
        from hpctui.sim.accounting import demo_outlook

        return demo_outlook(job_id, job, self.clock())

    async def _off_loop(self, func: Callable[..., T], *args: object) -> T:
        """Big sims tick in a worker thread holding the lock: never wait for it on the event loop."""
        if self.size > 1024:
            return await asyncio.to_thread(func, *args)
        return func(*args)

    # -- ActionBackend ----------------------------------------------------------------
    @property
    def action_kinds(self) -> frozenset[ActionKind]:
        return SUPPORTED

    def mig_backend(self) -> DemoSource:
        """MigApplier: the demo applies layouts itself (the simulated GPUs take them after a delay)."""
        return self

    def plan(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str],
             snapshot: ClusterSnapshot) -> ActionPlan:
        """Validate against the sim (the snapshot may be a tick old) and spell out the real commands."""
        if kind not in SUPPORTED:
            return ActionPlan(kind=kind, source=self.name, targets=targets, params=params, notes=(self.note,),
                              errors=(f"the demo cluster cannot {kind.value}",))
        if kind in SLURM_ADMIN_KINDS:
            return self._plan_admin(kind, targets, params, snapshot)
        if kind is ActionKind.MIG_RECONFIGURE:
            from hpctui.sources.demo.mig import plan_mig

            with self._lock:
                return plan_mig(self, targets, params)
        with self._lock:
            if kind in JOB_ACTIONS:
                return self._plan_jobs(kind, targets, params)
            return self._plan_nodes(kind, targets, params)

    def _plan_nodes(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str]) -> ActionPlan:
        names: list[str] = []
        rejected: list[str] = []
        errors: list[str] = []
        for target in targets:
            try:
                expanded = expand(target)
            except HostlistError as exc:
                rejected.append(target)
                errors.append(str(exc))
                continue
            for n in expanded:
                if n in self.sim.topo.by_name:
                    names.append(n)
                else:
                    rejected.append(n)
                    errors.append(f"unknown node {n!r}")
        names = list(dict.fromkeys(names))
        reason = stored_reason(params.get("reason", ""))
        if kind in (ActionKind.DRAIN_NODES, ActionKind.REBOOT_NODES) and not reason:
            errors.append(f"{kind.value} needs a reason")  # same words as the executor's check
        if reason and reason_problem(reason):
            errors.append(str(reason_problem(reason)))  # the same rule as every other backend
        hl = collect(names) if names else ""
        commands: tuple[str, ...] = ()
        if names:
            commands = {
                ActionKind.DRAIN_NODES: (f"scontrol update NodeName={hl} State=DRAIN Reason={_quote(reason)}",),
                ActionKind.RESUME_NODES: (f"scontrol update NodeName={hl} State=RESUME",),
                ActionKind.REBOOT_NODES: (f"scontrol reboot ASAP nextstate=RESUME Reason={_quote(reason)} {hl}",),
                ActionKind.CANCEL_REBOOT: (f"scontrol cancel_reboot {hl}",),
                ActionKind.CORDON_NODES: ("kubectl cordon " + " ".join(names),),
                ActionKind.UNCORDON_NODES: ("kubectl uncordon " + " ".join(names),),
            }[kind]
        # Only what this action really touches: Slurm node actions hit Slurm jobs, cordon hits
        # no running pod (it only stops new ones); resume/uncordon/cancel_reboot hit nothing.
        affected: list[str] = []
        for n in names:
            if kind in (ActionKind.DRAIN_NODES, ActionKind.REBOOT_NODES):
                how = "keeps running until it ends" if kind is ActionKind.DRAIN_NODES else \
                    "runs to its end, then the node reboots"
                for job in self.sim.workload.running_on(n):
                    affected.append(f"job {job.display_id} ({job.user}) {job.name} on {collect(job.nodes)}: {how}")
            elif kind is ActionKind.CORDON_NODES:
                for sp in self.sim.sim_pods:
                    if sp.pod.node == n:
                        affected.append(f"pod {sp.pod.namespace}/{sp.pod.name} on {n}: keeps running "
                                        "(cordon only stops new pods)")
        warnings = []
        if kind is ActionKind.DRAIN_NODES and affected:
            warnings.append("running jobs finish first: the nodes show DRAINING until then")
        return ActionPlan(kind=kind, source=self.name, targets=tuple(names), params=params, commands=commands,
                          affected=tuple(dict.fromkeys(affected)), warnings=tuple(warnings), errors=tuple(errors),
                          rejected_targets=tuple(rejected), notes=(self.note,))

    def _plan_admin(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str],
                    snapshot: ClusterSnapshot) -> ActionPlan:
        """Same validation and commands as the real Slurm source (hpctui.sources.slurm.actions)."""
        params = admin_params(kind, targets, params)
        checked = check(kind, targets, params, snapshot)
        clean = tuple(checked.targets)
        commands = tuple(shlex.join(a) for a in admin_argvs(kind, clean, params)) if clean else ()
        return ActionPlan(kind=kind, source=self.name, targets=clean, params=params, commands=commands,
                          affected=tuple(checked.affected), warnings=tuple(checked.warnings),
                          errors=tuple(checked.errors), rejected_targets=tuple(checked.rejected), notes=(self.note,))

    def _execute_admin(self, plan: ActionPlan, t: float) -> tuple[TargetResult, ...]:
        sim, kind, params = self.sim, plan.kind, plan.params
        if kind is ActionKind.RESERVE_MAINT:
            name = params["name"]
            if name in self.reservations:
                return tuple(TargetResult(target=n, ok=False, message="Error creating the reservation: "
                                          "Duplicate reservation name") for n in plan.targets)
            resv = _demo_reservation(name, plan.targets, params, t)
            self.reservations[name] = resv
            active = params.get("start", "now") == "now"
            for n in plan.targets:
                if active:
                    sim.admin[n].flags |= {"MAINTENANCE"}
                    sim.mark(n)
            sim._event(t, "slurm", f"reservation/{name}", Severity.INFO,
                       f"maintenance reservation {name} created on {collect(list(plan.targets))}")
            return tuple(reservation_results(resv, plan.targets, f"Reservation created: {name}"))
        results = []
        for target in plan.targets:
            if kind is ActionKind.DELETE_RESERVATION:
                made = self.reservations.pop(target, None)
                if made is None:
                    results.append(TargetResult(target=target, ok=False, message="Error deleting the reservation: "
                                                "Requested reservation is invalid"))
                    continue
                for n in (made.nodes and expand(made.nodes)) or ():
                    sim.admin[n].flags -= {"MAINTENANCE"}
                    sim.mark(n)
                sim._event(t, "slurm", f"reservation/{target}", Severity.INFO, f"reservation {target} deleted")
            else:
                self.partition_state[target] = params["state"]
                sim._event(t, "slurm", f"partition/{target}", Severity.INFO, f"partition {target} set {params['state']}")
            results.append(TargetResult(target=target, ok=True, message="ok"))
        return tuple(results)

    def _plan_jobs(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str]) -> ActionPlan:
        found: list[str] = []
        rejected: list[str] = []
        errors: list[str] = []
        affected: list[str] = []
        for target in targets:
            job = self.sim.workload.find(target)
            if job is None:
                rejected.append(target)
                errors.append(f"Invalid job id specified: {target}")
                continue
            found.append(job.display_id)
            where = f"on {collect(job.nodes)}" if job.nodes else f"({job.reason or job.state})"
            affected.append(f"job {job.display_id} ({job.user}) {job.name} {job.state} {where}")
        found = list(dict.fromkeys(found))
        commands: tuple[str, ...] = ()
        if found:
            if kind is ActionKind.CANCEL_JOBS:
                commands = ("scancel " + " ".join(found),)
            else:
                commands = (f"scontrol {_JOB_VERB[kind]} " + ",".join(found),)
        return ActionPlan(kind=kind, source=self.name, targets=tuple(found), params=params, commands=commands,
                          affected=tuple(affected), errors=tuple(errors), rejected_targets=tuple(rejected),
                          notes=(self.note,))

    async def execute(self, plan: ActionPlan) -> tuple[TargetResult, ...]:
        return await self._off_loop(self._execute, plan, self.clock())

    def _execute(self, plan: ActionPlan, t: float) -> tuple[TargetResult, ...]:
        results = []
        with self._lock:
            if plan.kind in SLURM_ADMIN_KINDS:
                return self._execute_admin(plan, t)
            if plan.kind is ActionKind.MIG_RECONFIGURE:
                from hpctui.sources.demo.mig import execute_mig

                return execute_mig(self, plan, t)
            for target in plan.targets:
                error = self._apply(plan, target, t)
                results.append(TargetResult(target=target, ok=error is None, message=error or "ok"))
        return tuple(results)

    def _apply(self, plan: ActionPlan, target: str, t: float) -> str | None:
        sim, kind = self.sim, plan.kind
        if kind in JOB_ACTIONS:
            job: SimJob | None = sim.workload.find(target)
            if job is None:
                return "Invalid job id specified"
            if kind is ActionKind.REQUEUE_JOBS:
                return sim.requeue(job, False, t)
            if kind is ActionKind.REQUEUE_HOLD_JOBS:
                return sim.requeue(job, True, t)
            if kind is ActionKind.HOLD_JOBS:
                return sim.hold(job, t)
            if kind is ActionKind.RELEASE_JOBS:
                return sim.release(job, t)
            return sim.cancel(job, t)
        if target not in sim.topo.by_name:
            return f"Invalid node name specified: {target}"
        reason = stored_reason(plan.params.get("reason", ""))  # what scontrol would store
        if kind is ActionKind.DRAIN_NODES:
            if not reason:
                return "You must specify a reason when DOWNING or DRAINING a node"
            return sim.drain(target, reason, self.user, t)
        if kind is ActionKind.RESUME_NODES:
            return sim.resume(target, t)
        if kind is ActionKind.REBOOT_NODES:
            return sim.reboot(target, reason, self.user, t)
        if kind is ActionKind.CANCEL_REBOOT:
            return sim.cancel_reboot(target, t)
        return sim.cordon(target, kind is ActionKind.CORDON_NODES, t)
