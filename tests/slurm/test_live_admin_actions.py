"""Maintenance reservations and partition state against the real cluster, read back with scontrol."""

from __future__ import annotations

import pytest
from slurm_helpers import act, nodes, poll, run, source
from slurmlab import SlurmLab

from hpctui.actions.base import ActionKind

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
            _, missing = await act(src, ActionKind.DELETE_RESERVATION, ("hpctui_maint",))
            assert not missing[0].ok and missing[0].message
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
