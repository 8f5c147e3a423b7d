"""Correlation over the IB fabric: many ports misbehaving under one leaf switch is the switch.

When several nodes under one leaf have a port down or flapping within the flap window, the
problem list leads with one finding, ``suspect leaf switch X (n of m nodes)``, instead of n
unrelated node findings (those stay on their nodes); ports running at a degraded rate under one
leaf likewise. The blast radius of a node (the nodes sharing its leaf, the jobs running there) is
what the drain and reboot previews show. Cheap: one pass over the ports of the snapshot, and only
when a topology is known.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hpctui.findings.health import Finding, Thresholds
from hpctui.model import ClusterSnapshot, IbPort, Severity
from hpctui.model.fabric import Fabric, link_key
from hpctui.model.hostlist import collect_cached


def port_troubled(port: IbPort, now: float, window_s: float) -> bool:
    """Down now, went down since the last read, or flapped within ``window_s`` of ``now``."""
    if port.state is not None and port.state != "ACTIVE":
        return True
    if port.deltas.get("link_downed", 0) > 0:
        return True
    return bool(port.flaps) and port.last_down is not None and now - port.last_down <= window_s


def switch_of(fabric: Fabric, port: IbPort) -> str | None:
    """The switch a port is cabled to: its discovered link, else its node's leaf."""
    far = fabric.links.get(link_key(port.node, port.device, port.port))
    return far.switch if far is not None else fabric.leaf_of.get(port.node)


def _group(fabric: Fabric, ports: Iterable[IbPort], troubled: dict[str, set[str]], degraded: dict[str, set[str]], now: float, window_s: float) -> None:
    for port in ports:
        is_bad = port_troubled(port, now, window_s)
        is_slow = port.degraded_rate
        if not (is_bad or is_slow):
            continue
        sw = switch_of(fabric, port)
        if sw is None:
            continue
        if is_bad:
            troubled.setdefault(sw, set()).add(port.node)
        if is_slow:
            degraded.setdefault(sw, set()).add(port.node)


def switch_findings(snapshot: ClusterSnapshot, t: Thresholds,
                    by_node: Mapping[str, tuple[Finding, ...]] | None = None) -> tuple[Finding, ...]:
    """One finding per leaf switch under which at least ``t.switch_suspect_nodes`` nodes have a port
    down or flapping (ERROR), or at a degraded rate (WARNING). () without a topology.

    ``by_node`` (the node findings already computed) narrows the pass to nodes with an IB finding."""
    fabric = snapshot.fabric
    if fabric is None or not snapshot.ib:
        return ()
    troubled: dict[str, set[str]] = {}
    degraded: dict[str, set[str]] = {}
    if by_node is None:
        names: Iterable[str] = snapshot.ib
    else:
        names = [n for n, fs in by_node.items() if fs and any(f.code.startswith("ib_") for f in fs)]
    for name in names:
        _group(fabric, snapshot.ib.get(name, ()), troubled, degraded, snapshot.time, t.flap_window_s)
    out: list[Finding] = []
    for code, severity, what, groups in (
        ("ib_switch", Severity.ERROR, "ports down or flapping", troubled),
        ("ib_switch_rate", Severity.WARNING, "ports at a degraded rate", degraded),
    ):
        for sw, nodes in sorted(groups.items()):
            if len(nodes) < t.switch_suspect_nodes:
                continue
            switch = fabric.switches.get(sw)
            total = len(switch.nodes) if switch is not None and switch.nodes else len(nodes)
            names = collect_cached(sorted(nodes))  # the same node sets every refresh: folded once
            out.append(Finding(severity=severity, object=f"switch/{sw}", code=code,
                               message=f"suspect leaf switch {sw} ({len(nodes)} of {total} nodes): {what} on {names}"))
    return tuple(out)


def blast_radius(snapshot: ClusterSnapshot, nodes: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Leaf switch → the other nodes under it, for the leaves of ``nodes`` (those not themselves in ``nodes``)."""
    fabric = snapshot.fabric
    if fabric is None:
        return {}
    targets = set(nodes)
    out: dict[str, tuple[str, ...]] = {}
    for node in sorted(targets):
        leaf = fabric.leaf_of.get(node)
        if leaf is None or leaf in out:
            continue
        out[leaf] = tuple(n for n in fabric.peers(node) if n not in targets)
    return out
