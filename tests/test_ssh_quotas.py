"""Issue #27 §2 quotas: who is asked where (plan_sweep), the remote script run for real by ``sh`` against
the node shims (real ``lfs quota`` / ``beegfs-ctl --getquota`` recordings), its parse, the background
sweeper, and the finding of a user over quota with running jobs."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hpctui.findings.health import Thresholds
from hpctui.findings.index import findings_for
from hpctui.model import ClusterSnapshot, Severity, SlurmJob
from hpctui.model.mount import Mount, MountState, QuotaUsage
from hpctui.model.output import NodeOutput
from hpctui.model.probe import ProbeStatus
from hpctui.sources.ssh.quotas import HostAsk, QuotaSweeper, parse_sweep, plan_sweep, sweep_script
from hpctui.sources.ssh.settings import QuotaSettings

sys.path.insert(0, str(Path(__file__).resolve().parent / "testbed" / "nodeshims"))
import nodeshims

HOSTILE = "evil;touch pwned"


def _mounts(node: str) -> tuple[Mount, ...]:
    return (Mount(node=node, target="/lustre/scratch", fstype="lustre", state=MountState.OK),
            Mount(node=node, target="/mnt/beegfs", fstype="beegfs", state=MountState.OK),
            Mount(node=node, target="/home", fstype="nfs4", state=MountState.OK))


def _snapshot(*, unreachable: tuple[str, ...] = ()) -> ClusterSnapshot:
    jobs = (SlurmJob(job_id=1, user="alice", state="RUNNING", nodes="gpu[01-02]"),
            SlurmJob(job_id=2, user="alice", state="RUNNING", nodes="gpu02"),
            SlurmJob(job_id=3, user="bob", state="RUNNING", nodes="gpu03"),
            SlurmJob(job_id=4, user="carol", state="PENDING"),
            SlurmJob(job_id=5, user=HOSTILE, state="RUNNING", nodes="gpu01"),
            SlurmJob(job_id=6, user="dave", state="RUNNING", nodes="cpu01"))  # no parallel file system there
    mounts = {n: _mounts(n) for n in ("gpu01", "gpu02", "gpu03")}
    mounts["cpu01"] = (Mount(node="cpu01", target="/home", fstype="nfs4"),)
    probes = {n: ProbeStatus(node=n, reachable=n not in unreachable) for n in (*mounts, "cpu01")}
    return ClusterSnapshot(cluster="c", time=0.0, jobs=jobs, mounts=mounts, probes=probes)


def test_plan_asks_each_running_owner_once_on_a_node_of_theirs() -> None:
    plan = plan_sweep(_snapshot(), QuotaSettings())
    pfs = (("lustre", "/lustre/scratch"), ("beegfs", "/mnt/beegfs"))
    assert plan.asks == [HostAsk(host="gpu01", users=("alice",), filesystems=pfs),
                         HostAsk(host="gpu03", users=("bob",), filesystems=pfs)]
    assert len(plan.warnings) == 1 and "1 user name(s) not asked" in plan.warnings[0]
    # gpu01 unreachable: alice is asked on her other node
    moved = plan_sweep(_snapshot(unreachable=("gpu01",)), QuotaSettings())
    assert [(a.host, a.users) for a in moved.asks] == [("gpu02", ("alice",)), ("gpu03", ("bob",))]


def test_plan_limits_users_filesystems_and_a_login_host() -> None:
    few = plan_sweep(_snapshot(), QuotaSettings(max_users=1, filesystems=["/lustre/scratch"]))
    assert [(a.host, a.users, a.filesystems) for a in few.asks] == [
        ("gpu01", ("alice",), (("lustre", "/lustre/scratch"),))]  # alice: most running jobs
    assert any("2 of 3 users not asked (max_users = 1" in w for w in few.warnings)
    login = plan_sweep(_snapshot(), QuotaSettings(host="login01", filesystems=["/lustre/home"]))
    assert [(a.host, a.users) for a in login.asks] == [("login01", ("alice", "bob", "dave"))]
    assert login.asks[0].filesystems == (("lustre", "/lustre/home"),)  # only the ones named: asked as Lustre
    seen = plan_sweep(_snapshot(), QuotaSettings(host="login01"))  # every one the probes see anywhere
    assert seen.asks[0].filesystems == (("lustre", "/lustre/scratch"), ("beegfs", "/mnt/beegfs"))
    with pytest.raises(ValueError, match="absolute"):
        QuotaSettings(filesystems=["scratch"])


def _run_script(ask: HostAsk, nonce: str, shims: Path, node: str) -> NodeOutput:
    """The script as the node's ``sh`` runs it, with the shims first on PATH (what the probe preamble does)."""
    env = dict(os.environ, PATH=f"{nodeshims.BIN}:{os.environ['PATH']}", HPCTUI_SHIM_ROOT=str(shims),
               HPCTUI_SHIM_NODE=node)
    done = subprocess.run(["sh", "-c", sweep_script(ask, nonce)], capture_output=True, text=True, env=env,
                          timeout=30, cwd=shims, check=False)
    return NodeOutput(label=node, output=done.stdout + done.stderr, rc=done.returncode)


def test_script_and_parse_against_the_shims(tmp_path: Path) -> None:
    shims = nodeshims.build_shim_root(tmp_path / "shims", {"gpu01": nodeshims.NodeSpec(variant="cpu")})
    nodeshims.set_quota_over(shims, "gpu01", "alice")
    odd = "/lustre/it's $(touch pwned)"  # a mount point as a node reported it: one literal word
    ask = HostAsk(host="gpu01", users=("alice", "bob"),
                  filesystems=(("lustre", "/lustre/scratch"), ("lustre", odd), ("beegfs", "/mnt/beegfs")))
    out = _run_script(ask, "n0nce", shims, "gpu01")
    assert not (shims / "pwned").exists()
    quotas, warnings = parse_sweep(ask, out, "n0nce")
    assert warnings == [] and quotas is not None
    by = {(q.user, q.filesystem): q for q in quotas}
    assert sorted(by) == [("alice", "/lustre/it's $(touch pwned)"), ("alice", "/lustre/scratch"),
                          ("alice", "/mnt/beegfs (pool Default)"), ("bob", "/lustre/it's $(touch pwned)"),
                          ("bob", "/lustre/scratch"), ("bob", "/mnt/beegfs (pool Default)")]
    over = by[("alice", "/lustre/scratch")]
    assert over.over and over.used_bytes == 1000000004 * 1024 and over.hard_bytes == 1000000000 * 1024
    fine = by[("bob", "/lustre/scratch")]  # the NIG recording as printed: 98 % of the hard limit, not over
    assert not fine.over and fine.used_pct == pytest.approx(98.2, abs=0.1)
    bee = by[("bob", "/mnt/beegfs (pool Default)")]
    assert bee.used_bytes == pytest.approx(76.61 * 1024**3) and bee.hard_bytes == pytest.approx(5 * 1024**4)


def test_parse_failures_cost_their_pair_and_forged_markers_are_text() -> None:
    ask = HostAsk(host="gpu01", users=("alice", "bob"), filesystems=(("lustre", "/lustre/scratch"),))
    good = (Path(__file__).parent / "fixtures" / "lustre" / "lfs-quota_u_lustre7_kbytes.txt").read_text()
    text = ("@@n0nce q 0\n"
            "lfs quota: cannot resolve path '/lustre/scratch': No such file or directory (2)\n"
            "@@n0nce rc 2\n"
            "@@n0nce q 1\n"
            "@@other q 0\n"  # a marker with another nonce (printed by a tool): plain text of this section
            + good.replace("your_account", "bob") + "@@n0nce rc 0\n")
    quotas, warnings = parse_sweep(ask, NodeOutput(label="gpu01", output=text, rc=0), "n0nce")
    assert [(q.user, q.filesystem) for q in quotas or ()] == [("bob", "/lustre/scratch")]
    assert len(warnings) == 1 and "alice on /lustre/scratch (exit 2: lfs quota: cannot resolve path" in warnings[0]
    gone, said = parse_sweep(ask, NodeOutput(label="gpu01", error="connection refused"), "n0nce")
    assert gone is None and said == ["quotas on gpu01: connection refused"]
    cut, said = parse_sweep(ask, NodeOutput(label="gpu01", output=text.split("@@n0nce q 1")[0],
                                            error="timed out after 60 s"), "n0nce")
    assert cut == [] and any("incomplete (timed out" in w for w in said)


def test_sweeper_runs_in_the_background_and_keeps_an_unreachable_nodes_answer() -> None:
    now = [1000.0]
    calls: list[list[str]] = []
    replies: dict[str, NodeOutput] = {}
    sample = (Path(__file__).parent / "fixtures" / "lustre" / "lfs-quota_u_lustre7_kbytes.txt").read_text()

    async def run(asks: list[HostAsk], nonce: str) -> list[NodeOutput]:
        calls.append([a.host for a in asks])
        out = []
        for a in asks:
            if a.host in replies:
                out.append(replies[a.host])
                continue
            text = "".join(f"@@{nonce} q {i}\n{sample.replace('your_account', u).replace('/lustre7', m)}"
                           f"@@{nonce} rc 0\n"
                           for i, (u, (_, m)) in enumerate((u, f) for u in a.users for f in a.filesystems))
            out.append(NodeOutput(label=a.host, output=text, rc=0))
        return out

    async def go() -> None:
        sweeper = QuotaSweeper(QuotaSettings(interval_s=300, filesystems=["/lustre/scratch"]), run,
                               clock=lambda: now[0])
        assert sweeper.result() is None
        sweeper.maybe_start(_snapshot())
        assert sweeper.task is not None
        await sweeper.task
        first = sweeper.result()
        assert first is sweeper.result()  # one tuple until the next sweep
        assert sorted({q.user for q in first or ()}) == ["alice", "bob"] and len(first or ()) == 2
        sweeper.maybe_start(_snapshot())  # not due yet
        assert calls == [["gpu01", "gpu03"]]
        now[0] += 301
        replies["gpu03"] = NodeOutput(label="gpu03", error="connection refused")
        sweeper.maybe_start(_snapshot())
        assert sweeper.task is not None
        await sweeper.task
        again = sweeper.result()
        assert again is not first and sorted(q.user for q in again or ()) == ["alice", "bob"]
        assert sweeper.warnings[-1] == "quotas on gpu03: connection refused"
        await sweeper.close()
        bare = ClusterSnapshot(cluster="c", time=0.0, jobs=_snapshot().jobs,
                               mounts={"gpu01": (Mount(node="gpu01", target="/home", fstype="nfs4"),)})
        nfs_only = QuotaSweeper(QuotaSettings(interval_s=300), run)
        nfs_only.maybe_start(bare)  # no parallel file system: nothing asked, the part is not reported
        assert nfs_only.task is None and nfs_only.result() is None
        off = QuotaSweeper(QuotaSettings(interval_s=0), run)
        off.maybe_start(_snapshot())
        assert off.task is None and off.result() is None

    asyncio.run(go())


def test_a_user_over_quota_with_running_jobs_is_one_finding_group() -> None:
    snap = _snapshot()
    over = QuotaUsage(user="alice", filesystem="/lustre/scratch", used_bytes=1.1e12, hard_bytes=1e12, over=True)
    idle = QuotaUsage(user="carol", filesystem="/lustre/scratch", used_bytes=2e12, hard_bytes=1e12, over=True)
    fine = QuotaUsage(user="bob", filesystem="/lustre/scratch", used_bytes=1e9, hard_bytes=1e12)
    import msgspec

    index = findings_for(msgspec.structs.replace(snap, quotas=(over, idle, fine)), Thresholds())
    found = index.node("user/alice")
    assert [f.code for f in found] == ["quota_over"] and found[0].severity is Severity.ERROR
    assert found[0].message == "user alice over quota on /lustre/scratch at 110% of its limit with 2 running job(s)"
    assert not index.node("user/carol") and not index.node("user/bob")  # no running jobs / under quota


def test_job_detail_lists_the_owners_quotas_worst_marked() -> None:
    from hpctui.sim.quotas import demo_quotas
    from hpctui.ui.screens.job_detail import quota_lines

    quotas = demo_quotas(["alice", "bob"], "alice", seed=0)
    text = quota_lines("alice", quotas)
    lines = text.plain.splitlines()
    assert lines[0] == "file system quotas of alice"
    lustre = next(line for line in lines if "/lustre/scratch" in line)
    assert "46.3 TiB of 45.0 TiB soft / 50.0 TiB hard (103%)" in lustre and "OVER QUOTA" in lustre
    assert "7,412,094 files of 10,000,000, grace 2d13h21m5s" in text.plain
    assert any(span.style == "$error" for span in text.spans)
    assert "bob" not in text.plain and len(lines) == 5  # the title, Lustre (+ files, grace), BeeGFS (+ files)
    assert quota_lines("zed", quotas).plain.endswith(": none known (no Lustre/BeeGFS quota for this user in the "
                                                     "last sweep)")


def test_job_detail_marks_the_quota_of_the_working_directory() -> None:
    from hpctui.sim.quotas import demo_quotas
    from hpctui.ui.screens.job_detail import quota_lines, work_filesystem

    quotas = demo_quotas(["alice"], "alice", seed=0)
    mounts = [q.filesystem for q in quotas]
    assert work_filesystem("/lustre/scratch/alice/run1", [*mounts, "/lustre"]) == "/lustre/scratch", "the longest"
    assert work_filesystem("/lustre/scratchy/x", mounts) is None and work_filesystem(None, mounts) is None
    lines = quota_lines("alice", quotas, "/lustre/scratch/alice/run1").plain.splitlines()
    assert lines[1] == "  working directory /lustre/scratch/alice/run1"
    assert "/lustre/scratch" in lines[2] and lines[2].endswith("← the working directory's"), lines
    home = quota_lines("alice", quotas, "/home/alice").plain.splitlines()
    assert home[1] == "  working directory /home/alice: no quota known for its file system"
    assert not any("←" in line for line in home)
