"""Rendering of ``hpctui snapshot``: the whole snapshot as JSON, or a compact table.

No Textual here: this runs from cron and scripts.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence

import msgspec

from hpctui.base.sanitize import clean_text
from hpctui.findings.health import Finding, Thresholds
from hpctui.findings.index import findings_for
from hpctui.model import ClusterSnapshot, Node, Severity, fmt_na


def render_json(snapshot: ClusterSnapshot, findings: list[Finding] | None = None, *, pretty: bool = True) -> str:
    """The snapshot as JSON; with ``findings`` they are added as a top-level ``findings`` list.
    Compact unless ``pretty`` (pretty-printing 4,096 nodes makes ~100 MB)."""
    data = msgspec.json.encode(snapshot)
    if findings is not None:  # splice the list in as one more field of the object
        extra = msgspec.json.encode(findings)
        data = data[:-1] + b',"findings":' + extra + b"}" if data != b"{}" else b'{"findings":' + extra + b"}"
    return (msgspec.json.format(data, indent=2) if pretty else data).decode() + "\n"


def problem_findings(snapshot: ClusterSnapshot, thresholds: Thresholds, at_least: Severity = Severity.WARNING) -> list[Finding]:
    """Findings of ``at_least`` and worse, worst first, from the shared index."""
    return [f for f in findings_for(snapshot, thresholds) if f.severity >= at_least]


def render_problems(findings: list[Finding]) -> str:
    """``--problems``: one line per finding, worst first (empty output: nothing to report)."""
    return "".join(f"{f.severity.name:<8} {f.object:<32} {f.code:<16} {f.message}\n" for f in findings)


def _avg(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _ago(seconds: float | None) -> str:
    return "never" if seconds is None else f"{seconds:.0f}s ago"


def gpu_count(snapshot: ClusterSnapshot, name: str) -> str:
    """GPUs seen on the node, else Slurm's GRES count (only Slurm configured), else N/A — never 0."""
    gpus = snapshot.gpus.get(name)
    if gpus:
        return str(len(gpus))
    node = snapshot.nodes.get(name)
    total = node.slurm.gpus_total if node is not None and node.slurm is not None else None
    return str(total) if total is not None else ("0" if gpus is not None else "N/A")


# (title, right-aligned); the last column (WORST) is free text and is never padded.
NODE_COLUMNS = (("NODE", False), ("SLURM", False), ("K8S", False), ("GPUS", True), ("UTIL%", True),
                ("TEMP°C", True), ("WORST", False))


def _node_row(snapshot: ClusterSnapshot, name: str, node: Node, findings: Sequence[Finding]) -> tuple[str, ...]:
    """One node's cells, whole (``Ready=Unknown``, a long Slurm state): the table sizes to them."""
    gpus = snapshot.gpus.get(name, ())
    utils = [g.util_pct for g in gpus if g.util_pct is not None]
    temps = [g.temp_c for g in gpus if g.temp_c is not None]
    worst = f"{findings[0].severity.name}: {findings[0].message}" if findings else "-"
    slurm = node.slurm.display_state if node.slurm else "-"
    k8s = ("Ready" if node.k8s.ready == "True" else f"Ready={node.k8s.ready}") if node.k8s else "-"
    if node.k8s and node.k8s.unschedulable:
        k8s += ",cordon"
    return (name, slurm, k8s, gpu_count(snapshot, name), fmt_na(_avg(utils), "{:.0f}"),
            fmt_na(max(temps) if temps else None, "{:.0f}"), worst)


def _aligned(columns: Sequence[tuple[str, bool]], rows: Sequence[Sequence[str]]) -> list[str]:
    """Header and rows with every column as wide as its widest cell: nothing is cut."""
    widths = [max([len(title), *(len(r[i]) for r in rows)]) for i, (title, _) in enumerate(columns)]

    def line(cells: Sequence[str]) -> str:
        out = [c.rjust(w) if right else c.ljust(w)
               for c, w, (_, right) in zip(cells[:-1], widths, columns, strict=False)]
        return " ".join(out) + "  " + cells[-1]
    return [line([t for t, _ in columns]), *(line(r) for r in rows)]


def render_table(snapshot: ClusterSnapshot, thresholds: Thresholds, now: float | None = None) -> str:
    """The compact table: one line per source (then each of its warnings and failed parts), one per
    node, job and pod counts, queues, and every finding of warning and worse."""
    now = time.time() if now is None else now
    lines = [f"cluster {snapshot.cluster}  nodes {len(snapshot.nodes)}  jobs {len(snapshot.jobs)}  pods {len(snapshot.pods)}"]
    for health in snapshot.sources.values():
        status = "ok" if health.ok else f"ERROR: {health.last_error}"
        lines.append(f"source {health.name} ({health.kind}): {status}, data {_ago(health.age(now))}")
        lines.extend(f"  warning: {w}" for w in health.warnings)  # every one (README): records dropped, ...
        lines.extend(f"  warning: {part} not read: {why}" for part, why in health.part_errors.items())
    lines.append("")
    index = findings_for(snapshot, thresholds)
    rows = [_node_row(snapshot, name, node, index.node(name)) for name, node in snapshot.nodes.items()]
    lines.extend(_aligned(NODE_COLUMNS, rows))
    lines.append("")
    states = Counter(j.state for j in snapshot.jobs)
    lines.append("jobs: " + (", ".join(f"{k} {v}" for k, v in sorted(states.items())) or "none"))
    phases = Counter(p.phase for p in snapshot.pods)
    lines.append("pods: " + (", ".join(f"{k} {v}" for k, v in sorted(phases.items())) or "none"))
    for q in snapshot.k8s_queues:  # Kueue / Volcano objects (k8s source, when their CRDs exist)
        where = f"{q.namespace}/" if q.namespace else ""
        counts = "" if q.pending is None else f" pending {q.pending} admitted {fmt_na(q.admitted)}"
        extra = "".join((f" inqueue {q.inqueue}" if q.inqueue is not None else "",
                         f" min {q.min_member}" if q.min_member is not None else "",
                         f" in {q.cluster_queue}" if q.cluster_queue else "",
                         f" {q.gpu_text}" if q.gpus else ""))
        lines.append(f"{q.kind} {where}{q.name}: {q.state}{counts}{extra}" + (f" ({q.message})" if q.message else ""))
    problems = [f for f in index if f.severity >= Severity.WARNING]
    lines.append(f"findings (warning and worse): {len(problems)}")
    lines.extend(f"  {f.severity.name:<8} {f.object:<28} {f.message}" for f in problems)
    # The model is already clean (parsers sanitise); this guards the table itself: no raw
    # control byte ever reaches a terminal or a `| cat -v`, whatever a future field adds.
    return clean_text("\n".join(lines), keep_newlines=True) + "\n"
