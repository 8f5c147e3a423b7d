"""Tell someone when a new problem appears (#25 §3): once per problem, again when it escalates, never on
every refresh.

:class:`Notifier` compares each snapshot's findings with what it has seen: a finding of ``min_severity`` or
worse that was not there before is *new*; one that got worse is *escalated*; one that went away is forgotten
after ``forget_after_s`` (so a flapping link does not page on every flap). What is already wrong when hpctui
starts is the baseline, not news. Sinks: the terminal (bell, and a desktop notification through the terminal
with OSC 9 / OSC 777 — sanitised text only) and a webhook (JSON POST, retried with backoff, from a bounded
queue: never blocks the caller).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec

from hpctui.base.errors import describe_error
from hpctui.base.sanitize import clean_text, redact_url
from hpctui.findings.health import Finding
from hpctui.model import Severity

if TYPE_CHECKING:
    import aiohttp

SEVERITY_NAMES: dict[str, Severity] = {"warning": Severity.WARNING, "error": Severity.ERROR,
                                       "critical": Severity.CRITICAL}


class NotifySettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """The ``[notify]`` section."""

    min_severity: Literal["warning", "error", "critical"] = "critical"
    """New findings this bad or worse notify."""
    bell: bool = True
    """The terminal bell."""
    desktop: bool = True
    """A desktop notification through the terminal (OSC 9 and OSC 777; terminals without them ignore both)."""
    webhook_url: str | None = None
    """POST one JSON object per notice here (e.g. a chat webhook relay); none when unset."""
    webhook_timeout_s: Annotated[float, msgspec.Meta(gt=0, le=60)] = 5.0
    """One webhook POST (connect + answer), seconds."""
    webhook_retries: Annotated[int, msgspec.Meta(ge=0, le=10)] = 3
    """Tries after the first, with backoff 1 s, 2 s, 4 s, …"""
    forget_after_s: Annotated[float, msgspec.Meta(ge=0)] = 300.0
    """A problem gone this long notifies again when it comes back."""
    wall_flash: bool = True
    """The wall display flashes the new problem."""

    def __post_init__(self) -> None:
        if self.webhook_url is not None and not self.webhook_url.startswith(("http://", "https://")):
            raise ValueError("webhook_url must start with http:// or https://")

    @property
    def threshold(self) -> Severity:
        return SEVERITY_NAMES[self.min_severity]


class Notice(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One thing worth telling someone about."""

    cluster: str
    time: float
    finding: Finding
    escalated_from: Severity | None = None  # None: a new problem

    @property
    def text(self) -> str:
        """One sanitised line: ``CRITICAL gpu0007: GPU 3 Xid 79 (fallen off the bus)``."""
        node = self.finding.object.split("/")[1].split(":")[0] if "/" in self.finding.object else self.finding.object
        was = f" (was {self.escalated_from.name.lower()})" if self.escalated_from is not None else ""
        return clean_text(f"{self.finding.severity.name} {node}: {self.finding.message}{was}")[:240]

    def to_json(self) -> dict[str, Any]:
        f = self.finding
        return {"cluster": self.cluster, "time": self.time, "severity": f.severity.name.lower(), "object": f.object,
                "code": f.code, "message": f.message, "action": f.action,
                "escalated_from": self.escalated_from.name.lower() if self.escalated_from is not None else None}


class Notifier:
    """Remembers which problems it has told about; :meth:`observe` returns only what is news."""

    def __init__(self, settings: NotifySettings, cluster: str, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.cluster = cluster
        self.clock = clock
        self.muted = False  # the per-session mute: still tracks, tells nobody
        self._told: dict[tuple[str, str], Severity] = {}  # (object, code) -> severity last told (or baseline)
        self._gone_since: dict[tuple[str, str], float] = {}
        self._primed = False

    def observe(self, findings: Iterable[Finding]) -> list[Notice]:
        now = self.clock()
        threshold = self.settings.threshold
        seen: dict[tuple[str, str], Finding] = {}
        for f in findings:
            key = (f.object, f.code)
            if key not in seen or f.severity > seen[key].severity:
                seen[key] = f
        notices: list[Notice] = []
        for key, f in seen.items():
            self._gone_since.pop(key, None)
            before = self._told.get(key)
            if before is None:
                self._told[key] = f.severity
                if self._primed and f.severity >= threshold:
                    notices.append(Notice(cluster=self.cluster, time=now, finding=f))
            elif f.severity > before:
                self._told[key] = f.severity
                if self._primed and f.severity >= threshold:
                    notices.append(Notice(cluster=self.cluster, time=now, finding=f, escalated_from=before))
        for key in list(self._told):
            if key in seen:
                continue
            since = self._gone_since.setdefault(key, now)
            if now - since >= self.settings.forget_after_s:
                del self._told[key]
                del self._gone_since[key]
        self._primed = True
        notices.sort(key=lambda n: n.finding.severity, reverse=True)
        return [] if self.muted else notices


def terminal_sequences(notice: Notice, *, bell: bool, desktop: bool) -> str:
    """What to write to the terminal: BEL, OSC 9 (iTerm2, WezTerm, Windows Terminal, kitty) and OSC 777
    (rxvt, foot, Konsole, VTE) desktop notifications. The text is sanitised (no ESC, BEL or other control
    can end the sequence early) and ``;`` cannot split OSC 777's fields."""
    out = "\a" if bell else ""
    if desktop:
        body = notice.text.replace("\x07", "").replace("\x1b", "")
        out += f"\x1b]9;hpctui: {body}\x07"
        out += f"\x1b]777;notify;hpctui {clean_text(notice.cluster).replace(';', ',')};{body.replace(';', ',')}\x07"
    return out


class WebhookSender:
    """POSTs notices as JSON from a bounded queue on the event loop; :meth:`submit` never blocks or raises."""

    QUEUE = 256

    def __init__(self, settings: NotifySettings, sleep: Callable[[float], Any] = asyncio.sleep) -> None:
        assert settings.webhook_url is not None
        self.settings = settings
        self.url = settings.webhook_url
        self.where = redact_url(self.url)
        self.sleep = sleep
        self._queue: deque[Notice] = deque(maxlen=self.QUEUE)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.sent = 0
        self.dropped = 0  # pushed out of a full queue, or given up after the retries
        self.last_error: str | None = None

    def submit(self, notice: Notice) -> None:
        if len(self._queue) == self._queue.maxlen:
            self.dropped += 1
        self._queue.append(notice)
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="hpctui-webhook")

    async def _run(self) -> None:
        import aiohttp  # only when a notice is sent: importing it costs ~0.3 s before the first paint

        timeout = aiohttp.ClientTimeout(total=self.settings.webhook_timeout_s)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            while True:
                if not self._queue:
                    self._wake.clear()
                    try:
                        await asyncio.wait_for(self._wake.wait(), timeout=30)
                    except TimeoutError:
                        return  # idle: the next submit starts a new task
                    continue
                notice = self._queue.popleft()
                await self._deliver(session, notice)

    async def _deliver(self, session: aiohttp.ClientSession, notice: Notice) -> None:
        import aiohttp

        body = msgspec.json.encode(notice.to_json())
        for attempt in range(self.settings.webhook_retries + 1):
            try:
                async with session.post(self.url, data=body, headers={"Content-Type": "application/json"}) as resp:
                    await resp.read()
                    if resp.status < 400:
                        self.sent += 1
                        self.last_error = None
                        return
                    self.last_error = f"{self.where}: HTTP {resp.status} {resp.reason}"
                    if 400 <= resp.status < 500 and resp.status != 429:
                        break  # the receiver refuses it: trying again will not help
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                self.last_error = redact_url(f"{self.where}: {describe_error(exc)}")
            if attempt < self.settings.webhook_retries:
                await self.sleep(2.0 ** attempt)
        self.dropped += 1

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
