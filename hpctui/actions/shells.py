"""Interactive shells: on a node (ssh), in a pod's container (kubectl exec), in a job's allocation (srun).

A shell is an action like any other: a plan with the exact argv (built by the source that knows
how to reach the thing: :class:`~hpctui.sources.capabilities.NodeShell`, ``PodShell``,
``JobShell``), run by the one executor, which refuses it (read-only mode, a disabled cluster, no
terminal), writes the intent before it starts and the outcome after it ends: who, where, when,
how long, the exit status. What differs is where it runs: on the real terminal, while the app is
suspended. That is the UI's business, so the backend runs the argv through a
:class:`TerminalRunner` port the UI supplies (hpctui.ui.shell); a test supplies a recorder.

Config (``[shells]``; per cluster ``[clusters.NAME] shells = false``): on by default — an admin's
TUI opens a shell with one key, as k9s does — and refused in read-only mode unless
``allow_read_only``; never on the wall display or in a browser (``hpctui serve``: there is no
terminal to hand over).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from hpctui.model.action import (
    SHELL_ACTIONS,
    ActionKind,
    ActionPlan,
    ActionResult,
    CommandRun,
    CommandSpec,
    TargetResult,
)
from hpctui.model.hostlist import is_valid_hostname
from hpctui.sources.capabilities import JobShell, NodeShell, PodShell

if TYPE_CHECKING:
    from hpctui.actions.ports import WorkflowPort
    from hpctui.model import ClusterSnapshot

BACKEND = "shell"  # the plans' source name (audit records: "source": "shell")


class ShellSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The config's ``[shells]`` table: interactive sessions from the TUI (``s`` on a node, pod, job)."""

    enabled: bool = True
    """Shell keys open sessions; a cluster's own ``shells = false`` (``[clusters.NAME]``) turns them off there."""
    allow_read_only: bool = False
    """Open shells in read-only mode too (a shell changes nothing by itself, but its user can); the wall display
    and ``hpctui serve`` never open one."""
    ssh: str = "ssh"
    """The OpenSSH client run for node shells (and for ``job_login_node``)."""
    kubectl: str = "kubectl"
    """The kubectl run for ``kubectl exec -it`` into a container."""
    ssh_source: str | None = None
    """Whose connection settings a node shell uses (an SSH source's name); default: the first SSH source."""
    job_login_node: str | None = None
    """Run a job's ``srun --overlap --pty`` on this node over ssh (the SSH source's settings); default: here."""

    def __post_init__(self) -> None:
        if not self.ssh.strip() or not self.kubectl.strip():
            raise ValueError("ssh and kubectl must name a program")
        if self.job_login_node is not None and not is_valid_hostname(self.job_login_node):
            raise ValueError(f"job_login_node {self.job_login_node[:80]!r} is not a host name")


class TerminalRunner(Protocol):
    """The UI's port: hands the real terminal to one argv and takes it back.

    Promises: :meth:`unavailable` says why no terminal can be handed over now (a browser session,
    the wall display, a driver that cannot suspend), or None; :meth:`run` runs ``argv`` in the
    terminal's foreground until it exits and returns its exit status (negative: killed by that
    signal; 127: it could not be started), with the app suspended meanwhile and redrawn after."""

    def unavailable(self) -> str | None:
        """Why a shell cannot be opened here, or None."""
        ...

    async def run(self, argv: Sequence[str]) -> int:
        """Run ``argv`` on the real terminal; its exit status."""
        ...


def shell_kind_of(what: str) -> ActionKind:
    """``node``/``pod``/``job`` → the shell action kind (ValueError for anything else)."""
    return {"node": ActionKind.SHELL_NODE, "pod": ActionKind.SHELL_POD, "job": ActionKind.SHELL_JOB}[what]


class ShellBackend:
    """Plans and runs the shell actions of one cluster through a :class:`TerminalRunner`.

    ``nodes``/``pods``/``jobs``: the sources that can build the argv (the first of each is used;
    ``[shells] ssh_source`` picks an SSH source by name). ``settings.enabled``: this cluster's switch."""

    name = BACKEND

    def __init__(self, settings: ShellSettings, runner: TerminalRunner, *,
                 nodes: Sequence[NodeShell] = (), pods: Sequence[PodShell] = (),
                 jobs: Sequence[JobShell] = ()) -> None:
        self.settings = settings
        self.runner = runner
        self.nodes = tuple(nodes)
        self.pods = tuple(pods)
        self.jobs = tuple(jobs)

    @property
    def action_kinds(self) -> frozenset[ActionKind]:
        return SHELL_ACTIONS

    def ssh(self) -> NodeShell | None:
        """The SSH source node shells (and a login node's srun) go through."""
        wanted = self.settings.ssh_source
        return next((s for s in self.nodes if wanted is None or s.name == wanted), None)

    def _no_ssh(self, why: str) -> str:
        wanted = self.settings.ssh_source
        return (f"no SSH source named {wanted!r} ([shells] ssh_source): {why}" if wanted
                else f"no SSH source is configured: {why}")

    # -- planning (no side effects beyond reading ssh_config) ---------------------------------
    def plan(self, kind: ActionKind, targets: tuple[str, ...], params: dict[str, str],
             snapshot: ClusterSnapshot) -> ActionPlan:
        """One session on one target: its exact argv (``commands``, ``command``), where it runs
        (``params["where"]``) and every reason it must not run (``errors``)."""
        errors: list[str] = []
        if not self.settings.enabled:
            errors.append("shells are disabled for this cluster ([shells] enabled / [clusters.NAME] shells)")
        why = self.runner.unavailable()
        if why:
            errors.append(why)
        if len(targets) != 1:
            errors.append("a shell opens on exactly one target" if targets else "no target selected")
        argv: tuple[str, ...] = ()
        where = ""
        if len(targets) == 1 and kind in SHELL_ACTIONS:
            try:
                argv, where = self._argv(kind, targets[0], params, snapshot)
            except ValueError as exc:
                errors.append(str(exc))
        params = {**{k: v for k, v in params.items() if k == "container"}, **({"where": where} if where else {})}
        return ActionPlan(
            kind=kind, source=self.name, targets=targets, params=params,
            commands=(shlex.join(argv),) if argv else (), errors=tuple(errors),
            read_only_refusal=None if self.settings.allow_read_only else "read-only mode",
            command=CommandSpec(runs=(CommandRun(label=targets[0], argv=argv, host=where or None),))
            if argv else None)

    def _argv(self, kind: ActionKind, target: str, params: Mapping[str, str],
              snapshot: ClusterSnapshot) -> tuple[tuple[str, ...], str]:
        """(argv, where it runs) for one target; ValueError with the reason when there is none."""
        if kind is ActionKind.SHELL_NODE:
            ssh = self.ssh()
            if ssh is None:
                raise ValueError(self._no_ssh("node shells use its settings"))
            if target not in snapshot.nodes:
                raise ValueError(f"unknown node {target[:80]!r}")
            return ssh.node_shell_argv(target, program=self.settings.ssh), target
        if kind is ActionKind.SHELL_POD:
            return self._pod_argv(target, params.get("container") or None, snapshot)
        return self._job_argv(target, snapshot)

    def _pod_argv(self, target: str, container: str | None,
                  snapshot: ClusterSnapshot) -> tuple[tuple[str, ...], str]:
        if not self.pods:
            raise ValueError("no Kubernetes source is configured")
        namespace, _, name = target.partition("/")
        pod = next((p for p in snapshot.pods if p.namespace == namespace and p.name == name), None)
        if pod is None:
            raise ValueError(f"unknown pod {target[:120]!r}")
        if pod.phase != "Running":
            raise ValueError(f"pod {target} is {pod.phase}, not Running: nothing to exec into")
        if container is None and len(pod.containers) > 1:
            raise ValueError(f"pod {target} has {len(pod.containers)} containers: choose one")
        if container is not None and pod.containers and container not in pod.containers:
            raise ValueError(f"pod {target} has no container {container[:80]!r}")
        chosen = container or (pod.containers[0] if pod.containers else None)
        argv = self.pods[0].pod_shell_argv(namespace, name, chosen, kubectl=self.settings.kubectl)
        return argv, f"{target}" + (f" ({chosen})" if chosen else "") + (f" on {pod.node}" if pod.node else "")

    def _job_argv(self, target: str, snapshot: ClusterSnapshot) -> tuple[tuple[str, ...], str]:
        from hpctui.sources.slurm.shell import local_shell, srun_remote_command

        job = next((j for j in snapshot.jobs if j.display_id == target or str(j.job_id) == target), None)
        if job is None:
            raise ValueError(f"unknown job {target[:40]!r}")
        if job.state != "RUNNING":
            raise ValueError(f"job {target} is {job.state}, not RUNNING: it has no allocation to join")
        job_id = str(job.job_id)
        login = self.settings.job_login_node
        if login:
            ssh = self.ssh()
            if ssh is None:
                raise ValueError(self._no_ssh("[shells] job_login_node is reached with its settings"))
            argv = ssh.node_shell_argv(login, command=srun_remote_command(job_id), tty=True,
                                       program=self.settings.ssh)
            return argv, f"job {job_id} via {login}"
        if not self.jobs:
            raise ValueError("no Slurm source is configured")
        return self.jobs[0].job_shell_argv(job_id, local_shell()), f"job {job_id} (srun here)"

    # -- running ------------------------------------------------------------------------------
    async def execute(self, plan: ActionPlan) -> tuple[TargetResult, ...]:
        """Run the planned argv on the terminal; one result: ok when it exited 0, else its status."""
        assert plan.command is not None and plan.command.runs
        run = plan.command.runs[0]
        status = await self.runner.run(run.argv)
        return (TargetResult(target=run.label, ok=status == 0, message=describe_status(status)),)


def describe_status(status: int) -> str:
    """``exit status 3``, ``killed by signal 9``, ``could not start``: a session's end in words."""
    if status < 0:
        return f"killed by signal {-status}"
    if status == 127:
        return "exit status 127 (command not found or could not start)"
    return f"exit status {status}"


def exit_status(result: ActionResult) -> int | None:
    """The session's exit status from its result message, None when it did not run."""
    if result.refused is not None or not result.results:
        return None
    words = result.results[0].message.split()
    if words[:2] == ["exit", "status"]:
        return int(words[2])
    if words[:3] == ["killed", "by", "signal"]:
        return -int(words[3])
    return None


def audit_fields(result: ActionResult) -> dict[str, Any]:
    """What a shell's outcome record adds: where it ran, how long, the exit status."""
    return {"session": {"where": result.plan.params.get("where", ""), "duration_s": round(result.finished
                                                                                       - result.started, 3),
                        "exit_status": exit_status(result)}}


def shell_backend(port: WorkflowPort, runner: TerminalRunner) -> ShellBackend:
    """The backend of the port's cluster: its ``[shells]`` settings (with its own switch), its sources' abilities."""
    return ShellBackend(port.shells, runner, nodes=port.capability(NodeShell),  # type: ignore[type-abstract]
                        pods=port.capability(PodShell), jobs=port.capability(JobShell))  # type: ignore[type-abstract]


async def open_shell(port: WorkflowPort, runner: TerminalRunner, kind: ActionKind, target: str,
                     params: Mapping[str, str] | None = None) -> ActionResult:
    """Plan a shell on ``target`` and run it through the port's executor: refused there (read-only,
    disabled, no terminal, a bad target) or run on the terminal, audited either way. The key
    press is the confirmation: a shell stops nothing and runs nothing without its user."""
    backend = shell_backend(port, runner)
    snapshot = port.snapshot()
    plan = backend.plan(kind, (target,), dict(params or {}), snapshot)
    return await port.execute(plan, True, extra=audit_fields, via=backend)


# -- the terminal handover (used by the UI's runner) ------------------------------------------
def _terminal_fd() -> int | None:
    """The controlling terminal's fd when stdin is one, else None (tests, pipes)."""
    try:
        fd = sys.__stdin__.fileno() if sys.__stdin__ is not None else 0
    except (ValueError, OSError):
        return None
    return fd if os.isatty(fd) else None


def _give_terminal(fd: int, pgrp: int) -> None:
    """Make ``pgrp`` the terminal's foreground group; SIGTTOU ignored meanwhile (we may be in the background)."""
    old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        with contextlib.suppress(OSError):
            os.tcsetpgrp(fd, pgrp)
    finally:
        signal.signal(signal.SIGTTOU, old)


async def run_in_foreground(argv: Sequence[str]) -> int:
    """Run ``argv`` on this process's terminal as its foreground job, like a shell runs a command.

    The child gets a process group of its own and the terminal's foreground, so ctrl+c, ctrl+\\
    and ctrl+z reach it and never this app; the terminal comes back to us when it exits. Without
    a terminal (stdin not a tty) it simply runs. Returns the exit status (negative: the signal
    that killed it; 127: it could not be started)."""
    fd = _terminal_fd()
    try:
        proc = await asyncio.create_subprocess_exec(*argv, process_group=0 if fd is not None else None)
    except OSError:
        return 127
    try:
        if fd is not None:
            _give_terminal(fd, proc.pid)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGCONT)  # it may have read the tty before it was foreground
        return await proc.wait()
    finally:
        if proc.returncode is None:  # we were cancelled: the session must not outlive the action
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGHUP)
        if fd is not None:
            _give_terminal(fd, os.getpgrp())
