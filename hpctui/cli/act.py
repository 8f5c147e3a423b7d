"""``hpctui act``: run one action headless through the same executor as the app.

Read-only mode, the confirmation rules (y/n, the typed word for bulk destructive
actions) and the audit trail are the executor's, so this entry point cannot skip them.
Exit codes: 0 every target ok (or a valid dry run), 1 some target failed,
2 usage error, invalid plan or refused.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from hpctui.actions.plans import drain_reason
from hpctui.actions.render import plan_lines
from hpctui.base.sanitize import clean_text
from hpctui.model.action import SHELL_ACTIONS, ActionKind, ActionPlan, ActionResult

if TYPE_CHECKING:
    from hpctui.core.runtime import Runtime

EXIT_OK, EXIT_FAILED, EXIT_REFUSED = 0, 1, 2
ALIASES = {"mig": ActionKind.MIG_RECONFIGURE}
HEADLESS_KINDS = [k.value for k in ActionKind if k not in SHELL_ACTIONS]  # a shell needs the TUI's terminal


def action_kind(name: str) -> ActionKind:
    return ALIASES.get(name) or ActionKind(name)


def parse_params(pairs: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--param wants KEY=VALUE, got {pair!r}")
        params[key.strip()] = value
    return params


HEADINGS = {"warning": "warnings", "command": "commands", "affected": "affects", "note": "notes", "error": "errors"}


def render_plan(plan: ActionPlan) -> str:
    """What the app's preview shows (:func:`hpctui.actions.render.plan_lines`, nothing cut), as
    text: a heading per list, a plan with steps shown per step (its backend, exact commands and
    what that step alone affects)."""
    c = clean_text
    steps = f" ({len(plan.steps)} steps)" if plan.steps else ""
    out = [f"action:   {plan.kind.value} via {c(plan.source)}{steps}"]
    heading: tuple[str, int] | None = None
    for line in plan_lines(plan):
        indent = "  " if line.step else ""
        if line.kind == "targets":
            out.append(f"targets:  {line.text or '-'} ({line.count})")
            if plan.params:
                out.append("params:   " + " ".join(f"{c(k)}={c(v)}" for k, v in sorted(plan.params.items())))
        elif line.kind == "rejected":
            out.append(f"rejected: {line.text}")
        elif line.kind == "step":
            out.append(f"step {line.step}:   {line.text} ({line.count})")
        elif line.kind == "rule":
            out.append(f"          {line.text}")
        elif line.kind == "confirm":
            out.append(f"confirm:  type {line.text!r} (bulk destructive action)")
        elif line.kind in HEADINGS or line.kind == "more":
            if line.kind != "more" and heading != (line.kind, line.step):
                heading = (line.kind, line.step)
                out.append(f"{indent}{HEADINGS[line.kind]}:")
            out.append(f"{indent}  {line.text}")
        # "commands" / "affects": the heading comes with the first item
    return "\n".join(out) + "\n"


def render_result(result: ActionResult) -> str:
    if result.refused:
        return f"refused: {clean_text(result.refused)}\n"
    lines: list[str] = []
    for i, step in enumerate(result.steps, 1):
        ok = sum(r.ok for r in step.results)
        lines.append(f"step {i} {clean_text(step.source)} {step.kind.value}: {ok}/{len(step.results)} ok")
        lines.extend(f"  {'ok  ' if r.ok else 'FAIL'} {clean_text(r.target)}: {clean_text(r.message)}"
                     for r in step.results)
    if not result.steps:
        lines = [f"{'ok  ' if r.ok else 'FAIL'} {clean_text(r.target)}: {clean_text(r.message)}"
                 for r in result.results]
    ok = sum(r.ok for r in result.results)
    lines.append(f"{ok}/{len(result.results)} target(s) ok")
    return "\n".join(lines) + "\n"


def ask(plan: ActionPlan, prompt: Callable[[str], str]) -> str | bool:
    """Ask on the terminal; returns what the executor checks."""
    word = plan.confirm_word
    try:
        if word:
            return prompt(f"Type {word} to run {plan.kind.value} on {len(plan.targets)} targets: ").strip()
        answer = prompt(f"Run {plan.kind.value} on {len(plan.targets)} target(s)? [y/N] ").strip().lower()
    except EOFError:
        return False
    return answer in ("y", "yes")


def _json(plan: ActionPlan, result: ActionResult | None, dry_run: bool) -> str:
    doc: dict[str, Any] = {"dry_run": dry_run, "plan": msgspec.to_builtins(plan), "runnable": plan.runnable,
                           "confirm_word": plan.confirm_word}
    if result is not None:
        doc["refused"] = result.refused
        doc["results"] = [msgspec.to_builtins(r) for r in result.results]
        doc["ok"] = result.ok
        doc["user"] = result.user
        if result.steps:
            doc["steps"] = [msgspec.to_builtins(st) | {"ok": st.ok} for st in result.steps]
    return msgspec.json.encode(doc).decode() + "\n"


async def run_act(runtime: Runtime, kind: ActionKind, targets: list[str], params: dict[str, str], *,
                  dry_run: bool, yes: bool, as_json: bool, interactive: bool,
                  prompt: Callable[[str], str] = input,
                  out: Callable[[str], Any] | None = None,
                  err: Callable[[str], Any] | None = None) -> int:
    """Collect once, plan, show, confirm, execute, report. The caller stops the runtime. ``out``/``err``:
    where to write (default: the process's stdout/stderr at call time, not at import time)."""
    out = out or (lambda text: sys.stdout.write(text))
    err = err or (lambda text: sys.stderr.write(text))
    if kind is ActionKind.CUSTOM:  # [[custom_actions]]: folded output per node (hpctui.actions.custom)
        from hpctui.cli.act_workflows import known_or_hint, run_custom_act

        hint = known_or_hint(runtime.port, params)
        if hint is None:
            return await run_custom_act(runtime.port, targets, params, dry_run=dry_run, yes=yes, as_json=as_json,
                                        interactive=interactive, prompt=prompt, out=out, err=err)
        err(hint)  # no such action: the executor refuses it below (audited, read-only first), exit 2
    if kind is ActionKind.MIG_RECONFIGURE:  # the MIG wizard's steps (drain, apply, verify, resume)
        from hpctui.cli.act_workflows import run_mig

        return await run_mig(runtime.port, targets, params, dry_run=dry_run, yes=yes, as_json=as_json,
                             interactive=interactive, prompt=prompt, out=out, err=err)
    await runtime.collect_once()
    if kind in (ActionKind.RESUME_NODES, ActionKind.UNCORDON_NODES):
        await runtime.node_records.prefetch()  # the preview warns from the nodes' last week (hpctui.core.nodehistory)
    snapshot = runtime.store.snapshot()
    kept = None
    if kind is ActionKind.REBOOT_NODES and not params.get("reason", "").strip():
        kept = drain_reason(targets, snapshot)  # rebooting a drained node: keep why it was drained
        if kept:
            params = {**params, "reason": kept}
    plan = runtime.executor.plan(kind, targets, params, snapshot)
    if kept:
        plan = msgspec.structs.replace(plan, notes=(f"reason taken from the current drain reason: {kept}",
                                                    *plan.notes))
    if dry_run:
        out(_json(plan, None, True) if as_json else render_plan(plan))
        return EXIT_OK if plan.runnable else EXIT_REFUSED
    if not as_json:
        out(render_plan(plan))
    confirmation: str | bool = False
    if not plan.runnable:
        pass  # the executor refuses it with the plan's errors, and audits the attempt
    elif yes:
        confirmation = plan.confirm_word or True
    elif interactive:
        confirmation = ask(plan, prompt)
    else:
        result = await runtime.run_action(plan, False)
        if as_json:
            out(_json(plan, result, False))
        err("hpctui act: not confirmed: stdin is not a terminal, pass --yes to run without asking\n")
        return EXIT_REFUSED
    result = await runtime.run_action(plan, confirmation)
    out(_json(plan, result, False) if as_json else render_result(result))
    for problem in result.audit_errors:
        err(f"hpctui act: warning: {problem}\n")
    if result.refused is not None:
        return EXIT_REFUSED
    if kind is ActionKind.HEALTH_CHECK and not result.ok and not as_json:
        await offer_drain(runtime, result, yes=yes, interactive=interactive, prompt=prompt, out=out, err=err)
    return EXIT_OK if result.ok else EXIT_FAILED


async def offer_drain(runtime: Runtime, result: ActionResult, *, yes: bool, interactive: bool,
                      prompt: Callable[[str], str], out: Callable[[str], Any], err: Callable[[str], Any]) -> None:
    """A failed check offers the drain of its failed nodes with the failure as the reason: asked (and
    previewed) on a terminal, never run by ``--yes`` alone; elsewhere the command to run is printed."""
    from hpctui.actions.checks.offer import drain_offers

    offers = drain_offers(runtime.checks, result)
    if not offers:
        return
    for nodes, reason in offers:
        line = f"hpctui act drain --targets {shlex.quote(nodes)} --reason {shlex.quote(reason)}"
        if yes or not interactive:
            out(f"\nto drain the failed node(s): {line}\n")
            continue
        try:
            answer = prompt(f"\nDrain {nodes} with reason {reason!r}? [y/N] ").strip().lower()
        except EOFError:
            return
        if answer not in ("y", "yes"):
            continue
        plan = runtime.executor.plan(ActionKind.DRAIN_NODES, [nodes], {"reason": reason}, runtime.store.snapshot())
        out(render_plan(plan))
        drained = await runtime.run_action(plan, ask(plan, prompt) if plan.runnable else False)
        out(render_result(drained))


def add_act_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=HEADLESS_KINDS + list(ALIASES), metavar="ACTION",
                   help="one of: " + ", ".join(HEADLESS_KINDS) + " (mig = the MIG wizard: "
                   "--param layout=all-1g [--param gpus=0,1])")
    p.add_argument("--targets", required=True, metavar="EXPR",
                   help="hostlist expression(s) for node actions (gpu[01-04]), job ids for job actions (12,13_[1-4])")
    p.add_argument("--reason", help="reason (drain, reboot, ...)")
    p.add_argument("--param", action="append", default=[], metavar="K=V", help="extra action parameter (repeatable); drain/resume: drain_in=slurm|k8s|both, "
                   "k8s_drain=cordon|evict; check: check=dcgm-r1|dcgm-r2|dcgm-r3|nccl|nccl-pair|nhc|custom:NAME; resume/uncordon "
                   "held by the health-check gate: override=REASON (audited); drain/cordon/hold of a target that already is drained/"
                   "cordoned/held: reason_mode=keep|append|replace (refused without it)")
    p.add_argument("--dry-run", action="store_true", help="print the plan (exact commands, what it hits) and exit")
    p.add_argument("--yes", action="store_true", help="confirm without asking (also the typed word of bulk actions)")
    p.add_argument("--json", action="store_true", help="machine-readable plan and results")
    p.add_argument("--read-only", action="store_true", help="refuse every action (for testing a config)")
