"""SlurmSource.accounting() against fake ``sshare``/``sacctmgr`` scripts (settings.bin_dir).

The scripts print real captures from the test bed (tests/fixtures/slurm) or Slurm's real error
texts, and log their argv, so the error mapping and the exact commands are checked without a
cluster. The live counterpart is tests/slurm/test_live_accounting.py.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from hpctui.core.runtime import Runtime
from hpctui.sources.demo.source import DemoSource
from hpctui.sources.slurm import SlurmSettings
from hpctui.sources.slurm.accounting import ABSENT, AccountingInfo, check_name
from hpctui.sources.slurm.source import SlurmSource

T = TypeVar("T")
FIX = Path(__file__).parent / "fixtures" / "slurm"
SSHARE_HEADER = "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS|GrpTRESMins|TRESRunMins\n"
DBD_DOWN = ("sacctmgr: error: slurm_persist_conn_open_without_init: failed to open persistent connection to "
            "host:127.0.0.1:16819: Connection refused\nsacctmgr: error: Sending PersistInit msg: Connection refused")
CTLD_DOWN = "sshare: error: slurm_load_shares: Unable to contact slurm controller (connect failure)"


def fake_tool(bin_dir: Path, name: str, *, stdout: str = "", stderr: str = "", rc: int = 0, sleep: float = 0,
              assoc_stdout: str | None = None) -> None:
    """An executable ``name`` that logs its argv to bin_dir/calls and prints canned output
    (``assoc_stdout`` instead of ``stdout`` when its argv has ``assoc``: sacctmgr show assoc)."""
    out = bin_dir / f"{name}.out"
    err = bin_dir / f"{name}.err"
    alt = bin_dir / f"{name}.assoc.out"
    out.write_text(stdout)
    err.write_text(stderr)
    alt.write_text(stdout if assoc_stdout is None else assoc_stdout)
    q = shlex.quote
    script = bin_dir / name
    script.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$0 $*" >> {q(str(bin_dir / "calls"))}\n'
        + (f"sleep {sleep}\n" if sleep else "")
        + f'case " $* " in *" assoc "*) cat {q(str(alt))} ;; *) cat {q(str(out))} ;; esac\n'
        + f"cat {q(str(err))} >&2\nexit {rc}\n"
    )
    script.chmod(0o755)


def calls(bin_dir: Path) -> list[str]:
    f = bin_dir / "calls"
    lines = f.read_text().splitlines() if f.exists() else []
    return sorted(ln.split(" ", 1)[1] if " " in ln else "" for ln in lines)


def src(bin_dir: Path, timeout_s: float = 5.0) -> SlurmSource:
    return SlurmSource(SlurmSettings(backend="cli", bin_dir=str(bin_dir), timeout_s=timeout_s))


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


@pytest.fixture()
def bed(tmp_path: Path) -> Path:
    """Fake tools answering like the test bed with accounting."""
    fake_tool(tmp_path, "sshare", stdout=(FIX / "cli_sshare_Pl_user_alice.txt").read_text())
    fake_tool(tmp_path, "sacctmgr", stdout=(FIX / "cli_sacctmgr_qos_limits.txt").read_text(),
              assoc_stdout=(FIX / "cli_sacctmgr_assoc_alice.txt").read_text())
    return tmp_path


def test_with_accounting_rows_qos_and_exact_argv(bed: Path) -> None:
    info = run(src(bed).accounting(user="alice"))
    assert info.available and info.detail is None and info.user == "alice" and info.account is None
    assert [(r.account, r.user, r.raw_shares) for r in info.fairshare if r.user] == [("ml", "alice", 30), ("physics", "alice", 30)]
    g = info.qos_named("gpu-limited")
    assert g is not None and g.max_gpus_per_user == 4 and g.max_jobs_per_user == 2
    assert calls(bed) == sorted([
        "-P -l -a -u alice",
        "-P show qos format=Name,Priority,MaxWall,MaxJobsPU,MaxSubmitPU,MaxTRESPU,MaxTRES,GrpTRES,MaxJobsPA",
        "-P show assoc where user=alice format=Cluster,Account,User,Partition,Share,QOS,DefaultQOS,"
        "MaxJobs,MaxSubmit,MaxTRES,GrpTRES,GrpJobs,MaxWall",
    ])
    assert len(info.commands) == 3 and info.commands[0] == "sshare -P -l -a -u alice"
    assert [(a.account, a.max_jobs) for a in info.associations] == [("physics", 10), ("ml", 10)]


def test_assoc_output_unreadable_is_reported(bed: Path) -> None:
    fake_tool(bed, "sacctmgr", stdout=(FIX / "cli_sacctmgr_qos_limits.txt").read_text())  # QoS table for assoc too
    info = run(src(bed).accounting(user="alice"))
    assert info.available and info.qos and info.associations == []
    assert info.detail is not None and info.detail.startswith("sacctmgr assoc output unreadable")


def test_account_only_and_no_filter(bed: Path) -> None:
    fake_tool(bed, "sshare", stdout=(FIX / "cli_sshare_Pl.txt").read_text())
    info = run(src(bed).accounting(account="physics"))
    assert info.available and info.detail is None
    assert "-P -l -a -A physics" in calls(bed)
    assert any(c.startswith("-P show assoc where account=physics ") for c in calls(bed))
    (bed / "calls").unlink()
    info = run(src(bed).accounting())
    assert info.available and len(info.fairshare) == 9 and info.associations == []
    assert len(calls(bed)) == 2  # no association query without a user/account


def test_unknown_user_is_available_but_says_so(bed: Path) -> None:
    fake_tool(bed, "sshare", stdout=SSHARE_HEADER + "root|||0.000000|7||1.000000||||cpu=0\n")
    info = run(src(bed).accounting(user="nosuch"))
    assert info.available and info.detail is not None and "no fair-share row for user nosuch" in info.detail


def test_accounting_absent(bed: Path) -> None:
    """AccountingStorageType=none: sshare prints only its header, sacctmgr refuses (real texts)."""
    fake_tool(bed, "sshare", stdout=SSHARE_HEADER)
    fake_tool(bed, "sacctmgr", stderr=(FIX / "cli_sacctmgr_no_accounting.txt").read_text(), rc=1)
    info = run(src(bed).accounting(user="alice"))
    assert not info.available and info.detail == ABSENT and info.fairshare == [] and info.qos == []


def test_slurmdbd_down_keeps_fairshare(bed: Path) -> None:
    fake_tool(bed, "sacctmgr", stderr=DBD_DOWN, rc=1)
    info = run(src(bed).accounting(user="alice"))
    assert info.available and info.fairshare and info.qos == []
    assert info.detail is not None and info.detail.startswith("slurmdbd unreachable (sacctmgr show qos)")
    assert info.detail.count("slurmdbd unreachable") == 1  # the identical assoc failure is not repeated


def test_everything_down_or_missing(bed: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    fake_tool(bed, "sshare", stderr=CTLD_DOWN, rc=1)
    fake_tool(bed, "sacctmgr", stderr=DBD_DOWN, rc=1)
    info = run(src(bed).accounting(account="ml"))
    assert not info.available and info.detail is not None
    assert "slurmctld unreachable (sshare)" in info.detail and "slurmdbd unreachable" in info.detail
    empty = tmp_path_factory.mktemp("nobin")  # no tools at all (PATH lookup fails for both)
    s = SlurmSource(SlurmSettings(backend="cli", bin_dir=str(empty)))
    s.acct_runner.env["PATH"] = str(empty)
    info = run(s.accounting())
    assert not info.available and info.detail is not None and "command not found" in info.detail


def test_timeout_and_garbage(bed: Path) -> None:
    fake_tool(bed, "sacctmgr", stdout="", sleep=5)
    info = run(src(bed, timeout_s=0.5).accounting(user="alice"))
    assert info.available and info.detail is not None and "timed out after 0.5s" in info.detail
    assert info.duration_s < 4
    fake_tool(bed, "sacctmgr", stdout=(FIX / "cli_sacctmgr_qos_limits.txt").read_text(),
              assoc_stdout=(FIX / "cli_sacctmgr_assoc_alice.txt").read_text())
    fake_tool(bed, "sshare", stdout="Account|User\n|alice\n")
    info = run(src(bed).accounting(user="alice"))
    assert info.available and info.detail is not None and "sshare output unreadable" in info.detail


@pytest.mark.parametrize("bad", ["-alice", "alice bob", "alice,bob", "a;rm -rf /", "$(id)", "ali\nce", "", "x" * 65,
                                 "user=root", "al*", "../etc"])
def test_invalid_names_rejected_before_running_anything(bed: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="invalid user name"):
        run(src(bed).accounting(user=bad))
    with pytest.raises(ValueError, match="invalid account name"):
        run(src(bed).accounting(account=bad))
    assert calls(bed) == []


@pytest.mark.parametrize("good", ["alice", "bob_2", "first.last", "svc-gpu", "user@example.org", "ML", "x" * 64])
def test_valid_names(good: str) -> None:
    assert check_name(good, "user") == good


def test_rest_backend_note(bed: Path) -> None:
    s = SlurmSource(SlurmSettings(backend="rest", rest_url="unix:///nonexistent.sock", bin_dir=str(bed)))
    s.backend = s.rest  # as after a refresh through slurmrestd
    info = run(s.accounting(user="alice"))
    assert info.available and info.notes and "CLI" in info.notes[0] and "rest" in info.notes[0]


def test_runtime_finds_the_slurm_source(bed: Path, tmp_path: Path) -> None:
    demo = DemoSource(size=4)
    rt = Runtime("c", [src(bed), demo], audit_path=tmp_path / "a.jsonl")
    info = run(rt.accounting("alice", None))
    assert isinstance(info, AccountingInfo) and info.available and info.user == "alice"
    assert "demo cluster: simulated fair-share" not in info.notes, "the first source that can answer does"
    assert run(Runtime("d", [], audit_path=tmp_path / "b.jsonl").accounting("alice", None)) is None


def test_accounting_calls_do_not_count_as_refresh_calls(bed: Path) -> None:
    s = src(bed)
    run(s.accounting(user="alice"))
    assert s.runner.calls == [] and len(s.acct_runner.calls) == 3
