"""pyslurm objects → model, whole records compared (every field written out here).

Attribute names follow pyslurm 25.11 (``pyslurm/core/node.pyx``, ``job/job.pyx``) and the older
spellings the mapper accepts; values follow Slurm's conventions (NO_VAL 0xfffffffe / INFINITE
0xffffffff → not available; epoch 0 → not known).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from hpctui.model import SlurmJob, SlurmNodeInfo
from hpctui.sources.slurm.parse import SlurmParseError, job_from_pyslurm, node_from_pyslurm

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
