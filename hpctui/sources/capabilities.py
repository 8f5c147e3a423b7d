"""What a source can do beyond ``collect``: one ``runtime_checkable`` Protocol per ability.

Callers find an ability with ``isinstance(source, HistoryProvider)`` — never with ``getattr`` or a ``kind ==``
branch — so a new source kind gains an ability by implementing the methods, and the registry
(:data:`hpctui.sources.registry.SOURCE_KINDS`) declares which Protocols each kind provides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from hpctui.model.accounting import AccountingInfo
    from hpctui.model.history import MetricHistory


@runtime_checkable
class HistoryProvider(Protocol):
    """Serves a metric's past over a window (a range query), beyond what the store keeps in memory."""

    name: str

    async def history(self, node: str, metric: str = "util", gpu: int | None = None,
                      window_s: float | None = None, points: int = 120) -> MetricHistory:
        """The node's (or one GPU's) series over ``window_s``; empty points when there is no data."""
        ...


@runtime_checkable
class PodInspector(Protocol):
    """Describes a pod and reads its logs (Kubernetes)."""

    name: str

    async def describe_pod(self, namespace: str, name: str) -> str:
        """A ``kubectl describe``-like text of one pod, sanitised."""
        ...

    async def pod_logs(self, namespace: str, name: str, container: str | None = None, tail: int = 200) -> str:
        """The last ``tail`` lines of a container's log, sanitised and bounded."""
        ...


@runtime_checkable
class AccountingProvider(Protocol):
    """Answers fair-share, QoS and association questions on demand (Slurm accounting)."""

    name: str

    async def accounting(self, user: str | None = None, account: str | None = None) -> AccountingInfo:
        """Never raises for "accounting is not enabled": ``available=False`` with the reason."""
        ...


@runtime_checkable
class MigReader(Protocol):
    """Reads the MIG state a node's GPUs are in now (the verify step of a MIG plan)."""

    async def read_mig(self, node: str) -> dict[int, tuple[bool, tuple[str, ...]]]:
        """GPU index → (MIG mode enabled, the GPU instance profiles present)."""
        ...
