"""Fair-share and QoS limits on the real bed with accounting (slurmdbd + MariaDB, cluster.sh).

The bed seeds: accounts ml (Fairshare 60) and physics (40); root (10) and alice (30) in both,
bob (15) in physics; QoS normal (Priority 100) and gpu-limited (Priority 50, MaxJobsPU 2,
MaxSubmitPU 10, MaxTRESPU gres/gpu=4, MaxWall 12:00:00) for root and alice.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_helpers import BACKENDS, job, poll, run, source
from slurmlab import SlurmLab

from hpctui.core.runtime import Runtime
from hpctui.sources.slurm.accounting import ABSENT, AccountingInfo
from hpctui.sources.slurm.parse import FairShare

pytestmark = [pytest.mark.live, pytest.mark.slurm]


def rows(info: AccountingInfo) -> dict[tuple[str, str | None], FairShare]:
    return {(r.account, r.user): r for r in info.fairshare}


@pytest.mark.parametrize("backend", BACKENDS)
def test_fairshare_rows_for_user_and_account(alab: SlurmLab, backend: str) -> None:
    src = source(alab, backend)
    run(src.collect())  # resolve the refresh backend first: REST ones still read accounting with the CLI
    info = run(src.accounting(user="alice"))
    assert info.available and info.detail is None, info.detail
    by = rows(info)
    ml, ph = by[("ml", "alice")], by[("physics", "alice")]
    assert (ml.raw_shares, ph.raw_shares) == (30, 30)
    assert ml.norm_shares == pytest.approx(30 / 40, abs=1e-5)  # ml: alice 30 + root 10
    assert ph.norm_shares == pytest.approx(30 / 55, abs=1e-5)  # physics: alice 30 + bob 15 + root 10
    assert by[("ml", None)].raw_shares == 60 and by[("physics", None)].raw_shares == 40
    assert not any(u not in (None, "alice") for _, u in by), "sshare -u alice returned other users"
    assert {(a.account, a.user) for a in info.associations} == {("ml", "alice"), ("physics", "alice")}
    assert all("gpu-limited" in a.qos and a.default_qos == "normal" and a.max_jobs == 10 for a in info.associations)
    if backend == "cli":
        assert info.notes == []
    else:
        assert info.notes and "CLI" in info.notes[0]

    acct = run(src.accounting(account="physics"))
    assert acct.available and acct.detail is None
    users = {r.user for r in acct.fairshare if r.account == "physics"}
    assert users == {None, "alice", "bob", "root"}
    bob = next(r for r in acct.fairshare if r.user == "bob")
    assert bob.raw_shares == 15 and bob.norm_shares == pytest.approx(15 / 55, abs=1e-5)
    assert next(a for a in acct.associations if a.user == "bob").max_jobs == 5
    run(src.close())


def test_qos_limits_as_created(alab: SlurmLab) -> None:
    info = run(source(alab, "cli").accounting())
    assert info.available and {"normal", "gpu-limited"} <= {q.name for q in info.qos}
    g = info.qos_named("gpu-limited")
    n = info.qos_named("normal")
    assert g is not None and n is not None
    assert (g.priority, g.max_jobs_per_user, g.max_submit_per_user, g.max_wall_min) == (50, 2, 10, 720)
    assert (g.max_tres_per_user, g.max_gpus_per_user) == ("gres/gpu=4", 4)
    assert n.priority == 100 and n.max_jobs_per_user is None and n.max_gpus_per_user is None
    assert info.associations == []  # no user/account given: not queried
    # the unfiltered tree holds every seeded association
    assert {(r.account, r.user) for r in info.fairshare} >= {
        ("ml", "alice"), ("ml", "root"), ("physics", "alice"), ("physics", "bob"), ("physics", "root")}


def test_qos_gpu_limit_is_what_the_pending_reason_says(alab: SlurmLab) -> None:
    """A 4-GPU job under gpu-limited fills MaxTRESPU gres/gpu=4: a 1-GPU one pends QOSMaxGRESPerUser."""
    a = alab.sbatch("-p", "gpu", "--qos=gpu-limited", "--gres=gpu:h100:4", "-J", "q1")
    alab.wait_state(a, "RUNNING")
    c = alab.sbatch("-p", "gpu", "--qos=gpu-limited", "--gres=gpu:h100:1", "-J", "q3")
    src = source(alab, "cli")
    res = run(poll(src, lambda r: job(r, c) is not None and job(r, c).reason == "QOSMaxGRESPerUser"))
    assert job(res, c).state == "PENDING" and job(res, c).qos == "gpu-limited"
    info = run(src.accounting(user="root"))
    limit = info.qos_named("gpu-limited")
    assert limit is not None and limit.max_gpus_per_user == 4
    used = sum(j.gpus_requested or 0 for j in res.slurm_jobs or () if j.qos == "gpu-limited" and j.state == "RUNNING")
    assert used == limit.max_gpus_per_user  # the limit the UI shows is the one Slurm enforces
    # a normal-QoS job of the same user is not held back by it
    d = alab.sbatch("-p", "gpu", "--gres=gpu:h100:2", "-J", "normal-qos")
    alab.wait_state(d, "RUNNING")


def test_job_as_alice_shows_up_in_her_usage(alab: SlurmLab) -> None:
    """A real job run as alice under physics: her RawUsage there becomes > 0 (priority/multifactor
    applies a finished job's usage at once), her ml usage does not move."""
    src = source(alab, "cli")
    before = rows(run(src.accounting(user="alice", account="physics")))[("physics", "alice")]
    jid = alab.sbatch("--uid=alice", "-A", "physics", "-p", "cpu", "-n", "8", "-J", "alice-job", wrap="sleep 1.5")
    assert alab.run("squeue", "-h", "-j", jid, "-o", "%u %a", check=False).stdout.split() in (["alice", "physics"], [])
    deadline = time.monotonic() + 30
    while True:
        info = run(src.accounting(user="alice"))
        ph = rows(info)[("physics", "alice")]
        if (ph.raw_usage or 0) > (before.raw_usage or 0):
            break
        assert time.monotonic() < deadline, f"alice's physics usage never grew: {ph}"
        time.sleep(0.5)
    # (EffectvUsage/NormUsage move only at the next PriorityCalcPeriod, 5 min: not checked)
    assert rows(info)[("ml", "alice")].raw_usage == 0


@pytest.mark.parametrize(("user", "account"), [("-h", None), ("alice,bob", None), (None, "ml physics"),
                                                (None, "$(touch /tmp/x)"), ("root;id", "ml")])
def test_invalid_names_rejected(alab: SlurmLab, user: str | None, account: str | None) -> None:
    src = source(alab, "cli")
    with pytest.raises(ValueError, match=r"invalid (user|account) name"):
        run(src.accounting(user=user, account=account))
    assert src.acct_runner.calls == []


def test_unknown_user_and_account(alab: SlurmLab) -> None:
    src = source(alab, "cli")
    info = run(src.accounting(user="nosuchuser"))
    assert info.available and info.detail is not None and "no fair-share row for user nosuchuser" in info.detail
    assert not any(r.user == "nosuchuser" for r in info.fairshare) and info.associations == []
    info = run(src.accounting(account="nosuchacct"))
    assert info.available and info.fairshare == [] and "account nosuchacct" in (info.detail or "")


def test_slurmdbd_down_then_back(alab: SlurmLab) -> None:
    """slurmdbd killed: fair-share still comes from slurmctld's cache, QoS says slurmdbd is down."""
    src = source(alab, "cli")
    alab.kill_daemon("slurmdbd")
    try:
        info = run(src.accounting(user="alice"))
        assert info.available and info.qos == [] and info.associations == []
        assert ("ml", "alice") in rows(info)
        assert info.detail is not None and info.detail.startswith("slurmdbd unreachable (sacctmgr show qos)")
    finally:
        alab.start()  # brings slurmdbd back (keeps config, jobs and the accounting database)
    info = run(src.accounting(user="alice"))
    assert info.available and info.detail is None and info.qos_named("gpu-limited") is not None


def test_runtime_accounting(alab: SlurmLab, tmp_path: Path) -> None:
    rt = Runtime("lab", [source(alab, "cli")], audit_path=tmp_path / "audit.jsonl")
    info = run(rt.accounting("alice", "ml"))
    assert info is not None and info.available
    assert [(r.account, r.user) for r in info.fairshare if r.user] == [("ml", "alice")]


@pytest.fixture(scope="module")
def plain_lab(slurm_lab: SlurmLab) -> Iterator[SlurmLab]:
    """A second, real bed without accounting (SLURMLAB_ACCOUNTING=0; ~0.5 s up, ~1.5 s down)."""
    lab = type(slurm_lab)()  # the same Slurm version as the session bed
    lab.env["SLURMLAB_ACCOUNTING"] = "0"
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()


def test_bed_without_accounting_is_unavailable(plain_lab: SlurmLab) -> None:
    assert not plain_lab.accounting
    for backend in ("cli", "rest-unix"):
        src = source(plain_lab, backend)
        run(src.collect())
        info = run(src.accounting(user="root"))
        assert not info.available and info.detail == ABSENT
        assert info.fairshare == [] and info.qos == [] and info.associations == []
        run(src.close())
