"""Incident reports: ``report.md``, ``report.json`` and a standalone ``report.html``.

One document (:func:`build_report`) is made from one snapshot, the store's history and the
audit trail; the three files are renderings of it. Every cluster string goes through
:func:`hpctui.base.sanitize.clean_text`, every secret from the config is redacted from every
string, the HTML escapes everything and links nothing, and the Markdown backslash-escapes every cluster
string (:func:`md_escape`) so that none of it renders as a link, an image, HTML or markup.
The charts (per GPU and per IB port, the failing ones highlighted) are :mod:`hpctui.report.charts`:
inline SVG in the HTML, text in the Markdown, their data in the JSON.
"""

from __future__ import annotations

import getpass
import html
import re
import socket
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from hpctui import __version__
from hpctui.base.private_files import private_dir, write_private
from hpctui.base.sanitize import clean_text
from hpctui.core.series_history import SeriesHistory
from hpctui.findings.health import Finding, Thresholds
from hpctui.findings.index import findings_for
from hpctui.findings.nodehistory import exit_text, summary
from hpctui.model import ClusterSnapshot, SlurmJob
from hpctui.model import gpu as gpu_model
from hpctui.model.checks import CheckResult, CriticalMark
from hpctui.model.hostlist import HostlistError, collect, expand
from hpctui.model.jobs import jobs_by_id
from hpctui.model.nodehistory import NodeRecord
from hpctui.report import charts as report_charts

REDACTED = "[redacted]"
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}

HistoryGet = Callable[[str], list[tuple[float, float]]]


class ReportError(ValueError):
    pass


def parse_since(text: str) -> float:
    """``90s``, ``30m``, ``1h``, ``2d`` or plain seconds → seconds."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([smhd]?)\s*", text)
    if not m or float(m.group(1)) <= 0:
        raise ReportError(f"--since wants a duration like 30m, 1h or 2d, got {text!r}")
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]




class _Scrub:
    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))

    def text(self, value: str, *, keep_newlines: bool = False) -> str:
        out = clean_text(value, keep_newlines=keep_newlines)
        for s in self.secrets:
            if s in out:
                out = out.replace(s, REDACTED)
        return out

    def tree(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return self.text(obj, keep_newlines="\n" in obj)
        if isinstance(obj, dict):
            return {self.text(str(k)): self.tree(v) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return [self.tree(v) for v in obj]
        return obj


def xid_action(xid: int) -> str:
    """Recommended action for an Xid: ``XID_ACTION`` where the model has it, else the catalogue's hint."""
    if xid in gpu_model.XID_ACTION:
        return gpu_model.XID_ACTION[xid]
    meaning = gpu_model.XID_MEANING.get(xid, "")
    m = re.search(r"\(([^)]*)\)\s*$", meaning)
    if m:
        return m.group(1)
    return "check the NVIDIA Xid catalogue; drain the node if it repeats"


def _object_node(obj: str) -> str | None:
    parts = obj.split("/")
    if len(parts) >= 2 and parts[0] in ("node", "gpu", "ib", "mount", "service", "probe"):
        return parts[1].split(":", 1)[0]
    return None


def _job_nodes(job: SlurmJob) -> list[str]:
    if not job.nodes:
        return []
    try:
        return expand(job.nodes)
    except HostlistError:
        return []


def scope(snapshot: ClusterSnapshot, nodes_expr: str | None, jobs_expr: str | None) -> tuple[list[str], list[str]]:
    """(nodes, job ids) the report covers; nodes of the named jobs are included."""
    nodes: list[str] = []
    if nodes_expr:
        try:
            nodes = expand(nodes_expr)
        except HostlistError as exc:
            raise ReportError(f"--nodes: {exc}") from None
        unknown = [n for n in nodes if n not in snapshot.nodes and n not in snapshot.gpus]
        if unknown:
            raise ReportError(f"--nodes: unknown node(s) {', '.join(unknown[:5])}")
    jobs = [j for j in re.split(r"[,\s]+", jobs_expr or "") if j]
    by_id = jobs_by_id(snapshot.jobs)
    for jid in jobs:
        found = by_id.get(jid)
        if found is None:
            raise ReportError(f"--jobs: unknown job {jid}")
        nodes.extend(_job_nodes(found))
    if not nodes and not jobs:
        raise ReportError("give --nodes and/or --jobs")
    return list(dict.fromkeys(nodes)), jobs


def _job_row(job: SlurmJob) -> dict[str, Any]:
    return {"id": job.display_id, "user": job.user, "name": job.name, "state": job.state, "nodes": job.nodes,
            "partition": job.partition, "gpus_alloc": dict(job.gpus_alloc), "start_time": job.start_time}


def _event_says(snapshot: ClusterSnapshot, obj: str, reason: str, when: float | None, start: float) -> bool:
    """Whether an event on ``obj`` in the window (from ``start``) already tells the drain ``reason``
    (within 2 min of ``when``): then the timeline shows that event, not the node's reason a second time."""
    text = clean_text(reason)
    return any(e.object == obj and e.time >= start and text in e.message
               and (when is None or abs(e.time - when) <= 120) for e in snapshot.events)


def _outcome_text(outcome: Mapping[str, Any] | None, steps: int) -> str:
    if outcome is None:
        return (f"no outcome recorded after {steps} step(s) (interrupted?)" if steps
                else "no outcome recorded (interrupted?)")
    if outcome.get("refused"):
        return f"refused: {outcome.get('refused')}"
    results = outcome.get("results") or []
    ok = sum(1 for r in results if isinstance(r, dict) and r.get("ok"))
    return f"{ok}/{len(results)} ok"


def _actions(audit: Iterable[Mapping[str, Any]], start: float, keys: set[str]) -> list[dict[str, Any]]:
    """One row per action: the intent, step and outcome records sharing an audit ``id`` are one action
    (its outcome when recorded, else what the intent said was about to run); a record without an id
    (a refusal, an older log) is an action of its own. Only actions in the window on ``keys``."""
    groups: dict[object, list[Mapping[str, Any]]] = {}
    for i, rec in enumerate(audit):
        rid = rec.get("id")
        groups.setdefault(rid if isinstance(rid, str) and rid else ("record", i), []).append(rec)
    rows: list[dict[str, Any]] = []
    for gid, recs in groups.items():
        intent = next((r for r in recs if r.get("phase") == "intent"), None)
        outcome = next((r for r in reversed(recs) if r.get("phase") in (None, "outcome")), None)
        steps = sum(1 for r in recs if r.get("phase") == "step")
        main = outcome or intent
        if main is None:
            continue
        t = (intent or main).get("time")
        targets = [str(x) for x in main.get("targets") or ()]
        if not isinstance(t, int | float) or t < start or not keys.intersection(targets):
            continue
        rows.append({"id": gid if isinstance(gid, str) else None, "time": t, "user": main.get("user"),
                     "action": main.get("action"), "targets": targets, "commands": list(main.get("commands") or ()),
                     "outcome": _outcome_text(outcome, steps)})
    return rows


def build_report(snapshot: ClusterSnapshot, *, nodes: list[str], jobs: list[str], since_s: float,
                 thresholds: Thresholds | None = None, history: HistoryGet | None = None,
                 series: SeriesHistory | None = None,
                 audit: Iterable[Mapping[str, Any]] = (), secrets: Iterable[str] = (),
                 user: str | None = None, host: str | None = None, now: float | None = None,
                 origin: str = "hpctui report",
                 checks: Callable[[str], Sequence[CheckResult]] | None = None,
                 held: Callable[[str], Sequence[CriticalMark]] | None = None,
                 extra: Mapping[str, tuple[Finding, ...]] | None = None,
                 node_records: Sequence[NodeRecord] = ()) -> dict[str, Any]:
    """The report document (plain JSON data), sanitised and with secrets redacted.

    ``checks``: each node's kept health-check results (newest first), listed and put on the timeline;
    ``held``: each node's critical findings the resume gate still holds it for;
    ``extra``: findings the per-snapshot rules cannot make, by node (a running app's idle GPUs, which
    need memory across frames: ``Frame.idle.findings``);
    ``node_records``: what the cluster remembers of the nodes (hpctui.core.nodehistory: slurmdbd's
    drains and downs, the audit's resumes, cordons; the jobs that died there), over its own window.

    ``series``: the store's per-GPU/per-port rings, charted one line per GPU and port with the failing
    ones highlighted; ``history``: the node means, charted where the rings do not keep a node.
    ``audit``: audit records, intents, steps and outcomes alike: one action (one id) is one row."""
    now = snapshot.time if now is None else now
    start = now - since_s
    node_set = set(nodes)
    findings = findings_for(snapshot, thresholds or Thresholds()).with_extra(dict(extra or {}))
    job_ids = set(jobs)
    hit_jobs = [j for j in snapshot.jobs
                if j.display_id in job_ids or str(j.job_id) in job_ids
                or (j.state in ("RUNNING", "COMPLETING") and node_set.intersection(_job_nodes(j)))]
    hit_pods = [p for p in snapshot.pods if p.node in node_set]
    pod_keys = {f"{p.namespace}/{p.name}" for p in hit_pods}
    job_keys = {j.display_id for j in hit_jobs} | {str(j.job_id) for j in hit_jobs} | job_ids

    node_rows: list[dict[str, Any]] = []
    gpu_rows: list[dict[str, Any]] = []
    xid_rows: list[dict[str, Any]] = []
    ecc_rows: list[dict[str, Any]] = []
    ib_rows: list[dict[str, Any]] = []
    mount_rows: list[dict[str, Any]] = []
    timeline: list[dict[str, Any]] = []
    charts: dict[str, list[dict[str, Any]]] = {}
    check_rows: list[dict[str, Any]] = []
    for name in nodes:
        for c in (checks(name) if checks is not None else ()):
            check_rows.append({"node": name, "check": c.check, "status": c.status.value, "summary": c.summary,
                               "time": c.time, "user": c.user, "peer": c.peer,
                               "failed": [f"{d.test}" + (f" GPU {d.gpu}" if d.gpu is not None else "")
                                          + (f": {d.message}" if d.message else "")
                                          for d in c.details if d.status.value != "passed"][:8]})
            if c.time >= start:
                timeline.append({"time": c.time, "source": "check", "object": f"node/{name}",
                                 "severity": "INFO" if c.passed else "ERROR", "message": f"{c.check}: {c.summary}"})
        node = snapshot.nodes.get(name)
        slurm = node.slurm if node else None
        k8s = node.k8s if node else None
        node_rows.append({
            "name": name,
            "slurm_state": slurm.display_state if slurm else None,
            "reason": slurm.reason if slurm else None,
            "reason_user": slurm.reason_user if slurm else None,
            "reason_time": slurm.reason_time if slurm else None,
            "k8s_ready": k8s.conditions.get("Ready") if k8s else None,
            "k8s_unschedulable": k8s.unschedulable if k8s else None,
            "findings": [{"severity": f.severity.name, "object": f.object, "code": f.code, "message": f.message}
                         for f in findings.node(name)],
            "resume_held_for": [{"finding": m.message, "first_seen": m.first_seen, "domain": m.domain.value}
                                for m in (held(name) if held is not None else ())],
        })
        if slurm and slurm.reason and not _event_says(snapshot, f"node/{name}", slurm.reason, slurm.reason_time,
                                                       start):
            timeline.append({"time": slurm.reason_time, "source": "slurm", "object": f"node/{name}",
                             "severity": "WARNING",
                             "message": f"drain reason: {slurm.reason}"
                                        + (f" (by {slurm.reason_user})" if slurm.reason_user else "")})
        for g in snapshot.gpus.get(name, ()):
            gpu_rows.append({"node": name, "index": g.index, "model": g.model, "uuid": g.uuid,
                             "util_pct": g.util_pct, "temp_c": g.temp_c, "power_w": g.power_w,
                             "memory_used_mib": g.memory_used_mib, "last_xid": g.last_xid, "lost": g.lost})
            ecc_rows.append({"node": name, "index": g.index,
                             "ecc_corrected_volatile": g.ecc_corrected_volatile,
                             "ecc_uncorrected_volatile": g.ecc_uncorrected_volatile,
                             "ecc_corrected_aggregate": g.ecc_corrected_aggregate,
                             "ecc_uncorrected_aggregate": g.ecc_uncorrected_aggregate,
                             "remapped_correctable": g.remapped_correctable,
                             "remapped_uncorrectable": g.remapped_uncorrectable,
                             "remap_pending": g.remap_pending, "remap_failure": g.remap_failure})
            for ev in g.xid_events:
                xid_rows.append({"node": name, "gpu": g.index, "time": ev.time, "xid": ev.xid,
                                 "meaning": gpu_model.XID_MEANING.get(ev.xid, "unknown Xid"),
                                 "action": xid_action(ev.xid), "severity": ev.severity.name,
                                 "pci_bus_id": ev.pci_bus_id, "message": ev.message})
        for p in snapshot.ib.get(name, ()):
            ib_rows.append({"node": name, "device": p.device, "port": p.port, "state": p.state,
                            "phys_state": p.phys_state, "rate_gbps": p.rate_gbps, "max_rate_gbps": p.max_rate_gbps,
                            "counters": dict(p.counters), "deltas": dict(p.deltas)})
        for m in snapshot.mounts.get(name, ()):
            mount_rows.append({"node": name, "target": m.target, "fstype": m.fstype, "source": m.source,
                               "state": m.state.value, "latency_ms": m.latency_ms, "detail": m.detail})
        node_charts = report_charts.node_charts(name, series=series, history=history, findings=findings, now=now,
                                                window_s=since_s)
        if node_charts:
            charts[name] = node_charts

    for event in snapshot.events:
        if event.time < start:
            continue
        obj_node = _object_node(event.object)
        parts = event.object.split("/")
        if obj_node in node_set or (parts[0] == "job" and parts[-1] in job_keys) or \
                (parts[0] == "pod" and "/".join(parts[1:]) in pod_keys):
            timeline.append({"time": event.time, "source": "kernel" if event.source == "gpu" else event.source,
                             "object": event.object, "severity": event.severity.name, "message": event.message})
    actions = _actions(audit, start, node_set | job_keys)
    timeline.extend({"time": a["time"], "source": "action", "object": ",".join(a["targets"]), "severity": "INFO",
                     "message": f"{a['action']} by {a['user']}: {a['outcome']}", "id": a["id"]} for a in actions)
    timeline.sort(key=lambda e: (e["time"] is None, e["time"] or 0.0))

    doc: dict[str, Any] = {
        "title": f"Incident report: {collect(nodes) if nodes else ','.join(jobs)}",
        "cluster": snapshot.cluster,
        "generated_at": now,
        "generated_by": {"user": user or _user(), "host": host or socket.gethostname(),
                         "tool": f"hpctui {__version__}", "via": origin},
        "window": {"since": start, "until": now, "seconds": since_s},
        "snapshot_time": snapshot.time,
        "scope": {"nodes": list(nodes), "jobs": list(jobs)},
        "nodes": node_rows,
        "gpus": gpu_rows,
        "xid_events": sorted(xid_rows, key=lambda r: r["time"]),
        "ecc": ecc_rows,
        "ib_ports": ib_rows,
        "mounts": mount_rows,
        "jobs": [_job_row(j) for j in hit_jobs],
        "pods": [{"namespace": p.namespace, "name": p.name, "node": p.node, "phase": p.phase,
                  "reason": p.reason, "gpus_requested": p.gpus_requested} for p in hit_pods],
        "actions": actions,
        "health_checks": check_rows,
        "node_history": [{"node": r.node, "summary": summary(r), "since": r.start, "problems": list(r.problems)}
                         for r in node_records],
        "node_events": [{"node": e.node, "time": e.time, "end": e.end, "kind": e.kind, "user": e.user,
                         "reason": e.reason, "origin": e.origin} for r in node_records for e in r.events],
        "dead_jobs": [{"id": j.job_id, "node": r.node, "state": j.state, "exit": exit_text(j), "user": j.user,
                       "account": j.account, "name": j.name, "end": j.end, "gpus": j.gpus}
                      for r in node_records for j in r.dead_jobs],
        "timeline": timeline,
        "charts": charts,
        "sources": {n: {"kind": h.kind, "last_success": h.last_success, "last_error": h.last_error}
                    for n, h in snapshot.sources.items()},
    }
    scrubbed: dict[str, Any] = _Scrub(secrets).tree(doc)
    return scrubbed


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "unknown"


# -- rendering ----------------------------------------------------------------------------------


def fmt_time(t: Any) -> str:
    if not isinstance(t, int | float):
        return "N/A"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


def _cell(v: Any) -> str:
    if v is None:
        return "N/A"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, dict):
        return ", ".join(f"{k}={_cell(x)}" for k, x in v.items() if x) or "-"
    if isinstance(v, list):
        return ", ".join(_cell(x) for x in v)
    return str(v)


# (section title, doc key, columns); a column is (header, key or callable)
Column = tuple[str, Any]
SECTIONS: list[tuple[str, str, list[Column]]] = [
    ("Affected nodes", "nodes", [("node", "name"), ("Slurm", "slurm_state"), ("reason", "reason"),
                                 ("by", "reason_user"), ("K8s Ready", "k8s_ready"),
                                 ("findings", lambda r: "; ".join(f"{f['severity']} {f['code']}: {f['message']}"
                                                                  for f in r["findings"]) or "-"),
                                ("resume held for", lambda r: "; ".join(m["finding"] for m in r.get("resume_held_for", ()))
                                 or "-")]),
    ("GPUs", "gpus", [("node", "node"), ("gpu", "index"), ("model", "model"), ("util %", "util_pct"),
                      ("temp C", "temp_c"), ("power W", "power_w"), ("last Xid", "last_xid"), ("lost", "lost")]),
    ("Xid events", "xid_events", [("time", lambda r: fmt_time(r["time"])), ("node", "node"), ("gpu", "gpu"),
                                  ("Xid", "xid"), ("meaning", "meaning"), ("recommended action", "action"),
                                  ("kernel log", "message")]),
    ("ECC and remapped rows", "ecc", [("node", "node"), ("gpu", "index"), ("SBE vol", "ecc_corrected_volatile"),
                                      ("DBE vol", "ecc_uncorrected_volatile"), ("SBE agg", "ecc_corrected_aggregate"),
                                      ("DBE agg", "ecc_uncorrected_aggregate"),
                                      ("remapped corr", "remapped_correctable"),
                                      ("remapped uncorr", "remapped_uncorrectable"), ("pending", "remap_pending"),
                                      ("failure", "remap_failure")]),
    ("InfiniBand ports", "ib_ports", [("node", "node"), ("port", lambda r: f"{r['device']}:{r['port']}"),
                                      ("state", "state"), ("phys", "phys_state"), ("rate Gb/s", "rate_gbps"),
                                      ("max Gb/s", "max_rate_gbps"),
                                      ("error counters", lambda r: _cell({k: v for k, v in r["counters"].items()
                                                                          if "data" not in k and "packets" not in k})),
                                      ("deltas", lambda r: _cell({k: v for k, v in r["deltas"].items()
                                                                  if "data" not in k and "packets" not in k}))]),
    ("Mounts", "mounts", [("node", "node"), ("mount", "target"), ("type", "fstype"), ("state", "state"),
                          ("latency ms", "latency_ms"), ("detail", "detail")]),
    ("Jobs", "jobs", [("job", "id"), ("user", "user"), ("name", "name"), ("state", "state"), ("nodes", "nodes"),
                      ("partition", "partition")]),
    ("Pods", "pods", [("namespace", "namespace"), ("pod", "name"), ("node", "node"), ("phase", "phase"),
                      ("reason", "reason"), ("GPUs", "gpus_requested")]),
    ("Health checks", "health_checks", [("time", lambda r: fmt_time(r["time"])), ("node", "node"),
                                        ("check", "check"), ("result", "status"), ("summary", "summary"),
                                        ("failed", lambda r: "; ".join(r["failed"]) or "-"), ("by", "user")]),
    ("Node history", "node_history", [("node", "node"), ("since", lambda r: fmt_time(r["since"])),
                                      ("what it remembers", "summary"),
                                      ("not read", lambda r: "; ".join(r["problems"]) or "-")]),
    ("Node events", "node_events", [("time", lambda r: fmt_time(r["time"])), ("node", "node"), ("event", "kind"),
                                    ("by", "user"), ("reason", "reason"), ("until", lambda r: fmt_time(r["end"])),
                                    ("from", "origin")]),
    ("Jobs that died on these nodes", "dead_jobs", [("ended", lambda r: fmt_time(r["end"])), ("node", "node"),
                                                    ("job", "id"), ("state", "state"), ("exit", "exit"),
                                                    ("user", "user"), ("account", "account"), ("GPUs", "gpus"),
                                                    ("name", "name")]),
    ("Timeline", "timeline", [("time", lambda r: fmt_time(r["time"])), ("source", "source"), ("object", "object"),
                              ("severity", "severity"), ("what", "message")]),
]


def _rows(doc: Mapping[str, Any], key: str, cols: list[Column]) -> list[list[str]]:
    return [[_cell(c(r) if callable(c) else r.get(c)) for _, c in cols] for r in doc.get(key, [])]


def _header_lines(doc: Mapping[str, Any]) -> list[tuple[str, str]]:
    by = doc["generated_by"]
    w = doc["window"]
    return [("cluster", doc["cluster"]), ("window", f"{fmt_time(w['since'])} → {fmt_time(w['until'])}"),
            ("made by", f"{by['user']}@{by['host']} with {by['tool']} ({by['via']}) at {fmt_time(doc['generated_at'])}"),
            ("scope", f"nodes {', '.join(doc['scope']['nodes']) or '-'}; jobs {', '.join(doc['scope']['jobs']) or '-'}")]


# Markdown: every ASCII punctuation character may be backslash-escaped and then stands for itself
# (CommonMark 0.31, "Backslash escapes"). Escaped always: what opens inline markup (emphasis, code,
# links, images, raw HTML, entities, GFM tables/strikethrough/autolinks, math, attributes). ``.`` and
# ``:`` only next to a letter, which is where a URL scheme (``http:``) or a domain (``www.x``,
# ``evil.com``) needs them, so numbers and times stay readable.
_MD_ALWAYS = frozenset("\\`*_{}[]()<>#!|~$&@^")
_MD_NEAR_LETTER = frozenset(".:")


def md_escape(s: str) -> str:
    """``s`` as Markdown inline text that renders literally: no link, image, HTML, emphasis or code span
    can start inside it, and it never ends a line or a table cell."""
    out: list[str] = []
    for i, ch in enumerate(s):
        if ch in "\r\n":
            out.append(" ")
        elif ch in _MD_ALWAYS or (ch in _MD_NEAR_LETTER and (
                (i > 0 and s[i - 1].isalpha()) or (i + 1 < len(s) and s[i + 1].isalpha()))):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def md_code_block(text: str) -> list[str]:
    """``text`` as a fenced code block whose fence no line of ``text`` can close (longer than any backtick
    run in it); the lines between the fences are shown verbatim."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, text, fence]


def render_markdown(doc: Mapping[str, Any]) -> str:
    out = [f"# {md_escape(doc['title'])}", ""]
    out.extend(f"- **{k}**: {md_escape(v)}" for k, v in _header_lines(doc))
    for title, key, cols in SECTIONS:
        out += ["", f"## {title}", ""]
        rows = _rows(doc, key, cols)
        if not rows:
            out.append("_none_")
            continue
        out.append("| " + " | ".join(h for h, _ in cols) + " |")
        out.append("|" + "---|" * len(cols))
        out.extend("| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows)
    out += ["", "## GPU and IB history", ""]
    if not doc["charts"]:
        out.append(f"_{md_escape(NO_HISTORY)}_")
    for node, node_charts in doc["charts"].items():
        out += [f"### {md_escape(str(node))}", ""]
        for chart in node_charts:
            out += [*md_code_block(report_charts.text_chart(chart)), "", md_escape(report_charts.caption(chart)), ""]
    return "\n".join(out) + "\n"


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;color:#222;background:#fff}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#eee}pre{background:#f6f6f6;padding:8px;font-size:12px;line-height:1.1}
.meta td:first-child{font-weight:bold}.none{color:#888;font-style:italic}
figure{margin:0 0 1.5em}figcaption{font-size:13px;color:#444;max-width:760px}
.note{border-left:4px solid #d62728;padding:4px 8px;background:#fff4f4}"""
NO_HISTORY = ("not enough history in the window for a chart (a headless report collects once; "
              "reports made from the app chart the session's history)")


def render_html(doc: Mapping[str, Any]) -> str:
    e = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{e(doc['title'])}</title>", f"<style>{_CSS}</style></head><body>",
           f"<h1>{e(doc['title'])}</h1>", '<table class="meta">']
    out.extend(f"<tr><td>{e(k)}</td><td>{e(v)}</td></tr>" for k, v in _header_lines(doc))
    out.append("</table>")
    for title, key, cols in SECTIONS:
        out.append(f"<h2>{e(title)}</h2>")
        rows = _rows(doc, key, cols)
        if not rows:
            out.append('<p class="none">none</p>')
            continue
        out.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h, _ in cols) + "</tr>")
        out.extend("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in rows)
        out.append("</table>")
    out.append("<h2>GPU and IB history</h2>")
    out.extend(_html_charts(doc["charts"]))
    if doc.get("screenshot"):
        out.append(f'<h2>Screen</h2><p>{e(doc["screenshot"])} (next to this file)</p>')
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _html_charts(charts: Mapping[str, list[Mapping[str, Any]]]) -> list[str]:
    """Each node's charts as inline SVG (pygal) with a caption; without pygal a note says how to get
    them and the captions stay. Never a text chart: those are for the Markdown."""
    e = html.escape
    if not charts:
        return [f'<p class="none">{e(NO_HISTORY)}</p>']
    out: list[str] = []
    drawn = True
    for node, node_charts in charts.items():
        out.append(f"<h3>{e(str(node))}</h3>")
        for chart in node_charts:
            svg = ""
            if drawn:
                try:
                    svg = report_charts.svg_chart(chart)
                except ImportError:
                    drawn = False
                    out.append(f'<p class="note">{e(report_charts.CHARTS_MISSING)}</p>')
            title = "" if svg else f"{report_charts.chart_title(chart)}: "
            out.append(f"<figure>{svg}<figcaption>{e(title + report_charts.caption(chart))}</figcaption></figure>")
    return out


def write_report(doc: Mapping[str, Any], directory: Path) -> list[Path]:
    """report.json, report.md and report.html in ``directory`` (made 0700 where missing), each 0600."""
    private_dir(directory)
    return [write_private(directory / "report.json", msgspec.json.format(msgspec.json.encode(doc)) + b"\n"),
            write_private(directory / "report.md", render_markdown(doc).encode()),
            write_private(directory / "report.html", render_html(doc).encode())]
