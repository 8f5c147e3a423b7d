"""Notifications (#25 §3): once per problem, again when it escalates, not on every refresh, not for what was
already wrong at start; terminal sequences carry sanitised text only; the webhook posts JSON to a real loopback
receiver, retries with backoff and never blocks the caller."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from hpctui.core.config import parse_config
from hpctui.core.notify import Notice, Notifier, NotifySettings, WebhookSender, terminal_sequences
from hpctui.findings.health import Finding
from hpctui.model import Severity


def f(sev: Severity, obj: str = "gpu/gpu0007/3", code: str = "xid79", msg: str = "GPU 3 Xid 79") -> Finding:
    return Finding(severity=sev, object=obj, code=code, message=msg)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_new_problems_notify_once_and_again_when_they_escalate() -> None:
    clock = Clock()
    n = Notifier(NotifySettings(min_severity="error", forget_after_s=60), "lab", clock)
    assert n.observe([f(Severity.CRITICAL, "node/gpu0001", "slurm_down")]) == []  # already wrong at start
    assert n.observe([f(Severity.CRITICAL, "node/gpu0001", "slurm_down")]) == []
    warn = f(Severity.WARNING, code="temp", msg="GPU 3 at 88 °C")
    assert n.observe([warn]) == []  # below min_severity: tracked, not told
    (up,) = n.observe([f(Severity.ERROR, code="temp", msg="GPU 3 at 95 °C")])
    assert up.escalated_from is Severity.WARNING and up.text == "ERROR gpu0007: GPU 3 at 95 °C (was warning)"
    (new,) = n.observe([f(Severity.ERROR, code="temp"), f(Severity.CRITICAL)])
    assert new.finding.code == "xid79" and new.escalated_from is None
    assert n.observe([f(Severity.ERROR, code="temp"), f(Severity.CRITICAL)]) == []  # every refresh: nothing new
    clock.t += 30
    assert n.observe([f(Severity.ERROR, code="temp")]) == []  # the Xid finding went away ...
    clock.t += 10
    assert n.observe([f(Severity.ERROR, code="temp"), f(Severity.CRITICAL)]) == []  # ... a flap within 60 s: quiet
    clock.t += 10
    n.observe([f(Severity.ERROR, code="temp")])
    clock.t += 61
    n.observe([f(Severity.ERROR, code="temp")])
    assert len(n.observe([f(Severity.ERROR, code="temp"), f(Severity.CRITICAL)])) == 1  # gone long: news again
    n.muted = True
    clock.t += 1
    assert n.observe([f(Severity.CRITICAL, "node/gpu0002", "slurm_down")]) == []


def test_terminal_sequences_cannot_be_broken_by_a_hostile_message() -> None:
    hostile = f(Severity.CRITICAL, msg="boom\x07\x1b]52;c;cm0gLXJmIH4=\x07; rm -rf\u202e")
    seq = terminal_sequences(Notice(cluster="lab;x", time=0, finding=hostile), bell=True, desktop=True)
    assert seq.startswith("\a\x1b]9;hpctui: CRITICAL gpu0007: boom")
    body = seq[1:]
    assert body.count("\x07") == 2 and body.count("\x1b") == 2 and "\u202e" not in seq  # only our two OSC frames
    osc777 = body.split("\x07")[1]
    assert osc777.startswith("\x1b]777;notify;hpctui lab,x;") and osc777.count(";") == 3
    assert terminal_sequences(Notice(cluster="c", time=0, finding=hostile), bell=False, desktop=False) == ""


def test_notify_settings_from_the_config() -> None:
    config = parse_config({"notify": {"min_severity": "warning", "webhook_url": "http://127.0.0.1:1/hook"}})
    assert config.notify.threshold is Severity.WARNING
    with pytest.raises(Exception, match="webhook_url"):
        parse_config({"notify": {"webhook_url": "file:///etc/passwd"}})


class _Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.server.lock:  # type: ignore[attr-defined]
            self.server.calls += 1  # type: ignore[attr-defined]
            fail = self.server.calls <= self.server.fail_first  # type: ignore[attr-defined]
            if not fail:
                self.server.got.append(json.loads(body))  # type: ignore[attr-defined]
        self.send_response(503 if fail else 204)
        self.end_headers()

    def log_message(self, *_a: object) -> None:
        pass


@pytest.fixture
def receiver() -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.lock, server.calls, server.fail_first, server.got = threading.Lock(), 0, 0, []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


async def test_the_webhook_retries_and_delivers_json(receiver: ThreadingHTTPServer) -> None:
    receiver.fail_first = 2  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
    waits: list[float] = []

    async def sleep(s: float) -> None:
        waits.append(s)

    sender = WebhookSender(NotifySettings(webhook_url=url, webhook_retries=3), sleep=sleep)
    notice = Notice(cluster="lab", time=5.0, finding=f(Severity.CRITICAL), escalated_from=Severity.WARNING)
    sender.submit(notice)  # returns at once: the POST runs on the loop
    for _ in range(200):
        if sender.sent:
            break
        await asyncio.sleep(0.02)
    await sender.close()
    assert sender.sent == 1 and waits == [1.0, 2.0]
    (got,) = receiver.got  # type: ignore[attr-defined]
    assert got == {"cluster": "lab", "time": 5.0, "severity": "critical", "object": "gpu/gpu0007/3", "code": "xid79",
                   "message": "GPU 3 Xid 79", "action": got["action"], "escalated_from": "warning"}
    assert got["action"] == "reboot the node"  # the finding's recommended next step (Xid 79)


async def test_an_unreachable_webhook_gives_up_without_blocking() -> None:
    async def sleep(_s: float) -> None:
        return None

    sender = WebhookSender(NotifySettings(webhook_url="http://127.0.0.1:9/x", webhook_retries=1), sleep=sleep)
    sender.submit(Notice(cluster="lab", time=0, finding=f(Severity.CRITICAL)))
    for _ in range(200):
        if sender.dropped:
            break
        await asyncio.sleep(0.02)
    await sender.close()
    assert sender.dropped == 1 and sender.sent == 0 and "127.0.0.1:9" in (sender.last_error or "")
