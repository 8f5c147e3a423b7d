"""The Alertmanager source: alerts (per node) and silences every ``interval_s``; silences set and expired as
actions through the executor (preview with what the silence matches and what it already silences, confirm,
audit), never behind the admin's back."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from hpctui.base.identity import os_user
from hpctui.base.sanitize import clean_text
from hpctui.model import SourceResult
from hpctui.model.action import ActionKind, ActionPlan, TargetResult, reason_problem, stored_reason
from hpctui.model.alerts import Alert, Silence, SilenceMatcher, SilenceState
from hpctui.model.hostlist import HostlistError, expand, expand_each
from hpctui.sources.alertmanager.client import AlertmanagerClient, AlertmanagerError
from hpctui.sources.alertmanager.parse import AnswerError, node_namer, parse_alerts, parse_silences
from hpctui.sources.alertmanager.settings import AlertmanagerSettings, parse_matcher

if TYPE_CHECKING:
    from hpctui.model import ClusterSnapshot
    from hpctui.model.names import NodeNameMap

_SILENCE_ID_CHARS = frozenset("0123456789abcdefABCDEF-")
_GO_REGEX_SPECIAL = re.compile(r"([.\\+*?()|\[\]{}^$])")


def go_regex_escape(text: str) -> str:
    """``text`` as a literal in an RE2 (Go) regular expression, as Alertmanager's ``=~`` matchers read them."""
    return _GO_REGEX_SPECIAL.sub(r"\\\1", text)


def rfc3339(t: float) -> str:
    return dt.datetime.fromtimestamp(t, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


class AlertmanagerSource:
    """A Source and an ActionBackend for one Alertmanager (``kind = "alertmanager"``)."""

    kind = "alertmanager"

    def __init__(self, settings: AlertmanagerSettings, name_map: NodeNameMap | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.name = settings.name
        self.interval_s = settings.interval_s
        self.clock = clock
        self.client = AlertmanagerClient(settings)
        to_hpctui = name_map.to_slurm if name_map is not None else str
        self.namer = node_namer(settings.node_labels, settings.node_pattern, settings.node_replace, to_hpctui)
        self._node_of_value = lambda value: self.namer({settings.node_labels[0]: value})
        self.templates = [parse_matcher(t) for t in settings.silence_matchers]
        self._alerts: dict[str, tuple[Alert, ...]] = {}
        self.silences: tuple[Silence, ...] = ()  # as of the last refresh (the plans read it)

    async def close(self) -> None:
        await self.client.close()

    async def collect(self) -> SourceResult:
        t = self.clock()
        alerts_raw, silences_raw = await asyncio.gather(self.client.alerts_raw(), self.client.silences_raw())
        try:
            alerts, dropped = await asyncio.to_thread(parse_alerts, alerts_raw, self.namer, self.settings.max_alerts,
                                                     self.settings.same_as)
            labels = [*self.settings.node_labels, *(name for name, _, _ in self.templates)]
            silences, bad = parse_silences(silences_raw, labels, self._node_of_value)
        except AnswerError as exc:
            raise AlertmanagerError(f"{self.client.where}: {exc}") from None
        # a node whose alerts are unchanged keeps the very same tuple: its findings are not recomputed
        alerts = {n: (old if (old := self._alerts.get(n)) == a else a) for n, a in alerts.items()}
        self._alerts, self.silences = alerts, silences
        warnings = tuple(f"{n} malformed {what} dropped" for n, what in ((dropped, "alert(s)"), (bad, "silence(s)"))
                         if n)
        return SourceResult(source=self.name, time=t, alerts=alerts, silences=silences, warnings=warnings)

    # -- actions: silences ----------------------------------------------------------------
    @property
    def action_kinds(self) -> frozenset[ActionKind]:
        return frozenset({ActionKind.SILENCE_NODES, ActionKind.EXPIRE_SILENCES})

    def silences_of(self, node: str, snapshot: ClusterSnapshot | None = None) -> tuple[Silence, ...]:
        """Active and pending silences that name ``node`` with an equality matcher."""
        known = snapshot.silences if snapshot is not None and snapshot.silences else self.silences
        return tuple(s for s in known if node in s.nodes and s.state is not SilenceState.EXPIRED)

    def plan(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str],
             snapshot: ClusterSnapshot) -> ActionPlan:
        if kind is ActionKind.EXPIRE_SILENCES:
            if params.get("silences"):
                return self._plan_expire_for_nodes(targets, params["silences"], snapshot)
            return self._plan_expire(targets, snapshot)
        return self._plan_silence(targets, params, snapshot)

    def _plan_silence(self, targets: tuple[str, ...], params: dict[str, str], snapshot: ClusterSnapshot) -> ActionPlan:
        """Targets stay as given (hostlists); each node in them gets one silence per configured matcher."""
        warnings: list[str] = []
        nodes, errors = expand_each(targets)
        comment = stored_reason(params.get("reason", ""))
        problem = reason_problem(comment)
        if problem:
            errors.append(problem)
        hours = self._hours(params.get("hours", ""), errors)
        end = self.clock() + hours * 3600
        commands = tuple(f"POST {self.client.where}/api/v2/silences {m.text} for {hours:g} h: “{comment}”"
                         for n in nodes for m in self.matchers_for(n))
        for n in nodes:
            for s in self.silences_of(n, snapshot):
                until = time.strftime("%H:%M", time.localtime(s.ends_at)) if s.ends_at else "?"
                warnings.append(f"{n} is already silenced by {s.created_by or 'someone'} until {until} "
                                f"(“{s.comment}”, {s.id[:8]}): a second silence is added, the first is kept")
        firing = [f"{a.name} on {n} ({a.severity.name.lower()})" for n in nodes
                  for a in snapshot.alerts.get(n, ()) if a.firing]
        out = {"reason": comment, "hours": f"{hours:g}", "until": rfc3339(end)}
        if params.get("for"):
            out["for"] = params["for"]
        return ActionPlan(kind=ActionKind.SILENCE_NODES, source=self.name, targets=targets, params=out,
                          commands=commands, affected=tuple(f"silences {x}" for x in firing),
                          warnings=tuple(warnings), errors=tuple(errors))

    def _plan_expire_for_nodes(self, targets: tuple[str, ...], mapping: str, snapshot: ClusterSnapshot) -> ActionPlan:
        """Expire the silences ``mapping`` names per node (``node=id,id;node=id``): what a resume releases."""
        known = {s.id: s for s in (snapshot.silences or self.silences)}
        per_node = {n: ids.split(",") for n, _, ids in (part.partition("=") for part in mapping.split(";")) if ids}
        lines = [f"{n}: silence {i[:8]} by {known[i].created_by if i in known else '?'} "
                 f"(“{known[i].comment if i in known else ''}”) expires: its alerts notify again"
                 for n, ids in per_node.items() for i in ids]
        return ActionPlan(kind=ActionKind.EXPIRE_SILENCES, source=self.name, targets=targets,
                          params={"silences": mapping},
                          commands=tuple(f"DELETE {self.client.where}/api/v2/silence/{i}"
                                         for ids in per_node.values() for i in ids),
                          warnings=tuple(lines))

    def matchers_for(self, node: str) -> list[SilenceMatcher]:
        """The matchers of the silences that silence ``node``: one silence per configured matcher."""
        return [SilenceMatcher(name=name, is_regex=regex, value=value.replace("{node}", go_regex_escape(node)
                                                                               if regex else node))
                for name, regex, value in self.templates]

    def _hours(self, text: str, errors: list[str]) -> float:
        if not text.strip():
            return self.settings.silence_hours
        try:
            hours = float(text)
        except ValueError:
            errors.append(f"hours: {clean_text(text)[:20]!r} is not a number")
            return self.settings.silence_hours
        if not 0 < hours <= 24 * 30:
            errors.append("hours must be > 0 and at most 720 (30 days)")
        return hours

    def _plan_expire(self, targets: tuple[str, ...], snapshot: ClusterSnapshot) -> ActionPlan:
        known = {s.id: s for s in (snapshot.silences or self.silences)}
        errors = [f"{clean_text(t)[:40]!r} is not a silence id" for t in targets
                  if not t or len(t) > 64 or set(t) - _SILENCE_ID_CHARS]
        warnings = []
        for t in targets:
            s = known.get(t)
            if s is None:
                warnings.append(f"silence {t[:8]} is not in the last list (already expired, or another Alertmanager's)")
            else:
                warnings.append(f"silence {t[:8]} by {s.created_by or 'someone'} (“{s.comment}”, {s.matcher_text}): "
                                f"its alerts notify again")
        return ActionPlan(kind=ActionKind.EXPIRE_SILENCES, source=self.name, targets=targets,
                          commands=tuple(f"DELETE {self.client.where}/api/v2/silence/{t}" for t in targets),
                          warnings=tuple(warnings), errors=tuple(errors))

    async def execute(self, plan: ActionPlan) -> tuple[TargetResult, ...]:
        if plan.kind is ActionKind.EXPIRE_SILENCES:
            if plan.params.get("silences"):
                return await self._expire_for_nodes(plan)
            return tuple([await self._expire(t, t) for t in plan.targets])
        start = rfc3339(self.clock())
        end = plan.params.get("until") or rfc3339(self.clock() + self.settings.silence_hours * 3600)
        user = plan.params.get("user") or os_user()
        by = f"{user} (hpctui {plan.params['for']})" if plan.params.get("for") else f"{user} (hpctui)"
        out: list[TargetResult] = []
        for target in plan.targets:
            made: list[str] = []
            try:
                for node in expand(target):
                    for m in self.matchers_for(node):
                        matcher = {"name": m.name, "value": m.value, "isRegex": m.is_regex, "isEqual": True}
                        made.append(await self.client.create_silence([matcher], start, end, by, plan.params["reason"]))
                out.append(TargetResult(target=target, ok=True, message="silences " + ", ".join(made)))
            except (AlertmanagerError, HostlistError) as exc:
                done = f" (created before it: {', '.join(made)})" if made else ""
                out.append(TargetResult(target=target, ok=False, message=f"{exc}{done}"))
        return tuple(out)

    async def _expire(self, target: str, silence_id: str) -> TargetResult:
        try:
            await self.client.expire_silence(silence_id)
            return TargetResult(target=target, ok=True, message=f"expired {silence_id}")
        except AlertmanagerError as exc:
            return TargetResult(target=target, ok=False, message=str(exc))

    async def _expire_for_nodes(self, plan: ActionPlan) -> tuple[TargetResult, ...]:
        per_node = {n: ids.split(",") for n, _, ids in (p.partition("=") for p in plan.params["silences"].split(";"))}
        out: list[TargetResult] = []
        for target in plan.targets:
            try:
                nodes = expand(target)
            except HostlistError:
                nodes = [target]
            ids = [i for n in nodes for i in per_node.get(n, [])]
            results = [await self._expire(target, i) for i in ids]
            ok = all(r.ok for r in results)
            text = "; ".join(r.message for r in results) or "no silence of hpctui's on it"
            out.append(TargetResult(target=target, ok=ok, message=text))
        return tuple(out)
