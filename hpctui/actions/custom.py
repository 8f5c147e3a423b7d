"""Custom actions from config, like k9s plugins: ``[[custom_actions]]`` tables.

A custom action is a command template (argv) with placeholders filled from the selection:

    {nodes}      the target nodes as a hostlist            gpu[0001-0004,0007]
    {nodes_csv}  the same nodes, comma separated (Ansible)  gpu0001,gpu0002,...
    {node}       one node: the node it runs on (run = "ssh"), or one run per node/pod (local)
    {job} {user} one job and its owner (scope = "jobs": one local run per job)
    {pod} {namespace}  one pod (scope = "pods": one local run per pod)

Every placeholder becomes part of ONE argv element, never shell text: a local run is an argv
(no shell); an SSH run's remote command line is built with ``shlex.quote`` per element, so the
remote shell sees each element as one literal word whatever it contains (``; rm -rf /``,
``$(...)``, backticks, newlines).

``run = "local"`` runs once here (or once per target when the template names a per-target
placeholder); ``run = "ssh"`` runs on each selected node over SSH with the connection settings
of the cluster's ``ssh`` source (ssh_config, keys, known_hosts, jump host). Output is gathered
per node and folded like ``clush -b`` (:mod:`hpctui.actions.fold`).

Safety: a custom action is an :class:`ActionPlan` (kind ``custom``, the argv of every run in
``plan.command``) run by the one executor through :class:`CustomBackend`, so the executor's rules
apply: read-only mode refuses unless ``read_only_ok = true`` and not ``dangerous`` (the plan's
``read_only_refusal``); ``dangerous`` needs the typed word (``NAME-N``, the plan's ``word``),
``confirm`` a y/n; every run is audited by the executor (intent before, outcome after, with the
folded output truncated to 4 KB a fold and 64 KB in all: :func:`audit_fields`).
"""

from __future__ import annotations

import asyncio
import re
import shlex
import string
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from hpctui.actions.fold import exit_codes, failures, fold, label_set, natural_key
from hpctui.base.sanitize import clean_text
from hpctui.model.action import (
    ActionKind,
    ActionPlan,
    ActionResult,
    CommandRun,
    CommandSpec,
    Progress,
    ProgressItem,
    TargetResult,
)
from hpctui.model.hostlist import HostlistError, expand
from hpctui.model.jobs import jobs_by_id
from hpctui.model.output import MAX_OUTPUT_BYTES, NodeOutput, clean_output, read_capped

if TYPE_CHECKING:
    from hpctui.actions.ports import WorkflowPort
    from hpctui.findings.idle import IdleSettings
    from hpctui.model import ClusterSnapshot, Pod, SlurmJob
    from hpctui.sources.capabilities import CommandRunner

Scope = Literal["nodes", "jobs", "pods"]
RunMode = Literal["local", "ssh"]

AGGREGATE = frozenset({"nodes", "nodes_csv"})
PER_TARGET: dict[str, frozenset[str]] = {
    "nodes": frozenset({"node"}),
    "jobs": frozenset({"job", "user"}),
    "pods": frozenset({"pod", "namespace", "node"}),
}
PLACEHOLDERS = frozenset({"nodes", "nodes_csv", "node", "job", "user", "pod", "namespace"})
SSH_PLACEHOLDERS = frozenset({"node", "nodes", "nodes_csv"})
AUDIT_FOLD_BYTES = 4096  # of each fold's output in the audit record
AUDIT_OUTPUT_BYTES = 64 * 1024  # of all folds' output together: one record stays small on 16k nodes
AUDIT_MAX_GROUPS = 64  # folds (and exit-code / failure groups) in one audit record
AUDIT_LABEL_CHARS = 1024  # of one node set (a hostlist; job ids and pods are comma-joined) or error
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class CustomActionSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str
    """Letters, digits, ``.``, ``_`` and ``-``; names the palette entry, ``:custom NAME`` and the key id
    ``custom.NAME``."""
    command: list[str] | str
    """Argv template with placeholders, or one string split like a shell would (``shlex``); no shell runs it."""
    scope: Scope = "nodes"
    """What it acts on: "nodes" (heatmap), "jobs" (queue) or "pods" (pods table)."""
    key: str | None = None
    """Textual key name on the scope's pane ("ctrl+g", "G"); it must be free there."""
    run: RunMode = "local"
    """"local" (here, once or once per target) or "ssh" (on each node, with the ssh source's settings)."""
    description: str = ""
    """Shown in the palette, the footer and the preview; default: the name."""
    dangerous: bool = False
    """Needs the typed confirmation word ``NAME-N``; never allowed in read-only mode."""
    confirm: bool = False
    """A y/n before it runs (the TUI: enter alone does not run it)."""
    read_only_ok: bool = False
    """May run in read-only mode (a harmless diagnostic; never with ``dangerous``)."""
    timeout_s: float = 60.0
    """Per run (per node over SSH), after the connection is up."""
    max_parallel: int = 32
    """Runs in flight at once."""
    max_targets: int | None = None
    """Refuse bigger selections (1: "on one node", e.g. ibdiagnet)."""
    ssh_source: str | None = None
    """Which ssh source's connection settings ``run = "ssh"`` uses (default: the first)."""

    @property
    def argv(self) -> tuple[str, ...]:
        if isinstance(self.command, str):
            return tuple(shlex.split(self.command))
        return tuple(self.command)

    @property
    def title(self) -> str:
        return self.description or f"custom action {self.name}"


def placeholders_of(argv: Sequence[str]) -> set[str]:
    """The placeholder names a template uses; ValueError for a malformed or unknown one."""
    found: set[str] = set()
    for element in argv:
        try:
            parsed = list(string.Formatter().parse(element))
        except ValueError as exc:
            raise ValueError(f"bad template {element!r}: {exc} (write {{{{ and }}}} for literal braces)") from None
        for _text, field, spec, conversion in parsed:
            if field is None:
                continue
            if field not in PLACEHOLDERS:
                raise ValueError(f"unknown placeholder {{{field}}} (known: "
                                 + ", ".join(f"{{{p}}}" for p in sorted(PLACEHOLDERS)) + ")")
            if spec or conversion:
                raise ValueError(f"placeholder {{{field}}} takes no format spec or conversion")
            found.add(field)
    return found


def check_action(action: CustomActionSettings) -> None:
    """Raise ValueError (one line, without the key path) if ``action`` cannot work."""
    if not _NAME.match(action.name):
        raise ValueError(f"name {action.name!r}: letters, digits, '.', '_' and '-' only (at most 64)")
    try:
        argv = action.argv
    except ValueError as exc:  # shlex: "No closing quotation"
        raise ValueError(f"command: {exc}") from None
    if not argv or not argv[0].strip():
        raise ValueError("command: empty")
    if "{" in argv[0] and placeholders_of(argv[:1]):
        raise ValueError("command: the program (first element) cannot be a placeholder")
    used = placeholders_of(argv)
    if action.run == "ssh":
        bad = sorted(used - SSH_PLACEHOLDERS)
        if bad:
            raise ValueError(f"placeholder {{{bad[0]}}} cannot be used with run = \"ssh\" (it runs once per node: "
                             "{node}, {nodes}, {nodes_csv})")
    else:
        bad = sorted(used - AGGREGATE - PER_TARGET[action.scope])
        if bad:
            wants = [s for s, names in PER_TARGET.items() if bad[0] in names]
            raise ValueError(f"placeholder {{{bad[0]}}} does not fit scope = \"{action.scope}\""
                             + (f" (needs scope = \"{wants[0]}\")" if wants else ""))
    if not 0 < action.timeout_s <= 86400:
        raise ValueError("timeout_s must be within 0..86400")
    if action.max_parallel < 1:
        raise ValueError("max_parallel must be >= 1")
    if action.max_targets is not None and action.max_targets < 1:
        raise ValueError("max_targets must be >= 1")
    if action.key is not None and not action.key.strip():
        raise ValueError("key: empty")


def check_actions(actions: Sequence[CustomActionSettings]) -> None:
    """Validate every action; ValueError ``custom_actions[i].…: message`` for the first problem."""
    names: dict[str, int] = {}
    keys: dict[tuple[str, str], str] = {}
    for i, action in enumerate(actions):
        try:
            check_action(action)
        except ValueError as exc:
            raise ValueError(f"custom_actions[{i}] ({action.name}): {exc}") from None
        if action.name in names:
            raise ValueError(f"custom_actions[{i}]: name {action.name!r} used twice")
        names[action.name] = i
        if action.key:
            other = keys.get((action.scope, action.key))
            if other:
                raise ValueError(f"custom_actions[{i}] ({action.name}): key {action.key!r} is taken by {other!r}")
            keys[(action.scope, action.key)] = action.name


def idle_notify_actions(settings: IdleSettings) -> list[CustomActionSettings]:
    """``[idle] notify_command`` / ``notify_pod_command`` as custom actions (scope jobs / pods, confirmed,
    run here): the idle view's notify key runs them like any custom action (preview, confirm, audit)."""
    from hpctui.findings.idle import NOTIFY_JOB_ACTION, NOTIFY_POD_ACTION

    wanted: tuple[tuple[str, list[str], Scope], ...] = (
        (NOTIFY_JOB_ACTION, settings.notify_command, "jobs"), (NOTIFY_POD_ACTION, settings.notify_pod_command, "pods"))
    return [CustomActionSettings(name=name, command=list(argv), scope=scope, confirm=True,
                                 description=f"Notify the owner of idle GPUs ({'job' if scope == 'jobs' else 'pod'})")
            for name, argv, scope in wanted if argv]


def find_action(actions: Sequence[CustomActionSettings], name: str) -> CustomActionSettings | None:
    return next((a for a in actions if a.name == name), None)


# -- planning ---------------------------------------------------------------------------------------


class Invocation(msgspec.Struct, frozen=True, kw_only=True):
    label: str  # node name (ssh; per-node local runs), job id, "ns/pod", or "local"
    argv: tuple[str, ...]
    host: str | None = None  # ssh: the node it runs on

    @property
    def remote(self) -> str:
        """The remote command line: every element quoted for the remote shell."""
        return " ".join(shlex.quote(a) for a in self.argv)

    @property
    def display(self) -> str:
        """The argv for a human: shell-quoted, control characters visible (``$'a\\nb'``), never raw."""
        return " ".join(show_arg(a) for a in self.argv)


def show_arg(arg: str) -> str:
    """One argv element as a shell word a terminal can show: ``shlex.quote`` when printable, else
    ANSI-C quoting (``$'line1\\nline2\\x1b[31m'``) so a newline or ESC is seen, never acted on."""
    if arg.isprintable() and clean_text(arg) == arg:
        return shlex.quote(arg)
    out = []
    for ch in arg:
        if ch in "\\'":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch.isprintable() and clean_text(ch) == ch:
            out.append(ch)
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}")
    return "$'" + "".join(out) + "'"


class CustomPlan(msgspec.Struct, frozen=True, kw_only=True):
    action: CustomActionSettings
    targets: tuple[str, ...]
    invocations: tuple[Invocation, ...] = ()
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def runnable(self) -> bool:
        return not self.errors and bool(self.invocations)

    @property
    def confirm_word(self) -> str | None:
        return f"{self.action.name}-{len(self.targets)}" if self.action.dangerous else None

    @property
    def needs_yes(self) -> bool:
        return self.action.confirm or self.action.dangerous

    def commands(self) -> list[str]:
        """The exact argv, grouped by label set: ``node[01-04] (4): dcgmi diag -r 1``."""
        groups: dict[str, list[str]] = {}
        for inv in self.invocations:
            groups.setdefault(inv.display, []).append(inv.label)
        where = "ssh " if self.action.run == "ssh" else ""
        out = []
        for display, labels in groups.items():
            if labels == ["local"]:
                out.append(f"local: {display}")
            else:
                out.append(f"{where}{label_set(labels)} ({len(labels)}): {display}")
        return out

    def action_plan(self, *, limit: int = MAX_OUTPUT_BYTES) -> ActionPlan:
        """The same plan as the executor runs it (and the audit log and the Events view know it):
        every run's argv in ``command``, the read-only and confirmation rules as the plan's own.
        ``limit``: bytes of output kept per run."""
        a = self.action
        spec = CommandSpec(runs=tuple(CommandRun(label=i.label, argv=i.argv, host=i.host) for i in self.invocations),
                           remote=a.run == "ssh", timeout_s=a.timeout_s, max_parallel=a.max_parallel,
                           ssh_source=a.ssh_source, output_limit=limit)
        return ActionPlan(kind=ActionKind.CUSTOM, source=f"custom:{a.run}", targets=self.targets,
                          params={"name": a.name, "scope": a.scope, "run": a.run}, commands=tuple(self.commands()),
                          warnings=self.warnings, errors=self.errors, notes=self.notes, word=self.confirm_word,
                          read_only_refusal=read_only_refusal(a), command=spec)


def read_only_refusal(action: CustomActionSettings) -> str | None:
    if action.dangerous:
        return f"read-only mode: {action.name} is dangerous"
    if not action.read_only_ok:
        return f"read-only mode: {action.name} is not marked read_only_ok"
    return None


def split_targets(scope: str, expr: str) -> list[str]:
    """``--targets``: hostlists for nodes (``gpu[01-04],cpu7``), comma/space lists of job ids or pods."""
    if scope == "nodes":
        from hpctui.model.action import split_targets as split_hostlists

        return split_hostlists(ActionKind.DRAIN_NODES, expr)
    return [t for t in re.split(r"[\s,]+", expr) if t]


def _fill(argv: Sequence[str], values: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(element.format_map(values) for element in argv)


def plan_custom(action: CustomActionSettings, targets: Sequence[str], snapshot: ClusterSnapshot | None, *,
                read_only: bool = False, ssh_ready: bool = True) -> CustomPlan:
    """Targets (node hostlists, job ids, ``ns/pod``) → the exact argv of every run."""
    errors: list[str] = []
    warnings: list[str] = []
    notes: list[str] = []
    if read_only:
        refusal = read_only_refusal(action)
        if refusal:
            errors.append(refusal)
    if action.run == "ssh" and not ssh_ready:
        errors.append("run = \"ssh\" needs an ssh source in this cluster (its connection settings)")
    argv = action.argv
    used = placeholders_of(argv)
    per_target = bool(used & PER_TARGET[action.scope]) and action.run == "local"
    clean: list[str] = []
    node_of: dict[str, list[str]] = {}  # target -> its nodes
    values_of: dict[str, dict[str, str]] = {}
    by_id: dict[str, SlurmJob] = {}  # built once per plan: one pass over the queue, not one per target
    pods_by_key: dict[str, Pod] = {}
    if snapshot is not None and action.scope == "jobs":
        by_id = jobs_by_id(snapshot.jobs)
    elif snapshot is not None and action.scope == "pods":
        for p in reversed(snapshot.pods):
            pods_by_key[f"{p.namespace}/{p.name}"] = p
    for raw in targets:
        raw = raw.strip()
        if not raw:
            continue
        if action.scope == "nodes":
            try:
                names = expand(raw)
            except HostlistError as exc:
                errors.append(str(exc))
                continue
            for n in names:
                if n not in node_of:
                    clean.append(n)
                    node_of[n] = [n]
                    values_of[n] = {"node": n}
        elif action.scope == "jobs":
            job = by_id.get(raw)
            if job is None:
                errors.append(f"unknown job {clean_text(raw)!r}")
                continue
            nodes: list[str] = []
            if job.nodes:
                try:
                    nodes = expand(job.nodes)
                except HostlistError:
                    warnings.append(f"job {job.display_id}: unreadable node list {job.nodes!r}")
            clean.append(job.display_id)
            node_of[job.display_id] = nodes
            values_of[job.display_id] = {"job": job.display_id, "user": job.user or ""}
        else:
            pod = pods_by_key.get(raw) if "/" in raw else None
            if pod is None:
                errors.append(f"unknown pod {clean_text(raw)!r} (namespace/name)")
                continue
            key = f"{pod.namespace}/{pod.name}"
            clean.append(key)
            node_of[key] = [pod.node] if pod.node else []
            values_of[key] = {"pod": pod.name, "namespace": pod.namespace, "node": pod.node or ""}
            if "node" in used and not pod.node and per_target:
                errors.append(f"pod {key} is not scheduled on a node ({{node}} is empty)")
    all_nodes = sorted({n for t in clean for n in node_of[t]}, key=natural_key)
    if action.scope == "nodes" and snapshot is not None and snapshot.nodes:
        unknown = [n for n in all_nodes if n not in snapshot.nodes]
        if unknown:
            warnings.append(f"not known to any source: {label_set(unknown)}")
    common = {"nodes": label_set(all_nodes) if all_nodes else "", "nodes_csv": ",".join(all_nodes)}
    if used & AGGREGATE and not all_nodes and clean:
        errors.append("{nodes}: the selection has no nodes")
    if not clean and not errors:
        errors.append("no targets selected")
    if action.max_targets is not None and len(clean) > action.max_targets:
        errors.append(f"{action.name} runs on at most {action.max_targets} target(s); {len(clean)} selected")
    invocations: list[Invocation] = []
    if not errors:
        if action.run == "ssh":
            if not all_nodes:
                errors.append("no nodes to run on")
            for n in all_nodes:
                invocations.append(Invocation(label=n, host=n, argv=_fill(argv, {**common, "node": n})))
            if action.scope != "nodes":
                notes.append(f"runs on the {len(all_nodes)} node(s) of the selected {action.scope}")
        elif per_target:
            for t in clean:
                invocations.append(Invocation(label=t, argv=_fill(argv, {**common, **values_of[t]})))
        else:
            invocations.append(Invocation(label="local", argv=_fill(argv, common)))
    return CustomPlan(action=action, targets=tuple(clean), invocations=tuple(invocations), errors=tuple(errors),
                      warnings=tuple(warnings), notes=tuple(notes))


# -- running ----------------------------------------------------------------------------------------


class CustomResult(msgspec.Struct, frozen=True, kw_only=True):
    plan: CustomPlan
    outputs: tuple[NodeOutput, ...]
    result: ActionResult  # what the audit log and the Events view hold

    @property
    def ok(self) -> bool:
        return self.result.ok


async def run_local(inv: CommandRun, timeout_s: float, limit: int) -> NodeOutput:
    """One argv here: no shell, its own session (killed as a group), on every exit path."""
    from hpctui.sources.slurm import runner as children

    started = time.monotonic()
    try:
        proc = await asyncio.create_subprocess_exec(
            *inv.argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT, start_new_session=True)
    except FileNotFoundError:
        return NodeOutput(label=inv.label, error=f"{clean_text(inv.argv[0])}: command not found")
    except OSError as exc:
        return NodeOutput(label=inv.label, error=clean_text(f"{inv.argv[0]}: {exc.strerror or exc}"))
    children._LIVE.add(proc.pid)  # the app's exit paths kill every child group still running
    try:
        try:
            assert proc.stdout is not None
            out = await asyncio.wait_for(read_capped(proc.stdout, limit), timeout=timeout_s)
            rc = await asyncio.wait_for(proc.wait(), timeout=max(0.1, timeout_s - (time.monotonic() - started)))
        except TimeoutError:
            children._kill_group(proc)
            await children._reap(proc, children.KILL_WAIT_S)
            return NodeOutput(label=inv.label, error=f"timed out after {timeout_s:g} s",
                              duration_s=time.monotonic() - started)
        return NodeOutput(label=inv.label, output=clean_output(out, limit), rc=rc,
                          duration_s=time.monotonic() - started)
    finally:
        if proc.returncode is None:
            children._kill_group(proc)
        children._LIVE.discard(proc.pid)


def _ignore(_item: ProgressItem) -> None:
    """No one listens."""


def target_result(out: NodeOutput) -> TargetResult:
    """One run's outcome as the executor and the audit log keep it."""
    return TargetResult(target=out.label, ok=out.ok, message=out.error or (f"exit {out.rc}" if out.rc else "ok"))


class CustomBackend:
    """The action backend of ``[[custom_actions]]``: runs a plan's ``command`` — here (``remote=False``,
    no shell) or on each node over SSH (``remote=True``, through a :class:`CommandRunner` source:
    ``ssh_source`` names one, else the first). At most ``max_parallel`` runs at once; each run's
    output goes to ``progress`` as it ends; one result per run, in the order of the runs.

    It declares no action kind to the planner (custom plans are made by :func:`plan_custom`); the
    executor finds it by the plan's source, ``custom:local`` or ``custom:ssh``."""

    def __init__(self, actions: Callable[[], Sequence[CustomActionSettings]], *, remote: bool,
                 runners: Sequence[CommandRunner] = ()) -> None:
        self.actions = actions
        self.remote = remote
        self.runners = tuple(runners)
        self.name = "custom:ssh" if remote else "custom:local"

    @property
    def action_kinds(self) -> frozenset[ActionKind]:
        return frozenset()

    def runner_for(self, ssh_source: str | None) -> CommandRunner | None:
        """The source whose connections run the commands (``ssh_source``: by name; None: the first)."""
        return next((r for r in self.runners if ssh_source is None or r.name == ssh_source), None)

    def plan(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str],
             snapshot: ClusterSnapshot) -> ActionPlan:
        """``params["name"]`` names the configured action; its plan as :func:`plan_custom` makes it."""
        action = find_action(self.actions(), params.get("name", ""))
        if action is None:
            return ActionPlan(kind=kind, source=self.name, targets=targets, params=params,
                              errors=(f"unknown custom action {clean_text(params.get('name', ''))!r}",))
        ready = action.run != "ssh" or self.runner_for(action.ssh_source) is not None
        return plan_custom(action, targets, snapshot, ssh_ready=ready).action_plan()

    async def execute(self, plan: ActionPlan) -> tuple[TargetResult, ...]:
        return await self.execute_reporting(plan, _ignore)

    async def execute_reporting(self, plan: ActionPlan, progress: Progress) -> tuple[TargetResult, ...]:
        spec = plan.command
        if spec is None or not spec.runs:
            return tuple(TargetResult(target=t, ok=False, message="no command to run") for t in plan.targets)
        source = self.runner_for(spec.ssh_source) if spec.remote else None
        if spec.remote and source is None:
            return tuple(TargetResult(target=r.label, ok=False, message="run = \"ssh\" needs an ssh source in "
                                      "this cluster") for r in spec.runs)
        remote = source.command_runner() if source is not None else None
        gate = asyncio.Semaphore(spec.max_parallel)
        outputs: dict[str, NodeOutput] = {}

        async def one(run: CommandRun) -> None:
            async with gate:
                if remote is not None:
                    out = await remote.run(run, spec.timeout_s, spec.output_limit)
                else:
                    out = await run_local(run, spec.timeout_s, spec.output_limit)
            outputs[run.label] = out
            progress(out)

        try:
            if remote is not None:
                await remote.resolve([r.host for r in spec.runs if r.host])
            await asyncio.gather(*(one(run) for run in spec.runs))
        finally:
            if remote is not None:
                await remote.close()
        return tuple(target_result(outputs[r.label]) for r in spec.runs if r.label in outputs)


class CustomRun:
    """One run of a custom action: outputs arrive per run (``on_update`` after each); ``task``
    (owned by the runtime, so closing the view never cancels it) ends with the audited result.

    ``ssh``: a source of the caller's own whose connections run an SSH action (else the
    cluster's ssh sources). The executor refuses, runs and audits it; this object only listens."""

    def __init__(self, port: WorkflowPort, plan: CustomPlan, confirmation: str | bool, *,
                 on_update: Callable[[CustomRun], None] | None = None, limit: int = MAX_OUTPUT_BYTES,
                 ssh: CommandRunner | None = None) -> None:
        self.port = port
        self.plan = plan
        self.confirmation = confirmation
        self.on_update = on_update
        self.limit = limit
        self.ssh = ssh
        self.outputs: dict[str, NodeOutput] = {}
        self.refused: str | None = None
        self.result: CustomResult | None = None
        self.finished = False
        self.task: asyncio.Task[ActionResult] | None = None

    @property
    def pending(self) -> list[str]:
        if self.refused or self.finished:
            return []
        return [i.label for i in self.plan.invocations if i.label not in self.outputs]

    def ordered(self) -> list[NodeOutput]:
        return [self.outputs[i.label] for i in self.plan.invocations if i.label in self.outputs]

    def start(self) -> asyncio.Task[ActionResult]:
        """Hand the plan to the executor (a task the runtime owns); ``result`` is set when it ends."""
        via = None
        if self.ssh is not None and self.plan.action.run == "ssh":
            via = CustomBackend(lambda: (), remote=True, runners=(self.ssh,))
        self.task = self.port.start(self.plan.action_plan(limit=self.limit), self.confirmation, progress=self._heard,
                                    extra=self._audit_extra, via=via)
        self.task.add_done_callback(self._finished)  # before any awaiter of the task resumes
        return self.task

    def _heard(self, item: ProgressItem) -> None:
        if isinstance(item, NodeOutput):
            self.outputs[item.label] = item
            self._notify()

    def _audit_extra(self, result: ActionResult) -> dict[str, Any]:
        """The folded output in the outcome record (the executor writes it)."""
        return {"custom": audit_fields(self.ordered())} if result.refused is None else {}

    def _finished(self, task: asyncio.Task[ActionResult]) -> None:
        self.finished = True
        if task.cancelled() or task.exception() is not None:
            for inv in self.plan.invocations:
                self.outputs.setdefault(inv.label, NodeOutput(label=inv.label, error="interrupted"))
        else:
            result = task.result()
            self.refused = result.refused
            self.result = CustomResult(plan=self.plan, outputs=tuple(self.ordered()), result=result)
        self._notify()

    def _notify(self) -> None:
        if self.on_update is not None:
            try:
                self.on_update(self)
            except Exception:  # a view that went away must not break the run
                pass


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit:,} more characters)"


def audit_fields(outputs: Sequence[NodeOutput], *, total_bytes: int = AUDIT_OUTPUT_BYTES,
                 max_groups: int = AUDIT_MAX_GROUPS) -> dict[str, Any]:
    """The folded output for the audit record, bounded whatever the number of nodes: 4 KB of each
    fold, at most ``total_bytes`` of output and ``max_groups`` folds in all (then one marker says
    how many folds, nodes and bytes were left out), exit codes and failures as node sets per code
    or error (at most ``max_groups`` each, their node sets and messages cut too)."""
    folds: list[dict[str, Any]] = []
    left = {"folds": 0, "nodes": 0, "bytes": 0}
    budget = total_bytes
    for f in fold(outputs):
        text = f.text[:AUDIT_FOLD_BYTES]
        size = len(text.encode())
        if left["folds"] or len(folds) >= max_groups or size > budget:  # in order: nothing after a gap
            left["folds"] += 1
            left["nodes"] += len(f.labels)
            left["bytes"] += len(f.text.encode())
            continue
        budget -= size
        folds.append({"nodes": _cut(label_set(f.labels), AUDIT_LABEL_CHARS), "count": len(f.labels), "output": text,
                      "truncated": len(f.text) > AUDIT_FOLD_BYTES})
    doc: dict[str, Any] = {"folds": folds}
    if left["folds"]:
        doc["folds_left_out"] = {**left, "note": f"… {left['folds']:,} more folds ({left['nodes']:,} nodes), "
                                                 f"{left['bytes']:,} bytes left out"}
    codes: dict[int, list[str]] = {}
    for o in outputs:
        if o.error is None and o.rc is not None:
            codes.setdefault(o.rc, []).append(o.label)
    by_code = sorted(codes.items())
    doc["exit_codes"] = [{"rc": rc, "nodes": _cut(label_set(labels), AUDIT_LABEL_CHARS), "count": len(labels)}
                         for rc, labels in by_code[:max_groups]]
    failed = failures(outputs)
    doc["failed"] = [{"nodes": _cut(label_set(labels), AUDIT_LABEL_CHARS), "count": len(labels),
                      "error": _cut(err, AUDIT_LABEL_CHARS)} for err, labels in failed[:max_groups]]
    nonzero = exit_codes(outputs)
    doc["nonzero"] = [{"nodes": _cut(label_set(labels), AUDIT_LABEL_CHARS), "rc": rc}
                      for rc, labels in nonzero[:max_groups]]
    for key, groups in (("exit_codes", by_code), ("failed", failed), ("nonzero", nonzero)):
        if len(groups) > max_groups:
            rest = groups[max_groups:]
            doc[f"{key}_left_out"] = {"groups": len(rest), "nodes": sum(len(g[1]) for g in rest)}
    return doc


def new_run(port: WorkflowPort, name: str, targets: Sequence[str], confirmation: str | bool = False, *,
            on_update: Callable[[CustomRun], None] | None = None) -> CustomRun:
    """Plan ``name`` on ``targets`` against the latest snapshot (KeyError: no such action)."""
    from hpctui.sources.capabilities import CommandRunner

    action = find_action(port.custom_actions, name)
    if action is None:
        raise KeyError(name)
    ready = action.run != "ssh" or any(action.ssh_source in (None, s.name) for s in port.capability(CommandRunner))  # type: ignore[type-abstract]
    plan = plan_custom(action, targets, port.snapshot(), read_only=port.read_only, ssh_ready=ready)
    return CustomRun(port, plan, confirmation, on_update=on_update)
