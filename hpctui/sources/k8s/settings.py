"""The TOML section of one Kubernetes source (``[[clusters.NAME.sources]] kind = "k8s"``).

Validating this must not import the ``kubernetes`` client: the builder imports it lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from hpctui.sources.k8s.source import K8sSource
    from hpctui.sources.registry import SourceContext


class K8sSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str = "k8s"
    """The source's name, as the status line, ``precedence`` and ``ssh_source`` name it."""
    kubeconfig: str | None = None
    """Path of the kubeconfig; default: ``$KUBECONFIG``, then ``~/.kube/config``."""
    context: str | None = None
    """Kubeconfig context; the CLI's ``--context`` overrides it."""
    in_cluster: bool = False
    """Use the pod's service account instead of a kubeconfig."""
    namespaces: list[str] = msgspec.field(default_factory=list)
    """Pods and events of these namespaces only; empty = all namespaces."""
    interval_s: float = 2.0
    """How often the watched state is handed to the store."""
    timeout_s: float = 15.0
    """Limit of one list/patch/eviction request."""
    watch_timeout_s: int = 300
    """Server-side timeout of one watch; it is then resumed from the last resourceVersion."""
    page_size: int = 500
    """Objects per list page (``limit``/``continue``)."""
    events: bool = True
    """Watch Warning events."""
    event_limit: int = 300
    """Newest Warning events kept from the first list."""
    topology_labels: list[str] | None = None
    """Node label keys naming a node's leaf switch, first present wins; default: NVIDIA Topograph's
    (``network.topology.nvidia.com/leaf``, ``…/tier-0``, ``…/block``), ``topology.kubernetes.io/network-level-1``
    and AWS's ``topology.k8s.aws/network-node-layer-3``. ``[]``: no fabric from labels."""
    volumes: bool = True
    """Watch PersistentVolumeClaims and StorageClasses: a GPU pod's pending claim or failed mount is put on
    its storage class and CSI driver."""
    queues: bool = True
    """Kueue / Volcano objects when their CRDs are served (discovered, not assumed)."""
    queue_interval_s: float = 15.0
    """How often those are listed."""
    # drain defaults (kubectl drain semantics)
    drain_grace_period_s: int = -1
    """-1 = each pod's own terminationGracePeriodSeconds."""
    drain_timeout_s: float = 120.0
    """Give up on pods a PodDisruptionBudget keeps blocking (429) after this."""
    drain_retry_s: float = 5.0
    """Wait between eviction attempts after a 429."""
    mig_timeout_s: float = 600.0
    """Follow nvidia.com/mig.config.state this long."""
    # Bounds (issue #19 §5). etcd refuses objects over 1.5 MiB (its default --max-request-bytes),
    # so a watch line (one object) over 8 MiB is a broken server; a list page holds page_size
    # objects, typically 5-50 KB each: 128 MiB is a 500-object page of 260 KB objects.
    max_answer_mib: int = 128
    """Largest answer read (one list page), 1–4096 MiB."""
    max_watch_line_mib: int = 8
    """Largest watch line (one object); past it the watch ends and is relisted. 1–1024 MiB."""

    def __post_init__(self) -> None:
        if self.interval_s <= 0 or self.timeout_s <= 0 or self.watch_timeout_s <= 0:
            raise ValueError("interval_s, timeout_s and watch_timeout_s must be > 0")
        if self.page_size < 1:
            raise ValueError("page_size must be >= 1")
        if self.in_cluster and (self.kubeconfig or self.context):
            raise ValueError("in_cluster = true takes no kubeconfig or context")
        if self.drain_timeout_s <= 0 or self.drain_retry_s <= 0 or self.mig_timeout_s <= 0:
            raise ValueError("drain_timeout_s, drain_retry_s and mig_timeout_s must be > 0")
        if not 1 <= self.max_answer_mib <= 4096 or not 1 <= self.max_watch_line_mib <= 1024:
            raise ValueError("max_answer_mib must be 1..4096 and max_watch_line_mib 1..1024")


def build_k8s_source(settings: K8sSettings, context: SourceContext) -> K8sSource:
    from hpctui.sources.k8s.source import K8sSource

    return K8sSource(settings, name_map=context.name_map)
