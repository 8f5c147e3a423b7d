"""The MIG reconfiguration wizard's workflow, shared by the TUI (``MigWizardScreen``) and
``hpctui act mig`` (:mod:`hpctui.cli.act_workflows`).

Steps, each visible with its result and audited: layout → idle check → drain (Slurm) and/or
cordon (K8s) → wait until empty → apply → verify → gres.conf (Slurm nodes) → resume/uncordon.
The workflow sees the cluster through a :class:`~hpctui.actions.ports.WorkflowPort`, never the
Runtime. Drain, cordon, apply, resume and uncordon are plans run by the port's one executor
(read-only, confirmation and the audit trail are the executor's; the apply's backend reports
each command as it runs); the other steps' outcomes are recorded by that executor too (action
``mig_reconfigure``, source ``mig-wizard``, ``params.step``), and the run is refused by its
rule (:meth:`MigWorkflow.gate`). The wait and verify loops wait on the store's change event.
Where a node goes (by the source kinds that are :class:`~hpctui.sources.capabilities.MigApplier`):

* the demo cluster → its own backend (the simulated GPUs change layout after a short delay);
* a GPU Operator node (label ``nvidia.com/mig.capable=true``) of a Kubernetes source → the
  ``nvidia.com/mig.config`` label, followed to ``nvidia.com/mig.config.state`` success/failed;
* otherwise a node of an SSH source → nvidia-smi over the SSH source's connection.

A failed step stops the wizard and leaves the node drained with a reason naming the step.
"""

from __future__ import annotations

import asyncio
import enum
import re
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hpctui.base.errors import describe_error
from hpctui.base.sanitize import clean_text
from hpctui.findings.correlate import workload_index
from hpctui.model.action import ActionKind, ActionPlan, ActionResult, ProgressItem, TargetResult
from hpctui.model.hostlist import collect
from hpctui.model.mig_layouts import (
    Layout,
    LayoutError,
    MigLayoutSpec,
    apply_params,
    family,
    gpus_from_params,
    gres_lines,
    resolve,
)
from hpctui.sources.capabilities import MigApplier, MigReader

if TYPE_CHECKING:
    from hpctui.actions.ports import WorkflowPort
    from hpctui.model import ClusterSnapshot
    from hpctui.sources.base import ActionBackend

SOURCE = "mig-wizard"  # the audit records of the wizard's own steps


class Status(enum.StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    OK = "ok"
    WARN = "warn"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"


STEPS = (("layout", "Pick layout"), ("idle", "Check GPUs idle"), ("drain", "Drain (Slurm) / cordon (K8s)"),
         ("wait", "Wait until empty"), ("apply", "Apply layout"), ("verify", "Verify instances"),
         ("gres", "Slurm gres.conf / slurmd"), ("resume", "Resume / uncordon"))


@dataclass
class Step:
    key: str
    title: str
    status: Status = Status.PENDING
    detail: list[str] = field(default_factory=list)


@dataclass
class Route:
    """Where one group of nodes is applied: a backend and the parameters it gets."""

    how: str  # "demo", "k8s" or "ssh"
    backend: ActionBackend
    nodes: list[str]
    layout: Layout
    gpus: dict[str, list[int]]

    def params(self) -> dict[str, str]:
        if self.how == "k8s":
            return {"layout": self.layout.label}
        first = next(iter(self.gpus.values()), [])
        return apply_params(self.layout, first if self._explicit else None)

    _explicit: bool = False


ROUTES = ("demo", "k8s", "ssh")  # the source kinds a layout can be applied through


def mig_backends(port: WorkflowPort) -> dict[str, ActionBackend]:
    """The sources that can apply a layout, by how: demo, k8s (GPU Operator label), ssh; the first of each."""
    out: dict[str, ActionBackend] = {}
    for s in port.capability(MigApplier):  # type: ignore[type-abstract]  # (a Protocol: mypy wants a class)
        if s.kind in ROUTES and s.kind not in out:
            out[s.kind] = s.mig_backend()
    return out


class MigWorkflow:
    """One MIG reconfiguration of some nodes: :meth:`prepare` (no side effects but the idle check's
    record), :meth:`preview`, then :meth:`run` with the typed word. Promises: nothing runs unless the
    executor's rule lets the run through; a failed step stops the run and leaves the nodes drained
    with a reason naming the step; a cancel before the apply puts back what it drained; every step's
    outcome is in the audit log (written by the executor); ``on_change`` hears every status and line."""

    def __init__(self, port: WorkflowPort, nodes: list[str], layout: str, gpus: str | None = None, *,
                 on_change: Callable[[Step, str | None], None] | None = None, wait_timeout_s: float = 1800.0,
                 verify_timeout_s: float = 300.0, poll_s: float = 2.0,
                 collect: Callable[[], Any] | None = None) -> None:
        self.port = port
        self.nodes = list(dict.fromkeys(nodes))
        self.layout_name = layout.strip()
        self.gpus_param = (gpus or "all").strip() or "all"
        self.steps = [Step(k, t) for k, t in STEPS]
        self.on_change = on_change
        self.wait_timeout_s = wait_timeout_s
        self.verify_timeout_s = verify_timeout_s
        self.poll_s = poll_s
        self.collect = collect  # None: the runtime's poller, or the sources when none runs (see _fresh)
        self.audit_errors: list[str] = []  # records of this run not written (from the executor's results)
        self.id = uuid.uuid4().hex
        self.routes: list[Route] = []
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.affected: list[str] = []
        self.drained: list[str] = []  # nodes this wizard drained (resumed at the end)
        self.cordoned: list[str] = []
        self.expected: dict[str, dict[int, tuple[bool, tuple[str, ...]]]] = {}  # node -> gpu -> (on, profiles)
        self.layouts: dict[str, Layout] = {}  # node -> resolved layout
        self.applying = False  # past the point of no return (escape no longer cancels)
        self.done = False
        self.ok = False

    # -- steps -----------------------------------------------------------------------------------
    def step(self, key: str) -> Step:
        return next(s for s in self.steps if s.key == key)

    def _set(self, key: str, status: Status | None = None, line: str | None = None) -> None:
        s = self.step(key)
        if status is not None:
            s.status = status
        if line is not None:
            s.detail.append(clean_text(line))
        if self.on_change is not None:
            self.on_change(s, clean_text(line) if line is not None else None)

    def _record(self, key: str, results: list[TargetResult], started: float, refused: str | None = None) -> None:
        """An outcome record for one of the wizard's own steps (the actions have their own); the
        executor writes it."""
        plan = ActionPlan(kind=ActionKind.MIG_RECONFIGURE, source=SOURCE, targets=tuple(self.nodes),
                          params={"step": key, "layout": self.layout_name, "gpus": self.gpus_param})
        result = self.port.record(plan, results, started=started, refused=refused,
                                  extra={"wizard": self.id, "step": key})
        self.audit_errors.extend(result.audit_errors)

    # -- preparing (no side effects) ----------------------------------------------------------------
    def prepare(self, snapshot: ClusterSnapshot | None = None) -> bool:
        """Layout and idle check from the last snapshot: what will happen, and whether it can."""
        snap = snapshot if snapshot is not None else self.port.snapshot()
        self.errors, self.warnings, self.routes, self.affected = [], [], [], []
        self.steps = [Step(k, t) for k, t in STEPS]
        self._set("layout", Status.RUNNING)
        if self.port.read_only:
            self.errors.append("read-only mode: actions are disabled (the MIG wizard too)")
        if not self.nodes:
            self.errors.append("no nodes selected")
        config: Mapping[str, MigLayoutSpec] = self.port.mig_layouts
        backends = mig_backends(self.port)
        groups: dict[tuple[str, str | None], Route] = {}
        for name in self.nodes:
            node = snap.nodes.get(name)
            gpus = snap.gpus.get(name, ())
            if node is None:
                self.errors.append(f"unknown node {name!r}")
                continue
            if not gpus and not (node.k8s and node.k8s.labels.get("nvidia.com/mig.capable") == "true"):
                self.errors.append(f"{name}: no GPUs known on this node")
                continue
            model = gpus[0].model if gpus else (node.k8s.labels.get("nvidia.com/gpu.product") if node.k8s else None)
            fam = family(model)
            try:
                layout = resolve(self.layout_name, fam, config, model=model)
                idx = gpus_from_params({"gpus": self.gpus_param}, len(gpus) or int(
                    (node.k8s.labels.get("nvidia.com/gpu.count", "0") if node.k8s else "0") or 0))
            except LayoutError as exc:
                self.errors.append(f"{name}: {exc}")
                continue
            how = self._route(name, snap, backends)
            if how is None:
                self.errors.append(f"{name}: no source can change MIG here (needs the demo, an SSH source, "
                                   "or a GPU Operator node of a Kubernetes source)")
                continue
            if how == "k8s" and self.gpus_param != "all":
                self.errors.append(f"{name}: the GPU Operator applies one layout to every GPU (gpus= must be all)")
                continue
            self.layouts[name] = layout
            self.expected[name] = {i: (layout.enabled, tuple(sorted(layout.profiles))) for i in idx}
            key = (how, layout.family)
            if key not in groups:
                groups[key] = Route(how, backends[how], [], layout, {}, _explicit=self.gpus_param != "all")
            groups[key].nodes.append(name)
            groups[key].gpus[name] = idx
        self.routes = list(groups.values())
        if self.errors:
            for e in self.errors:
                self._set("layout", None, e)
            self._set("layout", Status.FAILED)
            return False
        for r in self.routes:
            self._set("layout", None, f"{collect(r.nodes)}: {r.layout.name} = {r.layout.summary()} "
                                      f"on GPU(s) {self._gpu_text(r)} via {r.how}")
        self._set("layout", Status.OK)
        self._idle(snap)
        return True

    def _gpu_text(self, r: Route) -> str:
        idx = next(iter(r.gpus.values()), [])
        return "all" if self.gpus_param == "all" else ",".join(map(str, idx))

    def _route(self, name: str, snap: ClusterSnapshot, backends: Mapping[str, ActionBackend]) -> str | None:
        node = snap.nodes[name]
        if "demo" in backends:
            return "demo"
        if "k8s" in backends and node.k8s is not None and node.k8s.labels.get("nvidia.com/mig.capable") == "true":
            return "k8s"
        if "ssh" in backends:
            return "ssh"
        return None

    def busy(self, snap: ClusterSnapshot) -> list[str]:
        """What still runs on the selected GPUs: Slurm jobs, GPU pods, GPU processes."""
        out: list[str] = []
        idx = workload_index(snap)
        for name in self.nodes:
            for job in idx.jobs_on(name):
                out.append(f"{name}: Slurm job {job.display_id} ({job.user})")
            for pod in idx.pods_on(name):
                if pod.gpus_requested and not pod.daemonset and pod.phase in ("Running", "Pending", "Unknown"):
                    out.append(f"{name}: pod {pod.namespace}/{pod.name} ({pod.gpu_text})")
            wanted = set(self.expected.get(name, {}))
            for g in snap.gpus.get(name, ()):
                if g.index in wanted:
                    for p in g.processes:
                        owner = (f"job {p.slurm_job_id}" if p.slurm_job_id else f"pod {p.pod}" if p.pod
                                 else "no job or pod")
                        out.append(f"{name}: GPU {g.index} process {p.pid} {p.command or ''} ({owner})".replace(
                            "  ", " "))
        return list(dict.fromkeys(out))

    def _idle(self, snap: ClusterSnapshot) -> None:
        started = self.port.clock()
        self._set("idle", Status.RUNNING)
        busy = self.busy(snap)
        self.affected = busy
        for line in busy[:20]:
            self._set("idle", None, line)
        if len(busy) > 20:
            self._set("idle", None, f"… and {len(busy) - 20} more")
        if busy:
            self._set("idle", Status.WARN, f"{len(busy)} user(s) of these GPUs: the drain waits for them")
        else:
            self._set("idle", Status.OK, "no Slurm job, GPU pod or GPU process on the selected GPUs")
        self._record("idle", [TargetResult(target=n, ok=True, message="; ".join(b for b in busy if b.startswith(
            n + ":")) or "idle") for n in self.nodes], started)

    @property
    def confirm_word(self) -> str:
        return f"mig-{len(self.nodes)}"

    def preview(self) -> list[str]:
        """What the confirmation shows: exact commands per route, what it hits."""
        snap = self.port.snapshot()
        lines: list[str] = []
        for r in self.routes:
            plan = r.backend.plan(ActionKind.MIG_RECONFIGURE, tuple(r.nodes), r.params(), snap)
            lines.append(f"apply via {r.how} ({plan.source}) on {collect(r.nodes)}:")
            lines.extend(f"  {c}" for c in plan.commands[:40])
            if len(plan.commands) > 40:
                lines.append(f"  … {len(plan.commands) - 40} more")
            lines.extend(f"  ! {e}" for e in plan.errors)
            lines.extend(f"  warning: {w}" for w in plan.warnings)
        return [clean_text(x) for x in lines]

    # -- running ------------------------------------------------------------------------------
    def _progress(self, step: str) -> Callable[[ProgressItem], None]:
        """A backend's progress as lines of ``step``, on the loop whatever thread the backend reports from."""
        loop = asyncio.get_running_loop()

        def heard(item: ProgressItem) -> None:
            line = item if isinstance(item, str) else f"{item.label}: {item.error or item.rc}"
            try:
                on_loop = asyncio.get_running_loop() is loop
            except RuntimeError:
                on_loop = False
            if on_loop:
                self._set(step, None, line)
            else:
                loop.call_soon_threadsafe(self._set, step, None, line)

        return heard

    async def _act(self, kind: ActionKind, targets: list[str], params: dict[str, str], step: str,
                   via: ActionBackend | None = None) -> ActionResult | None:
        """One action of a step through the port's executor (``via``: a route's own backend)."""
        snap = self.port.snapshot()
        plan = self.port.plan(kind, targets, params, snap, via=via)
        for c in plan.commands[:12]:
            self._set(step, None, f"$ {c}")
        if not plan.runnable:
            self._set(step, None, f"{kind.value}: " + "; ".join(plan.errors or ("nothing to do",)))
        result = await self.port.execute(plan, plan.confirm_word or True, progress=self._progress(step),
                                         extra={"wizard": self.id}, via=via)
        self.audit_errors.extend(result.audit_errors)
        if result.refused:
            self._set(step, None, f"{kind.value} refused: {result.refused}")
        for r in result.results:
            self._set(step, None, f"{'ok' if r.ok else 'FAILED'} {r.target}: {r.message}")
        return result

    def gate(self) -> ActionPlan:
        """The run as one plan, for the executor's refusal rule and for a reader of the whole run:
        these nodes, the typed word ``mig-N``, the preparation's errors (an unprepared run cannot go)
        and, once prepared, its actions as ``steps`` as their backends plan them now (drain, cordon,
        the apply of each route, then resume and uncordon of what it drains). The steps are re-planned
        on fresh data when the run gets to them; the wait, verify and gres.conf steps are the wizard's
        own (recorded with ``params.step``)."""
        errors = tuple(self.errors) or (() if self.step("layout").status is Status.OK else ("not prepared",))
        return ActionPlan(kind=ActionKind.MIG_RECONFIGURE, source=SOURCE, targets=tuple(self.nodes),
                          params={"step": "run", "layout": self.layout_name, "gpus": self.gpus_param},
                          errors=errors, word=self.confirm_word, steps=() if errors else self._steps())

    def _steps(self) -> tuple[ActionPlan, ...]:
        snap = self.port.snapshot()
        slurm = [n for n in self.nodes if (nd := snap.nodes.get(n)) and nd.slurm is not None
                 and "DRAIN" not in nd.slurm.flags]
        k8s = [n for n in self.nodes if (nd := snap.nodes.get(n)) and nd.k8s is not None and not nd.k8s.unschedulable]
        steps: list[ActionPlan] = []
        before = [(ActionKind.DRAIN_NODES, slurm, {"reason": f"hpctui mig: reconfiguring to {self.layout_name}"}),
                  (ActionKind.CORDON_NODES, k8s, {})]
        after = [(ActionKind.RESUME_NODES, slurm), (ActionKind.UNCORDON_NODES, k8s)]
        for kind, nodes, params in before:
            if nodes and self.port.backend_for(kind) is not None:
                steps.append(self.port.plan(kind, nodes, params, snap))
        steps += [self.port.plan(ActionKind.MIG_RECONFIGURE, r.nodes, r.params(), snap, via=r.backend)
                  for r in self.routes]
        for kind, nodes in after:  # what it will have drained: planned when it gets there
            backend = self.port.backend_for(kind)
            if nodes and backend is not None:
                steps.append(ActionPlan(kind=kind, source=backend.name, targets=tuple(nodes),
                                        notes=("after the verify step: what this run drained or cordoned",)))
        return tuple(steps)

    async def run(self, confirmation: str | bool) -> bool:
        """Run the confirmed wizard; True when every step ended ok (or with a warning)."""
        started = self.port.clock()
        why = self.port.refusal(self.gate(), self.confirm_word if confirmation is True else confirmation)
        if why is not None:
            self._record("run", [], started, refused=why)
            if why.startswith("not confirmed"):
                self._set("drain", Status.CANCELLED, "not confirmed")
            else:
                self._set("drain", Status.FAILED, f"refused: {why}")
            self.done = True
            return False
        try:
            ok = await self._run()
        except asyncio.CancelledError:
            if not self.applying:
                await asyncio.shield(self._undo())
            raise
        except Exception as exc:  # an unexpected error in a step stops there: audited, the node left drained
            ok = False
            key = next((s.key for s in self.steps if s.status is Status.RUNNING),
                       next((s.key for s in self.steps if s.status is Status.PENDING), "resume"))
            try:
                await self._leave_drained(key, f"{key} failed: {describe_error(exc)}"[:200])
            except Exception as again:  # even leaving it drained failed: say so, never raise out of the wizard
                self._set(key, Status.FAILED, f"{key} failed: {describe_error(exc)}; and then: {describe_error(again)}")
        finally:
            self.done = True
        self.ok = ok
        return ok

    async def _run(self) -> bool:
        if not await self._drain():
            await self._leave_drained("drain", "drain failed")
            return False
        if not await self._wait():
            await self._leave_drained("wait", "GPUs still in use")
            return False
        self.applying = True
        failed = await self._apply()
        if failed:
            for node, why in failed.items():
                await self._leave_drained("apply", why, [node])
            await self._leave_drained("apply", "stopped after a failed apply",
                                      [n for n in self.nodes if n not in failed])
            return False
        bad = await self._verify()
        if bad:
            for node, why in bad.items():
                await self._leave_drained("verify", why, [node])
            return False
        self._gres()
        return await self._resume()

    async def _drain(self) -> bool:
        started = self.port.clock()
        self._set("drain", Status.RUNNING)
        snap = self.port.snapshot()
        reason = f"hpctui mig: reconfiguring to {self.layout_name}"
        slurm = [n for n in self.nodes if (nd := snap.nodes.get(n)) and nd.slurm is not None]
        k8s = [n for n in self.nodes if (nd := snap.nodes.get(n)) and nd.k8s is not None]
        to_drain = [n for n in slurm if "DRAIN" not in snap.nodes[n].slurm.flags]  # type: ignore[union-attr]
        for n in slurm:
            if n not in to_drain:
                self._set("drain", None, f"{n} is already drained ({snap.nodes[n].slurm.reason}): "  # type: ignore[union-attr]
                                         "left drained at the end")
        to_cordon = [n for n in k8s if not snap.nodes[n].k8s.unschedulable]  # type: ignore[union-attr]
        ok = True
        if to_drain and self.port.backend_for(ActionKind.DRAIN_NODES) is not None:
            res = await self._act(ActionKind.DRAIN_NODES, to_drain, {"reason": reason}, "drain")
            if res is not None:
                self.drained = [r.target for r in res.results if r.ok]
                ok = ok and res.ok
        if to_cordon and self.port.backend_for(ActionKind.CORDON_NODES) is not None:
            res = await self._act(ActionKind.CORDON_NODES, to_cordon, {}, "drain")
            if res is not None:
                self.cordoned = [r.target for r in res.results if r.ok]
                ok = ok and res.ok
        if not to_drain and not to_cordon:
            self._set("drain", None, "nothing to drain or cordon")
        self._set("drain", Status.OK if ok else Status.FAILED)
        self._record("drain", [TargetResult(target=n, ok=ok, message="drained/cordoned" if ok else "failed")
                               for n in self.nodes], started)
        return ok

    async def _wait(self) -> bool:
        started = self.port.clock()
        self._set("wait", Status.RUNNING)
        t0 = time.monotonic()
        last: list[str] | None = None
        first = True
        while True:
            await self._fresh(first)
            first = False
            busy = self.busy(self.port.snapshot())
            if not busy:
                self._set("wait", Status.OK, f"empty after {time.monotonic() - t0:.0f} s")
                self._record("wait", [TargetResult(target=n, ok=True, message="empty") for n in self.nodes], started)
                return True
            if busy != last:
                self._set("wait", None, f"{len(busy)} left: " + "; ".join(busy[:3]) + (" …" if len(busy) > 3 else ""))
                last = busy
            if time.monotonic() - t0 > self.wait_timeout_s:
                self._set("wait", Status.FAILED, f"timed out after {self.wait_timeout_s:g} s with {len(busy)} left")
                self._record("wait", [TargetResult(target=n, ok=False, message="; ".join(
                    b for b in busy if b.startswith(n + ":")) or "empty") for n in self.nodes], started)
                return False

    async def _fresh(self, first: bool) -> None:
        """New data for one round of the wait and verify loops; a round lasts one poll period.

        With the runtime's poller running (the TUI) its own loops collect: it is asked for a refresh
        at the start of a step, and that first round ends as soon as the store's data changes; no
        source is collected here, so none is collected twice at once and a big one (squeue of 100k
        jobs, an SSH probe round) is not collected every second. Without a poller (``hpctui act mig``)
        the sources are collected here: all at the start of a step, then each when its interval
        has passed."""
        if self.collect is not None:  # a collector of the caller's own
            if not first:
                await asyncio.sleep(self.poll_s)
            await self.collect()
            return
        if self.port.polling:
            if not first:
                await asyncio.sleep(self.poll_s)
                return
            self.port.refresh()
            await self.port.changed(timeout=self.poll_s)  # the round ends when the poller's data lands
            return
        if not first:
            await asyncio.sleep(self.poll_s)
        await self.port.collect(all_sources=first)

    async def _apply(self) -> dict[str, str]:
        self._set("apply", Status.RUNNING)
        failed: dict[str, str] = {}
        for r in self.routes:
            res = await self._act(ActionKind.MIG_RECONFIGURE, r.nodes, r.params(), "apply", via=r.backend)
            if res is None:
                continue
            if res.refused:
                failed.update(dict.fromkeys(r.nodes, f"apply refused: {res.refused}"))
            for t in res.results:
                if not t.ok:
                    m = re.search(r"GPU (\d+)", t.message)
                    failed[t.target] = f"apply failed on GPU {m.group(1)}" if m else "apply failed"
            if failed:
                break  # a failed step stops
        self._set("apply", Status.FAILED if failed else Status.OK)
        return failed

    def observed(self, snap: ClusterSnapshot, node: str) -> dict[int, tuple[bool, tuple[str, ...]]]:
        out: dict[int, tuple[bool, tuple[str, ...]]] = {}
        for g in snap.gpus.get(node, ()):
            out[g.index] = (bool(g.mig_mode_current), tuple(sorted(m.profile for m in g.mig_instances)))
        return out

    async def _verify(self) -> dict[str, str]:
        started = self.port.clock()
        self._set("verify", Status.RUNNING)
        bad: dict[str, str] = {}
        t0 = time.monotonic()
        pending = set(self.nodes)
        by_node = {n: r for r in self.routes for n in r.nodes}
        last_seen: dict[str, dict[int, tuple[bool, tuple[str, ...]]]] = {}
        unreachable: dict[str, str] = {}  # node -> why its last read failed
        first = True
        while pending:
            await self._fresh(first)
            first = False
            snap = self.port.snapshot()
            for n in sorted(pending):
                r = by_node[n]
                if isinstance(r.backend, MigReader):
                    try:
                        seen = await r.backend.read_mig(n)
                    except Exception as exc:  # a node resetting its GPU is often unreachable: keep trying
                        why = describe_error(exc)
                        if unreachable.get(n) != why:
                            self._set("verify", None, f"{n}: cannot read its MIG layout yet ({why}); trying again")
                        unreachable[n] = why
                        continue
                    unreachable.pop(n, None)
                elif r.how == "k8s":
                    seen = self._k8s_seen(snap, n)
                else:
                    seen = self.observed(snap, n)
                last_seen[n] = seen
                want = self.expected[n]
                if all(seen.get(i) == w for i, w in want.items()):
                    pending.discard(n)
                    self._set("verify", None, f"ok {n}: {self.layouts[n].summary()} on {len(want)} GPU(s)")
            if not pending:
                break
            if time.monotonic() - t0 > self.verify_timeout_s:
                for n in sorted(pending):
                    if n in unreachable and n not in last_seen:
                        bad[n] = "verify failed: node unreachable"
                        self._set("verify", None, f"FAILED {n}: its MIG layout could not be read in "
                                                  f"{self.verify_timeout_s:g} s ({unreachable[n]})")
                        continue
                    seen = last_seen.get(n) or (self.observed(snap, n) if by_node[n].how != "k8s"
                                                else self._k8s_seen(snap, n))
                    wrong = [i for i, w in self.expected[n].items() if seen.get(i) != w]
                    bad[n] = f"verify failed on GPU {wrong[0]}" if wrong else "verify failed"
                    self._set("verify", None, f"FAILED {n}: GPU {wrong[0] if wrong else '?'} shows "
                                              f"{_show(seen.get(wrong[0]) if wrong else None)}, asked "
                                              f"{_show(self.expected[n].get(wrong[0]) if wrong else None)}")
                break
        self._set("verify", Status.FAILED if bad else Status.OK)
        self._record("verify", [TargetResult(target=n, ok=n not in bad, message=bad.get(n, "instances as asked"))
                                for n in self.nodes], started)
        return bad

    def _k8s_seen(self, snap: ClusterSnapshot, node: str) -> dict[int, tuple[bool, tuple[str, ...]]]:
        """GPU Operator node: the GPUs' own readings when a probe has them, else the node's reported MIG
        devices (``nvidia.com/mig-<profile>`` capacity / ``.count`` labels) spread over its GPUs."""
        if snap.gpus.get(node):
            return self.observed(snap, node)
        info = snap.nodes[node].k8s
        if info is None:
            return {}
        if info.labels.get("nvidia.com/mig.config.state") != "success":
            return {}
        counts: Counter[str] = Counter()
        if info.mig_capacity:
            counts.update(info.mig_capacity)
        else:
            for k, v in info.labels.items():
                m = re.fullmatch(r"nvidia\.com/mig-(.+)\.count", k)
                if m and v.isdigit():
                    counts[m.group(1)] = int(v)
        want = self.expected[node]
        n = len(want) or 1
        if not counts:
            return dict.fromkeys(want, (False, ()))
        per = tuple(sorted(p for p, c in counts.items() for _ in range(c // n)))
        return dict.fromkeys(want, (True, per))

    def _gres(self) -> None:
        snap = self.port.snapshot()
        slurm = [n for n in self.nodes if (nd := snap.nodes.get(n)) and nd.slurm is not None]
        if not slurm:
            self._set("gres", Status.SKIPPED, "no Slurm node")
            return
        self._set("gres", Status.RUNNING, "Slurm does not follow MIG changes: gres.conf and slurmd must match")
        for n in slurm:
            gpus = sorted(self.expected[n])
            total = len(snap.gpus.get(n, ())) or len(gpus)
            for line in gres_lines(n, gpus, self.layouts[n], other_gpus=total - len(gpus)):
                self._set("gres", None, line)
        self._set("gres", Status.WARN)

    async def _resume(self) -> bool:
        started = self.port.clock()
        self._set("resume", Status.RUNNING)
        ok = True
        if self.drained:
            res = await self._act(ActionKind.RESUME_NODES, self.drained, {}, "resume")
            ok = ok and res is not None and res.ok
        if self.cordoned:
            res = await self._act(ActionKind.UNCORDON_NODES, self.cordoned, {}, "resume")
            ok = ok and res is not None and res.ok
        if not self.drained and not self.cordoned:
            self._set("resume", None, "nothing this wizard drained or cordoned")
        self._set("resume", Status.OK if ok else Status.FAILED)
        self._record("resume", [TargetResult(target=n, ok=ok, message="resumed" if ok else "failed")
                                for n in self.nodes], started)
        return ok

    async def _leave_drained(self, step: str, why: str, nodes: list[str] | None = None) -> None:
        """A failed step: the node stays drained, its reason names the step."""
        nodes = self.nodes if nodes is None else nodes
        if not nodes:
            return
        started = self.port.clock()
        snap = self.port.snapshot()
        slurm = [n for n in nodes if (nd := snap.nodes.get(n)) and nd.slurm is not None]
        reason = f"hpctui mig: {why}"
        if slurm and self.port.backend_for(ActionKind.DRAIN_NODES) is not None:
            # the wizard drained them itself: its step's reason replaces its own "reconfiguring" one
            await self._act(ActionKind.DRAIN_NODES, slurm, {"reason": reason, "reason_mode": "replace"}, step)
        self._set(step, Status.FAILED, f"{collect(nodes)} left drained: {reason}")
        self._record(step, [TargetResult(target=n, ok=False, message=reason) for n in nodes], started)
        for s in self.steps:
            if s.status is Status.PENDING:
                s.status = Status.SKIPPED

    async def _undo(self) -> None:
        """Cancelled before apply: put back what this wizard drained or cordoned."""
        started = self.port.clock()
        for s in self.steps:
            if s.status in (Status.PENDING, Status.RUNNING):
                s.status = Status.CANCELLED
        if self.drained:
            await self._act(ActionKind.RESUME_NODES, self.drained, {}, "resume")
        if self.cordoned:
            await self._act(ActionKind.UNCORDON_NODES, self.cordoned, {}, "resume")
        self._set("resume", Status.CANCELLED, "cancelled before apply: drained/cordoned nodes put back")
        self._record("cancel", [TargetResult(target=n, ok=True, message="cancelled before apply")
                                for n in self.nodes], started)


def _show(v: tuple[bool, tuple[str, ...]] | None) -> str:
    if v is None:
        return "nothing"
    on, profiles = v
    if not on:
        return "MIG off"
    return ",".join(profiles) or "MIG on, no instances"
