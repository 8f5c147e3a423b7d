"""Fabric topology parsers on real outputs (tests/fixtures/ib): ibnetdiscover, iblinkinfo, scontrol show topology."""

from __future__ import annotations

from pathlib import Path

from hpctui.model.fabric import merge_fabrics
from hpctui.sources.ibfabric import parse_iblinkinfo, parse_ibnetdiscover
from hpctui.sources.slurm.parse.topology import parse_scontrol_topology

FIX = Path(__file__).parent / "fixtures" / "ib"


def read(name: str) -> str:
    return (FIX / name).read_text()


def test_ibnetdiscover_leaf_hosts_and_ports() -> None:
    fab = parse_ibnetdiscover(read("ibnetdiscover_switchib-edr_fat-tree_excerpt.txt"))
    leaf = fab.switches["0xec0d9a0300ec8480"]  # an unnamed SwitchIB: named by its GUID
    assert leaf.is_leaf and len(leaf.nodes) == 24
    assert leaf.nodes[0] == "gpu045" and "gpu020" in leaf.nodes
    assert set(leaf.switches) == {"0xec0d9a0300ec81e0", "0xec0d9a0300ec8200"}
    spine = fab.switches["0xec0d9a0300ec81e0"]
    assert not spine.is_leaf and spine.level == 1 and len(spine.switches) == 4
    assert fab.leaf_of["gpu014"] == "0xec0d9a0300ec8480"
    far = fab.remote("gpu014", "HCA-1", 1)
    assert far is not None and far.switch == "0xec0d9a0300ec8480" and far.port == 30
    # a CA whose switch record is outside the excerpt still knows where it is cabled
    ctl = fab.remote("controller", "mlx5_0", 1)
    assert ctl is not None and ctl.switch == "0xec0d9a0300f548c0" and ctl.port == 25
    assert set(fab.peers("gpu004")) == set(leaf.nodes)


def test_iblinkinfo_ca_and_switch_sections() -> None:
    fab = parse_iblinkinfo(read("iblinkinfo_sb7700-edr_2-hosts_16-down.txt"))
    sw = fab.switches["SB7700"]  # MF0;SB7700:MSB7700/U1
    assert set(sw.nodes) == {"n01", "n02", "mgt"}
    assert fab.remote("n02", "HCA-1", 1) is not None
    assert fab.remote("n02", "HCA-1", 1) == fab.links["n02/HCA-1/1"]
    assert fab.links["n02/HCA-1/1"].port == 17 and fab.links["mgt/mlx5_0/1"].port == 36
    assert fab.links["n01/HCA-1/1"].switch == "SB7700" and fab.links["n01/HCA-1/1"].port == 18
    assert len(fab.links) == 3  # the 16 Down/ Polling ports have no far end
    assert fab.leaf_of == {"n02": "SB7700", "mgt": "SB7700", "n01": "SB7700"}


def test_scontrol_topology_tree_22_05() -> None:
    fab = parse_scontrol_topology(read("scontrol_show_topology_22.05.txt"))
    assert set(fab.switches) == {"leaf1", "leaf2", "spine1"}
    assert fab.switches["leaf2"].nodes == ("gpu03", "gpu04", "cpu01", "cpu02")
    assert fab.switches["spine1"].switches == ("leaf1", "leaf2") and fab.switches["spine1"].level == 1
    # the spine lists every node too: the leaf is the lowest level that lists a node
    assert fab.leaf_of["gpu01"] == "leaf1" and fab.leaf_of["cpu02"] == "leaf2"
    assert fab.peers("gpu03") == ("gpu03", "gpu04", "cpu01", "cpu02")
    assert fab.switches["leaf1"].link_speed == "400"


def test_hostile_and_foreign_lines_cost_one_line() -> None:
    fab = parse_scontrol_topology(
        "BlockName=b1 BlockIndex=0 Nodes=gpu[01-02] BlockSize=2\n"
        "SwitchName=bad Level=0 Nodes=gpu[01-\n"
        "SwitchName=le\x1b[31maf Level=0 Nodes=gpu05\n"
    )
    assert list(fab.switches) == ["le?[31maf"] or all("\x1b" not in n for n in fab.switches)
    assert "bad" not in fab.switches and "b1" not in fab.switches
    assert parse_ibnetdiscover("garbage\n[1] nonsense\n").switches == {}
    assert parse_iblinkinfo("CA: x\n  ==( )==>\n").links == {}


def test_merge_prefers_first_source_and_unites_links() -> None:
    slurm = parse_scontrol_topology(read("scontrol_show_topology_22.05.txt"))
    ib = parse_iblinkinfo(read("iblinkinfo_sb7700-edr_2-hosts_16-down.txt"))
    merged = merge_fabrics([slurm, ib])
    assert merged is not None and merged.source == "slurm+iblinkinfo"
    assert merged.leaf_of["gpu01"] == "leaf1" and merged.leaf_of["n01"] == "SB7700"
    assert "n02/HCA-1/1" in merged.links
    assert merge_fabrics([]) is None


def test_shims_print_the_recorded_outputs(tmp_path: Path) -> None:
    import shutil
    import subprocess

    shims = Path(__file__).parent / "testbed" / "nodeshims" / "bin"
    shutil.copytree(Path(__file__).parent / "fixtures" / "ib", tmp_path / "ib")  # as build_shim_root does
    env = {"HPCTUI_SHIM_ROOT": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([str(shims / "ibnetdiscover")], env=env, capture_output=True, text=True, check=True).stdout
    assert parse_ibnetdiscover(out) == parse_ibnetdiscover(read("ibnetdiscover_switchib-edr_fat-tree_excerpt.txt"))
    node = tmp_path / "nodes" / "_default"
    node.mkdir(parents=True)
    (node / "iblinkinfo.txt").write_text(read("iblinkinfo_sb7700-edr_2-hosts_16-down.txt"))
    out = subprocess.run([str(shims / "iblinkinfo")], env=env, capture_output=True, text=True, check=True).stdout
    assert parse_iblinkinfo(out).leaf_of["n01"] == "SB7700"


def test_heatmap_groups_by_leaf_switch() -> None:
    from hpctui.core.heatmap_settings import GROUP_ORDER
    from hpctui.model import ClusterSnapshot
    from hpctui.ui.heatmap_levels import group_nodes

    assert "switch" in GROUP_ORDER
    snap = ClusterSnapshot(cluster="c", time=0.0, fabric=parse_scontrol_topology(read("scontrol_show_topology_22.05.txt")))
    groups = group_nodes(snap, ["gpu01", "gpu03", "cpu01", "gpu02", "login1"], "switch")
    assert dict(groups) == {"(no switch)": ["login1"], "leaf1": ["gpu01", "gpu02"], "leaf2": ["gpu03", "cpu01"]}
