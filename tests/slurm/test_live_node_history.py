"""Node history and accounting on demand against the real beds with slurmdbd + MariaDB (22.05, 25.11).

Real drains and resumes go through hpctui's executor (so the audit log has them too), real jobs
fail on a node (``exit 3``, ``kill -9 $$``); then hpctui reads them back: ``sacctmgr show event``
merged with the audit log, ``sacct -N node -s FAILED,...`` with exit codes decoded, the resume
preview's warning, ``sreport`` answering. The session bed is shared: assertions look only at what
this test made (a reason tagged with a fresh id), never at a total.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest
from slurmlab import SlurmLab

from hpctui.core.runtime import Runtime
from hpctui.findings.nodehistory import summary
from hpctui.model.action import ActionKind
from hpctui.model.nodehistory import AcctQuery
from hpctui.sources.slurm import SlurmSettings
from hpctui.sources.slurm.source import SlurmSource

pytestmark = [pytest.mark.live, pytest.mark.slurm]
DAY = 86400.0


def runtime(lab: SlurmLab, tmp_path: Path) -> Runtime:
    kw: dict[str, object] = {"slurm_conf": lab.slurm_conf, "timeout_s": 15.0, "backend": "cli"}
    if getattr(lab, "bin_dir", None) is not None:
        kw["bin_dir"] = str(lab.bin_dir)  # type: ignore[attr-defined]
    return Runtime("lab", [SlurmSource(SlurmSettings(**kw))], audit_path=tmp_path / "audit.jsonl")  # type: ignore[arg-type]


def wait_dbd_settled(lab: SlurmLab, node: str, timeout: float = 30) -> None:
    """Wait until slurmdbd holds no open event for the (reset, idle) node, then for the next second.

    A controller that just started (the session bed, or a test that restarted it) registers its
    nodes with "cold-start" events, and slurmdbd closes them as the registration arrives. A drain
    sent before that close is ended by it in the same second and never listed (``as_mysql_node_up``
    ends every open event of the node). Real Slurm behaviour, not what this test is about."""
    deadline = time.monotonic() + timeout
    while True:
        out = lab.run("sacctmgr", "-P", "-n", "show", "event", "event=node", f"nodes={node}",
                      "format=timeend,reason").stdout
        open_rows = [line for line in out.splitlines() if line.split("|", 1)[0] in ("Unknown", "None")]
        if not open_rows:
            break
        assert time.monotonic() < deadline, f"slurmdbd keeps open events for {node}: {open_rows}"
        time.sleep(0.5)
    time.sleep(1.1)


async def act(rt: Runtime, kind: ActionKind, node: str, reason: str | None = None) -> None:
    await rt.collect_once()
    plan = rt.plan_action(kind, [node], {"reason": reason} if reason else {})
    assert plan.runnable, plan.errors
    result = await rt.executor.execute(plan, confirmation=True)
    assert result.ok, result.results


@pytest.mark.slurm2511
def test_real_drains_resumes_and_the_resume_warning(alab: SlurmLab, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:6]
    node = "gpu02"

    wait_dbd_settled(alab, node)

    async def go() -> None:
        rt = runtime(alab, tmp_path)
        for i in range(2):
            await act(rt, ActionKind.DRAIN_NODES, node, f"Xid 79 GPU fell off the bus [{tag}/{i}]")
            await asyncio.sleep(1.2)
            await act(rt, ActionKind.RESUME_NODES, node)
            await asyncio.sleep(1.2)
        await act(rt, ActionKind.DRAIN_NODES, node, f"Xid 79 again [{tag}/2]")
        await asyncio.sleep(1.0)
        deadline = time.monotonic() + 30
        while True:  # slurmctld hands node events to slurmdbd asynchronously
            record = await rt.node_record(node, DAY)
            mine = [e for e in record.events if e.kind == "drain" and e.reason and tag in e.reason]
            if (len(mine) == 3 and all("slurmdbd" in e.origin for e in mine)) or time.monotonic() > deadline:
                break
            await asyncio.sleep(1.0)
        assert record.problems == [], record.problems
        # one event, two records (three for the drain that lasts: slurmctld's current state has it too)
        seen = [(e.reason, e.origin, e.user, e.state, e.time, e.end) for e in mine]
        assert len(mine) == 3 and all(e.origin.startswith("slurmdbd+audit") for e in mine), seen
        assert all(e.user == "root" and e.state == "DRAIN" for e in mine), seen
        assert [e.end is None for e in sorted(mine, key=lambda e: e.time)] == [False, False, True]
        resumes = [e for e in record.events if e.kind == "resume" and e.origin == "audit"]
        assert len(resumes) >= 2 and all(e.user == rt.executor.user for e in resumes)
        assert "Xid 79" in summary(record) and f"resumed by {rt.executor.user}" in summary(record)
        assert any(c.startswith("sacctmgr -P show event event=node nodes=gpu02 ") for c in record.commands)
        ranked, problems, commands = await rt.offenders(DAY)
        assert node in [o.node for o in ranked] and problems == [], problems
        assert any(c.startswith("sacct -P -X -a -s FAILED,NODE_FAIL,OUT_OF_MEMORY,TIMEOUT -S ") for c in commands)
        await rt.node_records.prefetch()
        await rt.collect_once()
        plan = rt.plan_action(ActionKind.RESUME_NODES, [node], {})
        # "resumed twice this week after Xid 79 — consider RMA" (more often when the session bed had earlier runs)
        assert any(w.startswith(f"{node}: resumed ") and w.endswith(" this week after Xid 79 — consider RMA")
                   for w in plan.warnings), plan.warnings
        await act(rt, ActionKind.RESUME_NODES, node)
        await rt.stop()

    asyncio.run(go())


@pytest.mark.slurm2511
def test_jobs_that_died_on_the_node_and_sacct_filters(alab: SlurmLab, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:6]
    failed = alab.sbatch("-p", "gpu", "-w", "gpu01", "--gres=gpu:h100:1", "-J", f"fails-{tag}", wrap="exit 3")
    killed = alab.sbatch("-p", "gpu", "-w", "gpu01", "--gres=gpu:h100:2", "-J", f"kill|{tag}", wrap="kill -9 $$")
    ok = alab.sbatch("-p", "gpu", "-w", "gpu01", "--gres=gpu:h100:1", "-J", f"ok-{tag}", wrap="true")

    async def go() -> None:
        rt = runtime(alab, tmp_path)
        deadline = time.monotonic() + 40
        while True:
            record = await rt.node_record("gpu01", DAY)
            dead = {j.job_id: j for j in record.dead_jobs}
            if {failed, killed} <= set(dead) or time.monotonic() > deadline:
                break
            await asyncio.sleep(1.0)
        assert (dead[failed].state, dead[failed].exit_code, dead[failed].signal) == ("FAILED", 3, None)
        assert (dead[killed].state, dead[killed].exit_code, dead[killed].signal) == ("FAILED", None, 9)
        assert dead[killed].name == f"kill|{tag}" and dead[killed].gpus == 2  # a '|' in the name: the last field
        assert ok not in dead
        now = time.time()
        everything = await rt.acct_jobs(AcctQuery(start=now - DAY, end=now + 60, nodes="gpu01", limit=5000))
        assert everything is not None and everything.available and everything.detail is None, everything
        assert {failed, killed, ok} <= {j.job_id for j in everything.jobs}
        assert next(j for j in everything.jobs if j.job_id == ok).state == "COMPLETED"
        none = await rt.acct_jobs(AcctQuery(start=now - DAY, end=now + 60, user="alice", states=("NODE_FAIL",)))
        assert none is not None and none.available and all(j.user == "alice" for j in none.jobs)
        bad = await rt.acct_jobs(AcctQuery(start=now - DAY, end=now, user="nosuchuser"))
        assert bad is not None and bad.detail is not None and "nosuchuser" in bad.detail
        usage = await rt.gpu_usage(now - DAY, now)
        assert usage is not None and usage.available and usage.detail is None, usage.detail
        await rt.stop()

    asyncio.run(go())
