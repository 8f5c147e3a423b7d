"""Fair-share and QoS of the demo cluster, shaped like what sshare/sacctmgr report, so
the job detail view shows the same thing on the demo as on a real cluster."""

from __future__ import annotations

from collections import defaultdict

from hpctui.model.accounting import AccountingInfo, FairShare, QosLimits
from hpctui.model.jobs import SlurmJob
from hpctui.model.scheduler import ExpectedStart, JobOutlook, PriorityFactors
from hpctui.sim.workload import USERS

QOS = (
    QosLimits(name="normal", priority=100),
    QosLimits(name="high", priority=1000, max_jobs_per_user=8, max_tres_per_user="gres/gpu=64", max_gpus_per_user=64),
    QosLimits(name="low", priority=10, max_jobs_per_user=2, max_submit_per_user=50),
    QosLimits(name="debug", priority=500, max_wall_min=30, max_jobs_per_user=1),
)


def demo_accounting(user: str | None, account: str | None, gpu_usage: dict[str, int]) -> AccountingInfo:
    """``gpu_usage`` (user → GPUs running now) stands in for RawUsage so the numbers move."""
    by_account: dict[str, list[str]] = defaultdict(list)
    for u, a in USERS:
        by_account[a].append(u)
    total = sum(gpu_usage.values()) or 1
    rows: list[FairShare] = []
    for acct, users in sorted(by_account.items()):
        if account is not None and acct != account:
            continue
        acct_usage = sum(gpu_usage.get(u, 0) for u in users)
        norm = 1.0 / len(by_account)
        rows.append(FairShare(account=acct, raw_shares=1, norm_shares=norm, raw_usage=acct_usage * 3600,
                              effective_usage=acct_usage / total, depth=1))
        for u in users:
            if user is not None and u != user:
                continue
            eff = gpu_usage.get(u, 0) / total
            share = norm / len(users)
            rows.append(FairShare(account=acct, user=u, raw_shares=1, norm_shares=share,
                                  raw_usage=gpu_usage.get(u, 0) * 3600, effective_usage=eff,
                                  fairshare=round(2 ** (-eff / share), 6) if share else None, depth=2))
    return AccountingInfo(available=True, user=user, account=account, fairshare=rows, qos=list(QOS),
                          notes=["demo cluster: simulated fair-share"])


def demo_outlook(job_id: str, job: SlurmJob | None, now: float) -> JobOutlook:
    """sprio and squeue --start as the demo's multifactor plugin would answer (QoS-weighted, like the beds)."""
    if job is None:
        return JobOutlook(job_id=job_id, detail="sprio: no such job (it left the queue)")
    if job.state != "PENDING":
        return JobOutlook(job_id=job_id, detail=f"sprio: no priority factors (the job is {job.state}, not pending)",
                          start=ExpectedStart(job_id=job_id, user=job.user, start_time=job.start_time,
                                              sched_nodes=job.nodes))
    qos = next((q for q in QOS if q.name == job.qos), QOS[0])
    waited = max(0.0, now - (job.submit_time or now))
    age = min(1000, int(waited / 86_400 * 1000))
    qos_f = min(10_000, (qos.priority or 0) * 10)
    share = 200 + (sum(map(ord, job.user or "")) % 800)
    factors = PriorityFactors(job_id=job_id, user=job.user, priority=age + qos_f + share, site=0, age=age,
                              fairshare=share, jobsize=0, partition=0, qos=qos_f, nice=0)
    start = None if job.reason in ("JobHeldUser", "JobHeldAdmin", "Dependency") else \
        now + 600 + (sum(map(ord, job_id)) % 36) * 300
    return JobOutlook(job_id=job_id, factors=factors,
                      start=ExpectedStart(job_id=job_id, user=job.user, start_time=start, reason=job.reason),
                      commands=("demo: simulated sprio / squeue --start",))
