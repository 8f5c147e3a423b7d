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


def array_task_count(display_id: str) -> int:
    """How many tasks a job id as squeue prints it stands for: ``1234_[5-16%4]`` (a pending array
    remainder) is 12, ``1234_[1,3,8-10]`` 5, ``1234_[0-20:5]`` 5 (a step); ``1234`` or ``1234_7`` is 1.
    Anything unreadable counts as one (never raises)."""
    _, sep, tail = display_id.partition("_[")
    if not sep or not tail.endswith("]"):
        return 1
    total = 0
    for part in tail[:-1].split("%", 1)[0].split(","):
        span, _, step_text = part.partition(":")
        first, dash, last = span.partition("-")
        try:
            lo, hi = int(first), int(last) if dash else int(first)
            step = int(step_text) if step_text else 1
        except ValueError:
            return 1
        if hi < lo or step < 1:
            return 1
        total += (hi - lo) // step + 1
    return max(1, total)


class QueueGpus(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """GPU quota and use of one queue for one GPU resource (``nvidia.com/gpu`` or a MIG profile
    ``nvidia.com/mig-1g.10gb``): Kueue per ResourceFlavor (``nominalQuota`` / ``flavorsUsage``),
    Volcano per queue (``capability`` / ``deserved`` / ``allocated``). None: not set or not reported."""

    resource: str
    flavor: str | None = None  # Kueue ResourceFlavor; None for Volcano
    quota: int | None = None  # Kueue nominalQuota; Volcano spec.capability (the hard limit)
    deserved: int | None = None  # Volcano spec.deserved (capacity plugin); Kueue: None
    used: int | None = None  # Kueue flavorsUsage total; Volcano status.allocated


class K8sQueueItem(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A batch-scheduler object, when its CRDs exist: Kueue Workload / ClusterQueue / LocalQueue,
    Volcano PodGroup / Queue / Job (``batch.volcano.sh``). ``state`` is the scheduler's word (Pending,
    Admitted, Inqueue, Open, ...); ``message`` says why something waits."""

    kind: str
    api: str  # group/version it was read as, e.g. "kueue.x-k8s.io/v1beta1"
    name: str
    namespace: str | None = None
    queue: str | None = None  # the queue a workload/pod group is in; a LocalQueue's ClusterQueue
    state: str = "Unknown"
    message: str | None = None
    pending: int | None = None  # queues: workloads / pod groups waiting
    admitted: int | None = None  # queues: admitted (Kueue) or running (Volcano)
    inqueue: int | None = None  # Volcano Queue: pod groups admitted to the queue, not yet running
    cluster_queue: str | None = None  # Kueue Workload: the ClusterQueue that admitted (reserved quota for) it
    checks: tuple[str, ...] = ()  # Kueue Workload: admission checks not Ready yet, "name (State): message"
    min_member: int | None = None  # Volcano PodGroup minMember / Job minAvailable: the gang size
    gpus: tuple[QueueGpus, ...] = ()  # queues: GPU quota and use per resource (and flavor)

    @property
    def gpu_text(self) -> str:
        """GPUs as used/quota per resource, flavors summed: "GPU 6/8", "GPU 2/8 (deserved 4),
        mig-1g.10gb 1/7"; a side nobody reported is N/A. "" when the queue has no GPU quota or use."""
        sums: dict[str, list[int | None]] = {}
        for g in self.gpus:
            row = sums.setdefault(g.resource, [None, None, None])
            for i, v in enumerate((g.used, g.quota, g.deserved)):
                if v is not None:
                    row[i] = (row[i] or 0) + v
        out = []
        for res, (used, quota, deserved) in sums.items():
            label = "GPU" if res == "nvidia.com/gpu" else res.removeprefix("nvidia.com/")
            text = f"{label} {'N/A' if used is None else used}/{'N/A' if quota is None else quota}"
            out.append(text + (f" (deserved {deserved})" if deserved is not None else ""))
        return ", ".join(out)


class Pod(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    namespace: str
    name: str
    node: str | None = None  # K8s node name, None while unscheduled
    phase: str = "Unknown"
    reason: str | None = None  # waiting/terminated reason: CrashLoopBackOff, OOMKilled, Unschedulable
    message: str | None = None  # e.g. scheduler's "0/8 nodes are available: ..."
    gpus_requested: int = 0  # whole GPUs plus MIG slices, as Kubernetes counts the pod's request
    gpu_resources: dict[str, int] = msgspec.field(default_factory=dict)  # resource name -> effective request
    owner_kind: str | None = None
    owner_name: str | None = None
    queue: str | None = None  # Kueue LocalQueue / Volcano queue
    pod_group: str | None = None  # Volcano PodGroup (annotation scheduling.k8s.io/group-name)
    scheduler: str | None = None
    restarts: int = 0
    start_time: float | None = None
    created: float | None = None  # metadata.creationTimestamp (age)
    ready: bool | None = None  # the Ready condition; None if the pod has none yet
    mirror: bool = False  # a static pod's mirror (drain skips it)
    uid: str | None = None
    labels: dict[str, str] = msgspec.field(default_factory=dict)
    containers: tuple[str, ...] = ()  # spec.containers names, in order (a shell's container picker)
    claims: tuple[str, ...] = ()  # PersistentVolumeClaims it mounts (its namespace's; ephemeral ones too)

    @property
    def daemonset(self) -> bool:
        return self.owner_kind == "DaemonSet"

    @property
    def gpu_text(self) -> str:
        """The GPU request for people: "2 GPU", "1 mig-1g.10gb", "1 GPU + 2 mig-1g.10gb"; "" for none.
        A MIG slice keeps its profile (``nvidia.com/`` is dropped); without per-resource detail the total."""
        if not self.gpu_resources:
            return f"{self.gpus_requested} GPU" if self.gpus_requested else ""
        parts = [f"{n} GPU" if name == "nvidia.com/gpu" else f"{n} {name.removeprefix('nvidia.com/')}"
                 for name, n in sorted(self.gpu_resources.items(), key=lambda kv: kv[0] != "nvidia.com/gpu")
                 if n]
        return " + ".join(parts)
