"""Where the node panel's values came from and how old they are, plus the node's host
resources (CPU, memory, disks, NICs) when a source delivers them.

A value older than its source's staleness limit (Prometheus: scrape interval × 3) is
shown as STALE with its age; a part some source delivers but not for this node reads
"no data" — never zeros.
"""

from __future__ import annotations

from textual.content import Content

from hpctui.model import ClusterSnapshot, NodeResources, Part
from hpctui.ui.fmt import NA_TEXT, age, num

Piece = tuple[str, str] | str
PARTS = ((Part.GPUS, "GPUs"), (Part.IB, "IB"), (Part.MOUNTS, "mounts"), (Part.RESOURCES, "host"))


def informative(snapshot: ClusterSnapshot) -> bool:
    """Worth a line: sources combine, or one keeps per-node sample times (a metrics source)."""
    return bool(snapshot.part_origins or snapshot.node_times)


def source_lines(snapshot: ClusterSnapshot, name: str, now: float) -> list[Content]:
    if not informative(snapshot):
        return []  # one scheduler-style source delivering everything: the status line says it all
    pieces: list[Piece] = []
    for part, label in PARTS:
        if not snapshot.part_sources.get(part.value):
            continue  # no source delivers this part at all: nothing to say
        pieces.append(("  " if pieces else "") + f"{label} ")
        seen = snapshot.value_age(part, name, now)
        if seen is None:
            pieces.append(("no data", "$warning"))
            continue
        source, seconds = seen
        health = snapshot.sources.get(source)
        limit = health.stale_after_s if health is not None else None
        if limit is not None and seconds is not None and seconds > limit:
            pieces.append((f"{source} STALE {age(seconds)}", "$error"))
        else:
            pieces.append(f"{source} {age(seconds)}")
    if not pieces:
        return []
    return [Content.assemble(("Data ", "bold"), *pieces)]


def _gib(mib: float | None) -> float | None:
    return None if mib is None else mib / 1024.0


def resource_lines(resources: NodeResources | None) -> list[Content]:
    if resources is None:
        return []
    r = resources
    mem = f"{num(r.mem_used_pct)}% of {num(_gib(r.mem_total_mib))} GiB" if r.mem_total_mib else NA_TEXT
    line: list[Piece] = [("Host ", "bold"), f"load {num(r.load1, '{:.1f}')}",
                         f"  CPU {num(r.cpu_busy_pct)}% of {num(r.cpu_count)}", f"  mem {mem}"]
    if r.disk_busy_pct:
        dev, busy = max(r.disk_busy_pct.items(), key=lambda kv: kv[1])
        line.append(f"  disk {dev} {busy:.0f}%")
    if r.nic_rx_bps or r.nic_tx_bps:
        rx, tx = sum(r.nic_rx_bps.values()), sum(r.nic_tx_bps.values())
        line.append(f"  net rx {rx / 1e6:.0f} / tx {tx / 1e6:.0f} MB/s")
    errors = sum(r.nic_errors.values())
    if errors:
        line.append((f"  NIC errors {errors}", "$warning"))
    return [Content.assemble(*line)]
