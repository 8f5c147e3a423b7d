"""The demo cluster's past, shaped like slurmdbd answers (``sacctmgr show event``, ``sacct``, ``sreport``).

The incident for issue 24: the Xid node was drained four times in the last 30 days for Xid 79
(the fourth is the drain it is in now) and resumed by alice twice, so its history, the
repeat-offender ranking and a resume preview all have something to say. The ECC and the
flapping-link nodes have a drain or two of their own; jobs died on the Xid node. Deterministic
for a seed and a start time.
"""

from __future__ import annotations

import random

from hpctui.model.hostlist import HostlistError, expand
from hpctui.model.nodehistory import (
    DOWN,
    DRAIN,
    ORIGIN_DEMO,
    RESUME,
    AcctJob,
    AcctQuery,
    AcctResult,
    GpuUsage,
    NodeEvent,
)
from hpctui.sim.incidents import DRAIN_REASON, Placement
from hpctui.sim.workload import USERS

DAY = 86400.0
XID_DRAINS = 4  # the Xid node's drains in the last 30 days, the current one included


def demo_node_events(p: Placement, t0: float) -> list[NodeEvent]:
    """Every remembered node event of the demo, oldest first."""
    x = p.xid_node
    out = [
        NodeEvent(node=x, kind=DRAIN, time=t0 - 26 * DAY, end=t0 - 25.8 * DAY, user="root", origin=ORIGIN_DEMO,
                  reason="Xid 79: GPU has fallen off the bus", state="DRAIN"),
        NodeEvent(node=x, kind=RESUME, time=t0 - 25.8 * DAY, user="bob", origin=ORIGIN_DEMO, reason="reseated GPU"),
        NodeEvent(node=x, kind=DOWN, time=t0 - 12 * DAY, end=t0 - 11.9 * DAY, user="slurm", origin=ORIGIN_DEMO,
                  reason="Not responding", state="DOWN*"),
        NodeEvent(node=x, kind=DRAIN, time=t0 - 6 * DAY, end=t0 - 5.9 * DAY, user="root", origin=ORIGIN_DEMO,
                  reason="NHC: xid 79 on gpu3", state="DRAIN"),
        NodeEvent(node=x, kind=RESUME, time=t0 - 5.9 * DAY, user="alice", origin=ORIGIN_DEMO,
                  reason="passed dcgmi diag -r 1"),
        NodeEvent(node=x, kind=DRAIN, time=t0 - 3 * DAY, end=t0 - 2.9 * DAY, user="root", origin=ORIGIN_DEMO,
                  reason="Xid 79 (GPU fell off the bus) again", state="DRAIN"),
        NodeEvent(node=x, kind=RESUME, time=t0 - 2.9 * DAY, user="alice", origin=ORIGIN_DEMO, reason="GPU reset"),
        NodeEvent(node=x, kind=DRAIN, time=t0 - 1800, user="root", origin=ORIGIN_DEMO, reason=DRAIN_REASON,
                  state="DRAIN"),
    ]
    if p.ecc_node:
        out += [NodeEvent(node=p.ecc_node, kind=DRAIN, time=t0 - 9 * DAY, end=t0 - 8.8 * DAY, user="root",
                          origin=ORIGIN_DEMO, reason="Xid 63 row remap pending", state="DRAIN"),
                NodeEvent(node=p.ecc_node, kind=RESUME, time=t0 - 8.8 * DAY, user="bob", origin=ORIGIN_DEMO)]
    if p.flap_node:
        out.append(NodeEvent(node=p.flap_node, kind=DRAIN, time=t0 - 17 * DAY, end=t0 - 16.5 * DAY, user="root",
                             origin=ORIGIN_DEMO, reason="IB link flapping mlx5_2", state="DRAIN"))
    out.sort(key=lambda e: e.time)
    return out


def events_answer(p: Placement, t0: float, nodes: str | None, start: float, end: float, limit: int) -> AcctResult:
    """What ``sacctmgr show event`` (plus the audit's resumes) would say for the demo."""
    wanted = _names(nodes)
    rows = [e for e in demo_node_events(p, t0) if (wanted is None or e.node in wanted)
            and e.time <= end and (e.end is None or e.end >= start)]
    return AcctResult(available=True, events=rows[:limit], truncated=len(rows) > limit, start=start, end=end,
                      commands=["(demo) sacctmgr -P show event event=node"])


def demo_dead_jobs(p: Placement, t0: float, seed: int) -> list[AcctJob]:
    """Jobs that died in the last 30 days, most on the Xid node."""
    rng = random.Random(f"demo-dead-jobs-{seed}")
    out: list[AcctJob] = []
    kinds = (("NODE_FAIL", 1, None), ("FAILED", None, 9), ("FAILED", 134, None), ("TIMEOUT", 0, None),
             ("OUT_OF_MEMORY", 0, None))
    for i in range(9):
        node = p.xid_node if i < 6 else (p.ecc_node or p.xid_node)
        state, code, sig = kinds[i % len(kinds)]
        user, account = USERS[rng.randrange(len(USERS))]
        end = t0 - rng.uniform(0.05, 28) * DAY
        took = rng.randint(300, 36_000)
        out.append(AcctJob(job_id=str(90_000 + i * 37), state=state, name=f"train-{i}", user=user, account=account,
                           partition="gpu", nodes=node, start=end - took, end=end, elapsed_s=took, exit_code=code,
                           signal=sig, gpus=8))
    out.sort(key=lambda j: j.end or 0.0)
    return out


def jobs_answer(p: Placement, t0: float, seed: int, q: AcctQuery) -> AcctResult:
    """What ``sacct`` would say for the demo (only the jobs that died are remembered)."""
    wanted = _names(q.nodes)
    rows = [j for j in demo_dead_jobs(p, t0, seed)
            if (wanted is None or j.nodes in wanted) and (q.user is None or j.user == q.user)
            and (q.account is None or j.account == q.account) and (not q.states or j.state in q.states)
            and (j.end or 0) >= q.start and (j.start or 0) <= q.end]
    return AcctResult(available=True, jobs=rows[:q.limit], truncated=len(rows) > q.limit, start=q.start, end=q.end,
                      commands=["(demo) sacct -P -X -a"])


def usage_answer(gpu_hours_by_user: dict[str, float], start: float, end: float, account: str | None,
                 user: str | None) -> AcctResult:
    """What ``sreport -T gres/gpu cluster AccountUtilizationByUser`` would say: per account, then its users."""
    by_account: dict[str, list[tuple[str, float]]] = {}
    for u, a in USERS:
        by_account.setdefault(a, []).append((u, gpu_hours_by_user.get(u, 0.0)))
    rows: list[GpuUsage] = []
    for acct, users in sorted(by_account.items()):
        if account is not None and acct != account:
            continue
        mine = [(u, h) for u, h in users if user is None or u == user]
        rows.append(GpuUsage(account=acct, gpu_hours=sum(h for _, h in mine), cluster="demo"))
        rows += [GpuUsage(account=acct, user=u, gpu_hours=h, cluster="demo") for u, h in mine]
    return AcctResult(available=True, usage=rows, start=start, end=end,
                      commands=["(demo) sreport -P -T gres/gpu cluster AccountUtilizationByUser"])


def _names(nodes: str | None) -> set[str] | None:
    if nodes is None:
        return None
    try:
        return set(expand(nodes))
    except HostlistError as exc:
        raise ValueError(f"invalid node list {nodes!r}: {exc}") from None
