"""The demo cluster's MIG apply: the real nvidia-smi commands are shown, the simulated GPUs
take the new layout after ``DemoSource.mig_delay_s`` (like a reset), nothing real is touched."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hpctui.model.action import ActionKind, ActionPlan, TargetResult
from hpctui.model.mig_layouts import (
    TABLES,
    LayoutError,
    apply_commands,
    check_profiles,
    family,
    gpus_from_params,
    layout_from_params,
)

if TYPE_CHECKING:
    from hpctui.sources.demo.source import DemoSource


def plan_mig(src: DemoSource, targets: tuple[str, ...], params: dict[str, str]) -> ActionPlan:
    sim = src.sim
    layout = layout_from_params(params)
    names: list[str] = []
    errors: list[str] = []
    rejected: list[str] = []
    commands: list[str] = []
    for t in dict.fromkeys(targets):
        spec = sim.topo.by_name.get(t)
        if spec is None or not spec.n_gpus:
            rejected.append(t)
            errors.append(f"unknown node {t!r}" if spec is None else f"{t} has no GPUs")
            continue
        fam = family(spec.gpu_model)
        if layout.enabled:
            problems = check_profiles(layout.name, layout.profiles, TABLES[fam], fam) if fam else [
                f"{t}: no MIG profile table for {spec.gpu_model}"]
            if problems:
                rejected.append(t)
                errors.extend(f"{t}: {p}" for p in problems)
                continue
        try:
            gpus = gpus_from_params(params, spec.n_gpus)
        except LayoutError as exc:
            rejected.append(t)
            errors.append(f"{t}: {exc}")
            continue
        names.append(t)
        current = sim.mig.get(t, [])
        change = [i for i in gpus if (current[i] is not None) != layout.enabled]
        commands += [f"ssh {t} {c}" for c in apply_commands(gpus, layout.enabled, layout.profiles, change)]
    return ActionPlan(kind=ActionKind.MIG_RECONFIGURE, source=src.name, targets=tuple(names), params=params,
                      commands=tuple(commands), errors=tuple(errors), rejected_targets=tuple(rejected),
                      notes=(src.note,))


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
