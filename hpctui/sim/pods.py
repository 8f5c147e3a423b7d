"""Kubernetes pods of the demo cluster, on the nodes reserved for Kubernetes."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from hpctui.model import Pod
from hpctui.model.volumes import StorageClassInfo, VolumeClaim, Volumes
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
                scheduler="volcano", start_time=start, containers=("mpi-worker", "log-shipper"),
                claims=("bert-ckpt",))))
        elif kind == 1:
            pods.append(SimPod(Pod(
                namespace="team-a", name=f"sweep-lr-{k:03d}-{_suffix(rng)}", node=spec.name, phase="Running",
                gpus_requested=8, owner_kind="Job", owner_name=f"sweep-lr-{k:03d}", queue="team-a-queue",
                scheduler="default-scheduler", start_time=start, containers=("train",), claims=("datasets",))))
        else:
            rs = f"vllm-llama3-70b-{_suffix(rng, 10)}"
            for r in range(4):
                crash = k == 2 and r == 3  # one replica of the first inference node keeps crashing
                pods.append(SimPod(Pod(
                    namespace="inference", name=f"{rs}-{_suffix(rng)}", node=spec.name, phase="Running",
                    reason="CrashLoopBackOff" if crash else None,
                    message="back-off 5m0s restarting failed container=vllm" if crash else None,
                    gpus_requested=2, owner_kind="ReplicaSet", owner_name=rs, scheduler="default-scheduler",
                    restarts=23 if crash else 0, start_time=start + r, containers=("vllm",),
                    claims=("model-cache",)),
                    crashloop_base=23 if crash else None))
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
    # waits on its scratch claim: the demo's ceph-rbd provisioner does not answer (a pvc_pending finding)
    pods.append(SimPod(Pod(
        namespace="team-a", name=f"eval-harness-{_suffix(rng)}", phase="Pending", reason="Unschedulable",
        message='0/1 nodes are available: 1 pod has unbound immediate PersistentVolumeClaims.', gpus_requested=8,
        owner_kind="Job", owner_name="eval-harness", queue="team-a-queue", scheduler="default-scheduler",
        claims=("eval-scratch", "datasets"), created=t0 - 2400)))
    return pods


def _pv_name(namespace: str, claim: str) -> str:
    """A provisioned volume's name as Kubernetes makes it (``pvc-<claim uid>``), stable per claim."""
    h = hashlib.sha1(f"{namespace}/{claim}".encode()).hexdigest()
    return f"pvc-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def demo_volumes(t0: float) -> Volumes:
    """The claims the demo's pods mount and their storage classes: one claim Pending for 40 minutes."""
    classes = (StorageClassInfo(name="ceph-rbd", provisioner="rook-ceph.rbd.csi.ceph.com", default=True,
                                binding_mode="Immediate"),
               StorageClassInfo(name="lustre-csi", provisioner="lustre.csi.hpe.com", binding_mode="Immediate"),
               StorageClassInfo(name="nfs-csi", provisioner="nfs.csi.k8s.io", binding_mode="Immediate"))
    bound = (("research", "bert-ckpt", "ceph-rbd", "2Ti"), ("team-a", "datasets", "lustre-csi", "50Ti"),
             ("inference", "model-cache", "nfs-csi", "500Gi"))
    claims = tuple(VolumeClaim(namespace=ns, name=name, phase="Bound", storage_class=sc, requested=size,
                               volume=_pv_name(ns, name), created=t0 - 30 * 86_400)
                   for ns, name, sc, size in bound)
    pending = VolumeClaim(namespace="team-a", name="eval-scratch", phase="Pending", storage_class="ceph-rbd",
                          requested="10Ti", created=t0 - 2400)
    return Volumes(claims=(*claims, pending), classes=classes)


def crashloop_restarts(base: int, t: float, t0: float) -> int:
    return base + max(0, int((t - t0) // CRASH_RESTART_EVERY_S))
