"""Incident reports: content checked field by field against the snapshot they were made from;
secrets from the config and hostile cluster strings never reach the files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from hpctui.base.secrets import secrets_of
from hpctui.core.config import load_config
from hpctui.core.runtime import Runtime, demo_runtime
from hpctui.model import ClusterSnapshot, Event, Severity
from hpctui.model.action import ActionKind
from hpctui.model.gpu import XID_MEANING
from hpctui.report.incident import (
    REDACTED,
    ReportError,
    build_report,
    parse_since,
    render_html,
    scope,
    write_report,
    xid_action,
)

T0 = 1_796_000_000.0
TOKEN = "eyJhbGciOi.SECRET-JWT-7f3a9"
PASSWORD = "hunter2-pa55word"
KEY_PATH = "/home/ops/.ssh/id_ed25519_cluster"
HOSTILE = "\x1b]52;c;cHduZWQ=\x07<script>alert(1)</script> & \x1b[2J"


class StepClock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


async def incident(tmp_path: Path) -> tuple[Runtime, ClusterSnapshot, dict[str, object]]:
    """A demo cluster with 10 samples of history, a hostile drain (carrying a pasted token) done through
    the executor, and a report on three nodes."""
    clock = StepClock()
    rt = demo_runtime(size=8, seed=1, clock=clock, start_time=T0, audit_path=tmp_path / "audit.jsonl")
    rt.secrets = (TOKEN, PASSWORD, KEY_PATH)
    for _ in range(10):
        await rt.collect_once()
        clock.t += 2.0
    snap = rt.store.snapshot()
    # Reasons with control characters are refused before they reach a backend (issue #6), so the
    # escape sequences come the way cluster data comes: an event from a source; the drain reason
    # carries the printable half (HTML) and the pasted token.
    rt.store.add_events([Event(time=clock.t, source="demo", object="node/gpu0003", severity=Severity.WARNING,
                               message=f"{HOSTILE} token={TOKEN}")])
    printable = HOSTILE.replace("\x1b]52;c;cHduZWQ=\x07", "").replace("\x1b[2J", "")
    plan = rt.executor.plan(ActionKind.DRAIN_NODES, ["gpu0003"], {"reason": f"{printable} token={TOKEN}"}, snap)
    assert plan.runnable, plan.errors
    assert (await rt.executor.execute(plan, confirmation=True)).ok
    check = rt.executor.plan(ActionKind.HEALTH_CHECK, ["gpu[0003,0005]"], {"check": "dcgm-r2"}, snap)
    assert check.runnable, check.errors
    await rt.executor.execute(check, confirmation=True)  # the demo's nodes answer with recorded outputs
    await rt.collect_once()
    xid = rt.sources[0].sim.place.xid_node  # type: ignore[attr-defined]
    records = [await rt.node_record(n, 30 * 86400) for n in ("gpu0003", xid)]  # the drain above; Xid 79 history
    await rt.stop()
    snap = rt.store.snapshot()
    nodes, jobs = scope(snap, "gpu[0001,0003,0005]", None)
    doc = build_report(snap, nodes=nodes, jobs=jobs, since_s=3600, thresholds=rt.thresholds,
                       history=rt.store.history.get, series=rt.store.series,
                       audit=rt.executor.audit.read(intents=True) if rt.executor.audit else [],
                       secrets=rt.secrets, user="alice", host="ops1", checks=rt.check_history,
                       held=rt.check_marks, node_records=records)
    return rt, snap, doc


async def test_content_matches_the_snapshot_field_by_field(tmp_path: Path) -> None:
    rt, snap, doc = await incident(tmp_path)
    assert doc["cluster"] == "demo" and doc["generated_by"]["user"] == "alice"  # type: ignore[index]
    assert doc["window"] == {"since": snap.time - 3600, "until": snap.time, "seconds": 3600}
    assert [n["name"] for n in doc["nodes"]] == ["gpu0001", "gpu0003", "gpu0005"]  # type: ignore[index]
    for row in doc["nodes"]:  # type: ignore[attr-defined]
        slurm = snap.nodes[row["name"]].slurm
        assert slurm is not None
        assert row["slurm_state"] == slurm.display_state
        assert row["reason_user"] == slurm.reason_user
        k8s = snap.nodes[row["name"]].k8s
        assert row["k8s_ready"] == (k8s.conditions.get("Ready") if k8s else None)
    gpus = {(g["node"], g["index"]): g for g in doc["gpus"]}  # type: ignore[attr-defined]
    ecc = {(g["node"], g["index"]): g for g in doc["ecc"]}  # type: ignore[attr-defined]
    expected_xids = []
    for node in ("gpu0001", "gpu0003", "gpu0005"):
        for g in snap.gpus[node]:
            row = gpus[(node, g.index)]
            assert (row["util_pct"], row["temp_c"], row["power_w"], row["model"], row["last_xid"]) == \
                (g.util_pct, g.temp_c, g.power_w, g.model, g.last_xid)
            e = ecc[(node, g.index)]
            assert (e["ecc_uncorrected_volatile"], e["ecc_corrected_aggregate"], e["remapped_uncorrectable"],
                    e["remap_pending"]) == (g.ecc_uncorrected_volatile, g.ecc_corrected_aggregate,
                                            g.remapped_uncorrectable, g.remap_pending)
            expected_xids += [(node, g.index, x.xid, x.time) for x in g.xid_events]
    assert len(gpus) == sum(len(snap.gpus[n]) for n in ("gpu0001", "gpu0003", "gpu0005"))
    xids = doc["xid_events"]
    assert sorted((x["node"], x["gpu"], x["xid"], x["time"]) for x in xids) == sorted(expected_xids)  # type: ignore[attr-defined]
    assert expected_xids, "the demo's Xid 79 node is in scope"
    for x in xids:  # type: ignore[attr-defined]
        assert x["meaning"] == XID_MEANING[x["xid"]] and x["action"] == xid_action(x["xid"])
    xid79 = next(x for x in xids if x["xid"] == 79)  # type: ignore[attr-defined]
    assert xid79["action"] == "reboot the node"  # XID_ACTION (FACTS §1)
    ib = {(p["node"], p["device"], p["port"]): p for p in doc["ib_ports"]}  # type: ignore[attr-defined]
    for node in ("gpu0001", "gpu0003", "gpu0005"):
        for p in snap.ib.get(node, ()):
            row = ib[(node, p.device, p.port)]
            assert (row["state"], row["rate_gbps"], row["counters"], row["deltas"]) == \
                (p.state, p.rate_gbps, dict(p.counters), dict(p.deltas))
        for m in snap.mounts.get(node, ()):
            assert {"node": node, "target": m.target, "fstype": m.fstype, "source": m.source, "state": m.state.value,
                    "latency_ms": m.latency_ms, "detail": m.detail} in doc["mounts"]  # type: ignore[operator]
    running = {j.display_id for j in snap.jobs if j.state == "RUNNING" and j.nodes and
               any(n in j.nodes for n in ("gpu0001", "gpu0003", "gpu0005"))}
    assert {j["id"] for j in doc["jobs"]} == running and running  # type: ignore[attr-defined]
    pods = {(p.namespace, p.name) for p in snap.pods if p.node in ("gpu0001", "gpu0003", "gpu0005")}
    assert {(p["namespace"], p["name"]) for p in doc["pods"]} == pods  # type: ignore[attr-defined]
    # timeline: drain reasons, kernel (Xid) events, and the action from the audit trail, in time order
    timeline = doc["timeline"]
    sources = {e["source"] for e in timeline}  # type: ignore[attr-defined]
    assert {"slurm", "kernel", "action"} <= sources
    times = [e["time"] for e in timeline if e["time"] is not None]  # type: ignore[attr-defined]
    assert times == sorted(times)
    action, check = doc["actions"]  # type: ignore[misc]
    assert action["action"] == "drain" and action["targets"] == ["gpu0003"] and action["outcome"] == "1/1 ok"
    assert check["action"] == "check" and check["targets"] == ["gpu0003", "gpu0005"]
    # the health checks: each node's kept result (gpu0003's GPU 5 ECC errors fail DCGM's memory test there),
    # on the timeline too, and what the resume gate holds gpu0003 for
    rows = {r["node"]: r for r in doc["health_checks"]}  # type: ignore[attr-defined]
    assert rows["gpu0005"]["status"] == "passed" and rows["gpu0005"]["summary"] == "diag r2 passed (4 tests)"
    assert rows["gpu0003"]["status"] == "failed" and rows["gpu0003"]["failed"][0].startswith("memory GPU 5: Detected")
    assert "check" in sources
    held = {r["name"]: r["resume_held_for"] for r in doc["nodes"]}  # type: ignore[attr-defined]
    assert held["gpu0005"] == [] and held["gpu0003"][0]["domain"] == "gpu"
    # charts from the store's per-GPU/per-port history (10+ samples): one series per GPU and per port
    assert set(doc["charts"]) == {"gpu0001", "gpu0003", "gpu0005"}  # type: ignore[arg-type]
    by_metric = {c["metric"]: c for c in doc["charts"]["gpu0003"]}  # type: ignore[index]
    assert {"util", "temp", "power", "rx", "tx", "err"} <= set(by_metric)
    assert sorted(s["label"] for s in by_metric["temp"]["series"]) == sorted(f"GPU {g.index}" for g in snap.gpus["gpu0003"])
    assert [s["label"] for s in by_metric["temp"]["series"] if s["highlight"]] == ["GPU 5"]  # its ECC errors
    assert sorted(s["label"] for s in by_metric["rx"]["series"]) == \
        sorted(f"{p.device}:{p.port}" for p in snap.ib["gpu0003"])
    [ring] = [s for s in rt.store.series.gpu_series("gpu0003", "temp", 3600, snap.time) if s.label == "GPU 0"]
    [gpu0] = [s for s in by_metric["temp"]["series"] if s["label"] == "GPU 0"]
    temp_times = by_metric["temp"]["times"]
    assert [(t, v) for t, v in zip(temp_times, gpu0["values"], strict=True) if v is not None] == \
        [(t, round(v, 2)) for t, v in zip(ring.times, ring.values, strict=True)]


async def test_secrets_and_hostile_strings_never_reach_the_files(tmp_path: Path) -> None:
    _, _, doc = await incident(tmp_path)
    paths = write_report(doc, tmp_path / "out")
    assert [p.name for p in paths] == ["report.json", "report.md", "report.html"]
    for path in paths:
        text = path.read_text()
        for secret in (TOKEN, PASSWORD, KEY_PATH, "SECRET-JWT"):
            assert secret not in text, (path, secret)
        assert "\x1b" not in text and "\x07" not in text
    page = paths[2].read_text()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert REDACTED in page
    assert not re.search(r"https?://|<link|<script|src=|@import|url\(", page), "standalone: no external refs"
    assert "<style>" in page
    assert "<script>" not in paths[1].read_text()
    json.loads(paths[0].read_text())


def test_secrets_of_config(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"[clusters.x]\n[[clusters.x.sources]]\nkind = 'slurm'\njwt = '{TOKEN}'\n")
    assert TOKEN in secrets_of(load_config(cfg))
    raw = {"sources": [{"kind": "ssh", "password": PASSWORD, "key_file": KEY_PATH, "host": "gpu01"},
                       {"kind": "k8s", "auth": {"bearer_token": "abcd1234"}}]}
    found = secrets_of(raw)
    assert set(found) == {PASSWORD, KEY_PATH, "abcd1234"}


def test_since_and_scope_errors() -> None:
    assert parse_since("1h") == 3600 and parse_since("30m") == 1800 and parse_since("90") == 90
    for bad in ("", "0", "1w", "-1h", "soon"):
        with pytest.raises(ReportError):
            parse_since(bad)
    snap = ClusterSnapshot(cluster="c", time=0.0)
    with pytest.raises(ReportError, match="unknown node"):
        scope(snap, "ghost1", None)
    with pytest.raises(ReportError, match="--nodes and/or --jobs"):
        scope(snap, None, None)


def test_html_escapes_every_cell() -> None:
    doc = build_report(ClusterSnapshot(cluster="<b>c</b>", time=T0), nodes=[], jobs=["1"], since_s=60,
                       user="<i>u</i>", host="h")
    page = render_html(doc)
    assert "<b>c</b>" not in page and "&lt;b&gt;c&lt;/b&gt;" in page and "<i>u</i>" not in page


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_STATE_HOME": str(tmp_path / "state")}
    return subprocess.run([sys.executable, "-m", "hpctui", "report", *args], capture_output=True, text=True,
                          timeout=180, env=env)


def test_cli_report_from_the_demo(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    proc = run(tmp_path, "--demo", "--demo-size", "8", "--seed", "1", "--nodes", "gpu[0001-0002]", "--jobs", "1017",
               "--since", "1h", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(out / "report.json"), str(out / "report.md"), str(out / "report.html")]
    doc = msgspec.json.decode((out / "report.json").read_bytes())
    assert doc["scope"]["jobs"] == ["1017"] and "gpu0001" in doc["scope"]["nodes"]
    assert doc["window"]["seconds"] == 3600 and doc["xid_events"]
    assert doc["charts"], "the demo replays its recent past so the charts have a history"
    md = (out / "report.md").read_text()
    assert "## Xid events" in md and "## Timeline" in md and "reboot the node" in md
    page = (out / "report.html").read_text()
    assert page.count("<svg") == sum(len(c) for c in doc["charts"].values()) > 0 and "<pre>" not in page


def test_cli_report_usage_errors(tmp_path: Path) -> None:
    for args in (["--demo", "-o", str(tmp_path)], ["--demo", "--nodes", "gpu0001", "--since", "soon", "-o",
                                                   str(tmp_path)],
                 ["--demo", "--demo-size", "8", "--nodes", "nosuch1", "-o", str(tmp_path)], ["--demo"]):
        proc = run(tmp_path, *args)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
