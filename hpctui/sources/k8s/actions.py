"""Actions on Kubernetes nodes: cordon, uncordon, drain (Eviction API), MIG reconfigure.

``plan`` is pure (the last snapshot, no network): it names the exact requests and the
pods a drain will evict or skip. ``execute`` runs in a thread and re-reads the live state:
drain lists the node's pods again, evicts each through the Eviction API version the
server serves (policy/v1, else policy/v1beta1, found by discovery as kubectl does),
retries pods a PodDisruptionBudget protects (429) until the timeout, skips DaemonSet and
mirror pods, and reports per pod what could not be evicted and why.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from typing import TYPE_CHECKING, Any

from hpctui.base.sanitize import clean_text
from hpctui.model import ClusterSnapshot, Pod
from hpctui.model.action import ActionKind, ActionPlan, TargetResult
from hpctui.sources.k8s import convert
from hpctui.sources.k8s.client import K8sError, q
from hpctui.sources.k8s.names import PodTargetError, pod_problem, split_pod_target

if TYPE_CHECKING:
    from hpctui.sources.k8s.client import KubeClient
    from hpctui.sources.k8s.settings import K8sSettings

K8S_KINDS = frozenset({ActionKind.CORDON_NODES, ActionKind.UNCORDON_NODES, ActionKind.K8S_DRAIN_NODES,
                       ActionKind.MIG_RECONFIGURE, ActionKind.DELETE_PODS})
LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
MIG_DONE = ("success", "failed")


def _int_param(params: dict[str, str], key: str, default: float, errors: list[str]) -> float:
    raw = params.get(key, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        errors.append(f"{key} must be a number, not {raw!r}")
        return default


def _invalid_pod_target(target: str, exc: PodTargetError, snapshot: ClusterSnapshot) -> str:
    """Why ``target`` is refused: for a pod the last read listed under that text, its own namespace and
    name (a ``/`` inside a hostile namespace would otherwise name another pod); else the split's problem."""
    for p in snapshot.pods:
        problem = pod_problem(p.namespace, p.name)
        if problem and f"{p.namespace}/{p.name}" == target:
            return f"refused pod {clean_text(p.name)!r} (namespace {clean_text(p.namespace)!r}): {problem}"
    return f"refused: {exc}"


def pod_label(p: Pod) -> str:
    owner = f" ({p.owner_kind}/{p.owner_name})" if p.owner_kind else " (no controller)"
    gpus = f", {p.gpu_text}" if p.gpus_requested else ""
    return f"{p.namespace}/{p.name}{owner}{gpus}, {p.phase}"


class K8sActions:
    """Mixed into :class:`~hpctui.sources.k8s.source.K8sSource` (needs ``client``, ``settings``, ``name``)."""

    name: str
    settings: K8sSettings
    client: KubeClient

    def __init__(self) -> None:
        self._eviction_gv: str | None = None
        self._gv_lock = threading.Lock()
        self.progress: list[str] = []  # per-pod progress lines of the running/last action (tests, UI)
        self._k8s_names: dict[str, str] = {}  # snapshot (Slurm-side) node name -> K8s node name

    @property
    def action_kinds(self) -> frozenset[ActionKind]:
        return K8S_KINDS

    # -- plan (pure) ------------------------------------------------------------------
    def plan(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str],
             snapshot: ClusterSnapshot) -> ActionPlan:
        errors: list[str] = []
        warnings: list[str] = []
        notes: list[str] = []
        rejected: list[str] = []
        names: list[str] = []
        k8s_names: dict[str, str] = {}
        if kind not in K8S_KINDS:
            return ActionPlan(kind=kind, source=self.name, targets=targets, params=params,
                              errors=(f"Kubernetes cannot {kind.value}",))
        if kind is ActionKind.DELETE_PODS:
            return self._plan_delete(targets, params, snapshot)
        for t in targets:
            node = snapshot.nodes.get(t)
            if node is None or node.k8s is None:
                rejected.append(t)
                errors.append(f"unknown node {t!r} (not in the last Kubernetes read)")
            elif t not in names:
                names.append(t)
                k8s_names[t] = node.k8s.name
        self._k8s_names.update(k8s_names)
        commands: list[str] = []
        affected: list[str] = []
        pods_by_node: dict[str, list[Pod]] = {}
        for p in snapshot.pods:  # the store already mapped pod.node to the snapshot's node names
            if p.node in k8s_names:
                pods_by_node.setdefault(p.node, []).append(p)
        for t in names:
            info = snapshot.nodes[t].k8s
            assert info is not None
            kn = k8s_names[t]
            if kind is ActionKind.CORDON_NODES:
                # (already cordoned: the executor says so and asks for reason_mode)
                commands.append(f'PATCH /api/v1/nodes/{kn} {{"spec":{{"unschedulable":true}}}}  (kubectl cordon {kn})')
                affected.extend(f"{pod_label(p)} on {t}: keeps running (cordon only stops new pods)"
                                for p in pods_by_node.get(t, []) if p.phase not in ("Succeeded", "Failed"))
            elif kind is ActionKind.UNCORDON_NODES:
                if not info.unschedulable:
                    warnings.append(f"{t} is not cordoned")
                commands.append(f'PATCH /api/v1/nodes/{kn} {{"spec":{{"unschedulable":false}}}}  (kubectl uncordon {kn})')
            elif kind is ActionKind.K8S_DRAIN_NODES:
                commands.append(f'PATCH /api/v1/nodes/{kn} {{"spec":{{"unschedulable":true}}}}  (cordon)')
                for p in pods_by_node.get(t, []):
                    if p.daemonset:
                        affected.append(f"skip {p.namespace}/{p.name} on {t}: DaemonSet pod")
                    elif p.mirror:
                        affected.append(f"skip {p.namespace}/{p.name} on {t}: mirror (static) pod")
                    else:
                        affected.append(f"evict {pod_label(p)} on {t}")
                        commands.append(f"POST /api/v1/namespaces/{p.namespace}/pods/{p.name}/eviction")
                        if p.owner_kind is None:
                            warnings.append(f"{p.namespace}/{p.name} has no controller: once evicted it is gone")
            else:  # MIG
                layout = params.get("layout", "").strip()
                if not layout:
                    errors.append("mig_reconfigure needs a layout (e.g. all-1g.10gb, all-balanced, all-disabled)")
                elif not LABEL_VALUE.match(layout):
                    errors.append(f"layout {layout!r} is not a valid label value")
                if info.labels.get("nvidia.com/mig.capable") != "true":
                    errors.append(f"{t}: not a MIG-capable GPU Operator node (label nvidia.com/mig.capable is "
                                  f"{info.labels.get('nvidia.com/mig.capable', 'absent')!r})")
                if info.mig_config == layout and layout:
                    warnings.append(f"{t} already has nvidia.com/mig.config={layout} (state {info.mig_state})")
                commands.append(f'PATCH /api/v1/nodes/{kn} {{"metadata":{{"labels":{{"{convert.MIG_CONFIG}":'
                                f'"{layout}"}}}}}}  then follow {convert.MIG_STATE} to success|failed')
                gpu_pods = [p for p in pods_by_node.get(t, []) if p.gpus_requested]
                affected.extend(f"GPU pod {pod_label(p)} on {t}" for p in gpu_pods)
                if gpu_pods:
                    warnings.append(f"{t}: {len(gpu_pods)} pod(s) use GPUs: the MIG manager waits for them or fails")
        if kind is ActionKind.K8S_DRAIN_NODES:
            grace = _int_param(params, "grace_period_s", self.settings.drain_grace_period_s, errors)
            timeout = _int_param(params, "timeout_s", self.settings.drain_timeout_s, errors)
            gv = self._eviction_gv or "discovered at run time: policy/v1, else policy/v1beta1"
            notes.append(f"Eviction API: {gv}; PodDisruptionBudget refusals (429) retried every "
                         f"{self.settings.drain_retry_s:g} s for up to {timeout:g} s; grace period "
                         f"{'each pod’s own' if grace < 0 else f'{grace:g} s'}")
            notes.append("the pods on each node are listed again when the drain runs")
        if kind is ActionKind.MIG_RECONFIGURE:
            timeout = _int_param(params, "timeout_s", self.settings.mig_timeout_s, errors)
            notes.append(f"follows {convert.MIG_STATE} for up to {timeout:g} s")
        return ActionPlan(kind=kind, source=self.name, targets=tuple(names), params=params,
                          commands=tuple(commands), affected=tuple(affected), warnings=tuple(warnings),
                          errors=tuple(errors), rejected_targets=tuple(rejected), notes=tuple(notes))

    def _plan_delete(self, targets: tuple[str, ...], params: dict[str, str],
                     snapshot: ClusterSnapshot) -> ActionPlan:
        """Each target is ``namespace/name`` of two valid Kubernetes names (:mod:`.names`), looked up
        as that pair; the request is built from the pod's own namespace and name, never re-split."""
        by_pair = {(p.namespace, p.name): p for p in snapshot.pods}
        found: list[tuple[str, Pod]] = []
        rejected: list[str] = []
        errors: list[str] = []
        warnings: list[str] = []
        grace = _int_param(params, "grace_period_s", -1, errors)
        for t in dict.fromkeys(targets):
            try:
                pod = by_pair.get(split_pod_target(t))
            except PodTargetError as exc:
                rejected.append(t)
                errors.append(_invalid_pod_target(t, exc, snapshot))
                continue
            if pod is None:
                rejected.append(t)
                errors.append(f"unknown pod {t!r} (not in the last Kubernetes read)")
                continue
            found.append((t, pod))
            if pod.owner_kind is None:
                warnings.append(f"{t} has no controller: it will not come back")
            elif pod.daemonset:
                warnings.append(f"{t} is a DaemonSet pod: its controller recreates it on the same node")
        suffix = "" if grace < 0 else f"?gracePeriodSeconds={grace:g}"
        commands = tuple(f"DELETE /api/v1/namespaces/{p.namespace}/pods/{p.name}{suffix}" for _, p in found)
        return ActionPlan(kind=ActionKind.DELETE_PODS, source=self.name, targets=tuple(t for t, _ in found),
                          params=params, commands=commands,
                          affected=tuple(pod_label(p) + (f" on {p.node}" if p.node else "") for _, p in found),
                          warnings=tuple(warnings), errors=tuple(errors), rejected_targets=tuple(rejected))

    def _delete_pod(self, plan: ActionPlan, target: str) -> TargetResult:
        try:
            ns, name = split_pod_target(target)
        except PodTargetError as exc:  # a plan made elsewhere: the same rule, nothing sent
            return TargetResult(target=target, ok=False, message=f"not deleted: {exc}")
        grace = _int_param(plan.params, "grace_period_s", -1, [])
        query = {"gracePeriodSeconds": int(grace)} if grace >= 0 else None
        status, _ = self.client.request("DELETE", f"/api/v1/namespaces/{q(ns)}/pods/{q(name)}", query=query,
                                        verb="delete", resource="pods", ok=(404,))
        return TargetResult(target=target, ok=True, message="already gone" if status == 404 else "deleted")

    # -- execute ----------------------------------------------------------------------
    async def execute(self, plan: ActionPlan) -> tuple[TargetResult, ...]:
        return await asyncio.to_thread(self._execute, plan)

    def _execute(self, plan: ActionPlan) -> tuple[TargetResult, ...]:
        self.progress = []
        results: list[TargetResult] = []
        for target in plan.targets:
            kn = self._k8s_name(plan, target)
            try:
                if plan.kind is ActionKind.DELETE_PODS:
                    results.append(self._delete_pod(plan, target))
                elif plan.kind is ActionKind.CORDON_NODES:
                    results.append(self._cordon(target, kn, True))
                elif plan.kind is ActionKind.UNCORDON_NODES:
                    results.append(self._cordon(target, kn, False))
                elif plan.kind is ActionKind.K8S_DRAIN_NODES:
                    results.append(self._drain(plan, target, kn))
                elif plan.kind is ActionKind.MIG_RECONFIGURE:
                    results.append(self._mig(plan, target, kn))
                else:
                    results.append(TargetResult(target=target, ok=False, message=f"cannot {plan.kind.value}"))
            except K8sError as exc:
                results.append(TargetResult(target=target, ok=False, message=exc.describe()))
        return tuple(results)

    def _k8s_name(self, plan: ActionPlan, target: str) -> str:
        """The K8s name behind a (Slurm-side) node name, as resolved when the plan was made."""
        return self._k8s_names.get(target, target)

    def _cordon(self, target: str, kn: str, on: bool) -> TargetResult:
        self.client.request("PATCH", f"/api/v1/nodes/{q(kn)}", body={"spec": {"unschedulable": on}},
                            content_type="application/strategic-merge-patch+json", verb="patch", resource="nodes")
        word = "cordoned" if on else "uncordoned"
        return TargetResult(target=target, ok=True, message=f"{word} (spec.unschedulable={str(on).lower()})")

    def eviction_version(self) -> str:
        """"policy/v1" if the server serves it, else "policy/v1beta1" (discovery, cached)."""
        with self._gv_lock:
            if self._eviction_gv is None:
                _, doc = self.client.request("GET", "/apis/policy", verb="get", resource="apis/policy")
                versions = [v.get("version") for v in (doc.get("versions") or []) if isinstance(v, dict)]
                self._eviction_gv = "policy/v1" if "v1" in versions else "policy/v1beta1"
            return self._eviction_gv

    def _drain(self, plan: ActionPlan, target: str, kn: str) -> TargetResult:
        errors: list[str] = []
        grace = _int_param(plan.params, "grace_period_s", self.settings.drain_grace_period_s, errors)
        timeout = _int_param(plan.params, "timeout_s", self.settings.drain_timeout_s, errors)
        self._cordon(target, kn, True)
        self.progress.append(f"{target}: cordoned")
        pods, _ = self.client.list_all("/api/v1/pods", query={"fieldSelector": f"spec.nodeName={kn}"},
                                       resource="pods")
        gv = self.eviction_version()
        pending: list[tuple[str, str]] = []
        skipped: list[str] = []
        for obj in pods:
            try:
                p = convert.pod(obj)
            except convert.BadObject:
                continue
            if p.daemonset or p.mirror:
                skipped.append(f"{p.namespace}/{p.name} ({'DaemonSet' if p.daemonset else 'mirror'})")
                self.progress.append(f"{target}: skip {p.namespace}/{p.name}")
            elif p.phase in ("Succeeded", "Failed") or p.reason == "Terminating":
                pending.append((p.namespace, p.name))  # evict anyway: kubectl drain removes finished pods too
            else:
                pending.append((p.namespace, p.name))
        evicted: list[str] = []
        failed: dict[str, str] = {}
        deadline = time.monotonic() + timeout
        attempts = 0
        while pending:
            attempts += 1
            blocked: list[tuple[str, str]] = []
            for ns, name in pending:
                key = f"{ns}/{name}"
                body: dict[str, Any] = {"apiVersion": gv, "kind": "Eviction",
                                        "metadata": {"name": name, "namespace": ns}}
                if grace >= 0:
                    body["deleteOptions"] = {"gracePeriodSeconds": int(grace)}
                try:
                    status, _ = self.client.request(
                        "POST", f"/api/v1/namespaces/{q(ns)}/pods/{q(name)}/eviction", body=body,
                        verb="create", resource="pods/eviction", ok=(404,))
                except K8sError as exc:
                    if exc.status == 429:
                        blocked.append((ns, name))
                        failed[key] = f"429 {exc.message}"
                        self.progress.append(f"{target}: {key} blocked (429), retrying")
                        continue
                    failed[key] = exc.describe()
                    self.progress.append(f"{target}: {key} failed: {exc.describe()}")
                    continue
                failed.pop(key, None)
                evicted.append(key + (" (already gone)" if status == 404 else ""))
                self.progress.append(f"{target}: evicted {key}")
            pending = blocked
            if pending and time.monotonic() + self.settings.drain_retry_s > deadline:
                for ns, name in pending:
                    failed[f"{ns}/{name}"] += f" (still refused after {attempts} attempt(s), {timeout:g} s)"
                break
            if pending:
                time.sleep(self.settings.drain_retry_s)
        parts = [f"cordoned; evicted {len(evicted)} pod(s) via {gv}"]
        if skipped:
            parts.append(f"skipped {len(skipped)}: {', '.join(skipped)}")
        if failed:
            parts.append("could not evict: " + "; ".join(f"{k}: {v}" for k, v in failed.items()))
        return TargetResult(target=target, ok=not failed, message=" · ".join(parts))

    def _mig(self, plan: ActionPlan, target: str, kn: str) -> TargetResult:
        layout = plan.params.get("layout", "").strip()
        timeout = _int_param(plan.params, "timeout_s", self.settings.mig_timeout_s, [])
        _, doc = self.client.request("PATCH", f"/api/v1/nodes/{q(kn)}",
                                     body={"metadata": {"labels": {convert.MIG_CONFIG: layout}}},
                                     content_type="application/strategic-merge-patch+json", verb="patch",
                                     resource="nodes")
        meta = doc.get("metadata") or {}
        rv = str(meta.get("resourceVersion") or "")
        state = (meta.get("labels") or {}).get(convert.MIG_STATE)
        self.progress.append(f"{target}: {convert.MIG_CONFIG}={layout} set; state {state}")
        seen = [state]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            remaining = max(1, int(deadline - time.monotonic()))
            try:
                for ev in self.client.watch("/api/v1/nodes", resource_version=rv,
                                            query={"fieldSelector": f"metadata.name={kn}"}, resource="nodes",
                                            timeout_s=remaining):
                    obj = ev.get("object") or {}
                    if ev.get("type") == "ERROR":
                        raise K8sError(int(obj.get("code") or 500), str(obj.get("message")), verb="watch",
                                       resource="nodes")
                    m = obj.get("metadata") or {}
                    rv = str(m.get("resourceVersion") or rv)
                    if ev.get("type") == "BOOKMARK":
                        continue
                    labels = m.get("labels") or {}
                    if labels.get(convert.MIG_CONFIG) != layout:
                        return TargetResult(target=target, ok=False, message=(
                            f"{convert.MIG_CONFIG} changed to {labels.get(convert.MIG_CONFIG)!r} by someone else"))
                    new = labels.get(convert.MIG_STATE)
                    if new != seen[-1]:
                        seen.append(new)
                        self.progress.append(f"{target}: {convert.MIG_STATE}={new}")
                    if new in MIG_DONE and len(seen) > 1:
                        path = " → ".join(str(s) for s in seen)
                        return TargetResult(target=target, ok=new == "success",
                                            message=f"{convert.MIG_CONFIG}={layout}: {path}")
                    if time.monotonic() >= deadline:
                        break
            except K8sError as exc:
                if exc.status == 410:  # follow from the current state
                    _, node = self.client.request("GET", f"/api/v1/nodes/{q(kn)}", verb="get", resource="nodes")
                    rv = str((node.get("metadata") or {}).get("resourceVersion") or "")
                    continue
                raise
        path = " → ".join(str(s) for s in seen)
        return TargetResult(target=target, ok=False, message=(
            f"timed out after {timeout:g} s: {convert.MIG_STATE} {path} (is the GPU Operator's MIG manager running?)"))
