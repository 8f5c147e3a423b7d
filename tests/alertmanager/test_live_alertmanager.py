"""Against a real Alertmanager 0.25 (tests/testbed/alertmanager): alerts posted as Prometheus posts them become
findings on their nodes; ``hpctui act silence`` (the installed command, through the one executor: preview,
confirm, audit) creates a real silence that suppresses them, and ``expire_silence`` brings them back."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from amlab import AlertmanagerLab

from hpctui.core.config import parse_config
from hpctui.core.runtime import runtime_from_config
from hpctui.model.alerts import AlertState
from hpctui.sources.alertmanager.client import AlertmanagerError
from hpctui.sources.alertmanager.settings import AlertmanagerSettings
from hpctui.sources.alertmanager.source import AlertmanagerSource

pytestmark = pytest.mark.live
ROOT = Path(__file__).resolve().parents[2]
XID = {"labels": {"alertname": "GpuXidError", "Hostname": "gpu0007", "gpu": "3", "severity": "critical",
                  "job": "dcgm-exporter"},
       "annotations": {"summary": "Xid 79 on GPU 3"},
       "generatorURL": "http://prom:9090/graph?g0.expr=DCGM_FI_DEV_XID_ERRORS+%3E+0&g0.tab=1"}
DISK = {"labels": {"alertname": "NodeFilesystemAlmostOutOfSpace", "instance": "gpu0005:9100", "mountpoint": "/scratch",
                   "severity": "warning"}, "annotations": {"summary": "less than 5% space left on /scratch"}}
CONFIG = """audit_log = "{audit}"
[clusters.lab]
[[clusters.lab.sources]]
kind = "demo"
size = 16
seed = 1
[[clusters.lab.sources]]
kind = "alertmanager"
url = "{url}"
interval_s = 1
"""


def _hpctui(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    return subprocess.run([sys.executable, "-m", "hpctui", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def _live_silences(am: AlertmanagerLab) -> list[dict[str, object]]:
    """Silences not expired (Alertmanager keeps expired ones listed)."""
    return [s for s in am.api("GET", "/api/v2/silences") if s["status"]["state"] != "expired"]


def _config(tmp_path: Path, am: AlertmanagerLab) -> Path:
    path = tmp_path / "hpctui.toml"
    path.write_text(CONFIG.format(audit=tmp_path / "audit.jsonl", url=am.url))
    return path


async def test_alerts_and_silences_read_from_a_real_alertmanager(am: AlertmanagerLab) -> None:
    am.post_alerts(XID, DISK)
    source = AlertmanagerSource(AlertmanagerSettings(url=am.url))
    try:
        result = await source.collect()
    finally:
        await source.close()
    assert result.alerts is not None and result.silences == ()
    (xid,) = result.alerts["gpu0007"]
    assert (xid.name, xid.gpu, xid.state, xid.means) == ("GpuXidError", 3, AlertState.ACTIVE, ("xid",))
    assert result.alerts["gpu0005"][0].name == "NodeFilesystemAlmostOutOfSpace"


def test_a_node_alert_is_a_finding_until_hpctui_silences_it(am: AlertmanagerLab, tmp_path: Path) -> None:
    am.post_alerts(DISK)
    cfg = _config(tmp_path, am)
    snap = _hpctui(tmp_path, "snapshot", "--config", str(cfg), "--format", "json", "--problems")
    assert snap.returncode in (0, 1), snap.stderr
    assert "alert NodeFilesystemAlmostOutOfSpace: less than 5% space left on /scratch (Alertmanager)" in snap.stdout

    dry = _hpctui(tmp_path, "act", "silence", "--config", str(cfg), "--targets", "gpu0005",
                  "--reason", "disk swap on gpu0005 (ticket 42)", "--param", "hours=2", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert 'api/v2/silences Hostname="gpu0005" for 2 h' in dry.stdout  # dcgm-exporter's label
    assert 'api/v2/silences instance=~"gpu0005(:[0-9]+)?" for 2 h' in dry.stdout  # node_exporter's, with a port
    assert "silences NodeFilesystemAlmostOutOfSpace on gpu0005 (warning)" in dry.stdout
    assert _live_silences(am) == []  # a dry run sends nothing

    done = _hpctui(tmp_path, "act", "silence", "--config", str(cfg), "--targets", "gpu0005",
                   "--reason", "disk swap on gpu0005 (ticket 42)", "--param", "hours=2", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    silences = sorted(_live_silences(am), key=lambda s: s["matchers"][0]["name"])
    assert [s["matchers"] for s in silences] == [
        [{"name": "Hostname", "value": "gpu0005", "isRegex": False, "isEqual": True}],
        [{"name": "instance", "value": "gpu0005(:[0-9]+)?", "isRegex": True, "isEqual": True}]]
    silence = silences[1]
    assert silence["comment"] == "disk swap on gpu0005 (ticket 42)" and silence["createdBy"].endswith("(hpctui)")
    ends = time.mktime(time.strptime(silence["endsAt"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
    assert 7000 < ends - time.time() < 7300
    record = json.loads((tmp_path / "audit.jsonl").read_text().splitlines()[-1])
    assert record["action"] == "silence" and record["targets"] == ["gpu0005"]
    assert all(s["id"] in json.dumps(record["results"]) for s in silences)

    # Alertmanager's own rule is "silenced" once it has processed the silence: the next read shows it
    deadline = time.monotonic() + 10
    while am.api("GET", "/api/v2/alerts")[0]["status"]["state"] != "suppressed" and time.monotonic() < deadline:
        time.sleep(0.2)
    snap = _hpctui(tmp_path, "snapshot", "--config", str(cfg), "--format", "json", "--problems")
    assert "NodeFilesystemAlmostOutOfSpace" not in snap.stdout

    again = _hpctui(tmp_path, "act", "silence", "--config", str(cfg), "--targets", "gpu0005",
                    "--reason", "second look", "--dry-run")
    assert "gpu0005 is already silenced by" in again.stdout and "the first is kept" in again.stdout

    ids = ",".join(s["id"] for s in silences)
    gone = _hpctui(tmp_path, "act", "expire_silence", "--config", str(cfg), "--targets", ids, "--yes")
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert "its alerts notify again" in gone.stdout
    assert {am.api("GET", f"/api/v2/silence/{s['id']}")["status"]["state"] for s in silences} == {"expired"}
    snap = _hpctui(tmp_path, "snapshot", "--config", str(cfg), "--format", "json", "--problems")
    assert "alert NodeFilesystemAlmostOutOfSpace" in snap.stdout  # firing, and a finding, again


def test_read_only_refuses_a_silence_and_sends_nothing(am: AlertmanagerLab, tmp_path: Path) -> None:
    cfg = _config(tmp_path, am)
    out = _hpctui(tmp_path, "act", "silence", "--config", str(cfg), "--targets", "gpu0003", "--reason", "x",
                  "--yes", "--read-only")
    assert out.returncode != 0 and "read-only" in out.stdout + out.stderr
    assert _live_silences(am) == []


async def test_errors_are_one_line_and_the_runtime_builds_the_source(am: AlertmanagerLab, tmp_path: Path) -> None:
    config = parse_config({"audit_log": str(tmp_path / "a.jsonl"), "clusters": {"lab": {"sources": [
        {"kind": "alertmanager", "url": am.url, "interval_s": 1}]}}})
    runtime = runtime_from_config(config, "lab")
    try:
        source = runtime.sources[0]
        assert isinstance(source, AlertmanagerSource)
        with pytest.raises(AlertmanagerError, match=r"HTTP 400 .*parsing"):
            await source.client.create_silence([], "x", "y", "t", "c")
        with pytest.raises(AlertmanagerError, match=r"HTTP 500 .*silence not found"):
            await source.client.expire_silence("00000000-0000-0000-0000-000000000000")
    finally:
        await runtime.stop()
    down = AlertmanagerSource(AlertmanagerSettings(url="http://127.0.0.1:9", timeout_s=2))
    try:
        with pytest.raises(AlertmanagerError, match=re.escape("cannot reach http://127.0.0.1:9")):
            await down.collect()
    finally:
        await down.close()


def test_drain_silences_first_and_resume_expires_only_what_it_set(am: AlertmanagerLab, tmp_path: Path) -> None:
    """drain → silence created (a step of the plan, in the preview, audited) → resume → that silence expired;
    a silence an admin set by hand on the same node is kept."""
    am.post_alerts(XID)
    cfg = _config(tmp_path, am)
    now = time.time()
    from amlab import rfc3339

    hand = am.api("POST", "/api/v2/silences", {
        "matchers": [{"name": "Hostname", "value": "gpu0007", "isRegex": False, "isEqual": True}],
        "startsAt": rfc3339(now), "endsAt": rfc3339(now + 3600), "createdBy": "bob", "comment": "bob's own"})["silenceID"]
    dry = _hpctui(tmp_path, "act", "drain", "--config", str(cfg), "--targets", "gpu0007", "--reason", "xid 79 gpu3",
                  "--param", "reason_mode=replace", "--dry-run")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert 'api/v2/silences Hostname="gpu0007" for 8 h: “drain: xid 79 gpu3”' in dry.stdout
    assert "gpu0007 is already silenced by bob" in dry.stdout and "the first is kept" in dry.stdout
    assert dry.stdout.index("api/v2/silences") < dry.stdout.index("scontrol")  # the silence comes first

    done = _hpctui(tmp_path, "act", "drain", "--config", str(cfg), "--targets", "gpu0007", "--reason", "xid 79 gpu3",
                   "--param", "reason_mode=replace", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    mine = [s for s in _live_silences(am) if s["createdBy"].endswith("(hpctui drain)")]
    assert len(mine) == 2 and {s["comment"] for s in mine} == {"drain: xid 79 gpu3"}
    steps = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert any(r.get("step_action") == "silence" for r in steps)

    # each `hpctui act` simulates the demo cluster afresh (its drain is not kept), so the demo's own resume step
    # may refuse: what matters here is the silence step after it, which runs whatever the scheduler said
    back = _hpctui(tmp_path, "act", "resume", "--config", str(cfg), "--targets", "gpu0007", "--yes")
    assert "its alerts notify again" in back.stdout
    assert "alertmanager expire_silence: 1/1 ok" in back.stdout, back.stdout
    left = _live_silences(am)
    assert [s["id"] for s in left] == [hand]  # bob's silence kept, hpctui's two expired
