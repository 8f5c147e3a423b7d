"""Maintenance reservations and partition state against the real cluster, read back with scontrol."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from slurm_helpers import act, nodes, poll, run, snapshot, source
from slurmlab import SlurmLab

from hpctui.model.action import ActionKind

pytestmark = [pytest.mark.slurm, pytest.mark.live]


def _show(lab: SlurmLab, *what: str) -> str:
    return lab.run("scontrol", "show", *what, check=False).stdout


def test_maintenance_reservation_create_and_delete(lab: SlurmLab) -> None:
    async def go() -> None:
        src = source(lab, "cli")
        try:
            plan, results = await act(src, ActionKind.RESERVE_MAINT, ("gpu[01-02]",),
                                      {"name": "hpctui_maint", "duration": "60"})
            assert plan.commands[0].startswith("scontrol create reservation ReservationName=hpctui_maint ")
            assert [r.ok for r in results] == [True, True], results
            shown = _show(lab, "reservation", "hpctui_maint")
            assert "Nodes=gpu[01-02]" in shown and "MAINT" in shown and "IGNORE_JOBS" in shown, shown
            # the next read shows the nodes in maintenance (sinfo's "maint" / flag MAINTENANCE)
            r = await poll(src, lambda r: "MAINT" in nodes(r)["gpu01"].display_state)
            assert "MAINT" in nodes(r)["gpu02"].display_state
            # a second reservation with the same name: Slurm's own error, per node
            _, again = await act(src, ActionKind.RESERVE_MAINT, ("gpu01",), {"name": "hpctui_maint", "duration": "60"})
            assert not again[0].ok and again[0].message
            _, deleted = await act(src, ActionKind.DELETE_RESERVATION, ("hpctui_maint",))
            assert deleted[0].ok, deleted
            assert "hpctui_maint" not in _show(lab, "reservation")
            # deleting it again: the fresh reservations read (re-read after every reservation action)
            # no longer lists it, so the plan refuses before Slurm is asked
            _, snap = await snapshot(src)
            missing = src.plan(ActionKind.DELETE_RESERVATION, ("hpctui_maint",), {}, snap)
            assert not missing.runnable and missing.rejected_targets == ("hpctui_maint",)
            assert "unknown reservation 'hpctui_maint'" in missing.errors[0]
        finally:
            lab.run("scontrol", "delete", "ReservationName=hpctui_maint", check=False)

    run(go())


@pytest.mark.parametrize("state", ["DOWN", "DRAIN", "INACTIVE", "UP"])
def test_partition_state(lab: SlurmLab, state: str) -> None:
    async def go() -> None:
        src = source(lab, "cli")
        try:
            plan, results = await act(src, ActionKind.PARTITION_STATE, ("cpu",), {"state": state.lower()})
            assert plan.commands == (f"scontrol update PartitionName=cpu State={state}",)
            assert results[0].ok, results
            assert f"State={state}" in _show(lab, "partition", "cpu")
        finally:
            lab.run("scontrol", "update", "PartitionName=cpu", "State=UP", check=False)

    run(go())


def test_hpctui_act_command_against_the_bed(lab: SlurmLab, tmp_path: Path) -> None:
    """The installed command, configured for the bed: dry run, then a real partition change, audited."""
    cfg = tmp_path / "config.toml"
    cfg.write_text(f"[clusters.lab]\n[[clusters.lab.sources]]\nkind = 'slurm'\nbackend = 'cli'\n"
                   f"slurm_conf = '{lab.slurm_conf}'\n")
    env = {**os.environ, **lab.env, "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path)}

    def hpctui(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "hpctui", "act", *args, "--config", str(cfg)],
                              capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)

    try:
        dry = hpctui("partition_state", "--targets", "cpu", "--param", "state=DOWN", "--dry-run")
        assert dry.returncode == 0, dry
        assert "scontrol update PartitionName=cpu State=DOWN" in dry.stdout
        assert "State=UP" in _show(lab, "partition", "cpu")
        refused = hpctui("partition_state", "--targets", "cpu", "--param", "state=DOWN")
        assert refused.returncode == 2 and "pass --yes" in refused.stderr
        done = hpctui("partition_state", "--targets", "cpu", "--param", "state=DOWN", "--yes", "--json")
        assert done.returncode == 0, done
        assert "State=DOWN" in _show(lab, "partition", "cpu")
        ro = hpctui("partition_state", "--targets", "cpu", "--param", "state=UP", "--yes", "--read-only")
        assert ro.returncode == 2 and "State=DOWN" in _show(lab, "partition", "cpu")
        lines = (tmp_path / "state" / "hpctui" / "audit.jsonl").read_text().splitlines()
        phases = [json.loads(line).get("phase") for line in lines]
        # dry-run writes nothing; the unconfirmed and read-only refusals: an outcome each; the run: intent + outcome
        assert phases.count("outcome") == 3 and phases.count("intent") == 1
    finally:
        lab.run("scontrol", "update", "PartitionName=cpu", "State=UP", check=False)


def test_hpctui_report_against_the_bed(lab: SlurmLab, tmp_path: Path) -> None:
    """A report from a real Slurm read: the drain reason, its author and the running job are the
    controller's; a token planted in the config (and pasted into the reason) never reaches the files."""
    token = "lab-planted-jwt-Zx81"
    cfg = tmp_path / "config.toml"
    cfg.write_text(f"[clusters.lab]\n[[clusters.lab.sources]]\nkind = 'slurm'\nbackend = 'cli'\n"
                   f"slurm_conf = '{lab.slurm_conf}'\njwt = '{token}'\n")
    env = {**os.environ, **lab.env, "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path)}
    jid = lab.sbatch("-p", "gpu", "-w", "gpu02", "--gres=gpu:1", "-J", "victim")
    lab.wait_state(jid, "RUNNING")
    lab.run("scontrol", "update", "NodeName=gpu02", "State=DRAIN", f"Reason=xid 79 <b>{token}</b>")
    out = tmp_path / "rep"
    proc = subprocess.run([sys.executable, "-m", "hpctui", "report", "--nodes", "gpu02", "--since", "1h", "-o",
                           str(out), "--config", str(cfg)], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc
    doc = json.loads((out / "report.json").read_text())
    shown = lab.run("scontrol", "show", "node", "gpu02").stdout
    [node] = doc["nodes"]
    assert node["name"] == "gpu02" and node["reason"] == "xid 79 <b>[redacted]</b>"
    assert node["slurm_state"].startswith("DRAINING") and "DRAIN" in shown
    assert node["reason_user"] and f"[{node['reason_user']}@" in shown  # scontrol: Reason=… [root@time]
    assert [j["id"] for j in doc["jobs"]] == [str(jid)] and doc["jobs"][0]["name"] == "victim"
    assert any(e["source"] == "slurm" and "xid 79" in e["message"] for e in doc["timeline"])
    for name in ("report.json", "report.md", "report.html"):
        text = (out / name).read_text()
        assert token not in text
    assert "&lt;b&gt;[redacted]&lt;/b&gt;" in (out / "report.html").read_text()
