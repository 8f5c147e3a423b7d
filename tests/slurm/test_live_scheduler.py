"""Issue #24 §4–5 on the real beds: a maintenance reservation created through the action, read back by
the action itself and by every backend's refresh, its findings, and deleted again; slurmctld's sdiag
statistics (RPCs by user and type, backfill) from the CLI and REST; one pending job's sprio factors and
squeue --start estimate."""

from __future__ import annotations

import pwd
import subprocess
import time

import pytest
from slurm_helpers import act, job, poll, run, source
from slurmlab import SlurmLab

from hpctui.core.store import Store
from hpctui.findings.health import Thresholds
from hpctui.findings.index import findings_for
from hpctui.model.action import ActionKind

pytestmark = [pytest.mark.live, pytest.mark.slurm]
RESV = "maint_hpctui"


@pytest.mark.slurm2511(backends=("cli", "rest-unix", "rest-jwt", "pyslurm"))
@pytest.mark.parametrize("backend", ["cli", "rest-unix", "rest-jwt", "pyslurm"])
def test_maintenance_reservation_is_read_back_and_read_by_every_backend(lab: SlurmLab, backend: str) -> None:
    lab.run("scontrol", "update", "NodeName=gpu03", "State=DRAIN", "Reason=xid 79 hpctui test")
    cli = source(lab, "cli")
    _, results = run(act(cli, ActionKind.RESERVE_MAINT, ("gpu[03-04]",),
                            {"name": RESV, "start": "now+60minutes", "duration": "120"}))
    try:
        assert all(r.ok for r in results), [r.message for r in results]
        assert all(f"read back: {RESV} on gpu[03-04], " in r.message and "MAINT" in r.message for r in results)
        src = source(lab, backend)
        got = run(src.collect())
        assert got.reservations is not None, src.warnings
        resv = next(r for r in got.reservations if r.name == RESV)
        assert resv.nodes == "gpu[03-04]" and resv.maintenance and "IGNORE_JOBS" in resv.flags
        assert resv.users == ("root",) and resv.start_time is not None and resv.end_time is not None
        assert abs(resv.start_time - (time.time() + 3600)) < 300 and resv.end_time - resv.start_time == 7200
        assert not resv.active(time.time())
        store = Store("lab")
        store.apply(got)
        idx = findings_for(store.snapshot(), Thresholds())
        assert {f.code for f in idx.node("gpu03")} >= {"resv_unusable", "resv_maint_soon", "slurm_drain"}
        assert "resv_maint_soon" in {f.code for f in idx.node("gpu04")}
        run(src.close())
    finally:
        _, deleted = run(act(cli, ActionKind.DELETE_RESERVATION, (RESV,)))
        assert all(r.ok for r in deleted), [r.message for r in deleted]
    after = run(cli.collect())  # the delete makes the next refresh read them again
    assert after.reservations is not None and RESV not in {r.name for r in after.reservations}
    run(cli.close())


def test_overlapping_maintenance_and_a_duplicate_name(lab: SlurmLab) -> None:
    """Slurm lets a MAINT reservation overlap another (seen on 22.05): the plan says so, the second is
    made and read back; a name that exists is refused by the plan (Slurm: Duplicate reservation name)."""
    cli = source(lab, "cli")
    params = {"name": RESV, "start": "now+2hours", "duration": "60"}
    _, first = run(act(cli, ActionKind.RESERVE_MAINT, ("gpu04",), params))
    made = [RESV]
    try:
        assert all(r.ok for r in first)
        store = Store("lab")
        store.apply(run(cli.collect()))
        same = cli.plan(ActionKind.RESERVE_MAINT, ("gpu04",), params, store.snapshot())
        assert not same.runnable and any("exists already" in e for e in same.errors)
        again = cli.plan(ActionKind.RESERVE_MAINT, ("gpu04",), {**params, "name": RESV + "2"}, store.snapshot())
        assert any(f"also in reservation {RESV}" in w for w in again.warnings)
        results = run(cli.execute(again))
        made.append(RESV + "2")
        assert all(r.ok and "read back: maint_hpctui2 on gpu04" in r.message for r in results)
    finally:
        for name in made:
            run(act(cli, ActionKind.DELETE_RESERVATION, (name,)))
    run(cli.close())


@pytest.mark.slurm2511(backends=("cli", "rest-unix", "pyslurm"))
@pytest.mark.parametrize("backend", ["cli", "rest-unix", "rest-jwt", "pyslurm"])
def test_sdiag_statistics_name_who_sends_rpcs(lab: SlurmLab, backend: str) -> None:
    src = source(lab, backend)
    before = run(src.collect()).controller
    assert before is not None and before.stats is not None, src.warnings
    root0 = next((r.count for r in before.stats.rpc_by_user if r.name == "root"), 0)
    for _ in range(25):
        lab.run("squeue", "-h")
    ctl = run(src.collect()).controller
    assert ctl is not None and ctl.stats is not None
    stats = ctl.stats
    root = next(r for r in stats.rpc_by_user if r.name == "root")
    assert root.count >= root0 + 25 and root.id == 0 and root.ave_time_us is not None
    assert {r.name for r in stats.rpc_by_type} >= {"REQUEST_JOB_INFO", "REQUEST_PARTITION_INFO"}
    assert stats.server_thread_count and stats.server_thread_count >= 1
    assert stats.time is not None and stats.since is not None and stats.time >= stats.since
    assert stats.schedule_cycles is not None and stats.bf_cycles is not None
    run(src.close())


def test_a_user_hammering_slurmctld_is_found(lab: SlurmLab) -> None:
    """alice runs squeue in a loop (unprivileged, like a watch): the by-user table and the finding name her."""
    pw = pwd.getpwnam("alice")
    for _ in range(40):
        subprocess.run(lab.as_user("alice", pw.pw_gid, [b"squeue", b"-h"]), env=lab.env, capture_output=True,
                       timeout=30, check=True)
    src = source(lab, "cli")
    got = run(src.collect())
    assert got.controller is not None and got.controller.stats is not None
    alice = next(r for r in got.controller.stats.rpc_by_user if r.name == "alice")
    assert alice.count >= 40 and alice.id == lab.uid_of("alice")
    store = Store("lab")
    store.apply(got)
    idx = findings_for(store.snapshot(), Thresholds(rpc_user_rate_warn=0.01))
    assert any(f.code == "ctld_rpc_user" and "alice" in f.message for f in idx.cluster)
    run(src.close())


@pytest.mark.slurm2511(backends=("cli",))
@pytest.mark.parametrize("backend", ["cli"])
def test_pending_job_priority_factors_and_expected_start(lab: SlurmLab, backend: str) -> None:
    small = lab.sbatch("-p", "gpu", "-w", "gpu01", "--gres=gpu:h100:2", "-J", "runner")
    lab.wait_state(small, "RUNNING")
    big = lab.sbatch("-p", "gpu", "-N", "2", "--gres=gpu:h100:8", "-J", "needs-16")
    src = source(lab, backend)
    res = run(poll(src, lambda r: job(r, big).reason not in (None, "None")))
    assert job(res, big).state == "PENDING"
    deadline = time.monotonic() + 40  # the backfill pass sets the estimate
    while True:
        outlook = run(src.job_outlook(big))
        if outlook.start is not None and outlook.start.start_time is not None:
            break
        assert time.monotonic() < deadline, outlook
        time.sleep(0.5)
    assert outlook.start.sched_nodes and outlook.start.reason == job(res, big).reason
    if lab.accounting:  # priority/multifactor: the bed weighs QoS 10000, fair-share 1000, age 100
        assert outlook.factors is not None and outlook.factors.priority == job(res, big).priority
        assert outlook.factors.qos == 10000 and outlook.factors.job_id == big
    else:  # priority/basic: sprio has nothing to say, and says why
        assert outlook.detail
    with pytest.raises(ValueError):
        run(src.job_outlook("1;id"))
    run(src.close())
