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

Safety: read-only mode refuses unless ``read_only_ok = true`` and not ``dangerous``;
``dangerous`` needs the typed word (``NAME-N``), ``confirm`` a y/n; every run is audited
(intent before, outcome after, with the folded output truncated to 4 KB a fold and 64 KB in all).
"""

from __future__ import annotations

import asyncio
import re
import shlex
import string
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from hpctui.actions.fold import NodeOutput, clean_output, exit_codes, failures, fold, label_set, natural_key
from hpctui.base.sanitize import clean_text
from hpctui.model.action import ActionKind, ActionPlan, ActionResult, TargetResult
from hpctui.model.hostlist import HostlistError, expand
from hpctui.model.jobs import jobs_by_id

if TYPE_CHECKING:
    from hpctui.core.runtime import Runtime
    from hpctui.model import ClusterSnapshot, Pod, SlurmJob
    from hpctui.sources.ssh.settings import SshSettings
    from hpctui.sources.ssh.targets import Target

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
    command: list[str] | str  # argv template, or one string split with shlex
    scope: Scope = "nodes"
    key: str | None = None  # Textual key name on the scope's pane ("ctrl+g", "G"); must be free
    run: RunMode = "local"
    description: str = ""
    dangerous: bool = False  # typed confirmation word; never allowed in read-only mode
    confirm: bool = False  # a y/n before it runs (the TUI: enter alone does not run it)
    read_only_ok: bool = False  # may run in read-only mode (a harmless diagnostic)
    timeout_s: float = 60.0  # per run (per node over SSH), after the connection is up
    max_parallel: int = 32  # runs in flight at once
    max_targets: int | None = None  # refuse bigger selections (1: "on one node", e.g. ibdiagnet)
    ssh_source: str | None = None  # which ssh source's connection settings (default: the first)

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


def find_action(actions: Sequence[CustomActionSettings], name: str) -> CustomActionSettings | None:
    return next((a for a in actions if a.name == name), None)


def load_custom_actions(runtime: Runtime) -> tuple[CustomActionSettings, ...]:
    """The custom actions configured for ``runtime`` (none for the built-in demo)."""
    return tuple(getattr(runtime, "custom_actions", ()))


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

    def action_plan(self) -> ActionPlan:
        """The same plan in the form the audit log and the Events view know."""
        a = self.action
        return ActionPlan(kind=ActionKind.CUSTOM, source=f"custom:{a.run}", targets=self.targets,
                          params={"name": a.name, "scope": a.scope, "run": a.run}, commands=tuple(self.commands()),
                          warnings=self.warnings, errors=self.errors, notes=self.notes)


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


def refusal(plan: CustomPlan, confirmation: str | bool, *, read_only: bool) -> str | None:
    """Why ``plan`` must not run (the executor's rules, for custom actions)."""
    if read_only:
        why = read_only_refusal(plan.action)
        if why:
            return why
    if not plan.runnable:
        return "; ".join(plan.errors) or "nothing to do"
    word = plan.confirm_word
    if word is not None:
        return None if confirmation == word else f"not confirmed (type {word!r})"
    return None if confirmation is True or confirmation == "y" else "not confirmed"


async def _read_capped(stream: Any, limit: int) -> bytes:
    """Everything up to ``limit`` bytes; the rest is read and dropped (the writer never blocks)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            break
        if size <= limit:
            chunks.append(chunk)
        size += len(chunk)
    data = b"".join(chunks)
    return data[:limit + 1]  # one byte over the limit: clean_output notes the cut


async def run_local(inv: Invocation, timeout_s: float, limit: int) -> NodeOutput:
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
            out = await asyncio.wait_for(_read_capped(proc.stdout, limit), timeout=timeout_s)
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


class SshRunner:
    """Runs one remote command per node over a fresh pool (the ssh source's settings)."""

    def __init__(self, settings: SshSettings) -> None:
        from hpctui.sources.ssh.pool import SshPool
        from hpctui.sources.ssh.targets import Resolver

        self.settings = settings
        self.resolver = Resolver(settings)
        self.pool = SshPool(settings, self.resolver)
        self.targets: dict[str, Target] = {}

    async def resolve(self, hosts: Sequence[str]) -> None:
        """Every node's endpoint through ssh_config, in one thread, one after another (the resolver
        writes one scratch file per config: parallel calls would read each other's)."""
        self.targets = await asyncio.to_thread(lambda: {h: self.resolver.resolve(h) for h in hosts})

    async def run(self, inv: Invocation, timeout_s: float, limit: int) -> NodeOutput:
        import asyncssh

        from hpctui.sources.ssh.pool import describe_error

        assert inv.host is not None
        started = time.monotonic()
        target = self.targets.get(inv.host)
        if target is None:  # not resolved up front (resolve() shares scratch files: one thread at a time)
            target = await asyncio.to_thread(self.resolver.resolve, inv.host)
        if target.error:
            return NodeOutput(label=inv.label, error=clean_text(target.error))
        try:
            conn = await self.pool.connect(target)
        except Exception as exc:
            return NodeOutput(label=inv.label, error=clean_text(describe_error(exc, self.settings.connect_timeout_s)),
                              duration_s=time.monotonic() - started)
        proc: Any = None
        try:
            async def go() -> tuple[bytes, int | None, str | None]:
                nonlocal proc
                proc = await conn.create_process(inv.remote, encoding=None, stdin=asyncssh.DEVNULL,
                                                 stderr=asyncssh.STDOUT)
                out = await _read_capped(proc.stdout, limit)
                done = await proc.wait(check=False)
                signal = f"killed by signal {done.exit_signal[0]}" if done.exit_signal else None
                return out, done.exit_status, signal

            try:
                out, rc, killed = await asyncio.wait_for(go(), timeout=timeout_s)
            except TimeoutError:
                if proc is not None:
                    # OpenSSH kills the remote process group on this request, except for root logins
                    # (no privilege-separated session: "session signalling requires privilege
                    # separation"); then the command lives on until it writes to the closed channel.
                    try:
                        proc.send_signal("KILL")
                    except Exception:
                        pass
                return NodeOutput(label=inv.label, error=f"timed out after {timeout_s:g} s",
                                  duration_s=time.monotonic() - started)
            except (asyncssh.Error, OSError) as exc:
                return NodeOutput(label=inv.label, error=clean_text(describe_error(exc)),
                                  duration_s=time.monotonic() - started)
            if killed is not None and (rc is None or rc < 0):
                return NodeOutput(label=inv.label, output=clean_output(out, limit), error=killed,
                                  duration_s=time.monotonic() - started)
            return NodeOutput(label=inv.label, output=clean_output(out, limit), rc=rc if rc is not None else -1,
                              duration_s=time.monotonic() - started)
        finally:
            conn.close()

    async def close(self) -> None:
        await self.pool.close()


def ssh_settings_of(runtime: Runtime, action: CustomActionSettings) -> SshSettings | None:
    """The connection settings of the cluster's ssh source (``ssh_source`` names one)."""
    for source in runtime.sources:
        if getattr(source, "kind", None) != "ssh":
            continue
        if action.ssh_source is None or getattr(source, "name", None) == action.ssh_source:
            settings: SshSettings | None = getattr(source, "settings", None)
            return settings
    return None


class CustomRun:
    """One run of a custom action: outputs arrive per node (``on_update`` after each); ``task``
    (owned by the runtime, so closing the view never cancels it) ends with the audited result."""

    def __init__(self, runtime: Runtime, plan: CustomPlan, confirmation: str | bool, *,
                 on_update: Callable[[CustomRun], None] | None = None, limit: int = 1 << 20,
                 ssh: SshSettings | None = None) -> None:
        self.runtime = runtime
        self.plan = plan
        self.confirmation = confirmation
        self.on_update = on_update
        self.limit = limit
        self.ssh = ssh
        self.outputs: dict[str, NodeOutput] = {}
        self.refused: str | None = None
        self.result: CustomResult | None = None
        self.task: asyncio.Task[ActionResult] | None = None

    @property
    def pending(self) -> list[str]:
        if self.refused or self.result is not None:
            return []
        return [i.label for i in self.plan.invocations if i.label not in self.outputs]

    def ordered(self) -> list[NodeOutput]:
        return [self.outputs[i.label] for i in self.plan.invocations if i.label in self.outputs]

    def start(self) -> asyncio.Task[ActionResult]:
        self.task = self.runtime.track_action(self._go())
        return self.task

    def _notify(self) -> None:
        if self.on_update is not None:
            try:
                self.on_update(self)
            except Exception:  # a view that went away must not break the run
                pass

    async def _go(self) -> ActionResult:
        runtime = self.runtime
        executor = runtime.executor
        audit = executor.audit
        user = executor.user
        extra = dict(executor.user_extra)
        action_plan = self.plan.action_plan()
        started = executor.clock()
        action_id = uuid.uuid4().hex
        self.refused = refusal(self.plan, self.confirmation, read_only=executor.read_only)
        if self.refused is None and self.plan.action.run == "ssh":
            self.ssh = self.ssh or ssh_settings_of(runtime, self.plan.action)
            if self.ssh is None:
                self.refused = "run = \"ssh\" needs an ssh source in this cluster"
        if self.refused is None and audit is not None:
            problem = executor.record_audit("intent", lambda: audit.intent(
                action_plan, executor.cluster, user=user, action_id=action_id, time=started, extra=extra))
            if problem is not None:
                self.refused = f"audit log {audit.path} unwritable ({problem}): not run"
        interrupted = False
        try:
            if self.refused is None:
                try:
                    await self._run_all()
                except asyncio.CancelledError:
                    interrupted = True
                    raise
        finally:
            if interrupted:
                for inv in self.plan.invocations:
                    self.outputs.setdefault(inv.label, NodeOutput(label=inv.label, error="interrupted"))
            outputs = tuple(self.ordered())
            results = tuple(TargetResult(target=o.label, ok=o.ok,
                                         message=o.error or (f"exit {o.rc}" if o.rc else "ok")) for o in outputs)
            result = ActionResult(plan=action_plan, user=user, started=started, finished=executor.clock(),
                                  results=results, refused=self.refused)
            self.result = CustomResult(plan=self.plan, outputs=outputs, result=result)
            if audit is not None:
                record = {"custom": audit_fields(outputs)} if self.refused is None else {}
                executor.record_audit("outcome", lambda: audit.append(result, executor.cluster, action_id=action_id,
                                                                      extra={**extra, **record}))
            self._notify()
        return result

    async def _run_all(self) -> None:
        action = self.plan.action
        gate = asyncio.Semaphore(action.max_parallel)
        ssh = SshRunner(self.ssh) if action.run == "ssh" and self.ssh is not None else None

        async def one(inv: Invocation) -> None:
            async with gate:
                if ssh is not None:
                    out = await ssh.run(inv, action.timeout_s, self.limit)
                else:
                    out = await run_local(inv, action.timeout_s, self.limit)
            self.outputs[inv.label] = out
            self._notify()

        try:
            if ssh is not None:
                await ssh.resolve([i.host for i in self.plan.invocations if i.host])
            await asyncio.gather(*(one(inv) for inv in self.plan.invocations))
        finally:
            if ssh is not None:
                await ssh.close()


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


def new_run(runtime: Runtime, name: str, targets: Sequence[str], confirmation: str | bool = False, *,
            on_update: Callable[[CustomRun], None] | None = None) -> CustomRun:
    """Plan ``name`` on ``targets`` against the runtime's latest snapshot (KeyError: no such action)."""
    action = find_action(load_custom_actions(runtime), name)
    if action is None:
        raise KeyError(name)
    ssh = ssh_settings_of(runtime, action) if action.run == "ssh" else None
    plan = plan_custom(action, targets, runtime.store.snapshot(), read_only=runtime.executor.read_only,
                       ssh_ready=ssh is not None or action.run != "ssh")
    return CustomRun(runtime, plan, confirmation, on_update=on_update, ssh=ssh)



# -- ``hpctui act custom --param name=NAME --targets EXPR`` ------------------------------------------


def known_or_hint(runtime: Runtime, params: Mapping[str, str]) -> str | None:
    """None when ``--param name=NAME`` names a configured custom action, else the line to print."""
    actions = load_custom_actions(runtime)
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


async def run_custom_act(runtime: Runtime, targets: Sequence[str], params: Mapping[str, str], *, dry_run: bool,
                         yes: bool, as_json: bool, interactive: bool, prompt: Callable[[str], str] = input,
                         out: Callable[[str], Any] | None = None, err: Callable[[str], Any] | None = None) -> int:
    """Plan, show, confirm, run, print the folded output. 0 all ok, 1 some failed, 2 usage/refused."""
    import sys

    from hpctui.actions.fold import render, summary

    write = out or sys.stdout.write
    warn = err or sys.stderr.write
    hint = known_or_hint(runtime, params)
    action = find_action(load_custom_actions(runtime), params.get("name", "").strip())
    if hint is not None or action is None:
        warn(hint or "hpctui act custom: no such action\n")
        return 2
    if action.scope != "nodes":  # jobs and pods are looked up; nodes are named (no SSH probe round first)
        await runtime.collect_once()
    expr = " ".join(targets)
    run = new_run(runtime, action.name, split_targets(action.scope, expr))
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
    for problem in runtime.executor.audit_errors:
        warn(f"hpctui act: warning: {problem}\n")
    if result.result.refused is not None:
        return 2
    return 0 if result.ok else 1
