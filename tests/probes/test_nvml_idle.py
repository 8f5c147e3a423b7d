"""Busy with no owner and idle through the NVML source path (the stand-in pynvml, fake_pynvml.py):
its GPU 0 runs this test's own process at 100 % with no Slurm job in its cgroup."""

from __future__ import annotations

import msgspec
from fake_pynvml import new_module

from hpctui.findings.correlate import workload_index
from hpctui.findings.health import Thresholds
from hpctui.findings.idle import IdleSettings, IdleTracker
from hpctui.findings.index import findings_for
from hpctui.model import ClusterSnapshot, Node, SlurmJob
from hpctui.model.node import SlurmNodeInfo
from hpctui.sources.nvml.settings import NvmlSettings
from hpctui.sources.nvml.source import NvmlSource


async def _gpus() -> tuple:  # type: ignore[type-arg]
    src = NvmlSource(NvmlSettings(node="gpuhost"), nvml=new_module())
    try:
        result = await src.collect()
    finally:
        await src.close()
    assert result.gpus is not None
    return result.gpus["gpuhost"]


def _snap(gpus: tuple, jobs: tuple[SlurmJob, ...] = ()) -> ClusterSnapshot:  # type: ignore[type-arg]
    return ClusterSnapshot(cluster="c", time=1e9, nodes={"gpuhost": Node(name="gpuhost", slurm=SlurmNodeInfo(
        base_state="MIXED"))}, gpus={"gpuhost": gpus}, jobs=jobs)


async def test_nvml_process_that_no_job_owns_is_a_finding() -> None:
    s = _snap(await _gpus())
    codes = [(f.code, f.object) for f in findings_for(s, Thresholds()).node("gpuhost")]
    assert ("gpu_stray_process", "gpu/gpuhost/0") in codes
    # the process list names it, so the utilisation rule stays quiet (one problem, one finding)
    report = IdleTracker(IdleSettings()).update(s, workload_index(s), s.time)
    assert "gpuhost" not in report.findings


async def test_nvml_gpu_allocated_and_idle() -> None:
    gpus = await _gpus()
    quiet = (msgspec.structs.replace(gpus[0], util_pct=0.0, processes=()), *gpus[1:])
    job = SlurmJob(job_id=5, user="u", state="RUNNING", nodes="gpuhost", gpus_alloc={"gpuhost": "0"}, start_time=0.0)
    s = _snap(quiet, (job,))
    report = IdleTracker(IdleSettings(after_s=0.0)).update(s, workload_index(s), s.time)
    (alloc,) = report.allocations
    assert alloc.gpu_text == "gpuhost:0" and alloc.reason.startswith("util 0 %")  # 19.4 GiB still in use
