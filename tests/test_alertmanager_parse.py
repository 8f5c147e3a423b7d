"""Alertmanager API v2 answers (recorded from a real Alertmanager 0.25: tests/fixtures/alertmanager) → alerts per
node and silences; alert findings and their de-duplication against hpctui's own findings; the store's merge of
an HA pair."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hpctui.core.store import Store
from hpctui.findings.health import Finding, Thresholds, alert_findings, node_findings
from hpctui.model import ClusterSnapshot, Severity, SourceResult
from hpctui.model.alerts import AlertState, SilenceState
from hpctui.sources.alertmanager.parse import AnswerError, node_namer, parse_alerts, parse_silences, rule_metrics

FIX = Path(__file__).parent / "fixtures" / "alertmanager"
LABELS = ["Hostname", "hostname", "node", "nodename", "instance"]
NAMER = node_namer(LABELS, r"^([^:]+)", r"\1")


def _node(value: str) -> str | None:
    return NAMER({"Hostname": value})


def test_real_alerts_land_on_their_nodes() -> None:
    alerts, dropped = parse_alerts((FIX / "alerts-0.25-active.json").read_bytes(), NAMER)
    assert dropped == 0
    assert sorted(alerts) == ["", "gpu0007", "gpu0008"]  # "" = the Watchdog: cluster-wide
    (xid,) = alerts["gpu0007"]
    assert (xid.name, xid.gpu, xid.severity, xid.state) == ("GpuXidError", 3, Severity.CRITICAL, AlertState.ACTIVE)
    assert xid.summary == "Xid 79 on GPU 3" and xid.firing
    assert xid.metrics == ("DCGM_FI_DEV_XID_ERRORS",) and xid.means == ("xid",)
    (fs,) = alerts["gpu0008"]  # named by instance="gpu0008:9100": the port is not part of the node
    assert fs.name == "NodeFilesystemAlmostOutOfSpace" and fs.severity is Severity.WARNING and fs.gpu is None
    assert fs.metrics == ("node_filesystem_avail_bytes", "node_filesystem_size_bytes") and fs.means == ()
    assert alerts[""][0].severity is Severity.INFO  # severity="none"


def test_a_silenced_alert_is_suppressed_and_pages_nobody() -> None:
    alerts, _ = parse_alerts((FIX / "alerts-0.25-suppressed.json").read_bytes(), NAMER)
    (xid,) = alerts["gpu0007"]
    assert xid.state is AlertState.SUPPRESSED
    assert xid.silenced_by == ("f18db436-48be-4658-aa44-0b54c8b44914",) and not xid.firing


def test_real_silences_name_their_nodes_and_expired_ones_are_dropped() -> None:
    (s,), bad = parse_silences((FIX / "silences-0.25-active.json").read_bytes(), LABELS, _node)
    assert bad == 0
    assert (s.state, s.created_by, s.nodes) == (SilenceState.ACTIVE, "alice", ("gpu0007",))
    assert s.comment == "hpctui: drain gpu0007 (Xid 79)" and s.matcher_text == 'Hostname="gpu0007"'
    assert s.ends_at is not None and s.starts_at is not None and s.ends_at - s.starts_at == pytest.approx(7200, abs=1)
    assert parse_silences((FIX / "silences-0.25-expired.json").read_bytes(), LABELS, _node)[0] == ()
    (old,), _ = parse_silences((FIX / "silences-0.25-expired.json").read_bytes(), LABELS, _node, keep_expired=True)
    assert old.state is SilenceState.EXPIRED


def test_hostile_and_malformed_alerts_cost_one_alert() -> None:
    good = json.loads((FIX / "alerts-0.25-active.json").read_text())
    evil = json.loads(json.dumps(good[0]))
    evil["fingerprint"] = "ffff"
    evil["labels"]["Hostname"] = "gpu0009"
    evil["annotations"]["summary"] = "\x1b]52;c;cm0gLXJmIH4=\x07boom \x1b[2J\u202eevil"
    body = json.dumps([*good, evil, {"labels": {"alertname": "NoFingerprint"}}, 42, {"fingerprint": "x"}]).encode()
    alerts, dropped = parse_alerts(body, NAMER)
    assert dropped == 3
    summary = alerts["gpu0009"][0].summary
    assert "\x1b" not in summary and "\u202e" not in summary and "boom" in summary
    bad_node = json.loads(json.dumps(good[0]))
    bad_node["labels"]["Hostname"] = "-oProxyCommand=x"
    alerts, _ = parse_alerts(json.dumps([bad_node]).encode(), NAMER)
    assert list(alerts) == [""]  # not a host name: not joined to any node
    with pytest.raises(AnswerError):
        parse_alerts(b'{"code":400}', NAMER)
    with pytest.raises(AnswerError, match="cap"):
        parse_alerts(json.dumps(good).encode(), NAMER, max_alerts=2)


def test_the_rule_metric_comes_from_the_generator_url() -> None:
    url = "http://prom:9090/graph?g0.expr=max+by+%28Hostname%29+%28DCGM_FI_DEV_GPU_TEMP%29+%3E+85&g0.tab=1"
    assert rule_metrics(url) == ("DCGM_FI_DEV_GPU_TEMP",)
    assert rule_metrics(None) == () and rule_metrics("not a url") == ()


def test_site_names_mean_hpctui_codes_too() -> None:
    raw = json.loads((FIX / "alerts-0.25-active.json").read_text())
    for a in raw:
        a.pop("generatorURL", None)
    alerts, _ = parse_alerts(json.dumps(raw).encode(), NAMER, same_as={"GpuXidError": ["xid"]})
    assert alerts["gpu0007"][0].means == ("xid",)


def _finding(code: str, obj: str = "gpu/gpu0007/3") -> Finding:
    return Finding(severity=Severity.CRITICAL, object=obj, code=code, message=code)


def test_an_alert_is_a_finding_unless_hpctui_already_says_the_same() -> None:
    alerts, _ = parse_alerts((FIX / "alerts-0.25-active.json").read_bytes(), NAMER)
    (f,) = alert_findings(alerts["gpu0007"], [])
    assert (f.severity, f.object, f.code) == (Severity.CRITICAL, "gpu/gpu0007/3", "alert")
    assert f.message == "alert GpuXidError: Xid 79 on GPU 3 (Alertmanager)" and "silence" in f.action
    assert alert_findings(alerts["gpu0007"], [_finding("xid79")]) == []  # the same Xid: shown once, hpctui's
    assert len(alert_findings(alerts["gpu0007"], [_finding("temp")])) == 1  # another problem: both shown
    suppressed, _ = parse_alerts((FIX / "alerts-0.25-suppressed.json").read_bytes(), NAMER)
    assert alert_findings(suppressed["gpu0007"], []) == []


def test_alerts_reach_the_nodes_findings_through_the_store() -> None:
    alerts, _ = parse_alerts((FIX / "alerts-0.25-active.json").read_bytes(), NAMER)
    silences, _ = parse_silences((FIX / "silences-0.25-active.json").read_bytes(), LABELS, _node)
    store = Store(cluster="t", clock=lambda: 100.0)
    store.apply(SourceResult(source="am-a", time=100.0, alerts=alerts, silences=silences))
    store.apply(SourceResult(source="am-b", time=100.0, alerts=alerts, silences=silences))  # an HA pair
    snap: ClusterSnapshot = store.snapshot()
    assert len(snap.alerts["gpu0007"]) == 1 and len(snap.silences) == 1  # each once
    codes = [f.code for f in node_findings(snap, "gpu0008", Thresholds())]
    assert codes == ["alert"]


def test_the_node_panel_says_who_silenced_what_until_when() -> None:
    from hpctui.ui.widgets.gpu_panel import node_detail

    alerts, _ = parse_alerts((FIX / "alerts-0.25-suppressed.json").read_bytes(), NAMER)
    silences, _ = parse_silences((FIX / "silences-0.25-active.json").read_bytes(), LABELS, _node)
    store = Store(cluster="t", clock=lambda: 100.0)
    store.apply(SourceResult(source="am", time=100.0, alerts=alerts, silences=silences))
    text = node_detail(store.snapshot(), "gpu0007", Thresholds()).plain
    assert "Alertmanager" in text and "GpuXidError GPU 3: Xid 79 on GPU 3 (silenced)" in text
    assert 'silence Hostname="gpu0007" by alice until' in text and "“hpctui: drain gpu0007 (Xid 79)”" in text
    firing, _ = parse_alerts((FIX / "alerts-0.25-active.json").read_bytes(), NAMER)
    store.apply(SourceResult(source="am", time=101.0, alerts=firing, silences=()))
    text = node_detail(store.snapshot(), "gpu0008", Thresholds()).plain
    assert " warn  NodeFilesystemAlmostOutOfSpace: Filesystem has less than 5% space left." in text
