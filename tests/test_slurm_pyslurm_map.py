"""pyslurm objects → model, whole records compared (every field written out here).

Attribute names follow pyslurm 25.11 (``pyslurm/core/node.pyx``, ``job/job.pyx``) and the older
spellings the mapper accepts; values follow Slurm's conventions (NO_VAL 0xfffffffe / INFINITE
0xffffffff → not available; epoch 0 → not known).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from hpctui.model import SlurmJob, SlurmNodeInfo, SlurmPartition
from hpctui.sources.slurm.parse import (
    SlurmParseError,
    health_from_pyslurm,
    job_from_pyslurm,
    job_gpu_layout,
    node_from_pyslurm,
    partition_from_pyslurm,
)

F = frozenset


def ns(**kw: Any) -> SimpleNamespace:
    return SimpleNamespace(**kw)


# -- nodes ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("obj", "expected"), [
    (ns(name="gpu01", state="MIXED+DRAIN", reason="ECC errors on GPU3", reason_user="root", reason_time=1795972353,
        partitions=["gpu", "debug"], available_features=["h100"], active_features=["h100", "ib"],
        configured_gres={"gpu:h100": 8}, allocated_gres={"gpu:h100": {"count": 2, "indexes": "0-1"}},
        total_cpus=64, alloc_cpus=8, real_memory=512000, alloc_memory=65536),
     SlurmNodeInfo(base_state="MIXED", flags=F({"DRAIN"}), reason="ECC errors on GPU3", reason_user="root",
                   reason_time=1795972353.0, partitions=("gpu", "debug"), features=("h100", "ib"), cpus_total=64,
                   cpus_alloc=8, memory_total_mb=512000, memory_alloc_mb=65536, gpus_total=8, gpus_alloc=2,
                   gpu_type="h100")),
    # older spellings: cpus / allocated_cpus / allocated_memory / alloc_gres / available_features, *_raw ints
    (ns(name="gpu02", state=["IDLE"], partitions="gpu,debug", available_features="a100,ib",
        configured_gres={"gres:gpu:a100": 4, "gpu:h100": 2, "mps:a100": 400}, alloc_gres={"gpu:a100": 1},
        cpus=32, allocated_cpus=4, real_memory_raw=256000, allocated_memory=1024, reason_time=0),
     SlurmNodeInfo(base_state="IDLE", partitions=("gpu", "debug"), features=("a100", "ib"), cpus_total=32,
                   cpus_alloc=4, memory_total_mb=256000, memory_alloc_mb=1024, gpus_total=6, gpus_alloc=1,
                   gpu_type="a100,h100")),
    # humanized strings, bools and sentinels are not numbers; an untyped gpu count has no type
    (ns(name="gpu03", state="DOWN*", reason="None", reason_user="", total_cpus=True, alloc_cpus="8",
        real_memory=0xFFFFFFFE, alloc_memory="64G", configured_gres={"gpu": 8}, allocated_gres={},
        partitions=None, active_features=7),
     SlurmNodeInfo(base_state="DOWN", flags=F({"NOT_RESPONDING"}), gpus_total=8, gpus_alloc=0)),
    (ns(name="gpu04", state="IDLE", real_memory=0xFFFFFFFD, alloc_memory=-1, configured_gres="gpu:h100:8",
        allocated_gres={"gpu:h100": {"indexes": "N/A"}}),
     SlurmNodeInfo(base_state="IDLE", memory_total_mb=0xFFFFFFFD, gpus_alloc=0)),
    (ns(name="gpu05", state="IDLE", real_memory=0xFFFFFFFF, configured_gres={"gpu:h100": "eight"},
        allocated_gres={"gpu:h100": {"count": None, "indexes": ""}}),
     SlurmNodeInfo(base_state="IDLE", gpus_alloc=0)),
])
def test_node_from_pyslurm(obj: SimpleNamespace, expected: SlurmNodeInfo) -> None:
    assert node_from_pyslurm(obj) == expected


class Exploding:
    """A pyslurm object whose property raises (libslurm errors surface this way)."""

    name = "gpu09"
    state = "IDLE"

    @property
    def reason(self) -> str:
        raise RuntimeError("slurm_load_node failed")


def test_a_raising_attribute_is_missing() -> None:
    assert node_from_pyslurm(Exploding()) == SlurmNodeInfo(base_state="IDLE")


@pytest.mark.parametrize(("obj", "words"), [
    (ns(name="bad name", state="IDLE"), "invalid node name 'bad name'"),
    (ns(state="IDLE"), "invalid node name None"),
    (ns(name=5, state="IDLE"), "invalid node name None"),
    (ns(name="gpu01"), "gpu01: no state"),
    (ns(name="gpu01", state=3), "gpu01: no state"),
])
def test_bad_pyslurm_nodes(obj: SimpleNamespace, words: str) -> None:
    with pytest.raises(SlurmParseError) as info:
        node_from_pyslurm(obj)
    assert words in str(info.value) and "pyslurm node" in str(info.value)


# -- jobs ----------------------------------------------------------------------------------------------
FULL_JOB = {
    "id": 16, "name": "sweep", "user_name": "alice", "account": "physics", "partition": "gpu", "qos": "high", "state": "RUNNING",
    "state_reason": "None", "nodes": "gpu[03-04]", "num_nodes": 2, "array_job_id": 9, "array_task_id": 0,
    "array_tasks_waiting": "2-5%2", "submit_time": 1795972353, "start_time": 1795972354, "end_time": 1795972954,
    "time_limit": 10, "exit_code": 0, "exit_code_signal": 0, "requeue_count": 1, "is_requeueable": True, "is_batch_job": False,
    "priority": 2000, "gres_per_node": {"gpu:h100": 2},
}


@pytest.mark.parametrize(("obj", "expected"), [
    (ns(**FULL_JOB),
     SlurmJob(job_id=16, array_job_id=9, array_task_id=0, array_task_str="2-5%2", name="sweep", user="alice",
              account="physics", partition="gpu", qos="high", state="RUNNING", reason=None, nodes="gpu[03-04]",
              num_nodes=2, gpus_requested=4, submit_time=1795972353.0, start_time=1795972354.0,
              end_time=1795972954.0, time_limit_min=10, exit_code=0, exit_signal=None, restart_count=1,
              batch=False, requeueable=True, priority=2000)),
    # older spellings: job_id, nodelist, array_id, termination_signal, restart_count; a killed job has no code
    (ns(job_id=17, state=["PENDING", "REQUEUED"], nodelist="gpu01", array_id=12, array_task_id=3,
        exit_code=1, termination_signal=9, restart_count=2, state_reason="BeginTime", gres_per_node={"gpu": 8},
        is_batch_job="yes", is_requeueable=1),
     SlurmJob(job_id=17, array_job_id=12, array_task_id=3, state="REQUEUED", reason="BeginTime", nodes="gpu01",
              gpus_requested=8, exit_signal=9, restart_count=2)),
    # not an array (array id 0), no GPUs, no times, no limit
    (ns(id=18, state="PENDING", array_job_id=0, array_task_id=4, array_tasks_waiting="1-3", submit_time=0,
        time_limit=0, num_nodes=3, gres_per_node={}, exit_code=0xFFFFFFFE),
     SlurmJob(job_id=18, state="PENDING", num_nodes=3)),
    (ns(id_raw=19, state="COMPLETING", gres_per_node={"gpu:a100": 1, "gpu:h100": 1}, num_nodes=None),
     SlurmJob(job_id=19, state="COMPLETING", gpus_requested=2)),
])
def test_job_from_pyslurm(obj: SimpleNamespace, expected: SlurmJob) -> None:
    assert job_from_pyslurm(obj) == expected


@pytest.mark.parametrize(("obj", "words"), [
    (ns(name="x", state="RUNNING"), "pyslurm job: no id"),
    (ns(id=True, state="RUNNING"), "pyslurm job: no id"),
    (ns(id=20), "pyslurm job 20: no state"),
    (ns(id=20, state=None), "pyslurm job 20: no state"),
    (ns(id=21, state="RUNNING", nodes="gpu[01-"), "pyslurm job 21:"),
])
def test_bad_pyslurm_jobs(obj: SimpleNamespace, words: str) -> None:
    with pytest.raises(SlurmParseError) as info:
        job_from_pyslurm(obj)
    assert words in str(info.value)


# -- what a real pyslurm 25.11.2 on Slurm 25.11.7 gives (tests/testbed/slurm2511, ../shared/testbed) --
class GPU:
    """pyslurm's ``GPU`` TRES value: only ``count`` is read."""

    def __init__(self, count: int) -> None:
        self.count = count


def real_job(**kw: Any) -> SimpleNamespace:
    base: dict[str, Any] = {"id": 1, "name": "train-llm", "user_name": "root", "state": "RUNNING",
                            "state_reason": None, "allocated_nodes": "gpu01", "num_nodes": 1,
                            "gres_per_node": {"gres/gpu:h100": 2}, "gpus": {"gpu": GPU(2), "gpu:h100": GPU(2)},
                            "tres_per_node": None}
    base.update(kw)
    return SimpleNamespace(**base)


def test_real_node_tres_gres_is_not_counted_twice() -> None:
    """Node.allocated_gres (from the TRES) lists the untyped total beside the typed entry of the
    same GPUs: {'gpu': 4, 'gpu:h200': 4} is 4 in use (the old mapper said 8)."""
    node = ns(name="gpu01", state="MIXED", configured_gres={"gpu:h100": 8},
              allocated_gres={"gpu": 4, "gpu:h100": 4}, partitions=["gpu", "debug"])
    info = node_from_pyslurm(node)
    assert (info.gpus_total, info.gpus_alloc, info.gpu_type) == (8, 4, "h100")


def test_real_node_without_gpu_tres_takes_the_jobs_layout() -> None:
    """Without AccountingStorageTRES=gres/gpu the node's allocated_gres is {}: the GPUs the
    running jobs hold on it (their per-node layout) are the count; a node without GPUs stays 0."""
    gpu = ns(name="gpu01", state="MIXED", configured_gres={"gpu:h100": 8}, allocated_gres={})
    cpu = ns(name="cpu01", state="IDLE", configured_gres={}, allocated_gres={})
    assert node_from_pyslurm(gpu, {"gpu01": 3}.__getitem__).gpus_alloc == 3
    assert node_from_pyslurm(cpu, lambda _n: 5).gpus_alloc == 0
    assert node_from_pyslurm(gpu).gpus_alloc == 0  # no layout given: what the node says


def test_real_job_gpus_and_per_node_indices() -> None:
    layout = {"gpu01": {"cpu_ids": "0-7", "gres": {"gpu:h100": {"count": 2, "indexes": "0-1"}}, "memory": 8192}}
    job = real_job(get_resource_layout_per_node=lambda: layout)
    j = job_from_pyslurm(job)
    assert (j.nodes, j.gpus_requested, j.gpus_alloc) == ("gpu01", 2, {"gpu01": "0-1"})
    assert job_gpu_layout(job) == {"gpu01": (2, "0-1")}


def test_real_pending_job_without_gpu_tres_counts_gres_per_node() -> None:
    """Slurm's ``gres/gpu:h100:8`` request keeps its ``gres/`` prefix in gres_per_node."""
    job = real_job(id=3, state="PENDING", state_reason="Resources", allocated_nodes=None, num_nodes=2,
                   gres_per_node={"gres/gpu:h100": 8}, gpus={})
    j = job_from_pyslurm(job)
    assert (j.gpus_requested, j.gpus_alloc, j.reason) == (16, {}, "Resources")


def test_real_job_layout_that_fails_costs_only_the_indices() -> None:
    def boom() -> dict[str, Any]:
        raise RuntimeError("no job_resrcs")

    j = job_from_pyslurm(real_job(get_resource_layout_per_node=boom))
    assert j.gpus_requested == 2 and j.gpus_alloc == {}


def test_real_array_remainder_keeps_its_limit() -> None:
    """pyslurm's array_tasks_waiting drops squeue's ``%2``; the display id must match the CLI's."""
    j = job_from_pyslurm(real_job(id=2, state="PENDING", allocated_nodes=None, array_id=2, array_task_id=None,
                                  array_tasks_waiting="2-3", array_tasks_parallel=2, gpus={}, gres_per_node={}))
    assert j.display_id == "2_[2-3%2]" and j.gpus_requested is None
    task0 = job_from_pyslurm(real_job(id=5, array_id=2, array_task_id=None, array_tasks_waiting=None,
                                      array_tasks_parallel=2, allocated_nodes="cpu01", gpus={}, gres_per_node={}))
    assert task0.display_id == "2_0"  # pyslurm reads task 0 as None


def test_real_partition_and_diag() -> None:
    part = ns(name="gpu", state="UP", is_default=False, max_time=2880, default_time=60, nodes="gpu[01-04]",
              total_nodes=4, total_cpus=256)
    assert partition_from_pyslurm(part) == SlurmPartition(
        name="gpu", state="UP", default=False, max_time_min=2880, default_time_min=60, nodes="gpu[01-04]",
        total_nodes=4, total_cpus=256)
    cpu = partition_from_pyslurm(ns(name="cpu", state="UP", is_default=True, max_time="UNLIMITED", nodes="cpu[01-"))
    assert cpu.max_time_unlimited and cpu.max_time_min is None and cpu.nodes is None and cpu.default is True
    stats = ns(server_thread_count=3, agent_queue_size=0, dbd_agent_queue_size=0, jobs_pending=2, jobs_running=4,
               backfill_cycle_last=1500, schedule_cycle_mean=120)
    h = health_from_pyslurm(stats)
    assert (h.reachable, h.server_thread_count, h.jobs_running, h.last_backfill_cycle_s, h.mean_schedule_cycle_us) == (
        True, 3, 4, 0.0015, 120.0)
