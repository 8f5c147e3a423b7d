"""Rendering of ``hpctui snapshot``: the whole snapshot as JSON, or a compact table.

No Textual here: this runs from cron and scripts.
"""

from __future__ import annotations

import time
from collections import Counter

import msgspec

from hpctui.findings import findings_for
from hpctui.health import Thresholds
from hpctui.model import ClusterSnapshot, Severity, fmt_na


def render_json(snapshot: ClusterSnapshot) -> str:
    return msgspec.json.format(msgspec.json.encode(snapshot), indent=2).decode() + "\n"


def _avg(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _ago(seconds: float | None) -> str:
    return "never" if seconds is None else f"{seconds:.0f}s ago"


def render_table(snapshot: ClusterSnapshot, thresholds: Thresholds, now: float | None = None) -> str:
    now = time.time() if now is None else now
    lines = [f"cluster {snapshot.cluster}  nodes {len(snapshot.nodes)}  jobs {len(snapshot.jobs)}  pods {len(snapshot.pods)}"]
    for health in snapshot.sources.values():
        status = "ok" if health.ok else f"ERROR: {health.last_error}"
        lines.append(f"source {health.name} ({health.kind}): {status}, data {_ago(health.age(now))}")
    lines.append("")
    header = f"{'NODE':<14} {'SLURM':<22} {'K8S':<10} {'GPUS':>5} {'UTIL%':>6} {'TEMPC':>6}  WORST"
    lines.append(header)
    index = findings_for(snapshot, thresholds)
    for name, node in snapshot.nodes.items():
        gpus = snapshot.gpus.get(name, ())
        utils = [g.util_pct for g in gpus if g.util_pct is not None]
        temps = [g.temp_c for g in gpus if g.temp_c is not None]
        findings = index.node(name)
        worst = f"{findings[0].severity.name}: {findings[0].message}" if findings else "-"
        slurm = node.slurm.display_state if node.slurm else "-"
        k8s = ("Ready" if node.k8s.ready == "True" else f"Ready={node.k8s.ready}") if node.k8s else "-"
        if node.k8s and node.k8s.unschedulable:
            k8s += ",cordon"
        lines.append(
            f"{name:<14} {slurm[:22]:<22} {k8s[:10]:<10} {len(gpus):>5} {fmt_na(_avg(utils), '{:.0f}'):>6} "
            f"{fmt_na(max(temps) if temps else None, '{:.0f}'):>6}  {worst}"
        )
    lines.append("")
    states = Counter(j.state for j in snapshot.jobs)
    lines.append("jobs: " + (", ".join(f"{k} {v}" for k, v in sorted(states.items())) or "none"))
    phases = Counter(p.phase for p in snapshot.pods)
    lines.append("pods: " + (", ".join(f"{k} {v}" for k, v in sorted(phases.items())) or "none"))
    problems = [f for f in index if f.severity >= Severity.WARNING]
    lines.append(f"findings (warning and worse): {len(problems)}")
    lines.extend(f"  {f.severity.name:<8} {f.object:<28} {f.message}" for f in problems)
    return "\n".join(lines) + "\n"
