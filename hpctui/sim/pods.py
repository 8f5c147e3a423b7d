"""Kubernetes pods of the demo cluster, on the nodes reserved for Kubernetes."""

from __future__ import annotations

import random
from dataclasses import dataclass

from hpctui.model import Pod
from hpctui.sim.topology import Topology

CRASH_RESTART_EVERY_S = 90.0


@dataclass(slots=True)
class SimPod:
    pod: Pod
    crashloop_base: int | None = None  # restarts at t0; grows while in CrashLoopBackOff


def _suffix(rng: random.Random, n: int = 5) -> str:
    return "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(n))


def build_pods(topo: Topology, seed: int, t0: float, skip: frozenset[str]) -> list[SimPod]:
    """Training (Volcano / Kueue) and inference pods, two Pending, one CrashLoopBackOff."""
    rng = random.Random(f"pods-{seed}")
    nodes = [n for n in topo.gpu_nodes if n.k8s_reserved and n.name not in skip]
    pods: list[SimPod] = []
    for k, spec in enumerate(nodes):
        start = t0 - rng.uniform(600, 3 * 86_400)
        kind = k % 3
        if kind == 0:
            pods.append(SimPod(Pod(
                namespace="research", name=f"bert-mpi-worker-{k}", node=spec.name, phase="Running",
                gpus_requested=8, owner_kind="PodGroup", owner_name="bert-mpi-pg", queue="research",
                scheduler="volcano", start_time=start)))
        elif kind == 1:
            pods.append(SimPod(Pod(
                namespace="team-a", name=f"sweep-lr-{k:03d}-{_suffix(rng)}", node=spec.name, phase="Running",
                gpus_requested=8, owner_kind="Job", owner_name=f"sweep-lr-{k:03d}", queue="team-a-queue",
                scheduler="default-scheduler", start_time=start)))
        else:
            rs = f"vllm-llama3-70b-{_suffix(rng, 10)}"
            for r in range(4):
                crash = k == 2 and r == 3  # one replica of the first inference node keeps crashing
                pods.append(SimPod(Pod(
                    namespace="inference", name=f"{rs}-{_suffix(rng)}", node=spec.name, phase="Running",
                    reason="CrashLoopBackOff" if crash else None,
                    message="back-off 5m0s restarting failed container=vllm" if crash else None,
                    gpus_requested=2, owner_kind="ReplicaSet", owner_name=rs, scheduler="default-scheduler",
                    restarts=23 if crash else 0, start_time=start + r), crashloop_base=23 if crash else None))
    n_gpu, n_cpu = len(topo.gpu_nodes), len(topo.cpu_nodes)
    message = (f"0/{n_gpu + n_cpu} nodes are available: {n_gpu} Insufficient nvidia.com/gpu, "
               f"{n_cpu} node(s) didn't match Pod's node affinity/selector.")
    pods.append(SimPod(Pod(
        namespace="research", name="bert-mpi-worker-oversized", phase="Pending", reason="Unschedulable",
        message=message, gpus_requested=16, owner_kind="PodGroup", owner_name="bert-mpi-pg-xl",
        queue="research", scheduler="volcano")))
    pods.append(SimPod(Pod(
        namespace="team-a", name=f"sweep-lr-999-{_suffix(rng)}", phase="Pending", reason="Unschedulable",
        message=message, gpus_requested=16, owner_kind="Job", owner_name="sweep-lr-999", queue="team-a-queue",
        scheduler="default-scheduler")))
    return pods


def crashloop_restarts(base: int, t: float, t0: float) -> int:
    return base + max(0, int((t - t0) // CRASH_RESTART_EVERY_S))
