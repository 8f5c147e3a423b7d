"""DemoSource end to end: collect() and every action through the ActionExecutor."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from hpctui.actions.audit import AuditLog
from hpctui.actions.executor import ActionExecutor
from hpctui.core.store import Store
from hpctui.model import ClusterSnapshot, Part, SlurmJob, SourceResult
from hpctui.model.action import ActionKind, ActionPlan, ActionResult
from hpctui.model.hostlist import expand
from hpctui.sources.base import ActionBackend, Source
from hpctui.sources.demo.source import NOTE, DemoSource

T0 = 1_700_000_000.0


class Clock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


Env = tuple[DemoSource, ActionExecutor, Clock, AuditLog]


@pytest.fixture
def env(tmp_path: Path) -> Env:
    clock = Clock()
    src = DemoSource(clock=clock)
    audit = AuditLog(tmp_path / "audit.jsonl")
    ex = ActionExecutor([src], audit, cluster="demo", user="tester", clock=clock)
    return src, ex, clock, audit


SNAP = ClusterSnapshot(cluster="demo", time=T0)


async def tick(src: DemoSource, clock: Clock, n: int = 1) -> SourceResult:
    r = None
    for _ in range(n):
        clock.t += 2.0
        r = await src.collect()
    assert r is not None
    return r


async def run(ex: ActionExecutor, kind: ActionKind, targets: list[str],
              params: dict[str, str] | None = None) -> tuple[ActionPlan, ActionResult]:
    plan = ex.plan(kind, targets, params, SNAP)
    word = plan.confirm_word
    return plan, await ex.execute(plan, confirmation=word if word else True)


def job_by(r: SourceResult, display_id: str) -> SlurmJob | None:
    assert r.slurm_jobs is not None
    return next((j for j in r.slurm_jobs if j.display_id == display_id), None)


def test_protocols() -> None:
    src = DemoSource(clock=Clock())
    assert isinstance(src, Source) and isinstance(src, ActionBackend)
    assert src.kind == "demo" and src.name == "demo"


@pytest.mark.asyncio
async def test_collect_every_part_and_deterministic() -> None:
    a, b = DemoSource(clock=Clock(), seed=5), DemoSource(clock=Clock(), seed=5)
    ra, rb = await a.collect(), await b.collect()
    # node-probe parts (services, resources, reachability, NVSwitch SXids) come from SSH/Prometheus sources,
    # queues from K8s
    assert set(ra.parts()) == set(Part) - {Part.SERVICES, Part.RESOURCES, Part.PROBES, Part.K8S_QUEUES,
                                           Part.NVSWITCHES}
    assert ra.time == T0
    assert msgspec.json.encode(ra) == msgspec.json.encode(rb)
    rc = await DemoSource(clock=Clock(), seed=6).collect()
    assert msgspec.json.encode(ra) != msgspec.json.encode(rc)
    again = await a.collect()
    assert again.events is not None and len(again.events) < len(ra.events or ())  # only new events
    store = Store("demo", clock=Clock())
    store.apply(ra)
    snap = store.snapshot()
    assert len(snap.nodes) == 80 and snap.nodes["gpu0001"].slurm and snap.nodes["gpu0001"].k8s


def running_node_job(r: SourceResult) -> tuple[str, SlurmJob]:
    assert r.slurm_jobs is not None
    job = next(j for j in r.slurm_jobs if j.state == "RUNNING" and j.num_nodes == 1 and j.partition == "h200")
    assert job.nodes
    return job.nodes, job


@pytest.mark.asyncio
async def test_drain_draining_then_drained_then_resume(env: Env) -> None:
    src, ex, clock, audit = env
    r = await src.collect()
    node, job = running_node_job(r)
    plan, res = await run(ex, ActionKind.DRAIN_NODES, [node], {"reason": "bad gpu 2"})
    assert res.ok, res
    assert plan.commands == (f'scontrol update NodeName={node} State=DRAIN Reason="bad gpu 2"',)
    assert any(f"job {job.job_id}" in a for a in plan.affected) and plan.notes == (src.note,)
    assert NOTE in src.note and "demo seed 0" in src.note
    r = await tick(src, clock)
    info = (r.slurm_nodes or {})[node]
    assert info.display_state.startswith("DRAINING") and info.reason == "bad gpu 2"
    assert "DRAIN" in info.flags and info.reason_user
    r = await tick(src, clock, 3)  # running jobs finish first, at their own end (issue #11)
    info = (r.slurm_nodes or {})[node]
    assert info.display_state.startswith("DRAINING")
    assert any(j.job_id == job.job_id and j.state == "RUNNING" for j in r.slurm_jobs or ())
    assert job.start_time is not None and job.time_limit_min is not None
    clock.t = job.start_time + job.time_limit_min * 60  # past the job's end: the node is drained
    r = await tick(src, clock, 3)
    info = (r.slurm_nodes or {})[node]
    assert info.display_state == "DRAINED" and info.cpus_alloc == 0 and info.gpus_alloc == 0
    assert all(not (j.state == "RUNNING" and j.nodes and node in expand(j.nodes)) for j in r.slurm_jobs or ())
    _, res = await run(ex, ActionKind.RESUME_NODES, [node])
    assert res.ok
    r = await tick(src, clock)
    info = (r.slurm_nodes or {})[node]
    assert "DRAIN" not in info.flags and info.reason is None
    records = audit.read()
    assert [rec["action"] for rec in records] == ["drain", "resume"]
    _, res = await run(ex, ActionKind.RESUME_NODES, [node])  # nothing to resume: Slurm's error
    assert not res.ok and res.results[0].message == "Invalid node state specified"


@pytest.mark.asyncio
async def test_drain_needs_reason_and_does_nothing(env: Env) -> None:
    src, ex, clock, audit = env
    await src.collect()
    plan, res = await run(ex, ActionKind.DRAIN_NODES, ["gpu0010"], {"reason": "  "})
    assert not plan.runnable and res.refused and not res.results
    r = await tick(src, clock)
    assert "DRAIN" not in (r.slurm_nodes or {})["gpu0010"].flags
    assert audit.read()[0]["refused"]


@pytest.mark.asyncio
async def test_unknown_targets_rejected(env: Env) -> None:
    src, ex, _, _ = env
    await src.collect()
    plan = ex.plan(ActionKind.DRAIN_NODES, ["gpu9999", "gpu0001"], {"reason": "x"}, SNAP)
    assert "gpu9999" in plan.rejected_targets and plan.errors and not plan.runnable
    plan = ex.plan(ActionKind.CORDON_NODES, ["bad[name"], {}, SNAP)
    assert plan.errors and "bad[name" in plan.rejected_targets
    plan = ex.plan(ActionKind.CANCEL_JOBS, ["424242"], {}, SNAP)
    assert plan.rejected_targets == ("424242",) and not plan.runnable


@pytest.mark.asyncio
async def test_hostlist_targets_expand(env: Env) -> None:
    src, ex, clock, _ = env
    await src.collect()
    plan, res = await run(ex, ActionKind.CORDON_NODES, ["gpu[0001-0004]"])
    assert plan.targets == ("gpu0001", "gpu0002", "gpu0003", "gpu0004")
    assert plan.commands == ("kubectl cordon gpu0001 gpu0002 gpu0003 gpu0004",)
    assert res.ok and len(res.results) == 4
    r = await tick(src, clock)
    k = (r.k8s_nodes or {})["gpu0003"]
    assert k.unschedulable and any(t.key == "node.kubernetes.io/unschedulable" and t.effect == "NoSchedule"
                                   for t in k.taints)
    _, res = await run(ex, ActionKind.UNCORDON_NODES, ["gpu0003"])
    r = await tick(src, clock)
    k = (r.k8s_nodes or {})["gpu0003"]
    assert res.ok and not k.unschedulable and not k.taints


@pytest.mark.asyncio
async def test_requeue_running_job(env: Env) -> None:
    src, ex, clock, _ = env
    r = await src.collect()
    job = next(j for j in r.slurm_jobs or () if j.state == "RUNNING" and j.batch and j.requeueable)
    plan, res = await run(ex, ActionKind.REQUEUE_JOBS, [job.display_id])
    assert res.ok and plan.commands == (f"scontrol requeue {job.display_id}",)
    r = await tick(src, clock)
    after = job_by(r, job.display_id)
    assert after and after.state == "PENDING" and after.restart_count == 1 and after.reason == "BeginTime"
    assert after.nodes is None
    _, res = await run(ex, ActionKind.REQUEUE_JOBS, [job.display_id])  # already pending
    assert not res.ok and res.results[0].message == "Job is pending execution"


@pytest.mark.asyncio
async def test_requeue_errors_use_slurm_wording(env: Env) -> None:
    src, ex, _, _ = env
    r = await src.collect()
    jobs = [j for j in r.slurm_jobs or () if j.state == "RUNNING"]
    fixed = next(j for j in jobs if j.batch and not j.requeueable)
    interactive = next(j for j in jobs if not j.batch)
    _, res = await run(ex, ActionKind.REQUEUE_JOBS, [fixed.display_id, interactive.display_id])
    msgs = {t.target: t.message for t in res.results}
    assert not res.ok
    assert msgs[fixed.display_id] == "Requested operation is presently disabled"
    assert msgs[interactive.display_id] == "Only batch jobs are accepted or processed"


@pytest.mark.asyncio
async def test_requeuehold_hold_release(env: Env) -> None:
    src, ex, clock, _ = env
    r = await src.collect()
    running = next(j for j in r.slurm_jobs or () if j.state == "RUNNING" and j.batch and j.requeueable)
    pending = next(j for j in r.slurm_jobs or () if j.state == "PENDING" and j.reason == "Priority")
    _, res = await run(ex, ActionKind.REQUEUE_HOLD_JOBS, [running.display_id])
    assert res.ok
    _, res = await run(ex, ActionKind.HOLD_JOBS, [pending.display_id])
    assert res.ok
    r = await tick(src, clock)
    for jid in (running.display_id, pending.display_id):
        j = job_by(r, jid)
        assert j and j.state == "PENDING" and j.reason == "JobHeldUser" and j.priority == 0
    _, res = await run(ex, ActionKind.RELEASE_JOBS, [pending.display_id])
    r = await tick(src, clock)
    j = job_by(r, pending.display_id)
    assert res.ok and j and j.reason != "JobHeldUser" and j.priority
    other = next(j for j in r.slurm_jobs or () if j.state == "RUNNING")
    _, res = await run(ex, ActionKind.HOLD_JOBS, [other.display_id])
    assert not res.ok and res.results[0].message == "Job is no longer pending execution"


@pytest.mark.asyncio
async def test_cancel_then_gone(env: Env) -> None:
    src, ex, clock, _ = env
    r = await src.collect()
    node, job = running_node_job(r)
    cpus_before = (r.slurm_nodes or {})[node].cpus_alloc or 0
    plan, res = await run(ex, ActionKind.CANCEL_JOBS, [job.display_id])
    assert res.ok and plan.commands == (f"scancel {job.display_id}",)
    r = await tick(src, clock)
    j = job_by(r, job.display_id)
    assert j and j.state == "CANCELLED"
    assert ((r.slurm_nodes or {})[node].cpus_alloc or 0) < cpus_before
    r = await tick(src, clock)
    assert job_by(r, job.display_id) is None
    _, res = await run(ex, ActionKind.CANCEL_JOBS, [job.display_id])
    assert res.refused  # unknown by now: rejected at plan time


@pytest.mark.asyncio
async def test_reboot_and_cancel_reboot(env: Env) -> None:
    src, ex, clock, _ = env
    r = await src.collect()
    node = next(n for n, i in (r.slurm_nodes or {}).items() if i.base_state == "IDLE" and not i.flags)
    plan, res = await run(ex, ActionKind.REBOOT_NODES, [node], {"reason": "fw update"})
    assert res.ok and plan.commands[0].startswith("scontrol reboot ASAP")
    _, res = await run(ex, ActionKind.CANCEL_REBOOT, [node])
    r = await tick(src, clock)
    info = (r.slurm_nodes or {})[node]
    assert res.ok and "REBOOT_REQUESTED" not in info.flags and "DRAIN" not in info.flags
    _, res = await run(ex, ActionKind.CANCEL_REBOOT, [node])
    assert not res.ok
    # the lost GPU comes back after rebooting its node
    xid = src.sim.place.xid_node
    _, res = await run(ex, ActionKind.REBOOT_NODES, [xid], {"reason": "xid 79"})
    r = await tick(src, clock)
    info = (r.slurm_nodes or {})[xid]
    assert "Reboot ASAP" in (info.reason or "") or "REBOOT_ISSUED" in info.flags
    r = await tick(src, clock, 4)
    info = (r.slurm_nodes or {})[xid]
    assert not info.flags and not any(g.lost for g in (r.gpus or {})[xid])


@pytest.mark.asyncio
@pytest.mark.parametrize(("size", "off_loop"), [(64, False), (2048, True)])
async def test_big_demo_collects_in_thread(size: int, off_loop: bool) -> None:
    """Sims of more than 1,024 nodes (GPU and CPU) tick in a worker thread; small ones on the loop."""
    import threading

    src = DemoSource(size=size, clock=Clock())
    ran_in: list[threading.Thread] = []
    original = src._collect

    def recording(t: float) -> SourceResult:
        ran_in.append(threading.current_thread())
        return original(t)

    src._collect = recording  # type: ignore[method-assign]
    r = await src.collect()
    assert r.gpus is not None and len(r.gpus) == size
    assert len(ran_in) == 1 and (ran_in[0] is not threading.main_thread()) is off_loop


async def test_demo_accounting_follows_running_gpus() -> None:
    from hpctui.sources.demo.source import DemoSource

    src = DemoSource(size=64, seed=1, clock=lambda: 1000.0, start_time=1000.0)
    await src.collect()
    info = await src.accounting(user="alice", account=None)
    assert info.available and info.qos_named("low") is not None
    rows = [r for r in info.fairshare if r.user == "alice"]
    assert rows and all(r.fairshare is not None and 0 < r.fairshare <= 1 for r in rows)
    running = sum(j.gpus_per_node * j.num_nodes for j in src.sim.workload.jobs.values()
                  if j.state == "RUNNING" and j.user == "alice")
    assert sum(r.raw_usage or 0 for r in rows) == running * 3600
    assert all(r.user in (None, "alice") for r in info.fairshare)
