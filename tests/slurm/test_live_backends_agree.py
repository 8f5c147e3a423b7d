"""The CLI, REST and pyslurm backends read the same live Slurm 25.11 cluster the same way.

One scenario (running GPU jobs, an array, a pending job with reason Resources, a held job, a
drained node with a reason), read through each backend in turn; every field the three can
all give is compared, node by node, job by job, partition by partition. The cluster moves
between reads (the backfill pass marks nodes PLANNED, a pending reason can change), so the
whole comparison is tried up to three times; a difference that persists fails the test and
lists every field that differs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from slurm_helpers import run, source
from slurmlab import SlurmLab, scenario

from hpctui.model import SourceResult

pytestmark = [pytest.mark.live, pytest.mark.slurm, pytest.mark.slurm2511(only=True)]

COMPARED = ("cli", "rest-jwt", "pyslurm")
NODE_FIELDS = ("base_state", "flags", "reason", "reason_user", "partitions", "features", "cpus_total", "cpus_alloc",
               "memory_total_mb", "memory_alloc_mb", "gpus_total", "gpus_alloc", "gpu_type")
JOB_FIELDS = ("job_id", "array_job_id", "array_task_id", "name", "user", "account", "partition", "qos", "state",
              "reason", "nodes", "num_nodes", "gpus_requested", "gpus_alloc", "time_limit_min", "batch",
              "requeueable", "submit_time", "start_time")
PARTITION_FIELDS = ("state", "default", "max_time_min", "max_time_unlimited", "default_time_min", "nodes",
                    "total_nodes", "total_cpus")
# What a backend cannot give at all, so it is not compared there: slurmrestd's partition records
# (v0.0.41-v0.0.44) have no default flag (`scontrol show partition` and pyslurm's is_default do).
NOT_GIVEN = {"rest-jwt": ("partition", "default")}


def _node_value(info: Any, field: str) -> Any:
    value = getattr(info, field)
    if field == "flags":  # the backfill pass sets and clears PLANNED between two reads
        return sorted(value - {"PLANNED"})
    if field in ("partitions", "features"):
        return sorted(value)
    return value


def table(result: SourceResult, backend: str) -> dict[str, Any]:
    """Everything compared, keyed ``node NAME.FIELD`` / ``job ID.FIELD`` / ``partition NAME.FIELD``."""
    out: dict[str, Any] = {}
    skip = NOT_GIVEN.get(backend)
    for name, info in (result.slurm_nodes or {}).items():
        for f in NODE_FIELDS:
            out[f"node {name}.{f}"] = _node_value(info, f)
    for j in result.slurm_jobs or ():
        for f in JOB_FIELDS:
            out[f"job {j.display_id}.{f}"] = getattr(j, f)
    for part in result.partitions or ():
        for f in PARTITION_FIELDS:
            if skip != ("partition", f):
                out[f"partition {part.name}.{f}"] = getattr(part, f)
    return out


def _not_given(backend: str, key: str) -> bool:
    skip = NOT_GIVEN.get(backend)
    return skip is not None and key.startswith(skip[0] + " ") and key.endswith("." + skip[1])


def differences(tables: dict[str, dict[str, Any]]) -> list[str]:
    keys = sorted(set().union(*tables.values()))
    out = []
    for k in keys:
        values = {b: t.get(k, "<missing>") for b, t in tables.items() if not _not_given(b, k)}
        if len({repr(v) for v in values.values()}) > 1:
            out.append(f"{k}: " + ", ".join(f"{b}={v!r}" for b, v in values.items()))
    return out


def test_cli_rest_and_pyslurm_read_the_same_cluster(lab: SlurmLab) -> None:
    ids = scenario(lab)
    lab.run("scontrol", "update", "NodeName=cpu02", "State=DRAIN", "Reason=ECC errors on DIMM B2")

    async def read_all() -> dict[str, SourceResult]:
        out = {}
        for backend in COMPARED:
            src = source(lab, backend)
            try:
                out[backend] = await src.collect()
            finally:
                await src.close()
        return out

    diffs: list[str] = []
    for _ in range(3):
        results = run(read_all())
        tables = {b: table(r, b) for b, r in results.items()}
        diffs = differences(tables)
        if not diffs:
            break
    assert not diffs, "the backends disagree:\n" + "\n".join(diffs)
    assert all(r.controller is not None and r.controller.reachable for r in results.values())
    ctl = results["pyslurm"].controller  # slurmctld.diag(), as sdiag reads
    assert ctl is not None and isinstance(ctl.server_thread_count, int) and ctl.server_thread_count > 0
    # the scenario really is in what they agree on (not three empty reads)
    t = tables["pyslurm"]
    assert t["node gpu01.gpus_alloc"] == 2 and t["node gpu01.gpu_type"] == "h100" and t["node gpu03.gpus_total"] == 4
    assert t["node cpu02.reason"] == "ECC errors on DIMM B2" and t["node cpu02.reason_user"] == "root"
    assert t[f"job {ids['gpu']}.gpus_requested"] == 2 and t[f"job {ids['gpu']}.gpus_alloc"] == {"gpu01": "0-1"}
    assert t[f"job {ids['big']}.gpus_requested"] == 16 and t[f"job {ids['big']}.reason"] in ("Resources", "Priority")
    assert t[f"job {ids['held']}.reason"] == "JobHeldUser"
    assert t[f"job {ids['array']}_0.array_job_id"] == int(ids["array"])
    assert t["partition gpu.nodes"] == "gpu[01-04]" and t["partition cpu.default"] is True
    print(f"\n[slurm 25.11 bed] {', '.join(COMPARED)} agree on {len(t)} fields "
          f"({len(results['pyslurm'].slurm_nodes or {})} nodes, {len(results['pyslurm'].slurm_jobs or ())} jobs, "
          f"{len(results['pyslurm'].partitions or ())} partitions)", file=sys.stderr)


PROBE = """
import asyncio, sys
from hpctui.sources.slurm import SlurmSettings, build_slurm_source
from hpctui.sources.slurm import pyslurm_backend
from hpctui.sources.slurm.pyslurm_backend import probe_pyslurm

pyslurm_backend.PROBE_TIMEOUT_S = 5  # libslurm without a usable slurm.conf exits, or waits for a controller
print(asyncio.run(probe_pyslurm("/nonexistent/slurm.conf")))
async def auto():
    src = build_slurm_source(SlurmSettings(backend="auto", slurm_conf=sys.argv[1], bin_dir=sys.argv[2]))
    try:
        await src.collect()
        return src.backend.name if src.backend else None, src.detect_notes
    finally:
        await src.close()
print(asyncio.run(auto()))
"""


def test_real_pyslurm_install_story(lab: SlurmLab) -> None:
    """In a fresh interpreter (pyslurm not imported yet): a slurm.conf libslurm cannot use is one
    line, not the end (libslurm's fatal() exits) or a hang (it looks for a controller) of the
    process; with the bed's slurm.conf, ``auto`` picks pyslurm 25.11."""
    pyslurm_site = str(lab.pyslurm_site)  # type: ignore[attr-defined]
    env = dict(lab.env, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]), pyslurm_site]))
    env.pop("SLURM_CONF", None)
    res = subprocess.run([sys.executable, "-c", PROBE, lab.slurm_conf, str(lab.bin_dir)],  # type: ignore[attr-defined]
                         env=env, capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    line, chosen = res.stdout.strip().splitlines()
    assert line.startswith(("pyslurm cannot initialise libslurm here (", "importing pyslurm hung for 5 s")), line
    assert chosen.startswith("('pyslurm', ['pyslurm 25.11.2 matches slurm 25.11.7'"), chosen
