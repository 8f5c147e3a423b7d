"""The live Alertmanager test bed: Debian's ``prometheus-alertmanager`` (0.25) on a free loopback port, gossip
off, tmp storage, a webhook receiver served here (so tests see the notifications it sends); stopped by pid
(its own session), nothing left behind. ``post_alerts`` plays Prometheus: it posts alerts to the API."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ALERTMANAGER = os.environ.get("HPCTUI_ALERTMANAGER", "prometheus-alertmanager")

CONFIG = """route:
  receiver: hook
  group_by: ['alertname', 'Hostname']
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: http://127.0.0.1:{hook_port}/
        send_resolved: true
"""


def alertmanager_installed() -> str | None:
    """None when the bed can run, else why not."""
    if shutil.which(ALERTMANAGER) is None:
        return f"{ALERTMANAGER!r} not found (apt-get install prometheus-alertmanager; see .ci/alertmanager-deps.sh)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rfc3339(t: float) -> str:
    return dt.datetime.fromtimestamp(t, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


class _Hook(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.server.lock:  # type: ignore[attr-defined]
            self.server.received.append(json.loads(body or b"{}"))  # type: ignore[attr-defined]
        self.send_response(200)
        self.end_headers()

    def log_message(self, *_args: object) -> None:
        pass


class AlertmanagerLab:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="hpctui-am-"))
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.hook: ThreadingHTTPServer | None = None
        self.start_s: float | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def notifications(self) -> list[dict[str, Any]]:
        assert self.hook is not None
        with self.hook.lock:  # type: ignore[attr-defined]
            return list(self.hook.received)  # type: ignore[attr-defined]

    def start(self, timeout_s: float = 30.0) -> None:
        t0 = time.monotonic()
        self.hook = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
        self.hook.lock = threading.Lock()  # type: ignore[attr-defined]
        self.hook.received = []  # type: ignore[attr-defined]
        threading.Thread(target=self.hook.serve_forever, daemon=True).start()
        (self.dir / "am.yml").write_text(CONFIG.format(hook_port=self.hook.server_address[1]))
        self.port = free_port()
        log = open(self.dir / "am.log", "wb")  # noqa: SIM115 - owned by the process
        self.proc = subprocess.Popen(
            [ALERTMANAGER, f"--config.file={self.dir / 'am.yml'}", f"--storage.path={self.dir / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--cluster.listen-address=", "--log.level=warn"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"alertmanager exited: {(self.dir / 'am.log').read_text()[-800:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError("alertmanager not ready in time")
        self.start_s = time.monotonic() - t0

    def api(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            raw = r.read()
        return json.loads(raw) if raw.strip() else None

    def post_alerts(self, *alerts: dict[str, Any], minutes: float = 10) -> None:
        """Fire alerts as Prometheus would (each ``{labels, annotations[, generatorURL]}``), ending in ``minutes``."""
        now = time.time()
        self.api("POST", "/api/v2/alerts", [{**a, "startsAt": rfc3339(now - 60), "endsAt": rfc3339(now + minutes * 60)}
                                            for a in alerts])

    def resolve_all(self) -> None:
        """End every alert now and expire every silence (between tests)."""
        now = time.time()
        alerts = self.api("GET", "/api/v2/alerts")
        if alerts:
            self.api("POST", "/api/v2/alerts", [{"labels": a["labels"], "annotations": a.get("annotations", {}),
                                                "startsAt": a["startsAt"], "endsAt": rfc3339(now - 1)} for a in alerts])
        for s in self.api("GET", "/api/v2/silences") or []:
            if s["status"]["state"] != "expired":
                self.api("DELETE", f"/api/v2/silence/{s['id']}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)
        self.proc = None
        if self.hook is not None:
            self.hook.shutdown()
            self.hook.server_close()
            self.hook = None
        shutil.rmtree(self.dir, ignore_errors=True)
