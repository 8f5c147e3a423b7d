"""Switch correlation: several nodes under one leaf down/flapping → one leading finding; blast radius."""

from __future__ import annotations

from pathlib import Path

from hpctui.findings.fabric import blast_radius, switch_findings
from hpctui.findings.health import Thresholds
from hpctui.findings.index import findings_for
from hpctui.model import ClusterSnapshot, IbPort
from hpctui.sources.slurm.parse.topology import parse_scontrol_topology

FAB = parse_scontrol_topology((Path(__file__).parent / "fixtures" / "ib" / "scontrol_show_topology_22.05.txt").read_text())
NOW = 10_000.0


def port(node: str, **kw: object) -> IbPort:
    base: dict[str, object] = {"node": node, "device": "mlx5_0", "port": 1, "state": "ACTIVE", "phys_state": "LinkUp",
                               "rate_gbps": 400.0, "max_rate_gbps": 400.0}
    base.update(kw)
    return IbPort(**base)  # type: ignore[arg-type]


def snap(ports: dict[str, IbPort], fabric: object = FAB) -> ClusterSnapshot:
    return ClusterSnapshot(cluster="c", time=NOW, ib={n: (p,) for n, p in ports.items()},  # nodes known by their GPUs
                           gpus=dict.fromkeys(ports, ()), fabric=fabric)  # type: ignore[arg-type]


def test_three_flapping_under_one_leaf_is_one_switch_finding_that_leads() -> None:
    ports = {
        "gpu03": port("gpu03", flaps=2, last_down=NOW - 60),
        "gpu04": port("gpu04", state="DOWN", phys_state="Polling"),
        "cpu01": port("cpu01", deltas={"link_downed": 1}),
        "cpu02": port("cpu02"),
        "gpu01": port("gpu01", state="DOWN", phys_state="Polling"),  # another leaf: not counted
    }
    found = switch_findings(snap(ports), Thresholds())
    assert [(f.code, f.object) for f in found] == [("ib_switch", "switch/leaf2")]
    assert found[0].message.startswith("suspect leaf switch leaf2 (3 of 4 nodes)")
    assert "cpu01,gpu[03-04]" in found[0].message or "gpu[03-04]" in found[0].message
    index = findings_for(snap(ports), Thresholds())
    everything = list(index)
    assert everything[0].code == "ib_switch"  # leads the problem list
    assert any(f.code == "ib_down" and "gpu04" in f.object for f in everything)  # node findings stay
    assert index.by_object("switch/leaf2") == found


def test_old_flaps_two_nodes_and_no_topology_make_none() -> None:
    old = {n: port(n, flaps=5, last_down=NOW - 3600) for n in ("gpu03", "gpu04", "cpu01")}
    assert switch_findings(snap(old), Thresholds()) == ()  # outside flap_window_s
    two = {n: port(n, state="DOWN", phys_state="Polling") for n in ("gpu03", "gpu04")}
    assert switch_findings(snap(two), Thresholds()) == ()
    assert switch_findings(snap(two), Thresholds(switch_suspect_nodes=2))[0].object == "switch/leaf2"
    three = {n: port(n, state="DOWN", phys_state="Polling") for n in ("gpu03", "gpu04", "cpu01")}
    assert switch_findings(snap(three, fabric=None), Thresholds()) == ()


def test_degraded_rate_under_one_leaf() -> None:
    slow = {n: port(n, rate_gbps=200.0) for n in ("gpu03", "gpu04", "cpu02")}
    found = switch_findings(snap(slow), Thresholds())
    assert [(f.code, f.severity.name) for f in found] == [("ib_switch_rate", "WARNING")]
    assert "(3 of 4 nodes)" in found[0].message


def test_blast_radius_names_the_other_nodes_under_the_leaf() -> None:
    s = snap({})
    assert blast_radius(s, ["gpu03"]) == {"leaf2": ("gpu04", "cpu01", "cpu02")}
    assert blast_radius(s, ["gpu01", "gpu02"]) == {"leaf1": ()}
    assert blast_radius(snap({}, fabric=None), ["gpu01"]) == {}


def test_drain_and_reboot_previews_show_the_blast_radius() -> None:
    from hpctui.actions.plans import preview_warnings
    from hpctui.model import SlurmJob
    from hpctui.model.action import ActionKind

    jobs = (SlurmJob(job_id=41, name="a", user="u", state="RUNNING", nodes="gpu04"),
            SlurmJob(job_id=42, name="b", user="u", state="RUNNING", nodes="cpu[01-02]"),
            SlurmJob(job_id=43, name="c", user="u", state="PENDING", nodes=None))
    s = ClusterSnapshot(cluster="c", time=NOW, jobs=jobs, fabric=FAB)
    for kind in (ActionKind.DRAIN_NODES, ActionKind.REBOOT_NODES):
        lines = [w for w in preview_warnings(kind, ["gpu03"], s, None) if w.startswith("blast radius")]
        assert lines == ["blast radius: leaf switch leaf2 also carries 3 node(s) cpu[01-02],gpu04; "
                         "jobs running there: 41, 42"]
    assert not [w for w in preview_warnings(ActionKind.RESUME_NODES, ["gpu03"], s, None) if "blast" in w]
    no_fabric = ClusterSnapshot(cluster="c", time=NOW, jobs=jobs)
    assert not [w for w in preview_warnings(ActionKind.DRAIN_NODES, ["gpu03"], no_fabric, None) if "blast" in w]


def test_port_evidence_names_the_far_end() -> None:
    from hpctui.sim.cluster import SimCluster
    from hpctui.ui.screens.explain import port_evidence

    sim = SimCluster(size=16, seed=0, start_time=NOW)
    fab = sim.fabric
    first = sim.topo.gpu_nodes[0]
    p = port(first.name, device=first.ib_devices[1])
    assert "cabled to switch ibleaf01 port 2" in port_evidence(p, fab)
    assert "node's leaf switch leaf2 (4 nodes on it)" in port_evidence(port("gpu03"), FAB)
    assert not any("switch" in line for line in port_evidence(port("gpu03"), None))


def test_switch_evidence_lists_its_troubled_ports() -> None:
    from hpctui.ui.screens.explain import switch_evidence

    s = snap({"gpu03": port("gpu03", flaps=2, last_down=NOW - 60), "gpu04": port("gpu04")})
    lines = switch_evidence(s, "leaf2")
    assert lines[0].startswith("switch leaf2 (level 0, from slurm): 4 nodes")
    assert len(lines) == 2 and lines[1].startswith("gpu03 mlx5_0 port 1: ACTIVE, 2× down")
    assert switch_evidence(s, "nope") == ["switch nope: not in the topology"]


def test_ib_table_names_the_far_end_of_each_cable() -> None:
    """The IB table's SWITCH:PORT column: the discovered link (demo cabling), else the leaf from Slurm's
    topology (no port known), else nothing."""
    from hpctui.sim.cluster import SimCluster
    from hpctui.ui.widgets.tables import link_row, remote_text

    sim = SimCluster(size=16, seed=0, start_time=NOW)
    first = sim.topo.gpu_nodes[0]
    assert remote_text(port(first.name, device=first.ib_devices[1]), sim.fabric) == "ibleaf01:2"
    assert remote_text(port("gpu03"), FAB) == "leaf2"
    assert remote_text(port("gpu03"), None) == "" and remote_text(port("nowhere"), FAB) == ""
    assert link_row(port("gpu03"), (), FAB).remote == "leaf2"
