"""Workload model: Slurm jobs and Kubernetes pods."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec


class SlurmJob(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    job_id: int
    array_job_id: int | None = None
    array_task_id: int | None = None
    array_task_str: str | None = None  # pending remainder of an array, e.g. "4-9%2"
    name: str | None = None
    user: str | None = None
    account: str | None = None
    partition: str | None = None
    qos: str | None = None
    state: str = "UNKNOWN"  # PENDING, RUNNING, COMPLETING, ...
    reason: str | None = None  # pending reason, "None" mapped to None
    nodes: str | None = None  # hostlist expression, e.g. "gpu[01-04]"
    num_nodes: int | None = None
    gpus_requested: int | None = None
    gpus_alloc: dict[str, str] = msgspec.field(default_factory=dict)  # node -> "0-3" indices
    submit_time: float | None = None
    start_time: float | None = None
    end_time: float | None = None
    time_limit_min: int | None = None
    exit_code: int | None = None
    exit_signal: int | None = None
    restart_count: int | None = None
    batch: bool | None = None
    requeueable: bool | None = None
    priority: int | None = None

    @property
    def display_id(self) -> str:
        return job_display_id(self.job_id, self.array_job_id, self.array_task_id, self.array_task_str)


def jobs_by_id(jobs: Iterable[SlurmJob]) -> dict[str, SlurmJob]:
    """Each job under its display id (``1234_7``) and its numeric id; the first in queue order
    wins a shared key. One pass, for looking many targets up in a big queue."""
    out: dict[str, SlurmJob] = {}
    for job in jobs:
        out.setdefault(job.display_id, job)
        out.setdefault(str(job.job_id), job)
    return out


def job_display_id(job_id: int, array_job_id: int | None, array_task_id: int | None,
                   array_task_str: str | None) -> str:
    """``1234_7`` for array tasks, ``1234_[4-9]`` for pending array remainders, as squeue prints."""
    if array_job_id is not None and array_task_id is not None:
        return f"{array_job_id}_{array_task_id}"
    if array_job_id is not None and array_task_str:
        return f"{array_job_id}_[{array_task_str}]"
    return str(job_id)


class K8sQueueItem(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A batch-scheduler object, when its CRDs exist: Kueue Workload / ClusterQueue / LocalQueue,
    Volcano PodGroup / Queue. ``state`` is the scheduler's word (Pending, Admitted, Inqueue, Open, ...);
    ``message`` says why something waits."""

    kind: str
    api: str  # group/version it was read as, e.g. "kueue.x-k8s.io/v1beta1"
    name: str
    namespace: str | None = None
    queue: str | None = None  # the queue a workload/pod group is in; a LocalQueue's ClusterQueue
    state: str = "Unknown"
    message: str | None = None
    pending: int | None = None  # queues: workloads / pod groups waiting
    admitted: int | None = None  # queues: admitted (Kueue) or running (Volcano)


class Pod(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    namespace: str
    name: str
    node: str | None = None  # K8s node name, None while unscheduled
    phase: str = "Unknown"
    reason: str | None = None  # waiting/terminated reason: CrashLoopBackOff, OOMKilled, Unschedulable
    message: str | None = None  # e.g. scheduler's "0/8 nodes are available: ..."
    gpus_requested: int = 0
    owner_kind: str | None = None
    owner_name: str | None = None
    queue: str | None = None  # Kueue LocalQueue / Volcano queue
    scheduler: str | None = None
    restarts: int = 0
    start_time: float | None = None
    created: float | None = None  # metadata.creationTimestamp (age)
    ready: bool | None = None  # the Ready condition; None if the pod has none yet
    mirror: bool = False  # a static pod's mirror (drain skips it)
    uid: str | None = None
    labels: dict[str, str] = msgspec.field(default_factory=dict)

    @property
    def daemonset(self) -> bool:
        return self.owner_kind == "DaemonSet"
