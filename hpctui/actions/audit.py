"""Append-only audit log: one JSON line per action, flushed and fsynced."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from hpctui.actions.base import ActionResult

_encoder = msgspec.json.Encoder()


class AuditLog:
    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, result: ActionResult, cluster: str) -> None:
        record = {
            "time": result.started,
            "finished": result.finished,
            "cluster": cluster,
            "user": result.user,
            "action": result.plan.kind.value,
            "source": result.plan.source,
            "targets": list(result.plan.targets),
            "params": result.plan.params,
            "commands": list(result.plan.commands),
            "refused": result.refused,
            "results": [msgspec.to_builtins(r) for r in result.results],
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = _encoder.encode(record) + b"\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def read(self) -> list[dict[str, object]]:
        if not self.path.exists():
            return []
        out: list[dict[str, object]] = []
        for raw in self.path.read_bytes().splitlines():
            if raw.strip():
                out.append(msgspec.json.decode(raw))
        return out
