"""Model helpers, table by table: N/A formatting, severities, ages, parts, derived percentages, hostlists."""

from __future__ import annotations

import pytest

from hpctui.model import (
    ClusterSnapshot,
    Gpu,
    Part,
    Severity,
    SlurmJob,
    SlurmNodeInfo,
    SourceHealth,
    SourceResult,
    fmt_na,
)
from hpctui.model.common import worst
from hpctui.model.hostlist import HostlistError, collect, expand, is_valid_hostname
from hpctui.model.jobs import job_display_id
from hpctui.model.probe import NodeResources


@pytest.mark.parametrize(("value", "fmt", "na", "expected"), [
    (None, "{}", "N/A", "N/A"), (0, "{}", "N/A", "0"), (0.0, "{:.1f}", "N/A", "0.0"), (None, "{:.1f}", "-", "-"),
    (83.4, "{:.0f} °C", "N/A", "83 °C"), ("", "[{}]", "N/A", "[]"),
])
def test_fmt_na(value: object, fmt: str, na: str, expected: str) -> None:
    assert fmt_na(value, fmt, na) == expected


def test_fmt_na_defaults() -> None:
    assert fmt_na(None) == "N/A" and fmt_na(7) == "7"


def test_severity_order_and_worst() -> None:
    assert [int(s) for s in (Severity.OK, Severity.INFO, Severity.WARNING, Severity.ERROR, Severity.CRITICAL)] == [
        0, 1, 2, 3, 4]
    assert worst() is Severity.OK
    assert worst(Severity.INFO) is Severity.INFO
    assert worst(Severity.WARNING, Severity.CRITICAL, Severity.ERROR) is Severity.CRITICAL


@pytest.mark.parametrize(("last_success", "now", "expected"), [
    (None, 100.0, None), (100.0, 100.0, 0.0), (100.0, 142.5, 42.5), (100.0, 90.0, 0.0),
])
def test_source_health_age(last_success: float | None, now: float, expected: float | None) -> None:
    assert SourceHealth(name="s", kind="k", last_success=last_success).age(now) == expected


@pytest.mark.parametrize(("last_success", "last_error", "ok"), [
    (None, None, False), (1.0, None, True), (1.0, "boom", False), (None, "boom", False),
])
def test_source_health_ok(last_success: float | None, last_error: str | None, ok: bool) -> None:
    assert SourceHealth(name="s", kind="k", last_success=last_success, last_error=last_error).ok is ok


def test_source_result_parts_are_what_it_provides() -> None:
    assert SourceResult(source="s", time=1.0).parts() == []
    r = SourceResult(source="s", time=1.0, slurm_nodes={}, gpus={}, probes={}, slurm_jobs=())
    assert r.parts() == [Part.SLURM_NODES, Part.SLURM_JOBS, Part.GPUS, Part.PROBES]  # empty = provided, none there
    every = SourceResult(source="s", time=1.0, **{p.value: {} for p in Part})  # type: ignore[arg-type]
    assert every.parts() == list(Part) and len(list(Part)) == 23  # + nvswitches (#21), alerts and silences (#25),
    # reservations (#24), fabric, quotas, volumes, ceph and object stores (#27)


def test_part_age_and_errors() -> None:
    snap = ClusterSnapshot(
        cluster="c", time=200.0, collected_at={"gpus": 150.0, "ib": 250.0},
        sources={"dcgm": SourceHealth(name="dcgm", kind="prom", last_error="timed out after 5 s"),
                 "ssh": SourceHealth(name="ssh", kind="ssh", last_success=190.0),
                 "nvml": SourceHealth(name="nvml", kind="x", last_error="")},
        part_sources={"gpus": ("dcgm", "ssh", "gone", "nvml")})
    assert snap.part_age(Part.GPUS) == 50.0
    assert snap.part_age(Part.GPUS, now=160.0) == 10.0
    assert snap.part_age(Part.IB) == 0.0  # a clock that stepped back is age 0, never negative
    assert snap.part_age(Part.MOUNTS) is None
    assert snap.part_errors(Part.GPUS) == ["dcgm: timed out after 5 s"]
    assert snap.part_errors(Part.IB) == []


@pytest.mark.parametrize(("used", "total", "expected"), [
    (None, 80.0, None), (40.0, None, None), (40.0, 0.0, None), (40.0, 80.0, 50.0), (0.0, 80.0, 0.0),
    (80.0, 80.0, 100.0),
])
def test_gpu_memory_pct(used: float | None, total: float | None, expected: float | None) -> None:
    assert Gpu(node="n", index=0, memory_used_mib=used, memory_total_mib=total).memory_pct == expected


@pytest.mark.parametrize(("mask", "throttled"), [
    (None, False), (0, False), (0x1, False), (0x4, False), (0x8, False), (0x80, False), (0x20, True), (0x40, True),
    (0xFF, True),
])
def test_gpu_thermal_throttled(mask: int | None, throttled: bool) -> None:
    assert Gpu(node="n", index=0, throttle_reasons=mask).thermal_throttled is throttled


@pytest.mark.parametrize(("total", "available", "expected"), [
    (None, 10.0, None), (100.0, None, None), (0.0, 0.0, None), (100.0, 25.0, 75.0), (100.0, 100.0, 0.0),
])
def test_node_resources_mem_used_pct(total: float | None, available: float | None, expected: float | None) -> None:
    assert NodeResources(node="n", mem_total_mib=total, mem_available_mib=available).mem_used_pct == expected


@pytest.mark.parametrize(("args", "expected"), [
    ((7, None, None, None), "7"), ((21, 20, 3, None), "20_3"), ((20, 20, None, "4-9%2"), "20_[4-9%2]"),
    ((20, 20, 0, None), "20_0"), ((20, 20, None, None), "20"), ((21, None, 3, "x"), "21"),
])
def test_job_display_id(args: tuple[int, int | None, int | None, str | None], expected: str) -> None:
    assert job_display_id(*args) == expected
    job_id, array_job, task, task_str = args
    assert SlurmJob(job_id=job_id, array_job_id=array_job, array_task_id=task,
                    array_task_str=task_str).display_id == expected


@pytest.mark.parametrize(("expr", "expected"), [
    ("gpu[01-03]", ["gpu01", "gpu02", "gpu03"]), ("gpu[01,04],cpu1", ["gpu01", "gpu04", "cpu1"]),
    (" gpu01 ", ["gpu01"]), ("", []), ("   ", []), ("(null)", []), ("None", []),
    ("n[1-2]-ib", ["n1-ib", "n2-ib"]),
])
def test_expand(expr: str, expected: list[str]) -> None:
    assert expand(expr) == expected


@pytest.mark.parametrize(("expr", "words"), [
    ("gpu[01-", "bad hostlist 'gpu[01-'"), ("gpu[3-1]", "bad hostlist"), ("bad_name", "not a valid host name: 'bad_name'"),
    ("a[1-2]_x", "not a valid host name: 'a1_x'"),
])
def test_expand_rejects(expr: str, words: str) -> None:
    with pytest.raises(HostlistError) as info:
        expand(expr)
    assert words in str(info.value)


def test_collect() -> None:
    assert collect(["gpu01", "gpu02", "gpu04"]) == "gpu[01-02,04]"
    assert collect(iter(["a1"])) == "a1"


@pytest.mark.parametrize(("name", "ok"), [
    ("gpu01", True), ("GPU-01", True), ("a", True), ("node1.cluster.local", True), ("1node", True),
    ("-gpu", False), ("gpu-", False), ("gpu_01", False), ("", False), ("gpu 01", False), ("a" * 63, True),
    ("a" * 64, False), ("a..b", False), ("x\x1b[31m", False),
])
def test_is_valid_hostname(name: str, ok: bool) -> None:
    assert is_valid_hostname(name) is ok


def test_slurm_node_info_display_state_property() -> None:
    assert SlurmNodeInfo(base_state="MIXED", flags=frozenset({"DRAIN"})).display_state == "DRAINING"
