"""Append-only audit log: JSON lines, each flushed and fsynced.

Every action that runs leaves two records sharing an ``id``: an *intent* record written
(and fsynced) before any command is sent, and an *outcome* record after. A process killed
halfway (``kill -9``, a power cut) still leaves the intent: what was about to happen, by whom.
Refused actions leave one outcome record (nothing ran). A plan that spans backends (hybrid
drain) also leaves one *step* record per step as it finishes (its backend, commands and
per-target results), between the intent and the outcome.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path
from typing import Any

import msgspec

from hpctui.actions.base import ActionPlan, ActionResult, StepResult

_encoder = msgspec.json.Encoder()


def os_user() -> str:
    """The name of the uid we run as, from the OS: ``$LOGNAME``/``$USER`` can be set to anything."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def user_fields() -> dict[str, Any]:
    """Who acts: the uid's name, plus what the environment claims (extra fields, never the user)."""
    out: dict[str, Any] = {"uid": os.getuid()}
    for key, env in (("sudo_user", "SUDO_USER"), ("logname", "LOGNAME")):
        value = os.environ.get(env)
        if value:
            out[key] = value
    return out


class AuditLog:
    def __init__(self, path: Path) -> None:
        self.path = path

    def _write(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = _encoder.encode(record) + b"\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def intent(self, plan: ActionPlan, cluster: str, *, user: str, action_id: str, time: float,
               extra: dict[str, Any] | None = None) -> None:
        """Before any command: what is about to run (raises OSError when it cannot be recorded)."""
        self._write({
            "phase": "intent", "id": action_id, "time": time, "cluster": cluster, "user": user, **(extra or {}),
            "action": plan.kind.value, "source": plan.source, "targets": list(plan.targets),
            "params": plan.params, "commands": list(plan.commands), **_steps(plan),
        })

    def step(self, plan: ActionPlan, step: ActionPlan, outcome: StepResult, cluster: str, *, user: str,
             action_id: str, index: int, extra: dict[str, Any] | None = None) -> None:
        """One step of a multi-backend plan, once it has run."""
        self._write({
            "phase": "step", "id": action_id, "step": index, "time": outcome.started, "finished": outcome.finished,
            "cluster": cluster, "user": user, **(extra or {}), "action": plan.kind.value,
            "step_action": step.kind.value, "source": step.source, "targets": list(step.targets),
            "commands": list(step.commands), "results": [msgspec.to_builtins(r) for r in outcome.results],
        })

    def append(self, result: ActionResult, cluster: str, *, action_id: str | None = None,
               extra: dict[str, Any] | None = None) -> None:
        record = {
            "phase": "outcome",
            "id": action_id,
            "time": result.started,
            "finished": result.finished,
            "cluster": cluster,
            "user": result.user,
            **(extra or {}),
            "action": result.plan.kind.value,
            "source": result.plan.source,
            "targets": list(result.plan.targets),
            "params": result.plan.params,
            "commands": list(result.plan.commands),
            "refused": result.refused,
            "results": [msgspec.to_builtins(r) for r in result.results],
        }
        if result.steps:
            record["steps"] = [{"action": s.kind.value, "source": s.source, "ok": s.ok,
                                "results": [msgspec.to_builtins(r) for r in s.results]} for s in result.steps]
        self._write(record)

    def read(self, *, intents: bool = False) -> list[dict[str, Any]]:
        """Outcome records (with ``intents=True``: every record, intents and steps too, in order)."""
        if not self.path.exists():
            return []
        out: list[dict[str, Any]] = []
        for raw in self.path.read_bytes().splitlines():
            if raw.strip():
                rec = msgspec.json.decode(raw)
                if intents or rec.get("phase") not in ("intent", "step"):
                    out.append(rec)
        return out


def _steps(plan: ActionPlan) -> dict[str, Any]:
    if not plan.steps:
        return {}
    return {"steps": [{"action": s.kind.value, "source": s.source, "targets": list(s.targets),
                       "commands": list(s.commands)} for s in plan.steps]}
