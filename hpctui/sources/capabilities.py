"""What a source can do beyond ``collect``: one ``runtime_checkable`` Protocol per ability.

Callers find an ability with ``isinstance(source, HistoryProvider)`` — never with ``getattr`` or a ``kind ==``
branch — so a new source kind gains an ability by implementing the methods, and the registry
(:data:`hpctui.sources.registry.SOURCE_KINDS`) declares which Protocols each kind provides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from hpctui.model.logs import MAX_LOG_BYTES

if TYPE_CHECKING:
    from collections.abc import Sequence

    from hpctui.model.accounting import AccountingInfo
    from hpctui.model.action import CommandRun
    from hpctui.model.history import MetricHistory
    from hpctui.model.logs import JobOutputPaths, LogChunk, LogLine
    from hpctui.model.nodehistory import AcctQuery, AcctResult
    from hpctui.model.output import NodeOutput
    from hpctui.model.scheduler import JobOutlook
    from hpctui.sources.base import ActionBackend


@runtime_checkable
class HistoryProvider(Protocol):
    """Serves a metric's past over a window (a range query), beyond what the store keeps in memory."""

    name: str

    async def history(self, node: str, metric: str = "util", gpu: int | None = None,
                      window_s: float | None = None, points: int = 120) -> MetricHistory:
        """The node's (or one GPU's) series over ``window_s``; empty points when there is no data."""
        ...


@runtime_checkable
class DetailFocus(Protocol):
    """Fetches full per-GPU / per-port detail only for the nodes someone looks at (a metrics engine
    that otherwise sums healthy nodes up, Prometheus ``detail = "aggregate"``). The runtime names the
    node the UI selects, charts or opens from the problem list; the source keeps the most recent few."""

    name: str

    def want_detail(self, node: str) -> None:
        """Read ``node``'s every GPU and port in full from the next refresh on (cheap; never does I/O)."""
        ...


@runtime_checkable
class PodInspector(Protocol):
    """Describes a pod and reads its logs (Kubernetes)."""

    name: str

    async def describe_pod(self, namespace: str, name: str) -> str:
        """A ``kubectl describe``-like text of one pod, sanitised."""
        ...

    async def pod_logs(self, namespace: str, name: str, container: str | None = None, tail: int = 200,
                       previous: bool = False) -> str:
        """The last ``tail`` lines of a container's log (``previous``: its previous instance), sanitised and bounded."""
        ...


@runtime_checkable
class PodLogFollower(Protocol):
    """Reads a pod's log as lines, again from where the last read stopped (follow), per container."""

    name: str

    async def pod_log_lines(self, namespace: str, name: str, container: str | None = None, tail: int = 200,
                            previous: bool = False, since: str | None = None) -> tuple[list[str], str | None]:
        """(lines, the time of the last one): with ``since`` only lines after that time; sanitised, bounded."""
        ...

    async def pod_containers(self, namespace: str, name: str) -> tuple[str, ...]:
        """The pod's container names, init containers first."""
        ...


@runtime_checkable
class JobOutputResolver(Protocol):
    """Knows where a batch job writes its stdout/stderr (Slurm: the job record, patterns filled in)."""

    name: str

    async def job_output_paths(self, job_id: str) -> JobOutputPaths | None:
        """The job's output paths and the node that can read them; None for a job the scheduler does not know."""
        ...


@runtime_checkable
class NodeLogReader(Protocol):
    """Reads files and journals on the nodes it reaches (an SSH source), bounded and sanitised."""

    name: str
    log_host: str | None  # the node that reads job output files (a login node); None: the job's batch host

    async def read_file(self, host: str, path: str, offset: int | None = None,
                        max_bytes: int = MAX_LOG_BYTES) -> LogChunk:
        """``path``'s tail on ``host`` (``offset``: from there on, for follow); errors said in the chunk."""
        ...

    async def journal(self, hosts: Sequence[str], since: float, until: float, *, kernel: bool = True,
                      units: Sequence[str] = (), max_lines: int = 2000) -> list[NodeOutput]:
        """``journalctl`` of the window on each host (``-o short-unix`` text per node); never raises per node."""
        ...


@runtime_checkable
class LogQuerier(Protocol):
    """Answers a log query over a time window (Loki's LogQL)."""

    name: str

    async def query_logs(self, query: str, since: float, until: float, limit: int = 1000) -> list[LogLine]:
        """The matching lines, oldest first, sanitised and bounded."""
        ...

    def node_selector(self, node: str) -> str:
        """The query that selects one node's lines (the site's label scheme, from the config)."""
        ...


@runtime_checkable
class AccountingProvider(Protocol):
    """Answers fair-share, QoS and association questions on demand (Slurm accounting)."""

    name: str

    async def accounting(self, user: str | None = None, account: str | None = None) -> AccountingInfo:
        """Never raises for "accounting is not enabled": ``available=False`` with the reason."""
        ...


@runtime_checkable
class JobAccounting(Protocol):
    """Answers what the accounting database remembers, on demand (Slurm's slurmdbd): node events,
    finished jobs, GPU-hours. Bounded windows and row caps; never raises for "no accounting"
    (``available=False`` with the reason), raises ``ValueError`` for a bad filter."""

    name: str

    async def node_events(self, nodes: str | None, start: float, end: float, limit: int = 5000) -> AcctResult:
        """Drain/down events of ``nodes`` (a hostlist; None: every node) overlapping [start, end]."""
        ...

    async def acct_jobs(self, query: AcctQuery) -> AcctResult:
        """Jobs of the query's window and filters (``sacct``), exit codes decoded."""
        ...

    async def gpu_usage(self, start: float, end: float, account: str | None = None,
                        user: str | None = None) -> AcctResult:
        """GPU-hours per account and per user in it over [start, end] (``sreport``)."""
        ...


@runtime_checkable
class JobOutlookProvider(Protocol):
    """Answers, for one job, its priority factors and expected start (Slurm ``sprio``, ``squeue --start``)."""

    name: str

    async def job_outlook(self, job_id: str) -> JobOutlook:
        """Never raises for "not pending" or a failed command: ``detail`` says so. ``ValueError``
        for a string that is not a job id."""
        ...


@runtime_checkable
class MigReader(Protocol):
    """Reads the MIG state a node's GPUs are in now (the verify step of a MIG plan)."""

    async def read_mig(self, node: str) -> dict[int, tuple[bool, tuple[str, ...]]]:
        """GPU index → (MIG mode enabled, the GPU instance profiles present)."""
        ...


class RemoteCommands(Protocol):
    """One batch of remote runs over a source's connections (a custom action's ``run = "ssh"``)."""

    async def resolve(self, hosts: Sequence[str]) -> None:
        """Look every host up before the runs start (ssh_config, jump hosts): one thread, in order."""
        ...

    async def run(self, run: CommandRun, timeout_s: float, limit: int) -> NodeOutput:
        """Run one argv on ``run.host`` (each element quoted for the remote shell); never raises."""
        ...

    async def close(self) -> None:
        """Close the batch's connections."""
        ...


@runtime_checkable
class CommandRunner(Protocol):
    """Runs commands on the nodes it reaches (an SSH source: with its connection settings)."""

    name: str

    def command_runner(self) -> RemoteCommands:
        """A fresh batch of connections for one action run."""
        ...


@runtime_checkable
class MigApplier(Protocol):
    """Can change a node's MIG layout: its :meth:`mig_backend` plans and applies ``mig_reconfigure``."""

    name: str
    kind: str  # the source kind: the MIG plan routes by it (demo, k8s for GPU Operator nodes, ssh)

    def mig_backend(self) -> ActionBackend:
        """The backend that applies a layout on this source's nodes."""
        ...


@runtime_checkable
class NodeShell(Protocol):
    """Builds the system ``ssh`` argv of an interactive session on a node it reaches (an SSH source)."""

    name: str

    def node_shell_argv(self, node: str, *, command: str | None = None, tty: bool = False,
                   program: str = "ssh") -> tuple[str, ...]:
        """``ssh`` to ``node`` with the source's settings (``command``: run that instead of a login
        shell; ``tty``: force a pseudo-terminal); ValueError for a node it would not dial."""
        ...


@runtime_checkable
class PodShell(Protocol):
    """Builds the ``kubectl exec -it`` argv into a pod's container (a Kubernetes source)."""

    name: str

    def pod_shell_argv(self, namespace: str, pod: str, container: str | None, *,
                   kubectl: str = "kubectl") -> tuple[str, ...]:
        """``kubectl exec -it`` with the source's kubeconfig/context; ValueError for a bad name."""
        ...


@runtime_checkable
class JobShell(Protocol):
    """Builds the ``srun --overlap --pty`` argv into a running job's allocation (a Slurm source)."""

    name: str

    def job_shell_argv(self, job_id: str, shell: str) -> tuple[str, ...]:
        """``srun --jobid=N --overlap --pty SHELL`` here; ValueError for a bad job id or shell."""
        ...
