"""Loki's query answers → log lines. Pure; tested on answers in the API's documented shape
(tests/fixtures/loki, with their origin)."""

from __future__ import annotations

from typing import Any

import msgspec

from hpctui.base.sanitize import clean_text
from hpctui.model.logs import LogLine

HOST_LABELS = ("host", "hostname", "node", "nodename", "instance")


class LokiAnswerError(ValueError):
    """Not a Loki query answer, or an answer with ``status`` other than success."""


def parse_query_range(body: bytes, limit: int = 5000) -> list[LogLine]:
    """A ``/loki/api/v1/query_range`` answer of ``resultType`` streams → lines, oldest first, at most
    ``limit`` (the newest). Each value is ``[ns epoch, line]`` or, with ``categorize-labels``, ``[ns, line,
    {structured metadata}]``. A stream's host is its first host-like label; its ident the other labels."""
    try:
        doc = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise LokiAnswerError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("status") != "success" or not isinstance(doc.get("data"), dict):
        why = doc.get("error") if isinstance(doc, dict) else None
        raise LokiAnswerError(clean_text(str(why or "not a Loki query answer"))[:200])
    data = doc["data"]
    if data.get("resultType") != "streams":
        raise LokiAnswerError(f"resultType {clean_text(str(data.get('resultType')))[:40]}: a metric query, not log lines")
    out: list[LogLine] = []
    for stream in data.get("result") or ():
        if not isinstance(stream, dict):
            continue
        raw = stream.get("stream")
        labels: dict[str, Any] = raw if isinstance(raw, dict) else {}
        host, ident = _host_and_ident(labels)
        for value in stream.get("values") or ():
            line = _line(value, host, ident)
            if line is not None:
                out.append(line)
    out.sort(key=lambda ln: ln.time)
    return out[-limit:]


def _host_and_ident(labels: dict[str, Any]) -> tuple[str, str]:
    text = {str(k): str(v) for k, v in labels.items()}
    host = next((text[k] for k in HOST_LABELS if k in text), "")
    if ":" in host and host.rsplit(":", 1)[1].isdigit():
        host = host.rsplit(":", 1)[0]  # instance="gpu01:9100"
    rest = ",".join(f"{k}={v}" for k, v in sorted(text.items()) if k not in HOST_LABELS)
    return clean_text(host), clean_text(rest)[:200]


def _line(value: Any, host: str, ident: str) -> LogLine | None:
    if not isinstance(value, list) or len(value) < 2 or not isinstance(value[1], str):
        return None
    stamp = str(value[0])
    if not stamp.isdigit():
        return None
    return LogLine(time=int(stamp) / 1e9, host=host, ident=ident, message=clean_text(value[1].expandtabs(8)))
