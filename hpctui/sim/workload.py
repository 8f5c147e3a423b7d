"""Slurm jobs of the demo cluster: a queue that occupies nodes consistently.

Jobs are mutable records inside the sim; each keeps a cached frozen
:class:`SlurmJob` that is rebuilt only when the job changes.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from hpctui.base.sanitize import clean_optional
from hpctui.findings.idle import index_text
from hpctui.model import SlurmJob
from hpctui.model.hostlist import collect
from hpctui.model.jobs import job_display_id
from hpctui.sim.topology import NodeSpec, Topology

USERS = (("alice", "ml-research"), ("bob", "physics"), ("carol", "vision"), ("dave", "nlp"),
         ("erin", "ml-research"), ("frank", "climate"), ("grace", "nlp"), ("heidi", "bio"),
         ("ivan", "vision"), ("judy", "infra"))
GPU_NAMES = ("llama-70b-pretrain", "mixtral-ft", "vit-h14-sweep", "sdxl-train", "nccl-allreduce-test",
             "bert-large-mlm", "gromacs-md", "vllm-bench", "eval-harness", "rlhf-ppo", "whisper-ft", "alphafold")
CPU_NAMES = ("wrf-ensemble", "blast-search", "preprocess-shards", "cp2k-relax", "tokenize-corpus")
TIME_LIMITS_MIN = (60, 240, 720, 1440, 2880, 4320)
PENDING_SHOWCASE = ("Resources", "Priority", "Dependency", "JobHeldUser", "QOSMaxJobsPerUserLimit",
                    "ReqNodeNotAvail")
TERMINAL = frozenset({"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT"})
GONE_AFTER_TICKS = 1
MAX_ELAPSED_SHARE = 0.9  # a job running at the start has used at most this share of its time limit


def idx_str(idx: Iterable[int]) -> str:
    """``[0,1,2,3,6]`` → ``"0-3,6"`` (Slurm's GPU index notation; the one formatter, findings.idle's)."""
    return index_text(idx)


@dataclass(slots=True)
class SimJob:
    job_id: int
    name: str
    user: str
    account: str
    partition: str
    qos: str
    state: str
    reason: str | None
    submit_time: float
    time_limit_min: int
    num_nodes: int
    gpus_per_node: int
    cpus_per_node: int
    nodes: list[str] = field(default_factory=list)
    gpu_idx: dict[str, tuple[int, ...]] = field(default_factory=dict)
    start_time: float | None = None
    end_time: float | None = None
    planned_end: float | None = None
    restart_count: int = 0
    batch: bool = True
    requeueable: bool = True
    priority: int = 10_000
    exit_code: int | None = None
    array_job_id: int | None = None
    array_task_id: int | None = None
    array_task_str: str | None = None
    finish_tick: int | None = None  # forced end (its node was drained)
    gone_tick: int | None = None  # drops out of the queue at this tick
    eligible_tick: int | None = None  # BeginTime after a requeue
    cached: SlurmJob | None = None

    @property
    def held(self) -> bool:
        return self.state == "PENDING" and self.reason in ("JobHeldUser", "JobHeldAdmin")

    @property
    def display_id(self) -> str:
        return job_display_id(self.job_id, self.array_job_id, self.array_task_id, self.array_task_str)

    def to_struct(self) -> SlurmJob:
        if self.cached is None:
            gpus = self.gpus_per_node * self.num_nodes
            self.cached = SlurmJob(
                job_id=self.job_id, array_job_id=self.array_job_id, array_task_id=self.array_task_id,
                array_task_str=self.array_task_str, name=clean_optional(self.name), user=self.user, account=self.account,
                partition=self.partition, qos=self.qos, state=self.state, reason=clean_optional(self.reason),
                nodes=collect(self.nodes) if self.nodes else None, num_nodes=self.num_nodes,
                gpus_requested=gpus or None, gpus_alloc={n: idx_str(i) for n, i in self.gpu_idx.items() if i},
                submit_time=self.submit_time, start_time=self.start_time, end_time=self.end_time,
                time_limit_min=self.time_limit_min, exit_code=self.exit_code, exit_signal=None,
                restart_count=self.restart_count, batch=self.batch, requeueable=self.requeueable,
                priority=self.priority,
            )
        return self.cached


_INDEX_SETS: dict[frozenset[int], frozenset[int]] = {}


def _indices(gpus: frozenset[int]) -> frozenset[int]:
    """One object per distinct set of busy GPU indices (at most 256 for 8 GPUs) for all nodes."""
    return _INDEX_SETS.setdefault(gpus, gpus)


def _first(n: int) -> tuple[int, ...]:
    """``tuple(range(n))``, shared: GPUs 0..n-1 of every node a job holds whole or in part."""
    return _FIRST.setdefault(n, tuple(range(n)))


_FIRST: dict[int, tuple[int, ...]] = {}


@dataclass(slots=True)
class NodeAlloc:
    cpus: int = 0
    gpus: frozenset[int] = frozenset()  # one shared object per distinct index set (see _indices)
    jobs: set[int] = field(default_factory=set)


class Workload:
    """The job queue plus per-node allocation; changes mark nodes dirty for the cluster."""

    def __init__(self, topo: Topology, seed: int, t0: float, exclude: frozenset[str] = frozenset(),
                 unavailable: tuple[str, ...] = ()) -> None:
        self.topo = topo
        self.exclude = exclude  # nodes that start empty (e.g. the drained one)
        # the nodes the showcase ReqNodeNotAvail job asked for and cannot get (drained, reserved)
        self.unavailable = unavailable
        self.rng = random.Random(f"workload-{seed}")
        self.jobs: dict[int, SimJob] = {}
        self.alloc: dict[str, NodeAlloc] = {n.name: NodeAlloc() for n in topo.all_nodes}
        self.dirty_nodes: set[str] = set()
        self._ends: list[tuple[float, int]] = []  # heap of (planned end, job id)
        self._refill: list[tuple[str, list[str], int, int]] = []  # (partition, nodes, gpus/node, cpus/node)
        self._next_id = 1000 + (seed % 97) * 10
        self.changed = True
        self._generate(t0)

    # -- generation ------------------------------------------------------------
    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _job(self, partition: str, t: float, *, num_nodes: int, gpn: int, cpn: int, state: str = "PENDING",
             reason: str | None = None, gpu: bool = True) -> SimJob:
        user, account = self.rng.choice(USERS)
        name = self.rng.choice(GPU_NAMES if gpu else CPU_NAMES)
        qos = "debug" if partition == "debug" else self.rng.choice(("normal", "normal", "high", "low"))
        return SimJob(
            job_id=self._new_id(), name=name, user=user, account=account, partition=partition, qos=qos,
            state=state, reason=reason, submit_time=t - self.rng.uniform(60, 86_400),
            time_limit_min=self.rng.choice(TIME_LIMITS_MIN), num_nodes=num_nodes, gpus_per_node=gpn,
            cpus_per_node=cpn, priority=self.rng.randint(2_000, 60_000),
        )

    def _start(self, job: SimJob, nodes: list[str], gpu_idx: dict[str, tuple[int, ...]], t: float,
               start: float, end: float) -> None:
        job.state, job.reason, job.nodes, job.gpu_idx = "RUNNING", None, nodes, gpu_idx
        job.start_time, job.planned_end, job.end_time, job.cached = start, end, None, None
        job.submit_time = min(job.submit_time, start - 60.0)  # never started before it was submitted
        for n in nodes:
            a = self.alloc[n]
            a.cpus += job.cpus_per_node
            a.gpus = _indices(a.gpus.union(gpu_idx.get(n, ())))
            a.jobs.add(job.job_id)
            self.dirty_nodes.add(n)
        heapq.heappush(self._ends, (end, job.job_id))
        self.jobs[job.job_id] = job
        self.changed = True

    def _duration(self, job: SimJob, t: float, start: float) -> float:
        """When a job started at ``start`` ends: never past its time limit (Slurm ends it there)."""
        limit = job.time_limit_min * 60.0
        if self.rng.random() < 0.12:  # some churn in the first minutes of the demo
            end = max(t + self.rng.uniform(40, 600), start + 1.0)
        else:
            end = max(start + self.rng.uniform(0.5, 0.98) * limit, t + self.rng.uniform(1800, 6 * 3600))
        return min(end, start + limit)

    @staticmethod
    def _within_limit(job: SimJob, t0: float, start: float) -> float:
        """``start`` moved later where the job would already have run past most of its time limit
        (a running job is always within it); deterministic, no random draw."""
        limit = job.time_limit_min * 60.0
        elapsed = t0 - start
        if elapsed < MAX_ELAPSED_SHARE * limit:
            return start
        return t0 - (0.05 * limit + elapsed % ((MAX_ELAPSED_SHARE - 0.05) * limit))

    def _generate(self, t0: float) -> None:
        rng = self.rng
        for part in ("h100", "h200"):
            nodes = [self.topo.by_name[n] for n in self.topo.partitions.get(part, ())]
            free = [n for n in nodes if not n.k8s_reserved and not n.mig and n.name not in self.exclude]
            self._fill_gpu_partition(part, free, t0, first=part == "h100")
        cpu_nodes = list(self.topo.cpu_nodes)
        for spec in cpu_nodes:
            if rng.random() < 0.2 or spec.name in self.exclude:
                continue
            cpn = rng.choice((32, 64, 128))
            job = self._job("cpu", t0, num_nodes=1, gpn=0, cpn=cpn, gpu=False)
            start = self._within_limit(job, t0, t0 - rng.uniform(300, 20 * 3600))
            self._start(job, [spec.name], {}, t0, start, self._duration(job, t0, start))
        self._pending(t0)

    def _fill_gpu_partition(self, part: str, free: list[NodeSpec], t0: float, first: bool) -> None:
        rng = self.rng
        i = 0
        made = 0
        if first and free:
            self._array_job(part, free[0], t0)
            i = 1
        while i < len(free):
            r = rng.random()
            if r < 0.12:
                i += 1
                continue
            width = 1 if r < 0.6 else 2 if r < 0.8 else 4 if r < 0.93 else 8
            chunk = free[i:i + width]
            i += len(chunk)
            partial = width == 1 and r < 0.22
            gpn = 4 if partial else 8
            job = self._job(part, t0, num_nodes=len(chunk), gpn=gpn, cpn=56 if partial else 112)
            # Fixed showcase: the 2nd job is not requeue-able, the 3rd is an interactive srun.
            made += 1
            if first and made == 2:
                job.requeueable = False
            if first and made == 3:
                job.batch, job.name = False, "interactive"
            names = [n.name for n in chunk]
            start = self._within_limit(job, t0, t0 - rng.uniform(600, 40 * 3600))
            self._start(job, names, dict.fromkeys(names, _first(gpn)), t0, start, self._duration(job, t0, start))

    def _array_job(self, part: str, spec: NodeSpec, t0: float) -> None:
        """``N_1..N_4`` running two GPUs each on one node; ``N_[5-16%4]`` pending."""
        array_id = self._new_id()
        base = self._job(part, t0, num_nodes=1, gpn=2, cpn=16)
        for task in range(1, 5):
            job = SimJob(
                job_id=self._new_id(), name="hparam-sweep", user=base.user,
                account=base.account, partition=part, qos=base.qos, state="PENDING", reason=None,
                submit_time=base.submit_time, time_limit_min=240, num_nodes=1, gpus_per_node=2, cpus_per_node=16,
                array_job_id=array_id, array_task_id=task, priority=base.priority,
            )
            start = t0 - 900.0 * task
            end = start + job.time_limit_min * 60.0 - 400.0 + task  # within the limit, one task at a time
            self._start(job, [spec.name], {spec.name: (2 * task - 2, 2 * task - 1)}, t0, start, end)
        # The pending remainder keeps the array's own id, as in Slurm.
        self.jobs[array_id] = SimJob(
            job_id=array_id, name="hparam-sweep", user=base.user, account=base.account, partition=part, qos=base.qos,
            state="PENDING", reason="JobArrayTaskLimit", submit_time=base.submit_time, time_limit_min=240,
            num_nodes=1, gpus_per_node=2, cpus_per_node=16, array_job_id=array_id, array_task_str="5-16%4",
            priority=base.priority,
        )

    def _pending(self, t0: float) -> None:
        n_gpu = len(self.topo.gpu_nodes)
        reasons = list(PENDING_SHOWCASE) + [self.rng.choice(("Resources", "Priority")) for _ in range(n_gpu // 4)]
        for k, reason in enumerate(reasons):
            part = "h100" if k % 2 == 0 else "h200"
            if part not in self.topo.partitions:
                part = next(iter(self.topo.partitions))
            width = self.rng.choice((1, 2, 4, 8))
            job = self._job(part, t0, num_nodes=width, gpn=8, cpn=112, reason=reason)
            if reason == "JobHeldUser":
                job.priority = 0
            if reason == "QOSMaxJobsPerUserLimit":
                job.qos = "low"
            if reason == "ReqNodeNotAvail" and self.unavailable:
                # squeue's reason as Slurm words it: the nodes the job needs and cannot have
                job.reason = f"ReqNodeNotAvail, UnavailableNodes:{collect(list(self.unavailable))}"
                job.partition = self.topo.by_name[self.unavailable[0]].partitions[0]
                job.num_nodes = max(job.num_nodes, len(self.unavailable))
            self.jobs[job.job_id] = job

    # -- ticks -----------------------------------------------------------------
    def advance(self, t: float, tick: int, schedulable: Callable[[str], bool]) -> None:
        """End due jobs, drop finished ones after a tick, start refills on freed nodes."""
        for job in [j for j in self.jobs.values() if j.gone_tick is not None and tick >= j.gone_tick]:
            del self.jobs[job.job_id]
            self.changed = True
        refills, self._refill = self._refill, []
        for part, nodes, gpn, cpn in refills:
            if all(schedulable(n) and not self.alloc[n].jobs for n in nodes):
                job = self._job(part, t, num_nodes=len(nodes), gpn=gpn, cpn=cpn, gpu=gpn > 0)
                job.submit_time = t - self.rng.uniform(30, 7200)
                self._start(job, nodes, dict.fromkeys(nodes, _first(gpn)) if gpn else {}, t, t,
                            self._duration(job, t, t))
        while self._ends and self._ends[0][0] <= t:
            _, job_id = heapq.heappop(self._ends)
            ended = self.jobs.get(job_id)
            if ended is not None and ended.state == "RUNNING" and ended.planned_end is not None \
                    and ended.planned_end <= t:
                self.finish(ended, "TIMEOUT" if self._at_limit(ended) else "COMPLETED", t, tick, refill=True)
        for job in list(self.jobs.values()):
            if job.state == "RUNNING" and job.finish_tick is not None and tick >= job.finish_tick:
                self.finish(job, "COMPLETED", t, tick, refill=False)
            elif job.eligible_tick is not None and tick >= job.eligible_tick and job.reason == "BeginTime":
                job.reason, job.eligible_tick, job.cached = "Priority", None, None
                self.changed = True

    @staticmethod
    def _at_limit(job: SimJob) -> bool:
        """The job ran until its time limit (Slurm ends it as TIMEOUT)."""
        return (job.start_time is not None and job.planned_end is not None
                and job.planned_end >= job.start_time + job.time_limit_min * 60.0)

    def release_nodes(self, job: SimJob) -> None:
        for n in job.nodes:
            a = self.alloc[n]
            a.cpus = max(0, a.cpus - job.cpus_per_node)
            a.gpus = _indices(a.gpus.difference(job.gpu_idx.get(n, ())))
            a.jobs.discard(job.job_id)
            self.dirty_nodes.add(n)

    def finish(self, job: SimJob, state: str, t: float, tick: int, *, refill: bool) -> None:
        was_running = job.state == "RUNNING"
        if was_running:
            self.release_nodes(job)
            if refill and job.array_job_id is None:
                self._refill.append((job.partition, list(job.nodes), job.gpus_per_node, job.cpus_per_node))
        job.state, job.end_time, job.reason = state, t, None
        job.exit_code = 0 if state == "COMPLETED" else None
        job.finish_tick, job.gone_tick, job.cached = None, tick + GONE_AFTER_TICKS, None
        self.changed = True

    def requeue(self, job: SimJob, tick: int, *, hold: bool) -> None:
        self.release_nodes(job)
        job.state, job.nodes, job.gpu_idx = "PENDING", [], {}
        job.start_time = job.planned_end = job.end_time = None
        job.finish_tick, job.restart_count = None, job.restart_count + 1
        if hold:
            job.reason, job.priority, job.eligible_tick = "JobHeldUser", 0, None
        else:
            job.reason, job.eligible_tick = "BeginTime", tick + 3
        job.cached = None
        self.changed = True

    def touch(self, job: SimJob) -> None:
        job.cached = None
        self.changed = True

    def running_on(self, node: str) -> list[SimJob]:
        return [self.jobs[j] for j in sorted(self.alloc[node].jobs) if j in self.jobs]

    def find(self, ident: str) -> SimJob | None:
        """Resolve ``1234``, ``1234_7`` (array task) or ``1234_[5-16%4]`` (pending remainder)."""
        ident = ident.strip()
        if ident.isdigit():
            return self.jobs.get(int(ident))
        head, _, tail = ident.partition("_")
        if not head.isdigit() or not tail:
            return None
        array_id = int(head)
        for job in self.jobs.values():
            if job.array_job_id != array_id:
                continue
            if tail.isdigit() and job.array_task_id == int(tail):
                return job
            if tail.startswith("[") and job.array_task_str is not None and tail == f"[{job.array_task_str}]":
                return job
        return None
