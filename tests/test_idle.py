"""Idle and wasted GPUs (hpctui.findings.idle): the tracker's threshold, grace and duration, the
findings it adds to a frame, GPU-hours idle today, the opposite (busy with no owner), the demo's
idle 8-GPU job."""

from __future__ import annotations

import asyncio

import pytest

from hpctui.core.frame import Frame
from hpctui.findings.correlate import workload_index
from hpctui.findings.health import Thresholds
from hpctui.findings.idle import IdleSettings, IdleTracker, index_text, parse_indices
from hpctui.model import ClusterSnapshot, Gpu, GpuProcess, Node, Pod, SlurmJob
from hpctui.model.node import K8sNodeInfo, SlurmNodeInfo

T0 = 1_800_000_000.0
SETTINGS = IdleSettings(util_pct=5.0, after_s=600.0, grace_s=300.0)


def gpus(node: str, utils: list[float | None], **kw: object) -> tuple[Gpu, ...]:
    return tuple(Gpu(node=node, index=i, util_pct=u, memory_used_mib=kw.get("mem", 4.0),  # type: ignore[arg-type]
                     profiling=kw.get("prof", {}), processes=kw.get("procs", ()))  # type: ignore[arg-type]
                 for i, u in enumerate(utils))


def job(job_id: int = 101, node: str = "g1", alloc: str = "0-7", start: float = T0 - 7200, **kw: object) -> SlurmJob:
    return SlurmJob(job_id=job_id, user=str(kw.get("user", "alice")), account=str(kw.get("account", "ml")),
                    state=str(kw.get("state", "RUNNING")), nodes=node, gpus_requested=8,
                    gpus_alloc={node: alloc} if alloc else {}, start_time=start)


def snap(t: float, gpu_map: dict[str, tuple[Gpu, ...]], jobs: tuple[SlurmJob, ...] = (),
         pods: tuple[Pod, ...] = (), k8s: bool = False) -> ClusterSnapshot:
    nodes = {n: Node(name=n, slurm=None if k8s else SlurmNodeInfo(base_state="ALLOCATED"),
                     k8s=K8sNodeInfo(name=n) if k8s else None) for n in gpu_map}
    return ClusterSnapshot(cluster="c", time=t, nodes=nodes, gpus=gpu_map, jobs=jobs, pods=pods)


def run(tracker: IdleTracker, s: ClusterSnapshot, now: float | None = None):  # type: ignore[no-untyped-def]
    return tracker.update(s, workload_index(s), now if now is not None else s.time)


def test_index_text_and_parse() -> None:
    assert index_text([0, 1, 2, 5, 7, 6]) == "0-2,5-7"
    assert parse_indices("0-3,6") == (0, 1, 2, 3, 6)
    assert parse_indices("x") == ()


def test_idle_after_the_duration_not_before() -> None:
    tracker = IdleTracker(SETTINGS, midnight=lambda t: T0 - 3600)
    jobs = (job(),)
    first = run(tracker, snap(T0, {"g1": gpus("g1", [0.0] * 8)}, jobs))
    assert first.gpus_now == 0 and first.watching == 8 and not first.findings
    later = run(tracker, snap(T0 + 599, {"g1": gpus("g1", [0.0] * 8)}, jobs))
    assert later.gpus_now == 0
    done = run(tracker, snap(T0 + 900, {"g1": gpus("g1", [0.0] * 8)}, jobs))
    assert done.gpus_now == 8
    (alloc,) = done.allocations
    assert alloc.id == "101" and alloc.user == "alice" and alloc.count == 8 and alloc.since == T0
    assert alloc.gpu_hours == pytest.approx(8 * 900 / 3600)
    assert alloc.reason == "no process"  # 4 MiB in use, nothing listed
    (finding,) = done.findings["g1"]
    assert finding.code == "gpu_idle" and "job 101 (alice): GPUs 0-7 idle 15 min" in finding.message
    assert done.today == {"alice\tml": pytest.approx(2.0)}


def test_threshold_busy_gpu_restarts_the_spell() -> None:
    tracker = IdleTracker(SETTINGS)
    jobs = (job(alloc="0-1"),)
    run(tracker, snap(T0, {"g1": gpus("g1", [1.0, 4.9])}, jobs))
    # GPU 0 does work once: its spell starts again; GPU 1 stays under 5 %
    run(tracker, snap(T0 + 300, {"g1": gpus("g1", [60.0, 0.0])}, jobs))
    got = run(tracker, snap(T0 + 700, {"g1": gpus("g1", [0.0, 0.0])}, jobs))
    assert [a.gpus for a in got.allocations] == [(("g1", 1),)]
    assert got.gpus_now == 1 and got.watching == 1


def test_sm_activity_counts_where_dcgm_gives_it() -> None:
    tracker = IdleTracker(SETTINGS)
    jobs = (job(alloc="0"),)
    busy_sm = {"g1": gpus("g1", [0.0], prof={"sm_active": 0.4})}  # util reads 0, the SMs work
    run(tracker, snap(T0, busy_sm, jobs))
    assert run(tracker, snap(T0 + 900, busy_sm, jobs)).gpus_now == 0
    idle_sm = {"g1": gpus("g1", [0.0], prof={"sm_active": 0.01}, mem=8192.0)}
    run(tracker, snap(T0 + 1000, idle_sm, jobs))
    got = run(tracker, snap(T0 + 1700, idle_sm, jobs))
    assert got.gpus_now == 1 and got.allocations[0].reason == "util 0 %, SM active 1 %, 8.0 GiB held"


def test_grace_after_the_job_starts() -> None:
    tracker = IdleTracker(SETTINGS)
    jobs = (job(start=T0),)  # started now: idle time counts from T0 + 300
    idle = {"g1": gpus("g1", [0.0] * 8)}
    run(tracker, snap(T0, idle, jobs))
    assert run(tracker, snap(T0 + 800, idle, jobs)).gpus_now == 0  # 500 s idle after the grace
    got = run(tracker, snap(T0 + 901, idle, jobs))
    assert got.gpus_now == 8 and got.allocations[0].since == T0 + 300


def test_unknown_util_and_other_states_are_not_idle() -> None:
    tracker = IdleTracker(IdleSettings(after_s=0.0, grace_s=0.0))
    got = run(tracker, snap(T0, {"g1": gpus("g1", [None] * 8)}, (job(),)))
    assert got.gpus_now == 0 and got.watching == 0
    got = run(tracker, snap(T0, {"g1": gpus("g1", [0.0] * 8)}, (job(state="PENDING"),)))
    assert got.gpus_now == 0


def test_spells_that_ended_stay_in_today_until_midnight() -> None:
    midnight = [T0 - 3600]
    tracker = IdleTracker(IdleSettings(after_s=0.0, grace_s=0.0), midnight=lambda t: midnight[0])
    jobs = (job(alloc="0-1"),)
    run(tracker, snap(T0, {"g1": gpus("g1", [0.0, 0.0])}, jobs))
    run(tracker, snap(T0 + 1800, {"g1": gpus("g1", [0.0, 0.0])}, jobs))
    ended = run(tracker, snap(T0 + 3600, {"g1": gpus("g1", [90.0, 90.0])}, jobs))
    assert ended.gpus_now == 0 and ended.today == {"alice\tml": pytest.approx(2.0)}
    midnight[0] = T0 + 3700
    assert run(tracker, snap(T0 + 3800, {"g1": gpus("g1", [90.0, 90.0])}, jobs)).today == {}


def test_idle_pod_attributed_by_dcgm_labels_and_unattributed() -> None:
    tracker = IdleTracker(IdleSettings(after_s=0.0, grace_s=0.0))
    labelled = tuple(Gpu(node="k1", index=i, util_pct=0.0 if i < 2 else 80.0,
                         processes=(GpuProcess(gpu_index=i, pod="team/train-0" if i < 2 else "team/other"),))
                     for i in range(4))
    pods = (Pod(namespace="team", name="train-0", node="k1", phase="Running", gpus_requested=2, start_time=T0 - 9e3),
            Pod(namespace="team", name="other", node="k1", phase="Running", gpus_requested=2, start_time=T0 - 9e3))
    got = run(tracker, snap(T0, {"k1": labelled}, pods=pods, k8s=True))
    (alloc,) = got.allocations
    assert alloc.kind == "pod" and alloc.id == "team/train-0" and alloc.gpus == (("k1", 0), ("k1", 1))
    assert alloc.account == "team" and "pod team/train-0" in got.findings["k1"][0].message
    # no labels (no dcgm-exporter): a pod is idle only when every GPU nobody else holds is idle
    plain = (Pod(namespace="team", name="solo", node="k2", phase="Running", gpus_requested=4, start_time=T0 - 9e3),)
    got = run(IdleTracker(IdleSettings(after_s=0.0)), snap(T0, {"k2": gpus("k2", [0.0] * 4)}, pods=plain, k8s=True))
    assert got.gpus_now == 4 and got.allocations[0].gpu_text == "k2:4 GPUs"
    got = run(IdleTracker(IdleSettings(after_s=0.0)), snap(T0, {"k2": gpus("k2", [0.0, 0, 0, 70])}, pods=plain, k8s=True))
    assert got.gpus_now == 0


def test_busy_gpu_with_no_owner() -> None:
    tracker = IdleTracker(IdleSettings())
    # GPUs 0-3 held by a job; GPU 5 busy and nobody holds it (Prometheus/NVML: no process list)
    readings = {"g1": gpus("g1", [90.0] * 4 + [0.0, 55.0, 0.0, 0.0])}
    got = run(tracker, snap(T0, readings, (job(alloc="0-3"),)))
    (f,) = got.findings["g1"]
    assert f.code == "gpu_busy_unowned" and f.object == "gpu/g1/5" and "no running job or pod holds it" in f.message
    # memory in use counts too; a node no scheduler knows is nobody's to own
    mem = {"g1": gpus("g1", [0.0], mem=30_000.0)}
    assert run(tracker, snap(T0, mem)).findings["g1"][0].code == "gpu_busy_unowned"
    bare = ClusterSnapshot(cluster="c", time=T0, gpus={"g1": gpus("g1", [90.0])})
    assert not run(tracker, bare).findings
    # a job whose GPU indices are unknown (squeue without gres detail) may hold any of them
    assert not run(tracker, snap(T0, readings, (job(alloc=""),))).findings
    # processes listed: the stray-process rule judges it, not this one
    procs = {"g1": gpus("g1", [90.0], procs=(GpuProcess(pid=7, gpu_index=0, user="bob"),))}
    assert not run(tracker, snap(T0, procs)).findings


def test_frame_carries_idle_findings() -> None:
    tracker = IdleTracker(IdleSettings(after_s=0.0, grace_s=0.0))
    s = snap(T0, {"g1": gpus("g1", [0.0] * 8)}, (job(),))
    frame = Frame.of(s, Thresholds(), idle=run(tracker, s))
    assert [f.code for f in frame.findings.node("g1")] == ["gpu_idle"]
    assert frame.idle.gpus_now == 8


def test_demo_idle_job_and_stray_gpu() -> None:
    from hpctui.core.runtime import demo_runtime

    runtime = demo_runtime(64, 0, clock=lambda: T0, start_time=T0)
    asyncio.run(runtime.collect_once())
    frame = runtime.frame()
    (alloc,) = frame.idle.allocations
    assert alloc.kind == "job" and alloc.count == 8 and alloc.held == 8 and "GiB held" in alloc.reason
    codes = {f.code for f in frame.findings}
    assert {"gpu_idle", "gpu_stray_process"} <= codes  # and the opposite: a GPU busy that no job owns


def test_tracker_memory_is_bounded_by_idle_gpus() -> None:
    tracker = IdleTracker(IdleSettings(after_s=0.0))
    for k in range(50):  # jobs come and go: entries of ended spells are dropped
        run(tracker, snap(T0 + k, {"g1": gpus("g1", [0.0] * 8)}, (job(job_id=k),)))
    assert len(tracker._since) == 8


def test_busy_gpu_on_a_kubernetes_node_without_pods() -> None:
    got = run(IdleTracker(IdleSettings()), snap(T0, {"k1": gpus("k1", [0.0, 88.0])}, k8s=True))
    assert [(f.code, f.object) for f in got.findings["k1"]] == [("gpu_busy_unowned", "gpu/k1/1")]
    # a running GPU pod no GPU names (no dcgm labels): any GPU may be its own
    pod = Pod(namespace="t", name="p", node="k1", phase="Running", gpus_requested=1, start_time=T0)
    assert not run(IdleTracker(IdleSettings()), snap(T0, {"k1": gpus("k1", [0.0, 88.0])}, pods=(pod,), k8s=True)).findings


def test_ending_job_still_holds_its_gpus() -> None:
    busy = {"g1": gpus("g1", [80.0] * 8)}
    got = run(IdleTracker(IdleSettings()), snap(T0, busy, (job(state="COMPLETING"),)))
    assert not got.findings  # its processes exit: not "busy with no owner", not judged idle either
    assert run(IdleTracker(IdleSettings()), snap(T0, busy)).findings["g1"][0].code == "gpu_busy_unowned"


def test_app_report_lists_the_idle_job() -> None:
    from hpctui.core.runtime import demo_runtime
    from hpctui.ui.report_export import prepare_report

    runtime = demo_runtime(64, 0, clock=lambda: T0, start_time=T0)
    asyncio.run(runtime.collect_once())
    (alloc,) = runtime.frame().idle.allocations
    doc, _ = prepare_report(runtime, list(alloc.nodes), audit=[])
    codes = [f["code"] for n in doc["nodes"] for f in n["findings"]]
    assert "gpu_idle" in codes


def test_idle_findings_keep_the_controller_findings() -> None:
    """The frame's index with the idle findings added keeps the findings of no node (slurmctld's)."""
    from hpctui.findings.health import Finding
    from hpctui.findings.index import FindingsIndex
    from hpctui.model import Severity

    ctld = Finding(severity=Severity.WARNING, object="slurmctld/agent_queue", code="ctld_agent_queue", message="q")
    idle = Finding(severity=Severity.WARNING, object="node/n1", code="gpu_idle", message="idle")
    merged = FindingsIndex({}, {}, (ctld,)).with_extra({"n1": (idle,)})
    assert merged.cluster == (ctld,) and {f.code for f in merged} == {"ctld_agent_queue", "gpu_idle"}
