"""The demo cluster's MIG apply: the real nvidia-smi commands are shown, the simulated GPUs
take the new layout after ``DemoSource.mig_delay_s`` (like a reset), nothing real is touched."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hpctui.model.action import ActionPlan, TargetResult
from hpctui.model.mig_layouts import NodeGpus, gpus_from_params, layout_from_params, layout_plan

if TYPE_CHECKING:
    from hpctui.sources.demo.source import DemoSource


def plan_mig(src: DemoSource, targets: tuple[str, ...], params: dict[str, str]) -> ActionPlan:
    """The demo's plan: the simulated node's GPUs, checked against the built-in profile tables."""
    sim = src.sim

    def node_gpus(t: str) -> NodeGpus | str:
        spec = sim.topo.by_name.get(t)
        if spec is None or not spec.n_gpus:
            return f"unknown node {t!r}" if spec is None else f"{t} has no GPUs"
        current = sim.mig.get(t, [])
        return NodeGpus(spec.gpu_model, spec.n_gpus, {i: current[i] is not None for i in range(len(current))})

    return layout_plan(src.name, targets, params, node_gpus, table_required=True, notes=(src.note,))


def execute_mig(src: DemoSource, plan: ActionPlan, t: float) -> tuple[TargetResult, ...]:
    sim = src.sim
    layout = layout_from_params(plan.params)
    results = []
    for node in plan.targets:
        spec = sim.topo.by_name.get(node)
        if spec is None:
            results.append(TargetResult(target=node, ok=False, message=f"Invalid node name specified: {node}"))
            continue
        gpus = gpus_from_params(plan.params, spec.n_gpus)
        fail = src.mig_fail.get(node)
        if fail is not None and fail in gpus:
            done = {i: (layout.profiles if layout.enabled else None) for i in gpus if i < fail}
            if done:
                sim.set_mig(node, done, layout.label, t, 0.0)
            results.append(TargetResult(target=node, ok=False, message=(
                f"apply failed on GPU {fail}: nvidia-smi mig -i {fail} -cgi {','.join(layout.profiles)} -C: "
                "Failed to create GPU instances: Insufficient Resources")))
            continue
        sim.set_mig(node, dict.fromkeys(gpus, layout.profiles if layout.enabled else None), layout.label, t,
                    src.mig_delay_s)
        results.append(TargetResult(target=node, ok=True, message=(
            f"{len(gpus)} GPU(s) → {layout.name} ({layout.summary()}); shows after the reset "
            f"(~{src.mig_delay_s:g} s)")))
    return tuple(results)
