"""The Slurm bed's topology/tree (cluster.sh's topology.conf) read through the CLI source into the snapshot."""

from __future__ import annotations

import pytest
from slurm_helpers import run, snapshot, source
from slurmlab import SlurmLab

from hpctui.actions.plans import preview_warnings
from hpctui.findings.health import Thresholds
from hpctui.findings.index import findings_for
from hpctui.model.action import ActionKind

pytestmark = [pytest.mark.live, pytest.mark.slurm]


def test_scontrol_show_topology_reaches_the_snapshot(lab: SlurmLab) -> None:
    job = lab.sbatch("-p", "debug", "-w", "cpu01", "-n", "1")
    lab.wait_state(job, "RUNNING")

    async def go() -> None:
        src = source(lab, "cli")
        try:
            result, snap = await snapshot(src)
            assert "scontrol show topology" in src.calls
            again = await src.collect()  # read once, then every 10 minutes: not on the next refresh
            assert "scontrol show topology" not in src.calls and again.fabric is None
        finally:
            await src.close()
        fab = snap.fabric
        assert fab is not None and fab is result.fabric and fab.source == "slurm"
        assert set(fab.switches) == {"leaf1", "leaf2", "spine1"}
        assert fab.switches["leaf1"].nodes == ("gpu01", "gpu02")
        assert fab.switches["leaf2"].nodes == ("gpu03", "gpu04", "cpu01", "cpu02")
        assert fab.leaf_of["cpu02"] == "leaf2" and fab.switches["spine1"].level == 1
        warnings = preview_warnings(ActionKind.DRAIN_NODES, ["gpu03"], snap, findings_for(snap, Thresholds()))
        assert (f"blast radius: leaf switch leaf2 also carries 3 node(s) cpu[01-02],gpu04; "
                f"jobs running there: {job}") in warnings

    run(go())
