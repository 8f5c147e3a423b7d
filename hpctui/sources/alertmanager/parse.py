"""Alertmanager API v2 answers → :class:`~hpctui.model.alerts.Alert` / :class:`~hpctui.model.alerts.Silence`.

Decoded typed (msgspec), every string sanitised; one malformed alert costs that alert (counted in ``dropped``),
never the answer. An alert's node comes from the first configured node label it carries, rewritten by the node
pattern and the cluster's node map; the metric names of its rule are read from ``generatorURL``'s ``g0.expr``
(what Prometheus writes there), so an alert can be matched to the hpctui finding that means the same thing.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable, Mapping

import msgspec

from hpctui.base.sanitize import clean_text
from hpctui.base.times import parse_time
from hpctui.model.alerts import ALERT_SEVERITY, Alert, AlertState, Silence, SilenceMatcher, SilenceState, means_of
from hpctui.model.common import Severity
from hpctui.model.hostlist import is_valid_hostname

MAX_LABELS = 64
MAX_VALUE = 512


class _Status(msgspec.Struct):
    state: str = "unprocessed"
    silencedBy: list[str] = msgspec.field(default_factory=list)
    inhibitedBy: list[str] = msgspec.field(default_factory=list)


class _Alert(msgspec.Struct):
    labels: dict[str, str] = msgspec.field(default_factory=dict)
    annotations: dict[str, str] = msgspec.field(default_factory=dict)
    fingerprint: str = ""
    startsAt: str | None = None
    status: _Status = msgspec.field(default_factory=_Status)
    generatorURL: str | None = None


class _Matcher(msgspec.Struct):
    name: str
    value: str
    isRegex: bool = False
    isEqual: bool = True


class _SilenceStatus(msgspec.Struct):
    state: str = "active"


class _Silence(msgspec.Struct):
    id: str
    matchers: list[_Matcher] = msgspec.field(default_factory=list)
    status: _SilenceStatus = msgspec.field(default_factory=_SilenceStatus)
    createdBy: str = ""
    comment: str = ""
    startsAt: str | None = None
    endsAt: str | None = None


_ALERTS = msgspec.json.Decoder(list[msgspec.Raw])
_ONE_ALERT = msgspec.json.Decoder(_Alert)
_ONE_SILENCE = msgspec.json.Decoder(_Silence)
_METRIC = re.compile(r"\b((?:DCGM_FI_[A-Z0-9_]+)|(?:node_[a-z0-9_]+))\b")


class AnswerError(ValueError):
    """The answer is not a JSON list of alerts/silences."""


NodeNamer = Callable[[dict[str, str]], str | None]


def node_namer(labels: list[str], pattern: str, replace: str, to_hpctui: Callable[[str], str] = str) -> NodeNamer:
    """labels of an alert → the hpctui node name, or None (a cluster-wide alert, or a name that is not a host)."""
    rx = re.compile(pattern)

    def name(alert_labels: dict[str, str]) -> str | None:
        value = next((alert_labels[k] for k in labels if alert_labels.get(k)), None)
        if value is None:
            return None
        m = rx.search(value)
        node = m.expand(replace) if m else value
        node = to_hpctui(node)
        return node if is_valid_hostname(node) else None

    return name


def rule_metrics(generator_url: str | None) -> tuple[str, ...]:
    """DCGM and node_exporter metric names in the rule expression Prometheus put in ``generatorURL``."""
    if not generator_url:
        return ()
    try:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(generator_url).query)
    except ValueError:
        return ()
    expr = " ".join(query.get("g0.expr", []))
    return tuple(dict.fromkeys(_METRIC.findall(expr)))[:8]


def _clean(value: str) -> str:
    return clean_text(value[:MAX_VALUE])


def _alert(raw: _Alert, namer: NodeNamer, same_as: Mapping[str, list[str]]) -> Alert:
    if not raw.fingerprint or not raw.labels.get("alertname"):
        raise ValueError("alert without fingerprint or alertname")
    labels = {_clean(k)[:128]: _clean(v) for k, v in list(raw.labels.items())[:MAX_LABELS]}
    try:
        state = AlertState(raw.status.state)
    except ValueError:
        state = AlertState.UNPROCESSED
    gpu_label = labels.get("gpu", "")
    summary = next((raw.annotations[k] for k in ("summary", "description", "message") if raw.annotations.get(k)), "")
    return Alert(
        fingerprint=_clean(raw.fingerprint)[:64],
        name=labels["alertname"],
        state=state,
        severity=ALERT_SEVERITY.get(labels.get("severity", "").lower(), Severity.WARNING),
        node=namer(labels),
        gpu=int(gpu_label) if gpu_label.isdigit() and len(gpu_label) <= 3 else None,
        summary=_clean(summary),
        starts_at=parse_time(raw.startsAt),
        silenced_by=tuple(_clean(s)[:64] for s in raw.status.silencedBy[:16]),
        inhibited_by=tuple(_clean(s)[:64] for s in raw.status.inhibitedBy[:16]),
        labels=tuple(sorted(labels.items())),
        metrics=(metrics := rule_metrics(raw.generatorURL)),
        means=means_of(metrics, tuple(same_as.get(labels["alertname"], ()))),
    )


def parse_alerts(body: bytes, namer: NodeNamer, max_alerts: int = 100_000,
                 same_as: Mapping[str, list[str]] | None = None) -> tuple[dict[str, tuple[Alert, ...]], int]:
    """``GET /api/v2/alerts`` → alerts per node ("" for cluster-wide ones), and how many were dropped."""
    try:
        items = _ALERTS.decode(body)
    except msgspec.DecodeError as exc:
        raise AnswerError(f"not a list of alerts: {exc}") from None
    if len(items) > max_alerts:
        raise AnswerError(f"{len(items):,} alerts, over the cap of {max_alerts:,} (max_alerts)")
    per_node: dict[str, list[Alert]] = {}
    dropped = 0
    for item in items:
        try:
            alert = _alert(_ONE_ALERT.decode(item), namer, same_as or {})
        except (msgspec.DecodeError, ValueError):
            dropped += 1
            continue
        per_node.setdefault(alert.node or "", []).append(alert)
    order = {s: i for i, s in enumerate(sorted(Severity, reverse=True))}
    return ({n: tuple(sorted(a, key=lambda x: (order[x.severity], x.name, x.fingerprint))) for n, a in per_node.items()},
            dropped)


_PORT_SUFFIX = "(:[0-9]+)?"
_UNESCAPE = re.compile(r"\\(.)")


def _literal_of(m: SilenceMatcher) -> str | None:
    """The node a matcher names: its value, or for ``=~`` a regex-escaped name with an optional port."""
    if not m.is_regex:
        return m.value
    name = _UNESCAPE.sub(r"\1", m.value.removeprefix("^").removesuffix("$").removesuffix(_PORT_SUFFIX))
    return name if re.fullmatch(r"[A-Za-z0-9._-]+", name) else None


def parse_silences(body: bytes, node_labels: list[str], to_node: Callable[[str], str | None],
                   keep_expired: bool = False) -> tuple[tuple[Silence, ...], int]:
    """``GET /api/v2/silences`` → active and pending silences (expired ones too with ``keep_expired``), and
    how many were dropped as malformed."""
    try:
        items = _ALERTS.decode(body)
    except msgspec.DecodeError as exc:
        raise AnswerError(f"not a list of silences: {exc}") from None
    out: list[Silence] = []
    dropped = 0
    for item in items:
        try:
            raw = _ONE_SILENCE.decode(item)
            state = SilenceState(raw.status.state)
        except (msgspec.DecodeError, ValueError):
            dropped += 1
            continue
        if state is SilenceState.EXPIRED and not keep_expired:
            continue
        matchers = tuple(SilenceMatcher(name=_clean(m.name)[:128], value=_clean(m.value), is_regex=m.isRegex,
                                        is_equal=m.isEqual) for m in raw.matchers[:MAX_LABELS])
        nodes = tuple(dict.fromkeys(
            n for m in matchers if m.is_equal and m.name in node_labels
            if (n := to_node(_literal_of(m) or "")) is not None))
        out.append(Silence(id=_clean(raw.id)[:64], state=state, matchers=matchers, created_by=_clean(raw.createdBy),
                           comment=_clean(raw.comment), starts_at=parse_time(raw.startsAt),
                           ends_at=parse_time(raw.endsAt), nodes=nodes))
    out.sort(key=lambda s: (s.ends_at or 0.0, s.id))
    return tuple(out), dropped
