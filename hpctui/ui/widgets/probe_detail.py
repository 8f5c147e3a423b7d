"""Node-panel lines for what node probes (SSH, NVML) add: NVLink, GPU processes, services.

Nothing is shown for data no source delivered (the demo and Slurm-only setups look as before).
"""

from __future__ import annotations

from textual.content import Content

from hpctui.findings.health import nvlink_expected
from hpctui.model import ClusterSnapshot, Gpu
from hpctui.model.probe import ServiceStatus
from hpctui.ui.fmt import NA_TEXT

PAD = "    "
MAX_PROCESSES = 4

_SERVICE_STYLE = {ServiceStatus.ACTIVE: "$success", ServiceStatus.FAILED: "$error bold",
                  ServiceStatus.INACTIVE: "$warning", ServiceStatus.ACTIVATING: "$primary"}


def fabric_line(gpu: Gpu) -> list[Content]:
    """The NVLink fabric registration, only when it is stuck or failed (FACTS §8)."""
    if not gpu.fabric_failed:
        return []
    return [Content.assemble(PAD, ("NVLink fabric ", "bold"),
                             (f"{gpu.fabric_state} / {gpu.fabric_status or NA_TEXT}", "$error bold"))]


def nvlink_line(gpu: Gpu) -> list[Content]:
    if not gpu.nvlinks and gpu.nvlink_state == "none":
        return [Content.assemble(PAD, ("NVLink ", "bold"), "none on this device")]
    if not gpu.nvlinks and gpu.nvlink_state == "inactive":
        if nvlink_expected(gpu):
            return [Content.assemble(PAD, ("NVLink ", "bold"), ("all links inactive (an NVLink GPU)", "$error"))]
        return [Content.assemble(PAD, ("NVLink ", "bold"), "all links inactive (no bridge: PCIe only)")]
    if not gpu.nvlinks:
        return []
    known = [link for link in gpu.nvlinks if link.up is not None]
    if not known:
        return [Content.assemble(PAD, ("NVLink ", "bold"), "state unknown (not supported with MIG)")]
    up = sum(1 for link in known if link.up)
    down = [str(link.link) for link in known if not link.up]
    speed = next((link.speed_gbps for link in known if link.up and link.speed_gbps), None)
    pieces: list[str | tuple[str, str]] = [PAD, ("NVLink ", "bold"), f"{up}/{len(gpu.nvlinks)} up"]
    if speed:
        pieces.append(f" × {speed:g} GB/s")
    if down:
        pieces.append((f"  down: {', '.join(down)}", "$error"))
    rising = [f"{link.link}:" + "+".join(f"{k}{v}" for k, v in sorted(link.deltas.items()) if v > 0)
              for link in gpu.nvlinks if any(v > 0 for v in link.deltas.values())]
    if rising:
        pieces.append((f"  errors rising {' '.join(rising)}", "$warning"))
    return [Content.assemble(*pieces)]


def process_lines(gpu: Gpu) -> list[Content]:
    lines = []
    for p in gpu.processes[:MAX_PROCESSES]:
        owner = f"job {p.slurm_job_id}" if p.slurm_job_id else (f"pod {p.pod}" if p.pod else "")
        mem = f"{p.used_memory_mib / 1024:.1f} GiB" if p.used_memory_mib is not None else NA_TEXT
        lines.append(Content.assemble(
            PAD, ("proc ", "bold"), f"{p.pid} {p.user or NA_TEXT} ", (owner or "no job", "" if owner else "$warning"),
            f"  {mem}  {(p.command or '')[:60]}"))
    if len(gpu.processes) > MAX_PROCESSES:
        lines.append(Content(f"{PAD}… {len(gpu.processes) - MAX_PROCESSES} more processes"))
    return lines


def probe_gpu_lines(gpu: Gpu) -> list[Content]:
    """NVLink summary and processes under one GPU's row."""
    if gpu.lost:
        return []
    return fabric_line(gpu) + nvlink_line(gpu) + process_lines(gpu)


def service_lines(snapshot: ClusterSnapshot, name: str) -> list[Content]:
    services = snapshot.services.get(name)
    if not services:
        return []
    pieces: list[str | tuple[str, str]] = [("Services", "bold underline")]
    for s in services:
        if s.status is ServiceStatus.NOT_FOUND:
            continue
        pieces += ["  ", (f"{s.name} {s.status.value}", _SERVICE_STYLE.get(s.status, ""))]
    lines = [Content.assemble(*pieces)]
    for s in services:
        if s.status is ServiceStatus.FAILED and s.detail:
            for text in s.detail.strip().splitlines()[-3:]:
                lines.append(Content(f"{PAD}{s.name}: {text[:160]}"))
    return lines
