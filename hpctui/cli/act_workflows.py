"""``hpctui act custom`` and ``hpctui act mig``: the two workflows headless, through the same port
and executor as the app (read-only, confirmation and the audit trail are the executor's).

Exit codes as ``hpctui act``: 0 all ok (or a valid dry run), 1 some run or step failed, 2 usage
error, invalid plan or refused.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from hpctui.actions.custom import (
    CustomPlan,
    CustomResult,
    audit_fields,
    find_action,
    new_run,
    split_targets,
)
from hpctui.actions.fold import label_set
from hpctui.actions.mig import MigWorkflow, Status, Step
from hpctui.base.sanitize import clean_text

if TYPE_CHECKING:
    from hpctui.actions.ports import WorkflowPort


# -- custom actions --------------------------------------------------------------------------------

def known_or_hint(port: WorkflowPort, params: Mapping[str, str]) -> str | None:
    """None when ``--param name=NAME`` names a configured custom action, else the line to print."""
    actions = port.custom_actions
    name = params.get("name", "").strip()
    if find_action(actions, name) is not None:
        return None
    known = ", ".join(a.name for a in actions) or "none configured"
    what = f"unknown custom action {clean_text(name)!r}" if name else "pass --param name=NAME"
    return f"hpctui act custom: {what} (custom actions: {known})\n"


def render_plan_text(plan: CustomPlan) -> str:
    a = plan.action
    c = clean_text
    lines = [f"action:   custom {a.name} ({a.scope}, run {a.run})",
             f"targets:  {c(label_set(plan.targets)) or '-'} ({len(plan.targets)})", "commands:"]
    lines += [f"  {line}" for line in plan.commands()]
    for title, items in (("warnings", plan.warnings), ("notes", plan.notes), ("errors", plan.errors)):
        if items:
            lines.append(f"{title}:")
            lines.extend(f"  {c(i)}" for i in items)
    if plan.runnable and plan.confirm_word:
        lines.append(f"confirm:  type {plan.confirm_word!r} (dangerous action)")
    return "\n".join(lines) + "\n"


def result_json(plan: CustomPlan, result: CustomResult | None, dry_run: bool) -> str:
    doc: dict[str, Any] = {"dry_run": dry_run, "action": plan.action.name, "scope": plan.action.scope,
                           "run": plan.action.run, "targets": list(plan.targets), "commands": plan.commands(),
                           "argv": {i.label: list(i.argv) for i in plan.invocations}, "errors": list(plan.errors),
                           "warnings": list(plan.warnings), "runnable": plan.runnable,
                           "confirm_word": plan.confirm_word}
    if result is not None:
        doc["refused"] = result.result.refused
        doc["ok"] = result.ok
        doc["user"] = result.result.user
        doc["outputs"] = [msgspec.to_builtins(o) for o in result.outputs]
        doc.update(audit_fields(result.outputs))
    return msgspec.json.encode(doc).decode() + "\n"


async def run_custom_act(port: WorkflowPort, targets: Sequence[str], params: Mapping[str, str], *, dry_run: bool,
                         yes: bool, as_json: bool, interactive: bool, prompt: Callable[[str], str] = input,
                         out: Callable[[str], Any] | None = None, err: Callable[[str], Any] | None = None) -> int:
    """Plan, show, confirm, run, print the folded output. 0 all ok, 1 some failed, 2 usage/refused."""
    from hpctui.actions.fold import render, summary

    write = out or sys.stdout.write
    warn = err or sys.stderr.write
    hint = known_or_hint(port, params)
    action = find_action(port.custom_actions, params.get("name", "").strip())
    if hint is not None or action is None:
        warn(hint or "hpctui act custom: no such action\n")
        return 2
    if action.scope != "nodes":  # jobs and pods are looked up; nodes are named (no SSH probe round first)
        await port.collect(all_sources=True)
    expr = " ".join(targets)
    run = new_run(port, action.name, split_targets(action.scope, expr))
    plan = run.plan
    if dry_run:
        write(result_json(plan, None, True) if as_json else render_plan_text(plan))
        return 0 if plan.runnable else 2
    if not as_json:
        write(render_plan_text(plan))
    confirmation: str | bool = False
    asked = False
    if plan.runnable:
        if yes:
            confirmation = plan.confirm_word or True
        elif interactive:
            asked = True
            try:
                if plan.confirm_word:
                    confirmation = prompt(f"Type {plan.confirm_word} to run {action.name} on "
                                          f"{len(plan.targets)} target(s): ").strip()
                else:
                    answer = prompt(f"Run {action.name} on {len(plan.targets)} target(s)? [y/N] ").strip().lower()
                    confirmation = answer in ("y", "yes")
            except EOFError:
                confirmation = False
    run.confirmation = confirmation
    await run.start()
    result = run.result
    assert result is not None
    if as_json:
        write(result_json(plan, result, False))
    elif result.result.refused is None:
        write(render(result.outputs))
        write(summary(result.outputs) + "\n")
    else:
        write(f"refused: {clean_text(result.result.refused)}\n")
    if plan.runnable and not yes and not interactive and not asked:
        warn("hpctui act: not confirmed: stdin is not a terminal, pass --yes to run without asking\n")
    for problem in result.result.audit_errors:
        warn(f"hpctui act: warning: {problem}\n")
    if result.result.refused is not None:
        return 2
    return 0 if result.ok else 1


# -- the MIG wizard --------------------------------------------------------------------------------

STATUS_MARK = {Status.OK: "ok  ", Status.WARN: "warn", Status.FAILED: "FAIL", Status.SKIPPED: "skip",
               Status.CANCELLED: "stop", Status.RUNNING: "... ", Status.PENDING: "    "}


async def run_mig(port: WorkflowPort, targets: list[str], params: dict[str, str], *, dry_run: bool, yes: bool,
                  as_json: bool, interactive: bool, prompt: Callable[[str], str],
                  out: Callable[[str], Any], err: Callable[[str], Any], poll_s: float = 1.0) -> int:
    """``hpctui act mig``: the wizard headless. 0 ok, 1 a step failed, 2 usage/refused."""
    from hpctui.model.hostlist import HostlistError, expand

    nodes: list[str] = []
    try:
        for t in targets:
            nodes.extend(expand(t))
    except HostlistError as exc:
        err(f"hpctui act: {exc}\n")
        return 2
    layout = params.get("layout", "").strip()
    if not layout and not port.read_only:  # read-only: refused (and audited) below
        err("hpctui act mig: needs --param layout=NAME (all-disabled, all-1g, all-balanced, all-7g or a "
            "mig_layouts name)\n")
        return 2

    shown: dict[str, Status] = {}

    def show(step: Step, line: str | None) -> None:
        if as_json:
            return
        if line is not None:
            out(f"       {line}\n")
        if shown.get(step.key) is not step.status and step.status is not Status.PENDING:
            shown[step.key] = step.status
            out(f"[{STATUS_MARK[step.status]}] {step.title}\n")

    await port.collect(all_sources=True)
    wf = MigWorkflow(port, nodes, layout, params.get("gpus"), on_change=show, poll_s=poll_s,
                     wait_timeout_s=float(params.get("wait_timeout_s", "1800")),
                     verify_timeout_s=float(params.get("verify_timeout_s", "300")))
    prepared = wf.prepare()

    def doc(ran: bool) -> str:
        return msgspec.json.encode({
            "dry_run": dry_run, "nodes": nodes, "layout": layout, "ok": wf.ok if ran else prepared,
            "errors": wf.errors, "affected": wf.affected, "preview": wf.preview() if prepared else [],
            "confirm_word": wf.confirm_word, "plan": msgspec.to_builtins(wf.gate()) if prepared else None,
            "steps": [{"key": s.key, "title": s.title, "status": s.status.value, "detail": s.detail}
                      for s in wf.steps]}).decode() + "\n"

    if prepared and not as_json:
        out("plan:\n" + "".join(f"  {line}\n" for line in wf.preview()))
    if dry_run or not prepared:
        if not prepared and not dry_run:
            await wf.run(False)  # audited as refused (a dry run, like every other action's, writes nothing)
        if as_json:
            out(doc(False))
        return 0 if prepared else 2
    if yes:
        confirmation: str | bool = wf.confirm_word
    elif interactive:
        try:
            confirmation = prompt(f"Type {wf.confirm_word} to reconfigure MIG on {len(nodes)} node(s) "
                                  f"(drain, apply, resume): ").strip()
        except EOFError:
            confirmation = False
    else:
        await wf.run(False)
        if as_json:
            out(doc(False))
        err("hpctui act: not confirmed: stdin is not a terminal, pass --yes to run without asking\n")
        return 2
    ok = await wf.run(confirmation)
    if as_json:
        out(doc(True))
    for problem in wf.audit_errors:
        err(f"hpctui act: warning: {problem}\n")
    if wf.step("drain").status is Status.CANCELLED:
        return 2
    return 0 if ok else 1
