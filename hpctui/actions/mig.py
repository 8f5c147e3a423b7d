"""The MIG reconfiguration wizard's workflow, shared by the TUI (``MigWizardScreen``) and
``hpctui act mig``.

Steps, each visible with its result and audited: layout → idle check → drain (Slurm) and/or
cordon (K8s) → wait until empty → apply → verify → gres.conf (Slurm nodes) → resume/uncordon.
Drain, cordon, apply, resume and uncordon are actions run through an :class:`ActionExecutor`
(read-only, confirmation and the audit trail are the executor's); the other steps leave an
outcome record of their own (action ``mig_reconfigure``, ``params.step``). Where a node goes:

* the demo cluster → its own backend (the simulated GPUs change layout after a short delay);
* a GPU Operator node (label ``nvidia.com/mig.capable=true``) of a Kubernetes source → the
  ``nvidia.com/mig.config`` label, followed to ``nvidia.com/mig.config.state`` success/failed;
* otherwise a node of an SSH source → nvidia-smi over the SSH source's connection.

A failed step stops the wizard and leaves the node drained with a reason naming the step.
"""

from __future__ import annotations

import asyncio
import enum
import math
import re
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hpctui.actions.executor import ActionExecutor
from hpctui.base.errors import describe_error
from hpctui.base.sanitize import clean_text
from hpctui.findings.correlate import workload_index
from hpctui.model.action import ActionKind, ActionPlan, ActionResult, TargetResult
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

if TYPE_CHECKING:
    from hpctui.core.runtime import Runtime
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


def mig_backends(runtime: Runtime) -> dict[str, ActionBackend]:
    """The sources that can apply a layout, by how: demo, k8s (GPU Operator label), ssh."""
    out: dict[str, ActionBackend] = {}
    for s in runtime.sources:
        if s.kind == "demo" and "demo" not in out:
            out["demo"] = s  # type: ignore[assignment]
        elif s.kind == "k8s" and "k8s" not in out:
            out["k8s"] = s  # type: ignore[assignment]
        elif s.kind == "ssh" and "ssh" not in out:
            from hpctui.actions.mig_ssh import MigSshBackend

            out["ssh"] = MigSshBackend(s)  # type: ignore[arg-type]
    return out


class MigWorkflow:
    def __init__(self, runtime: Runtime, nodes: list[str], layout: str, gpus: str | None = None, *,
                 on_change: Callable[[Step, str | None], None] | None = None, wait_timeout_s: float = 1800.0,
                 verify_timeout_s: float = 300.0, poll_s: float = 2.0,
                 collect: Callable[[], Any] | None = None) -> None:
        self.runtime = runtime
        self.nodes = list(dict.fromkeys(nodes))
        self.layout_name = layout.strip()
        self.gpus_param = (gpus or "all").strip() or "all"
        self.steps = [Step(k, t) for k, t in STEPS]
        self.on_change = on_change
        self.wait_timeout_s = wait_timeout_s
        self.verify_timeout_s = verify_timeout_s
        self.poll_s = poll_s
        self.collect = collect  # None: the runtime's poller, or the sources when none runs (see _fresh)
        self._collected: dict[str, float] = {}  # source -> when _fresh last collected it (no poller)
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
        """An outcome record for one of the wizard's own steps (the actions have their own)."""
        audit = self.runtime.executor.audit
        if audit is None:
            return
        plan = ActionPlan(kind=ActionKind.MIG_RECONFIGURE, source=SOURCE, targets=tuple(self.nodes),
                          params={"step": key, "layout": self.layout_name, "gpus": self.gpus_param})
        result = ActionResult(plan=plan, user=self.runtime.executor.user, started=started,
                              finished=self.runtime.clock(), results=tuple(results), refused=refused)
        self.runtime.executor.record_audit("outcome", lambda: audit.append(
            result, self.runtime.cluster, action_id=uuid.uuid4().hex,
            extra={**self.runtime.executor.user_extra, "wizard": self.id, "step": key}))

    # -- preparing (no side effects) ----------------------------------------------------------------
    def prepare(self, snapshot: ClusterSnapshot | None = None) -> bool:
        """Layout and idle check from the last snapshot: what will happen, and whether it can."""
        snap = snapshot if snapshot is not None else self.runtime.store.snapshot()
        self.errors, self.warnings, self.routes, self.affected = [], [], [], []
        self.steps = [Step(k, t) for k, t in STEPS]
        self._set("layout", Status.RUNNING)
        if self.runtime.executor.read_only:
            self.errors.append("read-only mode: actions are disabled (the MIG wizard too)")
        if not self.nodes:
            self.errors.append("no nodes selected")
        config: Mapping[str, MigLayoutSpec] = getattr(self.runtime, "mig_layouts", {}) or {}
        backends = mig_backends(self.runtime)
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
        started = self.runtime.clock()
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
        snap = self.runtime.store.snapshot()
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
    def _executor(self, backend: ActionBackend) -> ActionExecutor:
        main = self.runtime.executor
        ex = ActionExecutor([backend], main.audit, cluster=main.cluster, read_only=main.read_only, user=main.user,
                            clock=main.clock)
        ex.user_extra = {**main.user_extra, "wizard": self.id}  # the apply record names its wizard run
        ex.audit_errors = main.audit_errors  # a lost record is reported where the wizard looks
        return ex

    async def _act(self, executor: ActionExecutor, kind: ActionKind, targets: list[str], params: dict[str, str],
                   step: str) -> ActionResult | None:
        snap = self.runtime.store.snapshot()
        plan = executor.plan(kind, targets, params, snap)
        for c in plan.commands[:12]:
            self._set(step, None, f"$ {c}")
        if not plan.runnable:
            self._set(step, None, f"{kind.value}: " + "; ".join(plan.errors or ("nothing to do",)))
        result = await executor.execute(plan, confirmation=plan.confirm_word or True)
        if result.refused:
            self._set(step, None, f"{kind.value} refused: {result.refused}")
        for r in result.results:
            self._set(step, None, f"{'ok' if r.ok else 'FAILED'} {r.target}: {r.message}")
        return result

    async def run(self, confirmation: str | bool) -> bool:
        """Run the confirmed wizard; True when every step ended ok (or with a warning)."""
        started = self.runtime.clock()
        if self.runtime.executor.read_only or self.step("layout").status is not Status.OK:
            why = "read-only mode" if self.runtime.executor.read_only else "; ".join(self.errors) or "not prepared"
            self._record("run", [], started, refused=why)
            self._set("drain", Status.FAILED, f"refused: {why}")
            self.done = True
            return False
        if confirmation is not True and confirmation != self.confirm_word:
            self._record("run", [], started, refused=f"not confirmed (type {self.confirm_word!r})")
            self._set("drain", Status.CANCELLED, "not confirmed")
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
        started = self.runtime.clock()
        self._set("drain", Status.RUNNING)
        snap = self.runtime.store.snapshot()
        main = self.runtime.executor
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
        if to_drain and main.backend_for(ActionKind.DRAIN_NODES) is not None:
            res = await self._act(main, ActionKind.DRAIN_NODES, to_drain, {"reason": reason}, "drain")
            if res is not None:
                self.drained = [r.target for r in res.results if r.ok]
                ok = ok and res.ok
        if to_cordon and main.backend_for(ActionKind.CORDON_NODES) is not None:
            res = await self._act(main, ActionKind.CORDON_NODES, to_cordon, {}, "drain")
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
        started = self.runtime.clock()
        self._set("wait", Status.RUNNING)
        t0 = time.monotonic()
        last: list[str] | None = None
        first = True
        while True:
            await self._fresh(first)
            first = False
            busy = self.busy(self.runtime.store.snapshot())
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
        rt = self.runtime
        if self.collect is not None:  # a collector of the caller's own
            if not first:
                await asyncio.sleep(self.poll_s)
            await self.collect()
            return
        poller = rt.poller
        if poller.running:
            if not first:
                await asyncio.sleep(self.poll_s)
                return
            version = rt.store.data_version
            rt.refresh_now()
            for _ in range(math.ceil(self.poll_s / 0.05)):  # the store has no change event to wait on
                if rt.store.data_version != version:
                    break
                await asyncio.sleep(0.05)
            return
        if not first:
            await asyncio.sleep(self.poll_s)
        now = time.monotonic()
        due = [s for s in rt.sources if first or s.name not in self._collected
               or now - self._collected[s.name] >= s.interval_s]
        for s in due:
            self._collected[s.name] = now
        if due:
            await asyncio.gather(*(poller.poll_once(s) for s in due))

    async def _apply(self) -> dict[str, str]:
        self._set("apply", Status.RUNNING)
        failed: dict[str, str] = {}
        for r in self.routes:
            res = await self._act(self._executor(r.backend), ActionKind.MIG_RECONFIGURE, r.nodes, r.params(), "apply")
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
        started = self.runtime.clock()
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
            snap = self.runtime.store.snapshot()
            for n in sorted(pending):
                r = by_node[n]
                reader = getattr(r.backend, "read_mig", None)
                if reader is not None:
                    try:
                        seen = await reader(n)
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
        snap = self.runtime.store.snapshot()
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
        started = self.runtime.clock()
        self._set("resume", Status.RUNNING)
        main = self.runtime.executor
        ok = True
        if self.drained:
            res = await self._act(main, ActionKind.RESUME_NODES, self.drained, {}, "resume")
            ok = ok and res is not None and res.ok
        if self.cordoned:
            res = await self._act(main, ActionKind.UNCORDON_NODES, self.cordoned, {}, "resume")
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
        started = self.runtime.clock()
        main = self.runtime.executor
        snap = self.runtime.store.snapshot()
        slurm = [n for n in nodes if (nd := snap.nodes.get(n)) and nd.slurm is not None]
        reason = f"hpctui mig: {why}"
        if slurm and main.backend_for(ActionKind.DRAIN_NODES) is not None:
            # the wizard drained them itself: its step's reason replaces its own "reconfiguring" one
            await self._act(main, ActionKind.DRAIN_NODES, slurm, {"reason": reason, "reason_mode": "replace"}, step)
        self._set(step, Status.FAILED, f"{collect(nodes)} left drained: {reason}")
        self._record(step, [TargetResult(target=n, ok=False, message=reason) for n in nodes], started)
        for s in self.steps:
            if s.status is Status.PENDING:
                s.status = Status.SKIPPED

    async def _undo(self) -> None:
        """Cancelled before apply: put back what this wizard drained or cordoned."""
        started = self.runtime.clock()
        for s in self.steps:
            if s.status in (Status.PENDING, Status.RUNNING):
                s.status = Status.CANCELLED
        main = self.runtime.executor
        if self.drained:
            await self._act(main, ActionKind.RESUME_NODES, self.drained, {}, "resume")
        if self.cordoned:
            await self._act(main, ActionKind.UNCORDON_NODES, self.cordoned, {}, "resume")
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


# -- hpctui act mig -----------------------------------------------------------------------------

STATUS_MARK = {Status.OK: "ok  ", Status.WARN: "warn", Status.FAILED: "FAIL", Status.SKIPPED: "skip",
               Status.CANCELLED: "stop", Status.RUNNING: "... ", Status.PENDING: "    "}


async def run_mig(runtime: Runtime, targets: list[str], params: dict[str, str], *, dry_run: bool, yes: bool,
                  as_json: bool, interactive: bool, prompt: Callable[[str], str],
                  out: Callable[[str], Any], err: Callable[[str], Any], poll_s: float = 1.0) -> int:
    """``hpctui act mig``: the wizard headless. 0 ok, 1 a step failed, 2 usage/refused."""
    import msgspec

    from hpctui.model.hostlist import HostlistError, expand

    nodes: list[str] = []
    try:
        for t in targets:
            nodes.extend(expand(t))
    except HostlistError as exc:
        err(f"hpctui act: {exc}\n")
        return 2
    layout = params.get("layout", "").strip()
    if not layout and not runtime.executor.read_only:  # read-only: refused (and audited) below
        err("hpctui act mig: needs --param layout=NAME (all-disabled, all-1g, all-balanced, all-7g or a "
            "mig_layouts name)\n")
        return 2

    shown: dict[str, Status] = {}

    def show(step: Step, line: str | None) -> None:
        if as_json:
            return
        if line is not None:
            out(f"       {line}\n")
        if shown.get(step.key) is not step.status and step.status is not Status.PENDING:
            shown[step.key] = step.status
            out(f"[{STATUS_MARK[step.status]}] {step.title}\n")

    await runtime.collect_once()
    wf = MigWorkflow(runtime, nodes, layout, params.get("gpus"), on_change=show, poll_s=poll_s,
                     wait_timeout_s=float(params.get("wait_timeout_s", "1800")),
                     verify_timeout_s=float(params.get("verify_timeout_s", "300")))
    prepared = wf.prepare()

    def doc(ran: bool) -> str:
        return msgspec.json.encode({
            "dry_run": dry_run, "nodes": nodes, "layout": layout, "ok": wf.ok if ran else prepared,
            "errors": wf.errors, "affected": wf.affected, "preview": wf.preview() if prepared else [],
            "confirm_word": wf.confirm_word,
            "steps": [{"key": s.key, "title": s.title, "status": s.status.value, "detail": s.detail}
                      for s in wf.steps]}).decode() + "\n"

    if prepared and not as_json:
        out("plan:\n" + "".join(f"  {line}\n" for line in wf.preview()))
    if dry_run or not prepared:
        if not prepared and not dry_run:
            await wf.run(False)  # audited as refused (a dry run, like every other action's, writes nothing)
        if as_json:
            out(doc(False))
        return 0 if prepared else 2
    if yes:
        confirmation: str | bool = wf.confirm_word
    elif interactive:
        try:
            confirmation = prompt(f"Type {wf.confirm_word} to reconfigure MIG on {len(nodes)} node(s) "
                                  f"(drain, apply, resume): ").strip()
        except EOFError:
            confirmation = False
    else:
        await wf.run(False)
        if as_json:
            out(doc(False))
        err("hpctui act: not confirmed: stdin is not a terminal, pass --yes to run without asking\n")
        return 2
    ok = await wf.run(confirmation)
    if as_json:
        out(doc(True))
    for problem in runtime.executor.audit_errors:
        err(f"hpctui act: warning: {problem}\n")
    if wf.step("drain").status is Status.CANCELLED:
        return 2
    return 0 if ok else 1
