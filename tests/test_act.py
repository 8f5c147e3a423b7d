"""`hpctui act`: the headless entry point to the executor, against the demo cluster.

In-process tests drive :func:`hpctui.cli.act.run_act` with a frozen clock; subprocess tests run the
installed command (``python -m hpctui``) the way an operator or a script does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hpctui.actions.audit import AuditLog
from hpctui.cli.act import parse_params
from hpctui.cli.act import run_act as act
from hpctui.core.runtime import Runtime, demo_runtime
from hpctui.model.action import ActionKind, split_targets

T0 = 1_796_000_000.0


def runtime(tmp_path: Path, read_only: bool = False) -> Runtime:
    return demo_runtime(size=8, seed=1, clock=lambda: T0, start_time=T0, read_only=read_only,
                        audit_path=tmp_path / "audit.jsonl")


async def drive(rt: Runtime, kind: ActionKind, targets: str, params: dict[str, str] | None = None, *,
                dry_run: bool = False, yes: bool = False, as_json: bool = False, interactive: bool = False,
                answer: str = "") -> tuple[int, str, str, list[str]]:
    out: list[str] = []
    err: list[str] = []
    prompts: list[str] = []

    def prompt(text: str) -> str:
        prompts.append(text)
        return answer

    try:
        rc = await act(rt, kind, split_targets(kind, targets), dict(params or {}), dry_run=dry_run, yes=yes,
                       as_json=as_json, interactive=interactive, prompt=prompt, out=out.append, err=err.append)
    finally:
        await rt.stop()
    return rc, "".join(out), "".join(err), prompts


def drained(rt: Runtime, node: str) -> bool:
    return "DRAIN" in rt.store.snapshot().nodes[node].slurm.flags  # type: ignore[union-attr]


def test_split_targets() -> None:
    assert split_targets(ActionKind.DRAIN_NODES, "gpu[0001-0004,0007],cpu1 gpu9") == [
        "gpu[0001-0004,0007],cpu1", "gpu9"]
    assert split_targets(ActionKind.CANCEL_JOBS, "12,13_[1,3-4] 14") == ["12", "13_[1,3-4]", "14"]
    assert parse_params(["signal=TERM", "a=b=c"]) == {"signal": "TERM", "a": "b=c"}
    with pytest.raises(ValueError):
        parse_params(["novalue"])


async def test_dry_run_prints_the_plan_and_touches_nothing(tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    rc, out, _, _ = await drive(rt, ActionKind.DRAIN_NODES, "gpu[0003-0004]", {"reason": "xid 79"}, dry_run=True)
    assert rc == 0
    assert 'scontrol update NodeName=gpu[0003-0004] State=DRAIN Reason="xid 79"' in out
    assert "affects:" in out and "job " in out  # what it hits
    assert "type 'drain-2'" in out
    assert not drained(rt, "gpu0003")
    assert AuditLog(tmp_path / "audit.jsonl").read() == []


async def test_without_a_terminal_and_without_yes_it_refuses(tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    rc, _, err, prompts = await drive(rt, ActionKind.DRAIN_NODES, "gpu0003", {"reason": "x"})
    assert rc == 2 and "pass --yes" in err and not prompts
    await rt.collect_once()
    assert not drained(rt, "gpu0003")
    [record] = AuditLog(tmp_path / "audit.jsonl").read()
    assert record["refused"] == "not confirmed" and record["targets"] == ["gpu0003"]


async def test_terminal_asks_the_typed_word_for_bulk_destructive(tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    rc, out, _, prompts = await drive(rt, ActionKind.DRAIN_NODES, "gpu[0003-0004]", {"reason": "x"},
                                      interactive=True, answer="y")
    assert rc == 2 and "drain-2" in prompts[0] and "refused: not confirmed (type 'drain-2')" in out
    rt = runtime(tmp_path)
    rc, out, _, _ = await drive(rt, ActionKind.DRAIN_NODES, "gpu[0003-0004]", {"reason": "x"},
                                interactive=True, answer="drain-2")
    assert rc == 0 and "2/2 target(s) ok" in out
    await rt.collect_once()
    assert drained(rt, "gpu0003") and drained(rt, "gpu0004")
    records = AuditLog(tmp_path / "audit.jsonl").read()
    assert [r["refused"] for r in records] == ["not confirmed (type 'drain-2')", None]
    assert records[1]["commands"] == ['scontrol update NodeName=gpu[0003-0004] State=DRAIN Reason="x"',
                                      "kubectl cordon gpu0003 gpu0004"]  # drain_in = "both" (the default)


async def test_terminal_single_target_asks_y_n(tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    rc, _, _, prompts = await drive(rt, ActionKind.CORDON_NODES, "gpu0003", interactive=True, answer="y")
    assert rc == 0 and "[y/N]" in prompts[0]
    rt2 = runtime(tmp_path)
    rc, _, _, _ = await drive(rt2, ActionKind.CORDON_NODES, "gpu0003", interactive=True, answer="")
    assert rc == 2


async def test_yes_runs_and_json_reports_per_target(tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    rc, out, _, _ = await drive(rt, ActionKind.DRAIN_NODES, "gpu[0003-0004]", {"reason": "ecc"}, yes=True,
                                as_json=True)
    doc = json.loads(out)
    assert rc == 0 and doc["ok"] is True and doc["refused"] is None
    assert [r["target"] for r in doc["results"]] == ["gpu0003", "gpu0004"]
    assert doc["plan"]["commands"] and doc["confirm_word"] == "drain-2"


async def test_some_failed_exits_1(tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    # resuming a node that is not drained: Slurm (and the demo) answers "Invalid node state specified"
    # (override: gpu0004's critical GPU finding would hold it at the health-check gate, a refusal, exit 2)
    rc, out, _, _ = await drive(rt, ActionKind.RESUME_NODES, "gpu0004", {"override": "test: past the gate"}, yes=True)
    assert rc == 1 and "FAIL gpu0004: Invalid node state specified" in out


async def test_invalid_targets_are_refused_with_exit_2(tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    rc, out, _, _ = await drive(rt, ActionKind.DRAIN_NODES, "nosuch[1-2]", {"reason": "x"}, yes=True)
    assert rc == 2 and "unknown node 'nosuch1'" in out
    rt = runtime(tmp_path)
    rc, out, _, _ = await drive(rt, ActionKind.CANCEL_JOBS, "99999", yes=True)
    assert rc == 2 and "99999" in out


@pytest.mark.parametrize("kind", list(ActionKind))
async def test_read_only_refuses_every_action_kind(tmp_path: Path, kind: ActionKind) -> None:
    rt = runtime(tmp_path, read_only=True)
    await rt.collect_once()
    before = rt.store.snapshot()
    target = "1017" if kind in {ActionKind.REQUEUE_JOBS, ActionKind.REQUEUE_HOLD_JOBS, ActionKind.HOLD_JOBS,
                                ActionKind.RELEASE_JOBS, ActionKind.CANCEL_JOBS} else "gpu0003"
    rc, out, _, _ = await drive(rt, kind, target, {"reason": "r"}, yes=True)
    assert rc == 2 and "read-only mode" in out
    [record] = AuditLog(tmp_path / "audit.jsonl").read()
    assert record["refused"] == "read-only mode" and record["results"] == []
    await rt.collect_once()
    after = rt.store.snapshot()
    assert after.nodes["gpu0003"] == before.nodes["gpu0003"]
    assert {j.display_id: j.state for j in after.jobs} == {j.display_id: j.state for j in before.jobs}
    # a dry run in read-only mode says so and is not a valid plan either
    rc, out, _, _ = await drive(runtime(tmp_path, read_only=True), kind, target, {"reason": "r"}, dry_run=True)
    assert rc == 2 and "read-only mode: actions are disabled" in out


# -- the installed command ------------------------------------------------------------------


def hpctui(tmp_path: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_STATE_HOME": str(tmp_path / "state")}
    return subprocess.run([sys.executable, "-m", "hpctui", "act", *args], capture_output=True, text=True,
                          timeout=120, env=env, input=stdin)


def test_cli_dry_run_refusal_yes_and_read_only(tmp_path: Path) -> None:
    # (gpu0001 is the demo's drained node: re-draining it needs reason_mode, see test_redrain_*)
    dry = hpctui(tmp_path, "drain", "--targets", "gpu[0002-0004]", "--reason", "xid 79", "--dry-run", "--demo",
                 "--demo-size", "8")
    assert dry.returncode == 0, dry.stderr
    assert "State=DRAIN" in dry.stdout and "drain-3" in dry.stdout
    no_tty = hpctui(tmp_path, "drain", "--targets", "gpu0002", "--reason", "x", "--demo", "--demo-size", "8",
                    stdin="")
    assert no_tty.returncode == 2 and "pass --yes" in no_tty.stderr
    yes = hpctui(tmp_path, "drain", "--targets", "gpu[0002-0004]", "--reason", "x", "--demo", "--demo-size", "8",
                 "--yes", "--json")
    assert yes.returncode == 0, yes.stderr
    assert json.loads(yes.stdout)["ok"] is True
    ro = hpctui(tmp_path, "cancel", "--targets", "1003", "--demo", "--demo-size", "8", "--yes", "--read-only")
    assert ro.returncode == 2 and "refused: read-only mode" in ro.stdout
    lines = (tmp_path / "state" / "hpctui" / "audit.jsonl").read_text().splitlines()
    audit = [r for r in map(json.loads, lines) if r.get("phase") == "outcome"]  # (intents and steps come first)
    assert [r["refused"] for r in audit] == ["not confirmed", None, "read-only mode"]
    assert sum(json.loads(line).get("phase") == "intent" for line in lines) == 1  # only the run that ran


def test_cli_usage_errors_are_one_line(tmp_path: Path) -> None:
    for args in (["explode", "--targets", "x", "--demo"], ["drain", "--demo"],
                 ["drain", "--targets", "x", "--param", "novalue", "--demo"]):
        proc = hpctui(tmp_path, *args)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "Traceback" not in proc.stderr


def test_cli_read_only_from_config(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("read_only = true\n[clusters.d]\n[[clusters.d.sources]]\nkind = 'demo'\n")
    proc = hpctui(tmp_path, "drain", "--targets", "gpu0001", "--reason", "x", "--config", str(cfg), "--yes")
    assert proc.returncode == 2 and "read-only mode" in proc.stdout, proc


def test_cli_asks_on_a_terminal(tmp_path: Path) -> None:
    """stdin a real pty: the command asks for the typed word, and runs on the right answer only."""
    import pty

    def on_tty(answer: bytes) -> subprocess.CompletedProcess[str]:
        master, slave = pty.openpty()
        try:
            os.write(master, answer)
            env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_STATE_HOME": str(tmp_path / "state")}
            return subprocess.run([sys.executable, "-m", "hpctui", "act", "drain", "--targets", "gpu[0003-0004]",
                                   "--reason", "x", "--demo", "--demo-size", "8"], stdin=slave, capture_output=True,
                                  text=True, timeout=120, env=env)
        finally:
            os.close(master)
            os.close(slave)

    wrong = on_tty(b"y\n")
    assert wrong.returncode == 2 and "Type drain-2" in wrong.stdout and "refused: not confirmed" in wrong.stdout
    right = on_tty(b"drain-2\n")
    assert right.returncode == 0 and "2/2 target(s) ok" in right.stdout, right
